"""Located diagnostics, whatever the tool: ``location: [severity:] [ID] message [id]`` in the usual formats.

Compilers and linters print one finding per line behind where it is: ``path:line:col:`` (GCC, Clang,
Go, mypy, ruff, pylint, ShellCheck, javac), ``path(line,col):`` (tsc, C#, MSVC), ``path:line:col -``
(tsc --pretty), ``e: file:///path:line:col`` (kotlinc), ``[ERROR] path:[line,col]`` (Maven), a Windows path
in any of them. The location is noise as a whole (the same error is met in other files, other checkouts, other lines); the tool's id
is the anchor (``E0602``, ``F401``, ``TS2304``, ``CS0103``, ``SC2154``, ``[name-defined]``,
``[-Wunused-variable]``, ``(unused-import)``: codes and bracketed ids stay verbatim, so two ids are never
one error); the message keeps its names (see ``core._mask_message``), so one id with two names is two
errors. Indented ``label: value`` lines under a finding (javac's ``symbol: variable x``) belong to it.

The key holds the first three distinct findings of the highest severity present (errors before
warnings, notes never): together they are the error, as for the flake8 findings of ``python._lint``;
a varying number of warnings before an error does not change it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .core import _LOCATION_CUE, Fingerprint, _make, _mask_message
from .line_search import _first_stem

# A path and its last character: one possessive run, since what follows it (``:`` or ``(``) is no path character
# (a backtracking ``[...]*[...]`` gave back one character at a time on a line whose location fails).
_PATH = r"(?:file://)?(?:/?[A-Za-z]:[\\/])?[^\s:'\"()<>\[\]{},;|`]++"
# A path-shaped token (a slash, a backslash or a dot) before :line[:col] or (line[,col]); any token led by a
# letter (not a timestamp's date) before :line:col or (line,col). Then the separator: a colon, `` - `` (tsc --pretty) or blanks.
_LOCATED = re.compile(
    r"^[ \t]*(?:[ewEW]: |\[[A-Z]{3,8}\] )?\[?"
    rf"(?:(?=(?:[A-Za-z]:)?[^\s:'\"()]*[/\\.]){_PATH}"
    r"(?::\d+(?::\d+)?|\(\d+(?:,\s*\d+)?\)|:\[\d+(?:,\d+)?\])"
    rf"|(?=[A-Za-z_./~\\]){_PATH}(?::\d+:\d+|\(\d+,\s*\d+\)))"
    r"\]?(?::[ \t]*| - |[ \t]+)(\S[^\n]*)$",
    re.M,
)
_CUE = re.compile(r"[:(\[]\d")
_MAX_LINES = 32  # lines with a cue looked at: a build log's first ones hold its errors
_SEVERITY = re.compile(
    r"(?i:(fatal error|error|warning|warn|note|info|information|hint|remark|style|performance|portability))"
    r"(?:\s*:\s*|\s+(?=[A-Z]{1,4}-?\d))"
)
_ID_FIRST = re.compile(r"([A-Z]{1,6}-?\d{2,5})(?::\s*|\s+(?:\[\*\]\s+)?)(?=\S)")
_DETAIL = re.compile(r"\n[ \t]+([a-z][a-z ]{1,20}:[ \t]+\S[^\n]*)")
_RANK = {"fatal error": 0, "error": 0, "": 1, "warning": 2, "warn": 2, "style": 3, "performance": 3,
         "portability": 3, "info": 4, "information": 4, "hint": 4, "remark": 4, "note": 5}
_MAX_FINDINGS = 3
_PY_WARNING = re.compile(r"[A-Z]\w*Warning: ")
_ERROR_CUE = re.compile(r"(?i)\b(?:error|failed|failure|fatal|exception|traceback|timed out|killed|panic)\b")
_ERROR_CUE_STEMS = ("error", "fail", "fatal", "exception", "traceback", "timed out", "killed", "panic")  # ignoring case


def _parse(match: re.Match[str]) -> tuple[int, str, str]:
    """(rank, id, message) of one located line, before masking: the rank decides which lines are masked."""
    rest = match.group(1)
    severity = ""
    found = _SEVERITY.match(rest)
    if found:
        severity = found.group(1).lower()
        rest = rest[found.end():]
    elif _PY_WARNING.match(rest):  # ``path:line: DeprecationWarning: ...`` (Python's warnings)
        severity = "warning"
    code = _ID_FIRST.match(rest)
    anchor = ""
    if code:
        anchor = code.group(1) + " "
        rest = rest[code.end():]
        found = None if severity else _SEVERITY.match(rest)  # ``DL3008 warning: ...`` (hadolint)
        if found:
            severity = found.group(1).lower()
            rest = rest[found.end():]
    return _RANK[severity], anchor, rest


def _finding(match: re.Match[str], anchor: str, rest: str) -> str | None:
    """The key part of one located line; None when its message is only values (a Go frame's ``+0x1d``)."""
    detail = _DETAIL.match(match.string, match.end())
    while detail:  # javac's symbol:/location: lines under the finding
        rest += " | " + detail.group(1)
        detail = _DETAIL.match(match.string, detail.end())
    message = _mask_message(rest)
    if not any(ch.isalpha() for ch in message.replace("<*>", "")):
        return None
    return anchor + message


def _error_elsewhere(text: str, spans: list[tuple[int, int]]) -> bool:
    """Whether a line that is no located finding says that something failed."""
    first = _first_stem(text, _ERROR_CUE_STEMS)  # no match starts before it (a \b-led regex tries every position)
    if first < 0:
        return False
    for found in _ERROR_CUE.finditer(text, first):
        if not any(start <= found.start() < end for start, end in spans):
            return True
    return False


def _located_lines(text: str) -> Iterator[re.Match[str]]:
    """The located lines: each line holding a ``:digit`` or ``(digit`` is matched from its start (a regex led
    by ``^`` would be tried at every position of a long output)."""
    size = len(text)
    cue = _CUE.search(text)
    tried = 0
    while cue is not None and tried < _MAX_LINES:
        start = text.rfind("\n", 0, cue.start()) + 1
        end = text.find("\n", cue.end())
        end = size if end < 0 else end
        tried += 1
        match = _LOCATED.match(text, start, end)
        if match is not None:
            yield match
        cue = _CUE.search(text, end + 1)


def _located(text: str, lines: list[str]) -> Fingerprint | None:
    """The located findings of a compiler or linter: see the module docstring."""
    if not _LOCATION_CUE.search(text):
        return None
    located = [(match, *_parse(match)) for match in _located_lines(text)]
    elsewhere: bool | None = None  # an error said outside the findings: tested once, before masking warnings
    for rank in sorted({rank for _, rank, _, _ in located}):
        if rank == _RANK["note"]:
            return None  # notes alone are no error
        if rank >= _RANK["warning"]:
            if elsewhere is None:
                elsewhere = _error_elsewhere(text, [m.span() for m, *_ in located])
            if elsewhere:
                return None  # warnings printed on the way to an error they are not (a command that then timed out)
        chosen: dict[str, None] = {}
        for match, line_rank, anchor, rest in located:
            if line_rank == rank:
                part = _finding(match, anchor, rest)
                if part is not None:
                    chosen[part] = None
                    if len(chosen) == _MAX_FINDINGS:
                        break
        if not chosen:
            continue  # only values at this rank (Go frames): the next rank
        return _make("diagnostic", "; ".join(chosen))
    return None
