"""Error fingerprints: raw tool output -> a grouping key that survives volatile noise.

Two outputs are "the same error" when their keys are equal. The recipe, measured in
``fingerprinting-notes.md``: recognise the error family from real tool output, extract its
anchors first (error codes, exception classes, test names, HTTP statuses) and keep them
verbatim, then mask the volatile rest of the message (timestamps, ids, numbers, paths,
addresses) so a changed line number, temp dir or pid does not split the group.

``group(texts)`` turns a session's outputs into group labels: equal keys, then the token positions
the batch itself shows to be parameters among lines no family recognised (``grouping.py``); the loop
detector runs exactly it.

The module is pure and stdlib-only. It never raises on any ``str`` and its work is bounded:
only a head and a tail window of the input are looked at and every regex is linear-time.
May import nothing of the package but itself: the core (loops) and the engine build on it.
"""

from __future__ import annotations

import hashlib
import re

from .core import (
    _WINDOW,
    FINGERPRINT_VERSION,
    Fingerprint,
)
from .families import (
    _DETECTORS,
    _fallback,
)

__all__ = ["FINGERPRINT_VERSION", "Fingerprint", "fingerprint", "group"]

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
    except Exception:  # a defect here must degrade grouping, never crash the server (spec defect 10)
        digest = hashlib.blake2b(str(text).encode("utf-8", "replace"), digest_size=8).hexdigest()
        return Fingerprint("fallback", f"fallback:unparsed {digest}", (f"fallback:unparsed {digest}",))


from .grouping import group  # noqa: E402  (group() calls fingerprint(), defined above)
