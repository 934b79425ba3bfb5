"""Which error results are the agent's failures, and which are the host's own refusals; pure.

Verified with the real Claude Code 2.1.328 (tests/hosts/claude_code/test_hooks_e2e.py): only errors raised while a tool runs
(a non-zero exit, a timeout, a Read of a missing file) reach PostToolUseFailure. Claude Code's input checks
(`<tool_use_error>`: "File has not been read yet", "String to replace not found", an unknown or disabled
tool) fire no per-call hook; a user declining a permission prompt fires PreToolUse and PermissionRequest,
never a failure; an interrupt ends the turn. Older versions (the transcripts of
../shared/data/claude-code-sessions) reported several of these as failed results, untagged, and also
"Sibling tool call errored" for a call cancelled because a parallel call failed. None of them says
anything about the approach: they must never become loops, anchors, lessons or evidence. Every path that
reads an error (each host's hooks, the MCP record tool, carry-over of stored slots) asks `non_failure`.
"""

from __future__ import annotations

import re

INPUT_CHECK = "input check"
PERMISSION = "permission refusal"
SIBLING = "sibling cancellation"
INTERRUPT = "interrupt"

# Order matters: a sibling cancellation is also tagged <tool_use_error>. Each kind is what its text starts with
# (matched at the start only) and phrases it holds anywhere. Why not one search per kind: re.I tries every
# alternative at every position of a 2,000-character error (~0.3 ms per failed tool call); for ASCII text,
# ignoring case is lowering both sides, and a substring test of the lowered text costs microseconds.
_STARTS: dict[str, str] = {
    INTERRUPT: r"\[Request interrupted by user|Interrupted by user|The user interrupted",
    PERMISSION: r"Permission to use \S+ (?:has been|was) denied|Permission denied by|Claude Code (?:blocked|refused)"
                r"|Hook PreToolUse:\S* denied this tool|Tool use (?:was )?denied",
    INPUT_CHECK: r"InputValidationError|Error: No such tool available|No such tool available"
                 r"|File has not been read yet|File has been (?:unexpectedly )?modified since read"
                 r"|String to replace not found in file|Found \d+ matches of the string to replace"
                 r"|No changes to make: old_string and new_string are exactly the same"
                 r"|File content \(\d+ tokens\) exceeds maximum allowed tokens"
                 r"|Claude Code settings\.json validation failed"
                 r"|(?:Error: )?(?:The )?tool \S+ is (?:not available|disabled)",
}
_HOLDS: dict[str, tuple[str, ...]] = {
    SIBLING: ("Sibling tool call errored", "Cancelled: parallel tool call"),
    PERMISSION: ("The user doesn't want to proceed with this", "The user doesn't want to take this",
                 "STOP what you are doing and wait for the user", "haven't granted it yet",
                 "was blocked. For security, Claude Code"),
    INPUT_CHECK: ("<tool_use_error>",),
}
# (kind, start pattern, phrases lowered, phrases as a case-insensitive pattern for non-ASCII text), in order.
_KINDS: tuple[tuple[str, re.Pattern[str] | None, tuple[str, ...], re.Pattern[str] | None], ...] = tuple(
    (kind,
     re.compile(_STARTS[kind], re.I) if kind in _STARTS else None,
     tuple(p.lower() for p in _HOLDS.get(kind, ())),
     re.compile("|".join(map(re.escape, _HOLDS[kind])), re.I) if kind in _HOLDS else None)
    for kind in (SIBLING, INTERRUPT, PERMISSION, INPUT_CHECK)
)
_EXIT = re.compile(r"^\s*(?:Exit code|exit status)\s*-?\d+\s*", re.I)
# Errors that name nothing: carried into no later session, and no ground for a denial.
_GENERIC = re.compile(
    r"^(?:error|failed|failure|exception|unknown error|command failed|file does not exist\.?"
    r"(?: note: your current working directory is \S+\.?| current working directory: \S+)?)?[.!]?$",
    re.I,
)


# A broken environment: a tool, module, variable or service the call needs is missing. It fails every call that
# needs it, in any session, until someone installs, sets or starts it: the one kind of error worth telling a new
# session before it meets it (hosts/shared/carryover.py). Matched on the error's own words, never on the call.
_MISSING_TOOL = re.compile(r"(?:^|[\s:])([^\s:]+): (?:command )?not found$|command not found: (\S+)"
                           r"|'([^']+)' is not recognized as an internal or external command"
                           r"|exec: \"([^\"]+)\": executable file not found", re.M)
# A program's name: a typo glued to its argument (`find.`, `open.gitignore`) names no tool to install.
_PROGRAM_NAME = re.compile(r"^[A-Za-z_][\w+-]*?(?:\d+(?:\.\d+)*)?$")
ENVIRONMENT: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("tool", re.compile(r"error while loading shared libraries|cannot open shared object file")),
    ("module", re.compile(r"ModuleNotFoundError|No module named|Cannot find module|Cannot find package"
                          r"|cannot find -l\S+|package '?[\w.-]+'? is not installed", re.M)),
    ("variable", re.compile(r"(?i)environment variable \S+ (?:is )?not (?:set|defined)|\bunbound variable\b"
                            r"|KeyError: '[A-Z][A-Z0-9]*_[A-Z0-9_]+'")),
    ("service", re.compile(r"Connection refused|ECONNREFUSED|Cannot connect to the Docker daemon"
                           r"|could not connect to server|connection to server .{0,80} failed"
                           r"|Is the docker daemon running")),
)


def broken_environment(error: str | None) -> str | None:
    """The kind of missing piece ("tool", "module", "variable", "service") this error reports, or None."""
    text = (error or "")[:4000]
    for match in _MISSING_TOOL.finditer(text):
        name = next(g for g in match.groups() if g).rsplit("/", 1)[-1]
        if _PROGRAM_NAME.match(name):
            return "tool"
    return next((kind for kind, pattern in ENVIRONMENT if pattern.search(text)), None)


def non_failure(error: str | None) -> str | None:
    """The kind of host refusal this error text is (INPUT_CHECK, PERMISSION, SIBLING, INTERRUPT), or None
    when it is a real failure of the call."""
    text = (error or "").strip()
    if text.startswith("Error: "):
        text = text[len("Error: "):]
    text = text[:2000]
    lowered = text.lower() if text.isascii() else None
    for kind, at_start, phrases, anywhere in _KINDS:
        if at_start is not None and at_start.match(text):
            return kind
        if anywhere is not None and (any(p in lowered for p in phrases) if lowered is not None
                                     else anywhere.search(text)):
            return kind
    return None


def is_failure(error: str | None, interrupted: bool = False) -> bool:
    """An error the agent's approach produced: worth a loop, a lesson, evidence."""
    return not interrupted and non_failure(error) is None


def is_generic(error: str | None) -> bool:
    """An error that says nothing specific (a bare "Error", an exit code alone, "File does not exist.")."""
    text = _EXIT.sub("", (error or "").strip()).strip()
    return bool(_GENERIC.match(" ".join(text.split())))


_NAMELESS = re.compile(r"^(?:error|failed|failure|exception|unknown error|command failed)?[.!]?$", re.I)


def says_nothing(error: str | None) -> bool:
    """Not even what kind of thing failed (a bare "Error", an exit code alone): failures of different calls with
    it are not one error, where "File does not exist." after reads of different files still says what happened."""
    text = _EXIT.sub("", (error or "").strip()).strip()
    return bool(_NAMELESS.match(" ".join(text.split())))
