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

import re
import shlex

# Programs that never write files or change the shell's state (with the exceptions checked below).
READERS = frozenset(
    {
        "ls",
        "cat",
        "head",
        "tail",
        "less",
        "more",
        "grep",
        "egrep",
        "fgrep",
        "rg",
        "ag",
        "nl",
        "wc",
        "pwd",
        "echo",
        "printf",
        "sort",
        "uniq",
        "cut",
        "tr",
        "diff",
        "cmp",
        "comm",
        "file",
        "stat",
        "du",
        "df",
        "which",
        "whereis",
        "type",
        "whoami",
        "id",
        "date",
        "tree",
        "realpath",
        "readlink",
        "dirname",
        "basename",
        "true",
        "false",
        "test",
        "[",
        "column",
        "od",
        "hexdump",
        "xxd",
        "md5sum",
        "sha1sum",
        "sha256sum",
        "uname",
        "hostname",
        "printenv",
        "jq",
        # SWE-agent's shell commands that only move its file viewer or search (`open` and `create` are not
        # here: they change the file its `edit` command writes to).
        "goto",
        "scroll_up",
        "scroll_down",
        "search_file",
        "search_dir",
        "find_file",
    }
)
GIT_READERS = frozenset(
    {"status", "diff", "log", "show", "blame", "grep", "ls-files", "rev-parse", "describe"}
)
FIND_WRITERS = frozenset(
    {"-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls"}
)

_OPERATORS = ";&|<>()\n"
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _words(command: str) -> list[str] | None:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=_OPERATORS)
    lexer.whitespace = " \t\r"  # a newline separates two commands
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes
        return None


def _reads(words: list[str]) -> bool:
    """One simple command (no operators): does it only read?"""
    while words and _ASSIGNMENT.match(words[0]):
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
        return next((a for a in args if not a.startswith("-")), "") in GIT_READERS
    return program in READERS


def is_read_only(command: str) -> bool:
    """True only when every command of this shell command line is a known reader that writes nothing."""
    if "<<" in command or "$(" in command or "`" in command:
        return False  # a heredoc feeds a writer; a substitution runs a command of its own
    words = _words(command)
    if words is None:
        return False
    current: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        after = words[i + 1] if i + 1 < len(words) else ""
        if set(word) <= set(";&|\n"):  # a command ends: ; && || | & newline
            if word == "&":
                return False  # a background process
            if not _reads(current):
                return False
            current = []
        elif ">" in word and set(word) <= set("<>&|"):  # an output redirection
            if word.endswith("&") and after.isdigit():
                i += 1  # 2>&1: a descriptor copied, nothing written
            elif after == "/dev/null":
                i += 1
            else:
                return False
        elif word == "<":
            i += 1  # input from a file
        elif word not in ("(", ")") and not (word.isdigit() and after.startswith(">")):
            current.append(word)  # (a digit just before '>' is a descriptor, not an argument)
        i += 1
    return _reads(current)


_NAVIGATION = frozenset({"cd", "pushd", "popd", "export", "set", "source", ".", "true", ":"})


def may_change_before_failing(command: str) -> bool:
    """Can this command line have changed state even though it failed? True when a command before its last
    one (`sed -i f && python t.py`, `pip install x; pytest`) writes, or may: the failure came after it ran.
    Line breaks do not split here (they are content in SWE-agent's `edit` and in a heredoc)."""
    if "<<" in command and ">" in command.split("<<", 1)[1].split("\n", 1)[0]:
        return True  # a heredoc written to a file: the file is there whatever ran after it
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|<>()")
    lexer.whitespace_split = True  # white space, line breaks included, only separates words
    try:
        words = list(lexer)
    except ValueError:
        return True
    commands: list[list[str]] = [[]]
    for word in words:
        if word in (";", "&&", "||", "|", "&", ";;"):
            commands.append([])
        else:
            commands[-1].append(word)
    commands = [c for c in commands if c]
    for simple in commands[:-1]:
        rest = [w for w in simple if not _ASSIGNMENT.match(w)]
        if rest and rest[0].rsplit("/", 1)[-1] in _NAVIGATION:
            continue
        writes = any(">" in w and w != ">&" for i, w in enumerate(simple)
                     if i + 1 >= len(simple) or simple[i + 1] != "/dev/null")
        if writes or not _reads([w for w in simple if w not in (">&", "<")]):
            return True
    return False
