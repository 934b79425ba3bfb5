"""What really happened, judged from the trajectories alone, independently of the guard's own logic.

The guard replay (bench/guard.py) asks two questions of every trajectory:

1. Was a denied call useless? A denial is judged by the real step that followed: it failed again with
   the *identical error* (correct: running it was a wasted step), failed with a different error, or
   succeeded (harm: the guard stopped a call that would have worked).
2. Which calls should a guard stop? The recall denominator, *identical repeats that follow a loop
   with nothing changed*, is defined here from the steps themselves: see `loop_repeats`.

Definitions (stated in bench/results/guard.md too):

- Same command: equal after `canonical_command` (line endings unified, trailing whitespace of each line
  and of the whole command removed). Indentation and spaces inside a line are kept: they are content
  in an edit, a heredoc or a `python -c` program.
- Identical error: the two observations are equal after `error_key`: line endings unified, trailing
  whitespace of each line and leading/trailing blank lines removed, and these volatile values masked:
  memory addresses (`0x` + 6 or more hex digits), durations (`0.52s`, `12 ms`, `3.1 seconds`), clock
  times (`12:34:56`), ISO dates, random temporary names (`/tmp/tmpXXXX`, `pytest-of-USER/pytest-N`), and
  the line number bash gives an error of the harness's session script (`/bin/bash: line 205:`: one more
  with every command the harness runs, whatever the command).
  Anything else that differs (a line number, a value, one more line) makes the errors different.
- Loop repeats (the recall denominator): identical repeats of a command that itself failed with that
  error at least the loop threshold times since it last worked (issue 20), nothing changed in between.
- Changes nothing: `changes_nothing` below, a conservative syntactic test: every part of the command
  line is a known read-only program (ls, cat, grep, sed without -i, git status, SWE-agent's goto or
  search_dir, ...), with no output redirection to a file, no heredoc and no `cd`. SWE-agent's `open` and
  `create` count as changes: they change the file the edit tool writes to.
"""

from __future__ import annotations

import re
from collections import Counter

import swe_agent
from trajectories import Step, Trajectory

LOOP_THRESHOLD = 3  # repeats of one error that make a loop (the product's default, VLK_LOOP_THRESHOLD)

_VOLATILE = [
    (re.compile(r"0x[0-9a-fA-F]{6,}"), "0x<addr>"),
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s|sec|secs|seconds)\b"), "<duration>"),
    (re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"), "<time>"),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}\b"), "<date>"),
    (re.compile(r"/tmp/tmp[A-Za-z0-9_]{4,}"), "/tmp/<tmp>"),
    (re.compile(r"pytest-of-[^/\s]+/pytest-\d+"), "pytest-of-<user>/pytest-<n>"),
    # bash numbers the lines of the harness's session script, one more command each time: not the error
    (re.compile(r"(?m)^((?:/usr)?/bin/)?(ba)?sh: line \d+:"), "bash: line <n>:"),
]


def canonical_command(command: str) -> str:
    """The command with only editor noise removed: line endings and trailing whitespace."""
    lines = command.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip()


def loose_command(command: str) -> str:
    """Every whitespace run collapsed: the loosest notion of 'the same call' any guard rule here uses."""
    return " ".join(command.split())


def error_key(observation: str) -> str:
    """The observation with volatile values masked: equal keys mean the identical error."""
    text = canonical_command(observation)
    for pattern, mask in _VOLATILE:
        text = pattern.sub(mask, text)
    return text


def verbatim_key(observation: str) -> str:
    """Byte-for-byte but for line endings and trailing whitespace (to report how much masking matters)."""
    return canonical_command(observation)


# ---- changes nothing ----
# Deliberately simpler than the product's shell reader test (vlk_memact/hosts/shared/read_only.py) and written
# apart from it: plain text, no shell parsing, so quoting never makes a writer look like a reader.

_READERS = {
    "ls",
    "cat",
    "head",
    "tail",
    "grep",
    "egrep",
    "rg",
    "nl",
    "wc",
    "pwd",
    "echo",
    "sort",
    "uniq",
    "cut",
    "diff",
    "file",
    "stat",
    "which",
    "tree",
    "realpath",
    "dirname",
    "basename",
    "true",
    "test",
    # SWE-agent's viewer and search commands, from that agent's adapter (its `open` and `create` change the
    # file `edit` writes to)
    *swe_agent.READ_TOOL_OF,
}
_GIT_READERS = {"status", "diff", "log", "show", "blame", "grep", "ls-files", "rev-parse"}
_HARMLESS_REDIRECTS = re.compile(r"[12]?>\s*/dev/null|2>&1|&>\s*/dev/null")
_COMMAND_SEPARATORS = re.compile(r"&&|\|\||[;|&\n]")


def changes_nothing(command: str) -> bool:
    """True only when every command of the line starts with a known reader and nothing is written."""
    text = _HARMLESS_REDIRECTS.sub(" ", command)
    if any(mark in text for mark in (">", "<<", "$(", "`", "'", '"')) and not _quoted_args_only(text):
        return False
    for part in _COMMAND_SEPARATORS.split(text):
        words = [w for w in part.split() if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w)] or [""]
        program, args = words[0].rsplit("/", 1)[-1], words[1:]
        if program == "":
            continue
        if program == "sed":
            if any(a.startswith(("-i", "--in-place")) for a in args):
                return False
        elif program == "find":
            if any(a in ("-delete", "-exec", "-execdir", "-ok", "-fprint") for a in args):
                return False
        elif program == "git":
            if next((a for a in args if not a.startswith("-")), "") not in _GIT_READERS:
                return False
        elif program == "sort" and any(a.startswith(("-o", "--output")) for a in args):
            return False
        elif program == "tree" and any(a.startswith("-o") or a == "-R" for a in args):
            return False
        elif program == "uniq" and len([a for a in args if not a.startswith("-")]) > 1:
            return False  # uniq IN OUT writes OUT (an option's value counted as a file errs on "changed")
        elif program == "xargs":
            if next((a for a in args if not a.startswith("-")), "") not in _READERS:
                return False
        elif program not in _READERS:
            return False
    return True


def _quoted_args_only(text: str) -> bool:
    """Quotes are fine as long as no '>' or '<<' or substitution is left once quoted strings are removed."""
    bare = re.sub(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"", "ARG", text)
    return not any(mark in bare for mark in (">", "<<", "$(", "`", "'", '"'))


# ---- the two questions ----


def judge_denial(steps: list[Step], index: int) -> str:
    """'identical', 'different' or 'succeeded': what the denied step really did next.

    It is compared with the most recent earlier failure of the same call (commands compared with
    `canonical_command`, else with `loose_command`, so that every rule's denial has a reference).
    """
    step = steps[index]
    if not step.failed:
        return "succeeded"
    # The same call as the product keys it (indentation kept) first; the loosest notion only when there is none,
    # so that a rule collapsing all whitespace still has a reference.
    for same in (canonical_command, loose_command):
        command = same(step.command or "")
        for earlier in reversed(steps[:index]):
            if earlier.command is not None and earlier.failed and same(earlier.command) == command:
                return (
                    "identical" if error_key(earlier.observation) == error_key(step.observation) else "different"
                )
    return "different"


def loop_repeats(
    trajectory: Trajectory, require_nothing_changed: bool = True, threshold: int = LOOP_THRESHOLD
) -> set[int]:
    """Indices of the identical repeats of a call that kept failing, with nothing changed.

    Step s is one when (issue 20): (a) an earlier step ran the same command (`canonical_command`) and the
    latest such step j failed; (b) s failed with the identical error (`error_key`) as j; (c) before s, that
    same command had already failed with that error at least `threshold` times since it last succeeded
    (the call itself kept failing; other commands sharing the error do not count); (d) every step between
    j and s failed, ran nothing (a format error) or `changes_nothing`. With require_nothing_changed=False,
    (d) is dropped.
    """
    found: set[int] = set()
    last_run: dict[str, int] = {}
    own: Counter[tuple[str, str]] = Counter()  # (command, error) failures since the command last worked
    steps = trajectory.steps
    for index, step in enumerate(steps):
        if step.command is None:
            continue
        command = canonical_command(step.command)
        j = last_run.get(command)
        if j is not None and steps[j].failed and step.failed:
            key = error_key(steps[j].observation)
            if error_key(step.observation) == key and own[(command, key)] >= threshold:
                between = steps[j + 1 : index]
                if not require_nothing_changed or all(
                    b.failed or b.command is None or changes_nothing(b.command) for b in between
                ):
                    found.add(index)
        last_run[command] = index
        if step.failed:
            own[(command, error_key(step.observation))] += 1
        else:
            for pair in [p for p in own if p[0] == command]:
                del own[pair]
    return found
