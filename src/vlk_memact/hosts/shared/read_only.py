"""Which shell commands only read: their success is not the change that makes a failing call worth retrying.

The guard denies an unchanged repeat of a looping call when nothing state-changing succeeded since it
last failed. Agents that work through a shell (Claude Code's Bash, SWE-agent, mini-swe-agent) look
around between two retries with ls, cat, grep or git diff; if every such success counted as a change,
no repeat would ever be stopped (bench/results/guard.md measures it on real runs). Precision first: a
command only reads when every command of its command line is a known reader, with no output
redirected to a file, no heredoc, no command substitution and nothing sent to the background;
anything else, or anything that does not parse, may change state. Package managers (even `pip show`),
waits and network fetches are never readers: what they see changes between two runs (issue 20).
"""

from __future__ import annotations

from . import shell

# Programs that never write files or change the shell's state (with the exceptions checked in _reads).
# Agent-specific commands (SWE-agent's `goto`, `scroll_*`, `search_*`) are not here: the adapter of that
# agent sends them as the read tools they stand for (bench/claude_events.py).
READERS = frozenset(
    {
        "ls", "cat", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "rg", "ag", "nl", "wc", "pwd",
        "echo", "printf", "sort", "uniq", "cut", "tr", "diff", "cmp", "comm", "file", "stat", "du", "df",
        "which", "whereis", "type", "whoami", "id", "date", "tree", "realpath", "readlink", "dirname",
        "basename", "true", "false", "test", "[", "column", "od", "hexdump", "xxd", "md5sum", "sha1sum",
        "sha256sum", "uname", "hostname", "printenv", "jq",
    }
)
GIT_READERS = frozenset(
    {"status", "diff", "log", "show", "blame", "grep", "ls-files", "rev-parse", "describe"}
)
FIND_WRITERS = frozenset(
    {"-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls"}
)
# hostname(1) options that only print; anything else (a name, -F FILE, -b) sets the host name.
_HOSTNAME_SHOWS = frozenset(
    {"-a", "--alias", "-A", "--all-fqdns", "-d", "--domain", "-f", "--fqdn", "--long", "-i", "--ip-address",
     "-I", "--all-ip-addresses", "-s", "--short", "-y", "--yp", "--nis", "-V", "--version", "-h", "--help"}
)
_VALUE_OPTIONS = {  # options whose value is the next word, so that it is not counted as a file
    "uniq": frozenset({"-f", "-s", "-w", "--skip-fields", "--skip-chars", "--check-chars"}),
    "xxd": frozenset({"-c", "-cols", "-g", "-groupsize", "-l", "-len", "-s", "-seek", "-o", "-n", "-name"}),
    "date": frozenset({"-d", "--date", "-f", "--file", "-r", "--reference"}),
}


def _operands(program: str, args: list[str]) -> list[str]:
    """The arguments that are not options nor option values."""
    takes_value = _VALUE_OPTIONS.get(program, frozenset())
    operands, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in takes_value:
            skip = True
        elif arg == "-" or not arg.startswith("-"):
            operands.append(arg)
    return operands


def _writes_despite_reading(program: str, args: list[str]) -> bool:
    """A reader's arguments that make it write a file or change the system."""
    if program == "sort":
        return any(a.startswith(("-o", "--output")) for a in args)
    if program in ("uniq", "xxd"):
        return len(_operands(program, args)) > 1  # uniq IN OUT, xxd IN OUT: the second one is written
    if program == "tree":
        return any(a.startswith("-o") or a == "-R" for a in args)  # -R writes 00Tree.html in every folder
    if program == "date":
        return any(a.startswith(("-s", "--set")) for a in args) or \
            any(not a.startswith("+") for a in _operands(program, args))  # `date MMDDhhmm` sets the clock
    if program == "hostname":
        return any(a not in _HOSTNAME_SHOWS for a in args)
    if program == "file":
        return "-C" in args  # compiles a magic file
    if program == "printf":
        return "-v" in args  # assigns a shell variable
    return False


def _reads(words: list[str] | tuple[str, ...]) -> bool:
    """One simple command's words (no operators): does it only read?"""
    words = list(words)
    while words and shell.is_assignment(words[0]):
        words = words[1:]
    if not words:
        return True
    program, args = words[0].rsplit("/", 1)[-1], words[1:]
    if program == "xargs":
        rest = [w for w in args if not w.startswith("-")]
        return bool(rest) and _reads(rest)
    if program == "sed":
        return not any(a.startswith(("-i", "--in-place")) for a in args)
    if program == "find":
        return not FIND_WRITERS.intersection(args)
    if program == "git":
        return next((a for a in args if not a.startswith("-")), "") in GIT_READERS and \
            not any(a.startswith("--output") for a in args)
    return program in READERS and not _writes_despite_reading(program, args)


def is_read_only(command: str) -> bool:
    """True only when every command of this shell command line is a known reader that writes nothing."""
    line = shell.parse(command)
    if not line.complete or line.substitution or line.heredoc:
        return False  # a heredoc feeds a writer; a substitution runs a command of its own
    return all(not c.background and not c.writes and _reads(c.words) for c in line.commands)


_NAVIGATION = frozenset({"cd", "pushd", "popd", "export", "set", "source", ".", "true", ":"})


def may_change_before_failing(command: str) -> bool:
    """Can this command line have changed state even though it failed? True when a command before its last
    one (`sed -i f && python t.py`, `pip install x; pytest`, on two lines as well) writes, or may: the
    failure came after it ran. A heredoc written to a file is there whatever ran after it."""
    line = shell.parse(command)
    if not line.complete:
        return True
    if any(c.heredoc and c.writes for c in line.commands):
        return True
    for simple in line.commands[:-1]:
        if simple.program in _NAVIGATION:
            continue
        if simple.writes or not _reads(simple.words):
            return True
    return False
