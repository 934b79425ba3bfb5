"""Baseline: the prototype's ``fingerprint_log`` (reference spec §6.1), defects included.

Faithful to the reference's order of extractors and its known defects (the generic ``Error:``
shadowing Python, any 100-599 number taken as HTTP, modern Rust panics collapsing to
``panic: (unknown)``, truncation before timestamp stripping, offsets found in case-mapped text
used on the original). Python strings are indexed by character, so the case-mapping defect
yields a wrong slice here instead of the reference's panic: the baseline must not crash the
benchmark.
"""

from __future__ import annotations

import re

_ISO = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?")
_ASCII_DIGITS = re.compile(r"[0-9]*")  # ASCII only, as in the reference
_TIME = re.compile(r"\b\d{2}:\d{2}:\d{2}(\.\d+)?\b")
_JS_KINDS = ("TypeError", "SyntaxError", "ReferenceError", "RangeError", "URIError", "EvalError")
_PY_KINDS = (
    "ValueError",
    "TypeError",
    "KeyError",
    "IndexError",
    "AttributeError",
    "ImportError",
    "ModuleNotFoundError",
    "FileNotFoundError",
    "OSError",
    "RuntimeError",
    "RecursionError",
    "StopIteration",
    "AssertionError",
    "OverflowError",
    "ZeroDivisionError",
    "UnboundLocalError",
    "NameError",
    "SyntaxError",
    "IndentationError",
    "TabError",
    "SystemExit",
    "KeyboardInterrupt",
    "ConnectionError",
    "TimeoutError",
)
_GO_PANICS = (
    ("nil pointer", "panic: nil pointer dereference"),
    ("index out of range", "panic: index out of range"),
    ("close of closed channel", "panic: close of closed channel"),
    ("send on closed channel", "panic: send on closed channel"),
    ("concurrent write", "panic: concurrent map write"),
    ("concurrent map", "panic: concurrent map write"),
)


def strip_timestamps(text: str) -> str:
    return _TIME.sub("[TIME]", _ISO.sub("[TIMESTAMP]", text))


def _first_word_after(text: str, needle: str) -> str:
    rest = text[text.find(needle) + len(needle) :].lstrip()
    rest = rest[1:] if rest.startswith(":") else rest
    words = rest.split()
    return strip_timestamps(words[0]) if words else ""


def _rust_code(t: str) -> str | None:
    start = t.find("error[")
    end = t.find("]", start)
    if start < 0 or end < 0:
        return None
    code = t[start + 6 : end]
    if code.startswith("E") and len(code) >= 5 and code[1:].isascii() and code[1:].isdigit():
        return f"error[{code}]"
    return None


def _typescript_js(t: str) -> str | None:
    i = t.find("TS")
    if i >= 0:
        digits = _ASCII_DIGITS.match(t, i + 2).group(0)  # type: ignore[union-attr]  # [0-9]* always matches
        if len(digits) >= 4:
            return f"TS{digits}"
    for kind in _JS_KINDS:
        if kind in t:
            return f"{kind}: {_first_word_after(t, kind)}"
    if "Error:" in t:
        words = t[t.find("Error:") + 6 :].split()
        return f"Error: {words[0] if words else ''}"
    return None


def _python(t: str, lower: str) -> str | None:
    for name in _PY_KINDS:
        pos = lower.find(name.lower())
        if pos < 0:
            continue
        rest = t[pos + len(name) :].lstrip(" ")  # offset from the lowered text: the defect
        if rest.startswith(":"):
            words = strip_timestamps(rest[1:]).split()[:4]
            return f"{name}: {' '.join(words)}"
    return None


def _panics(t: str, lower: str) -> str | None:
    if "panic:" in lower:
        after = t[t.find(":") + 1 :]
        for needle, key in _GO_PANICS:
            if needle in after:
                return key
        return f"panic: {' '.join(after.split()[:4])}"
    if "fatal error:" in lower:
        return f"fatal error: {' '.join(t[t.find(':') + 1 :].split()[:4])}"
    if "panicked at" in lower or "panicked '" in lower:
        q1 = t.find("'", lower.find("panicked "))
        q2 = t.find("'", q1 + 1) if q1 >= 0 else -1
        return f"panic: {t[q1 + 1 : q2][:60]}" if q1 >= 0 and q2 >= 0 else "panic: (unknown)"
    return None


def _tests(t: str, lower: str) -> str | None:
    if "expected" in lower and ("got" in lower or "but" in lower):
        return f"assert: expected {' '.join(t[lower.find('expected') + 8 :].split()[:6])}"
    if "assertionerror" in lower or "assertion error" in lower:
        i = lower.find("assertion")
        return f"assert: {t[i : i + 60]}"
    if lower.startswith("failed") and "assertion" in lower:
        return "test: failed assertion"
    for needle in ("assertion failed", "assert_eq!", "assert_ne!"):
        i = lower.find(needle)
        if i >= 0:
            return f"assert: {t[i : i + 60]}"
    return None


def _http(t: str) -> str | None:
    words = t.split(" ")
    for j, word in enumerate(words):
        core = re.sub(r"^\D+|\D+$", "", word)
        if len(core) == 3 and core.isascii() and core.isdigit() and 100 <= int(core) <= 599:
            following = [re.sub(r"^[^\w-]+|[^\w-]+$", "", w) for w in words[j + 1 : j + 4]]
            return f"HTTP {core} {strip_timestamps(' '.join(w for w in following if w))}"
    return None


def fingerprint_log(raw: str) -> str:
    t = raw.strip()
    lower = t.lower()
    return (
        _rust_code(t)
        or _typescript_js(t)
        or _python(t, lower)
        or _panics(t, lower)
        or _tests(t, lower)
        or _http(t)
        or strip_timestamps(t[:80]).strip()
    )
