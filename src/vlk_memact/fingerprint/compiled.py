"""The families of compiled languages with structured diagnostics: rustc and panics, Go, javac and the JVM.

(C and C++ print one-line diagnostics: they are rows of the table in ``one_line.py``.)
"""

from __future__ import annotations

import re

from .core import Fingerprint, _basename, _make, _mask_message


# Rust ------------------------------------------------------------------------------
_RUST_CODE = re.compile(r"^error\[(E\d{4,5})\]: ([^\n]*)", re.M)
_RUST_PLAIN = re.compile(
    r"^error: (?!aborting due to|could not compile|test failed|\d+ previous)([^\n]*)\n[ \t]*--> ", re.M
)
_RUST_WARNING = re.compile(r"^warning: ([^\n]*)\n[ \t]*--> ", re.M)
_RUST_NEXT_DIAGNOSTIC = re.compile(r"\n(?=error|warning)")
_RUST_LABEL = re.compile(r"^[ \t]*(?:\d+[ \t]*)?\|[ \t|_.-]*\^[\^-]*[ \t]+([^\n]+)$", re.M)
_RUST_PANIC = re.compile(
    r"thread '([^'\n]{0,200})'(?: \(\d+\))? panicked at "
    r"(?:'([^\n]{0,500}?)', )?([^\n:]{1,300}):\d+:\d+:?[ \t]*(?:\n([^\n]*))?"
)


def _keep_code_spans(message: str) -> str:
    """Mask a rustc message but keep its backticked names and types verbatim."""
    parts = message.split("`")
    for i in range(0, len(parts), 2):
        masked = _mask_message(parts[i])
        lead = " " if parts[i][:1].isspace() else ""
        tail = " " if parts[i][-1:].isspace() and masked else ""
        parts[i] = f"{lead}{masked}{tail}"
    return "`".join(parts)


def _rust_label(text: str, start: int) -> str:
    """The primary label under the carets (``expected `i32`, found `&str```) of one diagnostic."""
    block = _RUST_NEXT_DIAGNOSTIC.split(text[start : start + 2000], maxsplit=1)[0]
    label = _RUST_LABEL.search(block)
    return f" ({_keep_code_spans(label.group(1))})" if label else ""


def _rust(text: str, lines: list[str]) -> Fingerprint | None:
    """rustc diagnostics (code + message + primary label) and test/binary panics."""
    if "error[E" in text:
        match = _RUST_CODE.search(text)
        if match:
            message = _keep_code_spans(match.group(2))
            return _make("rust", f"error[{match.group(1)}]: {message}{_rust_label(text, match.end())}")
    if "-->" in text:  # a located diagnostic (one search for both tests)
        if "error: " in text:
            match = _RUST_PLAIN.search(text)
            if match:
                return _make("rust", f"error: {_keep_code_spans(match.group(1))}")
        if "warning: " in text:  # warnings only (clippy, unused code): the first located one
            match = _RUST_WARNING.search(text)
            if match:
                return _make("rust", f"warning: {_keep_code_spans(match.group(1))}")
    if "panicked at" in text:
        match = _RUST_PANIC.search(text)
        if match:
            thread, old, path, nxt = match.groups()
            message = old if old is not None else (nxt or "")
            where = f"[{thread}]" if thread not in ("main", "<unnamed>") else ""
            return _make("rust", f"panic{where}: {_keep_code_spans(message)}@{_basename(path)}")
    return None


# Go --------------------------------------------------------------------------------
_GO_PANIC = re.compile(r"^(panic|fatal error): ([^\n]*)", re.M)
_GO_RUNTIME = ("runtime.", "testing.", "sync.", "panic(", "internal/", "reflect.")
_GO_FAIL = re.compile(r"^[ \t]*--- FAIL: (\S+)[^\n]*\n((?:[ \t]+[^\n]*\n){0,40})", re.M)
_GO_TESTIFY = re.compile(r"^[ \t]*Error:[ \t]+(\S[^\n]*)", re.M)
_GO_LOCATED = re.compile(r"^[ \t]*[\w./-]+\.go:\d+: ?")


def _go_frame(text: str, start: int) -> str:
    """The innermost non-runtime frame: a ``pkg.func(args)`` line above a ``\tfile.go:L`` line."""
    lines = text[start : start + 4000].split("\n")
    for call, location in zip(lines, lines[1:], strict=False):
        func = call.rsplit("(", 1)[0] if call.endswith(")") else ""
        if (
            "." in func
            and location.startswith("\t")
            and ".go:" in location
            and not func.startswith(_GO_RUNTIME)
        ):
            return f"@{func}"  # its file and line are a location: noise
    return ""


def _go_test(text: str) -> Fingerprint | None:
    """``--- FAIL: TestX`` and its first message (testify's ``Error:`` line when present)."""
    match = _GO_FAIL.search(text)
    if not match:
        return None
    name, body = match.groups()
    testify = _GO_TESTIFY.search(body)
    if testify:
        detail = testify.group(1)
    else:
        detail = next((_GO_LOCATED.sub("", ln) for ln in body.splitlines() if ln.strip()), "")
    return _make("go", f"--- FAIL: {name}: {_mask_message(detail)}")


def _go(text: str, lines: list[str]) -> Fingerprint | None:
    """Go panics and fatal errors (with their frame), ``go test`` failures."""
    if "goroutine " in text:
        match = _GO_PANIC.search(text)
        if match:
            kind, message = match.groups()
            return _make("go", f"{kind}: {_mask_message(message)}{_go_frame(text, match.end())}")
    if "--- FAIL: " in text:
        return _go_test(text)
    return None  # build errors are located diagnostics (located.py)


# Java ------------------------------------------------------------------------------
_JAVA_HEAD = re.compile(
    r"^(?:Exception in thread \"[^\"\n]*\" |Caused by: )?((?:[a-zA-Z_$][\w$]*\.)+[A-Z][\w$]*)(?:: ?([^\n]*))?"
    r"(?=\n(?:[^\n]*\n){0,8}?[ \t]+at [\w$.<>/]+\()",
    re.M,
)
_JAVA_FRAME = re.compile(r"^[ \t]+at ([\w$.<>/]+)\(", re.M)
_JAVA_LIBRARY = ("java.", "javax.", "jdk.", "sun.", "org.junit.", "junit.", "org.apache.maven.", "kotlin.")


def _java(text: str, lines: list[str]) -> Fingerprint | None:
    """JVM exceptions: the root cause and its first in-project frame (javac's errors are located diagnostics)."""
    if "\tat " not in text and "    at " not in text:
        return None
    heads = list(_JAVA_HEAD.finditer(text))
    if not heads:
        return None
    root = heads[-1]  # the last "Caused by" is the root cause
    frames = _JAVA_FRAME.findall(text, root.end())
    own = next((f for f in frames if not f.startswith(_JAVA_LIBRARY)), frames[0] if frames else "")
    where = f"@{own.rsplit('.', 2)[-2]}.{own.rsplit('.', 1)[-1]}" if "." in own else f"@{own}"
    return _make("java", f"{root.group(1)}: {_mask_message(root.group(2) or '')}{where}")
