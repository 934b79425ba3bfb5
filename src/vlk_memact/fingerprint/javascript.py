"""The JavaScript and TypeScript families: tsc errors, Jest and Vitest failures, Node exceptions."""

from __future__ import annotations

import re

from .core import Fingerprint, _make, _mask_message
from .line_search import LineLed


# TypeScript / JavaScript --------------------------------------------------------------
_TSC = re.compile(r"\berror (TS\d{3,5}): ([^\n]*)")
_JS_FRAME = LineLed(r"[ \t]+at (?:async )?(?:(\S[^\n(]*?) \(([^\n()]*)\)|([^\n ()]+))[ \t]*$")
_JS_EXC_HOLDS = ("Error: ", "Exception: ", "Error [", "Exception [")  # what a _JS_EXC line holds
_JS_EXC = LineLed(r"(?:Uncaught )?((?:[A-Z]\w*)?(?:Error|Exception))(?: \[(\w+)\])?: ([^\n]*)$")
_JS_LIBRARY = ("node:", "internal/", "node_modules", "<anonymous>")
_VITEST = re.compile(r"^[ \t]*FAIL +(\S+ > [^\n]+)\n[ \t]*(\S[^\n]*)", re.M)
_JEST = re.compile(r"^[ \t]*● ([^\n]+)\n(?:[ \t]*\n){0,5}[ \t]*(expect\([^\n]*|[A-Z]\w*Error\b[^\n]*)", re.M)


def _js_frame(text: str, start: int) -> str:
    for match in _JS_FRAME.finditer(text, start):
        func, where, bare = match.groups()
        location = where or bare or ""
        if any(lib in location for lib in _JS_LIBRARY):
            continue
        return f"@{func}" if func else ""  # ``at path:line:col`` is a location: noise
    return ""


def _typescript(text: str, lines: list[str]) -> Fingerprint | None:
    """tsc diagnostics, anchored on ``error TSnnnn:`` (never a bare ``TS`` substring)."""
    if "error TS" not in text:
        return None
    match = _TSC.search(text)
    return _make("typescript", f"{match.group(1)}: {_mask_message(match.group(2))}") if match else None


def _js_test(text: str, lines: list[str]) -> Fingerprint | None:
    """Jest (``● name`` then the matcher) and Vitest (``FAIL file > name`` then the error)."""
    if "●" in text:
        match = _JEST.search(text)
        if match:
            return _make("test", f"jest ● {match.group(1).strip()}: {_mask_message(match.group(2))}")
    if "FAIL " in text and " > " in text:
        match = _VITEST.search(text)
        if match:
            return _make("test", f"vitest {match.group(1).strip()}: {_mask_message(match.group(2))}")
    return None


def _javascript(text: str, lines: list[str]) -> Fingerprint | None:
    """Node errors: only with V8 ``at`` frames or Node's footer, which tells them from Python's."""
    if " at " not in text and "Node.js v" not in text:
        return None
    if not _JS_FRAME.search(text) and "Node.js v" not in text:
        return None
    match = _JS_EXC.search(text)
    if not match:
        return None
    cls, code, message = match.groups()
    anchor = f"{cls} [{code}]" if code else cls
    return _make("javascript", f"{anchor}: {_mask_message(message)}{_js_frame(text, match.end())}")
