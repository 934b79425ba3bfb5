"""The Python families: tracebacks, linter findings (flake8) and pytest failures."""

from __future__ import annotations

import re

from .core import _LINE_CAP, Fingerprint, _basename, _contains_any, _make, _mask_message
from .line_search import _first_match, _line_matches


# Python ----------------------------------------------------------------------------
# A frame's line: ``File "path", line N[, in func]`` with only blanks before it. Led by the line break, so the scan
# jumps from line to line (a ``^[ \t]*``-led regex is tried at every position); the first line is matched alone.
_PY_FRAME_BODY = r'File "([^"\n]{0,500})", line \d+(?:, in ([^\n]{1,200}))?'
_PY_FRAME_LINE = re.compile(rf"\n[ \t]*+{_PY_FRAME_BODY}")
_PY_FRAME_FIRST = re.compile(rf"[ \t]*+{_PY_FRAME_BODY}")
_PY_EXC = re.compile(r"((?:[A-Za-z_]\w*\.)*[A-Z]\w*)(?:: ?(.*))?")
_PY_LIBRARY = ("site-packages", "dist-packages", "/lib/python", "\\lib\\", "<frozen", "/usr/lib/")
_LINE_AFTER = re.compile(r"\n(?=[^ \t\n])")  # a line break before an unindented, non-empty line


def _python_frames(text: str) -> list[re.Match[str]]:
    """The frames of a traceback: ``File "path", line N, in func`` with only blanks before it on its line."""
    first = _PY_FRAME_FIRST.match(text)
    frames = [first] if first else []
    frames.extend(_PY_FRAME_LINE.finditer(text))
    return frames


def _python_frame(frames: list[re.Match[str]]) -> str:
    """The function of the innermost in-project frame (``File "path", line N`` is a location: noise)."""
    for frame in reversed(frames):
        if not _contains_any(frame.group(1), _PY_LIBRARY):
            break
    else:  # only library frames: the innermost one
        frame = frames[-1]
    return frame.group(2) or ""


def _python_exception(text: str, start: int) -> tuple[str, str] | None:
    """The exception line that ends a traceback: the first unindented line after the last frame's line."""
    for found in _LINE_AFTER.finditer(text, start):
        begin = found.end()
        end = text.find("\n", begin)
        line = text[begin:] if end == -1 else text[begin:end]
        if not line.strip():
            continue
        match = _PY_EXC.fullmatch(line.strip()[:_LINE_CAP])
        return (match.group(1), match.group(2) or "") if match else None
    return None


def _python(text: str, lines: list[str]) -> Fingerprint | None:
    """A traceback: exception class, masked message, innermost in-project frame."""
    if 'File "' not in text:
        return None
    frames = _python_frames(text)
    exc = _python_exception(text, frames[-1].end()) if frames else None
    if exc is None:
        return None
    cls, message = exc
    body = f"{cls}: {_mask_message(message)}" if message.strip() else cls
    return _make("python", f"{body}@{_python_frame(frames)}")


# Linters: the findings the edit tool of SWE-agent lists under ``ERRORS:`` (located findings, as flake8
# prints them, are located diagnostics: located.py) ---------------------------------------------
_LINT = re.compile(r"^- (?:([EFWC]\d{3}) |([A-Z]\w*(?:Warning|Error)): )([^\n]*)$", re.M)
# What every finding holds: the list's "- " before a code, or its class's end.
_LINT_HOLDS = ("- E", "- F", "- W", "- C", "Warning: ", "Error: ")
_LINT_STARTS = ("- E", "- F", "- W", "- C")  # a list of findings without its header


def _lint(text: str, lines: list[str]) -> Fingerprint | None:
    """Key on the distinct findings (up to three): together they are the error."""
    if "ERRORS:\n- " not in text and not text.startswith(_LINT_STARTS):
        return None  # no list of findings
    findings: dict[str, None] = {}
    for m in _line_matches(_LINT, text, _LINT_HOLDS):
        findings[f"{m.group(1) or m.group(2)} {_mask_message(m.group(3))}"] = None
        if len(findings) == 3:  # the key holds the first three distinct findings
            break
    return _make("lint", "; ".join(findings)) if findings else None


# pytest ----------------------------------------------------------------------------
_PYTEST = re.compile(r"^(FAILED|ERROR) (\S+?)(?: - ([^\n]*))?$", re.M)
_PYTEST_E = re.compile(r"^E {2,}(\S[^\n]*)$", re.M)


def _last_e_line(text: str, end: int) -> re.Match[str] | None:
    """The last match of ``_PYTEST_E`` before ``end`` (a line start), found from the end: such a line starts
    with ``E  ``, and a ``^``-led regex is tried at every position of a long report."""
    at = end
    while at > 0:
        at = text.rfind("\nE  ", 0, at)
        start = at + 1 if at >= 0 else 0
        if at < 0 and not text.startswith("E  "):
            return None
        found = _PYTEST_E.match(text, start, end)
        if found:
            return found
    return None


def _pytest(text: str, lines: list[str]) -> Fingerprint | None:
    """The first ``FAILED``/``ERROR`` summary line: the node id is the anchor."""
    if not (text.startswith(("FAILED ", "ERROR ")) or "\nFAILED " in text or "\nERROR " in text):
        return None  # no summary line
    match = _first_match(_PYTEST, text, ("FAILED ", "ERROR "))
    if not match or ("::" not in match.group(2) and not match.group(2).endswith(".py")):
        return None
    status, nodeid, message = match.groups()
    path, sep, test = nodeid.partition("::")
    nodeid = f"{_basename(path)}{sep}{test}"  # the test file's directories are noise, its name is not
    if not message:  # collection errors carry the reason only in their last ``E`` line
        last = _last_e_line(text, match.start())
        message = last.group(1) if last else ""
    return _make("test", f"pytest {status} {nodeid} - {_mask_message(message)}")
