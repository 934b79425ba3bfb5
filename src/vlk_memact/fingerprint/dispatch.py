"""``fingerprint(text)``: normalise the output, then the first family that recognises it makes the key.

Only the families whose gate passes are tried (``triggers.py``): a gate is a family's own first test, so the
first family that recognises the text is the same.

The order of ``_DETECTORS`` decides which family wins when several could read the same output
(a Node error may name an HTTP status, a Python traceback a non-zero exit status): keep it when adding one.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

from .compiled import _go, _java, _rust
from .core import _LOCATION_LEAD, _WINDOW, Fingerprint, log_degraded_once
from .javascript import _JS_EXC_HOLDS, _javascript, _js_test, _typescript
from .last_resort import _exit_code, _fallback
from .located import _located
from .one_line import (
    _EXC_SUFFIXES,
    _HTTP_CODE_LEAD,
    _LINE_CUES,
    _bare_exception,
    _http,
    _line_family,
)
from .python import _LINT_STARTS, _lint, _pytest, _python
from .triggers import Gate, Triggers

_Detector = Callable[[str, list[str]], "Fingerprint | None"]
# Each detector with its gate: cues one of which every text it recognises holds, or a lead (a character and
# lookarounds) that every such text holds: a test the detector's result needs (``triggers.py``).
_GATED: tuple[tuple[_Detector, Gate], ...] = (
    (_rust, (("error[E", "-->", "panicked at"), None)),
    (_lint, (("ERRORS:\n- ", *_LINT_STARTS), None)),
    (_pytest, (("FAILED ", "ERROR "), None)),
    (_python, (('File "',), None)),
    (_go, (("goroutine ", "--- FAIL: "), None)),
    (_located, ((), _LOCATION_LEAD)),
    (_java, (("\tat ", "    at "), None)),
    (_typescript, (("error TS",), None)),
    (_js_test, (("●", "FAIL "), None)),
    (_javascript, (_JS_EXC_HOLDS, None)),
    (_http, ((), _HTTP_CODE_LEAD)),
    (_line_family, (_LINE_CUES, None)),
    (_bare_exception, (_EXC_SUFFIXES, None)),
    (_exit_code, (("xit", "Error ", "exit"), None)),
)
_DETECTORS: tuple[_Detector, ...] = tuple(detect for detect, _ in _GATED)
_TRIGGERS = Triggers([gate for _, gate in _GATED])
_PLANS: dict[int, tuple[_Detector, ...]] = {}  # the detectors of each set of candidates, in order


def _plan(candidates: int) -> tuple[_Detector, ...]:
    plan = _PLANS.get(candidates)
    if plan is None:
        plan = _PLANS[candidates] = tuple(d for i, d in enumerate(_DETECTORS) if candidates >> i & 1)
    return plan

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
    for detect in _plan(_TRIGGERS.candidates(window)):
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
