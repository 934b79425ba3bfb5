"""``fingerprint(text)``: normalise the output, then the first family that recognises it makes the key.

The order of ``_DETECTORS`` decides which family wins when several could read the same output
(a Node error may name an HTTP status, a Python traceback a non-zero exit status): keep it when adding one.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

from .compiled import _go, _java, _rust
from .core import _WINDOW, Fingerprint, log_degraded_once
from .javascript import _javascript, _js_test, _typescript
from .last_resort import _exit_code, _fallback
from .located import _located
from .one_line import _bare_exception, _http, _line_family
from .python import _lint, _pytest, _python

_Detector = Callable[[str, list[str]], "Fingerprint | None"]
_DETECTORS: tuple[_Detector, ...] = (
    _rust,
    _lint,
    _pytest,
    _python,
    _go,
    _located,
    _java,
    _typescript,
    _js_test,
    _javascript,
    _http,
    _line_family,
    _bare_exception,
    _exit_code,
)

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_EMPTY = Fingerprint("empty", "empty:", ("empty:",))


def _window(text: str) -> str:
    """Bound the work on huge inputs: errors are announced at the start or summarised at the end."""
    if len(text) <= 2 * _WINDOW:
        return text
    return f"{text[:_WINDOW]}\n{text[-_WINDOW:]}"


def _fingerprint(text: str) -> Fingerprint:
    """Normalise line ends and colours, then the first family that recognises the text wins."""
    window = _window(text)
    if "\r" in window:  # progress bars redraw with \r
        window = window.replace("\r\n", "\n").replace("\r", "\n")
    if "\x1b" in window:  # colour codes split words and hide line starts (pytest, cargo, npm)
        window = _ANSI.sub("", window)
    if not window or window.isspace():
        return _EMPTY
    lines = window.split("\n")
    for detect in _DETECTORS:
        found = detect(window, lines)
        if found is not None:
            return found
    return _fallback(window, lines)


def fingerprint(text: str) -> Fingerprint:
    """Fingerprint raw tool output. Never raises: a stored log must not crash its reader."""
    try:
        return _fingerprint(text)
    except Exception as exc:  # a defect here must degrade grouping, never crash the server (spec defect 10)
        log_degraded_once("fingerprint()", exc)
        digest = hashlib.blake2b(str(text).encode("utf-8", "replace"), digest_size=8).hexdigest()
        return Fingerprint("fallback", f"fallback:unparsed {digest}", (f"fallback:unparsed {digest}",))
