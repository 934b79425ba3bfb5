"""Which error results are the agent's failures, and which are the host's own refusals; pure.

Verified with the real Claude Code 2.1.328 (tests/test_hooks_e2e.py): only errors raised while a tool runs
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

# Order matters: a sibling cancellation is also tagged <tool_use_error>.
_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (SIBLING, re.compile(r"Sibling tool call errored|Cancelled: parallel tool call", re.I)),
    (INTERRUPT, re.compile(r"^\[Request interrupted by user|^Interrupted by user|^The user interrupted", re.I)),
    (
        PERMISSION,
        re.compile(
            r"The user doesn't want to (?:proceed with|take) this|STOP what you are doing and wait for the user"
            r"|^Permission to use \S+ (?:has been|was) denied|haven't granted it yet|^Permission denied by"
            r"|was blocked\. For security, Claude Code|^Claude Code (?:blocked|refused)"
            r"|^Hook PreToolUse:\S* denied this tool|^Tool use (?:was )?denied",
            re.I,
        ),
    ),
    (
        INPUT_CHECK,
        re.compile(
            r"<tool_use_error>|^InputValidationError|^Error: No such tool available|^No such tool available"
            r"|^File has not been read yet|^File has been (?:unexpectedly )?modified since read"
            r"|^String to replace not found in file|^Found \d+ matches of the string to replace"
            r"|^No changes to make: old_string and new_string are exactly the same"
            r"|^File content \(\d+ tokens\) exceeds maximum allowed tokens|^Claude Code settings\.json validation failed"
            r"|^(?:Error: )?(?:The )?tool \S+ is (?:not available|disabled)",
            re.I,
        ),
    ),
)
_EXIT = re.compile(r"^\s*(?:Exit code|exit status)\s*-?\d+\s*", re.I)
# Errors that name nothing: carried into no later session, and no ground for a denial.
_GENERIC = re.compile(
    r"^(?:error|failed|failure|exception|unknown error|command failed|file does not exist\.?"
    r"(?: note: your current working directory is \S+\.?| current working directory: \S+)?)?[.!]?$",
    re.I,
)


def non_failure(error: str | None) -> str | None:
    """The kind of host refusal this error text is (INPUT_CHECK, PERMISSION, SIBLING, INTERRUPT), or None
    when it is a real failure of the call."""
    text = (error or "").strip()
    if text.startswith("Error: "):
        text = text[len("Error: "):]
    for kind, pattern in _KINDS:
        if pattern.search(text[:2000]):
            return kind
    return None


def is_failure(error: str | None, interrupted: bool = False) -> bool:
    """An error the agent's approach produced: worth a loop, a lesson, evidence."""
    return not interrupted and non_failure(error) is None


def is_generic(error: str | None) -> bool:
    """An error that says nothing specific (a bare "Error", an exit code alone, "File does not exist.")."""
    text = _EXIT.sub("", (error or "").strip()).strip()
    return bool(_GENERIC.match(" ".join(text.split())))
