"""The error families: each recognises real output of one ecosystem and extracts its anchors."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from .core import (
    _LINE_CAP,
    Fingerprint,
    _basename,
    _contains_any,
    _make,
    _mask_log,
    _mask_message,
)

_Detector = Callable[[str, list[str]], "Fingerprint | None"]
_LINES_ONE_BY_ONE = 8  # lines holding a needle searched alone before the rest is searched at once


def _line_matches(regex: re.Pattern[str], text: str, needles: tuple[str, ...]) -> Iterator[re.Match[str]]:
    """``regex.finditer(text)`` for a regex whose matches lie within one line and hold one of ``needles``.

    A ``^``-anchored or lookbehind-led regex is tried at every position of the text; a needle is
    found by a fast string search. So the first lines holding a needle are searched one by one, and
    the rest of the text from the next such line on (no match crosses a line, and ``^``, ``$`` and
    ``\\b`` see the same characters around a line as in the whole text). Many lines holding a needle
    thus cost one scan, as before.
    """
    size = len(text)
    ahead = [text.find(needle) for needle in needles]  # each needle's next place (-1: no more)
    for _ in range(_LINES_ONE_BY_ONE):
        at = min((found for found in ahead if found >= 0), default=-1)
        if at < 0:
            return
        end = text.find("\n", at)
        if end < 0:
            end = size
        yield from regex.finditer(text, text.rfind("\n", 0, at) + 1, end)
        for k, found in enumerate(ahead):  # every needle left on this line is past: find its next line
            if 0 <= found <= end:
                ahead[k] = text.find(needles[k], end + 1)
    at = min((found for found in ahead if found >= 0), default=-1)
    if at >= 0:
        yield from regex.finditer(text, text.rfind("\n", 0, at) + 1)


def _first_match(regex: re.Pattern[str], text: str, needles: tuple[str, ...]) -> re.Match[str] | None:
    """``regex.search(text)`` for a regex as in ``_line_matches``."""
    return next(_line_matches(regex, text, needles), None)


# Rust ------------------------------------------------------------------------------
_RUST_CODE = re.compile(r"^error\[(E\d{4,5})\]: ([^\n]*)", re.M)
_RUST_PLAIN = re.compile(
    r"^error: (?!aborting due to|could not compile|test failed|\d+ previous)([^\n]*)\n[ \t]*--> ", re.M
)
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
    if "-->" in text and "error: " in text:
        match = _RUST_PLAIN.search(text)
        if match:
            return _make("rust", f"error: {_keep_code_spans(match.group(1))}")
    if "panicked at" in text:
        match = _RUST_PANIC.search(text)
        if match:
            thread, old, path, nxt = match.groups()
            message = old if old is not None else (nxt or "")
            where = f"[{thread}]" if thread not in ("main", "<unnamed>") else ""
            return _make("rust", f"panic{where}: {_keep_code_spans(message)}@{_basename(path)}")
    return None


# Python ----------------------------------------------------------------------------
_PY_FRAME_AT = re.compile(r'File "([^"\n]{0,500})", line \d+(?:, in ([^\n]{1,200}))?')  # after blanks
_PY_EXC = re.compile(r"((?:[A-Za-z_]\w*\.)*[A-Z]\w*)(?:: ?(.*))?")
_PY_LIBRARY = ("site-packages", "dist-packages", "/lib/python", "\\lib\\", "<frozen", "/usr/lib/")
_PY_BUILTINS = frozenset(
    "ArithmeticError AssertionError AttributeError BlockingIOError BrokenPipeError BufferError "
    "ChildProcessError ConnectionAbortedError ConnectionError ConnectionRefusedError "
    "ConnectionResetError EOFError FileExistsError FileNotFoundError FloatingPointError "
    "GeneratorExit ImportError IndentationError IndexError InterruptedError IsADirectoryError "
    "KeyError KeyboardInterrupt LookupError MemoryError ModuleNotFoundError NameError "
    "NotADirectoryError NotImplementedError OSError OverflowError PermissionError "
    "ProcessLookupError RecursionError ReferenceError RuntimeError StopIteration SystemExit "
    "TabError TimeoutError UnboundLocalError UnicodeDecodeError UnicodeEncodeError UnicodeError "
    "ValueError ZeroDivisionError DeprecationWarning UserWarning".split()
)


_LINE_AFTER = re.compile(r"\n(?=[^ \t\n])")  # a line break before an unindented, non-empty line


def _python_frames(text: str) -> list[re.Match[str]]:
    """The frames of a traceback: ``File "path", line N, in func`` with only blanks before it on its line.

    The regex is led by its literal, so the scan jumps between ``File "``; a ``^[ \t]*``-led one (the
    same matches) is tried at every position of a long traceback.
    """
    frames = []
    for match in _PY_FRAME_AT.finditer(text):
        start = match.start()
        if not text[text.rfind("\n", 0, start) + 1 : start].strip(" \t"):
            frames.append(match)
    return frames


def _python_frame(frames: list[re.Match[str]]) -> str:
    """The innermost in-project frame as ``file.py:function`` (no line numbers)."""
    for frame in reversed(frames):
        if not _contains_any(frame.group(1), _PY_LIBRARY):
            break
    else:  # only library frames: the innermost one
        frame = frames[-1]
    path, func = frame.group(1), frame.group(2)
    return f"{_basename(path)}:{func}" if func else _basename(path)


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


# Linters (flake8 output; the edit tool of SWE-agent lists them under ``ERRORS:``) -------------
_LINT = re.compile(
    r"^(?:- |[^\s:]+:\d+:\d+: )(?:([EFWC]\d{3}) |([A-Z]\w*(?:Warning|Error)): )([^\n]*)$", re.M
)
_FLAKE8_CUE = re.compile(r": [EFWC]")  # one scan led by ": " instead of four substring scans
_LINT_LOCATION = re.compile(r":\d+:\d+: ")  # what a finding line holds unless it starts with "- "
# What every finding holds: its location's ": " or the list's "- " before a code, or its class's end.
_LINT_HOLDS = (": E", ": F", ": W", ": C", "- E", "- F", "- W", "- C", "Warning: ", "Error: ")


def _lint(text: str, lines: list[str]) -> Fingerprint | None:
    """Key on the distinct findings (up to three): together they are the error."""
    if "ERRORS:\n- " not in text and not _FLAKE8_CUE.search(text):
        return None
    if not (text.startswith("- ") or "\n- " in text or _LINT_LOCATION.search(text)):
        return None  # no line can hold a finding
    findings: dict[str, None] = {}
    for m in _line_matches(_LINT, text, _LINT_HOLDS):
        findings[f"{m.group(1) or m.group(2)} {_mask_message(m.group(3))}"] = None
        if len(findings) == 3:  # the key holds the first three distinct findings
            break
    return _make("lint", "; ".join(findings)) if findings else None


# pytest ----------------------------------------------------------------------------
_PYTEST = re.compile(r"^(FAILED|ERROR) (\S+?)(?: - ([^\n]*))?$", re.M)
_PYTEST_E = re.compile(r"^E {2,}(\S[^\n]*)$", re.M)


def _pytest(text: str, lines: list[str]) -> Fingerprint | None:
    """The first ``FAILED``/``ERROR`` summary line: the node id is the anchor."""
    if not (text.startswith(("FAILED ", "ERROR ")) or "\nFAILED " in text or "\nERROR " in text):
        return None  # no summary line
    match = _first_match(_PYTEST, text, ("FAILED ", "ERROR "))
    if not match or ("::" not in match.group(2) and not match.group(2).endswith(".py")):
        return None
    status, nodeid, message = match.groups()
    if not message:  # collection errors carry the reason only in their last ``E`` line
        message = next((m.group(1) for m in reversed(list(_PYTEST_E.finditer(text, 0, match.start())))), "")
    return _make("test", f"pytest {status} {nodeid} - {_mask_message(message)}")


# Go --------------------------------------------------------------------------------
_GO_PANIC = re.compile(r"^(panic|fatal error): ([^\n]*)", re.M)
_GO_RUNTIME = ("runtime.", "testing.", "sync.", "panic(", "internal/", "reflect.")
_GO_FAIL = re.compile(r"^[ \t]*--- FAIL: (\S+)[^\n]*\n((?:[ \t]+[^\n]*\n){0,40})", re.M)
_GO_TESTIFY = re.compile(r"^[ \t]*Error:[ \t]+(\S[^\n]*)", re.M)
_GO_LOCATED = re.compile(r"^[ \t]*[\w./-]+\.go:\d+: ?")
_GO_BUILD = re.compile(r"^(?:\.{0,2}/)?[\w./-]+\.go:\d+(?::\d+)?: ([^\n]+)", re.M)


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
            return f"@{_basename(location.strip().rsplit(':', 1)[0])}:{func}"
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
    """Go panics and fatal errors (with their frame), ``go test`` failures, build errors."""
    if "goroutine " in text:
        match = _GO_PANIC.search(text)
        if match:
            kind, message = match.groups()
            return _make("go", f"{kind}: {_mask_message(message)}{_go_frame(text, match.end())}")
    if "--- FAIL: " in text:
        return _go_test(text)
    if ".go:" in text:
        match = _GO_BUILD.search(text)
        if match:
            return _make("go", _mask_message(match.group(1)))
    return None


# Java ------------------------------------------------------------------------------
_JAVA_HEAD = re.compile(
    r"^(?:Exception in thread \"[^\"\n]*\" |Caused by: )?((?:[a-zA-Z_$][\w$]*\.)+[A-Z][\w$]*)(?:: ?([^\n]*))?"
    r"(?=\n(?:[^\n]*\n){0,8}?[ \t]+at [\w$.<>/]+\()",
    re.M,
)
_JAVA_FRAME = re.compile(r"^[ \t]+at ([\w$.<>/]+)\(", re.M)
_JAVA_LIBRARY = ("java.", "javax.", "jdk.", "sun.", "org.junit.", "junit.", "org.apache.maven.", "kotlin.")
_JAVAC = re.compile(
    r"^[^\n:]*\.java:\d+: error: ([^\n]*)(?:\n(?:[^\n]*\n){0,3}?[ \t]*symbol:[ \t]*([^\n]*))?", re.M
)


def _java(text: str, lines: list[str]) -> Fingerprint | None:
    """javac errors, then JVM exceptions: the root cause and its first in-project frame."""
    if ".java:" in text:
        match = _JAVAC.search(text)
        if match:
            symbol = f" [{_mask_message(match.group(2))}]" if match.group(2) else ""
            return _make("java", f"javac error: {_mask_message(match.group(1))}{symbol}")
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


# TypeScript / JavaScript --------------------------------------------------------------
_TSC = re.compile(r"\berror (TS\d{3,5}): ([^\n]*)")
_JS_FRAME = re.compile(r"^[ \t]+at (?:async )?(?:(\S[^\n(]*?) \(([^\n()]*)\)|([^\n ()]+))[ \t]*$", re.M)
_JS_EXC = re.compile(r"^(?:Uncaught )?((?:[A-Z]\w*)?(?:Error|Exception))(?: \[(\w+)\])?: ([^\n]*)$", re.M)
_JS_LINECOL = re.compile(r":\d+(?::\d+)?$")
_JS_LIBRARY = ("node:", "internal/", "node_modules", "<anonymous>")
_VITEST = re.compile(r"^[ \t]*FAIL +(\S+ > [^\n]+)\n[ \t]*(\S[^\n]*)", re.M)
_JEST = re.compile(r"^[ \t]*● ([^\n]+)\n(?:[ \t]*\n){0,5}[ \t]*(expect\([^\n]*|[A-Z]\w*Error\b[^\n]*)", re.M)


def _js_frame(text: str, start: int) -> str:
    for match in _JS_FRAME.finditer(text, start):
        func, where, bare = match.groups()
        location = where or bare or ""
        if any(lib in location for lib in _JS_LIBRARY):
            continue
        file = _JS_LINECOL.sub("", _basename(location))
        return f"@{file}:{func}" if func else f"@{file}"
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


# One-line families: the first line matching the family's regex is the error ---------------
# fmt: off
_HTTP_REASONS = {
    "400": "Bad Request", "401": "Unauthorized", "402": "Payment Required", "403": "Forbidden",
    "404": "Not Found", "405": "Method Not Allowed", "406": "Not Acceptable",
    "407": "Proxy Authentication Required", "408": "Request Timeout", "409": "Conflict", "410": "Gone",
    "411": "Length Required", "412": "Precondition Failed", "413": "Payload Too Large",
    "414": "URI Too Long", "415": "Unsupported Media Type", "416": "Range Not Satisfiable",
    "417": "Expectation Failed", "418": "I'm a teapot", "421": "Misdirected Request",
    "422": "Unprocessable Entity", "423": "Locked", "424": "Failed Dependency", "425": "Too Early",
    "426": "Upgrade Required", "428": "Precondition Required", "429": "Too Many Requests",
    "431": "Request Header Fields Too Large", "451": "Unavailable For Legal Reasons",
    "500": "Internal Server Error", "501": "Not Implemented", "502": "Bad Gateway",
    "503": "Service Unavailable", "504": "Gateway Timeout", "505": "HTTP Version Not Supported",
    "507": "Insufficient Storage", "508": "Loop Detected", "511": "Network Authentication Required",
    "300": "Multiple Choices", "301": "Moved Permanently", "302": "Found", "303": "See Other",
    "304": "Not Modified", "307": "Temporary Redirect", "308": "Permanent Redirect",
}
# fmt: on
_REASON_ALT = "|".join(sorted({re.escape(r) for r in _HTTP_REASONS.values()}, key=len, reverse=True))
_HTTP_CUES = ("HTTP", "tatus", "rror", "esponse")
_HTTP_REASON_HINT = re.compile(r"[45]\d\d [A-Z]")
# ``\b[45]\d\d\b`` written to start with its digit, so that the scan jumps from 4 or 5 to the next
# (a leading ``\b`` is tried at every position). Only an error status anchors an error: an access
# log's ``status: 200`` is not one.
_HTTP_CODE = re.compile(r"[45](?<!\w[45])\d\d\b")
_HTTP_BEFORE = re.compile(
    r"(?:\bHTTP/\d(?:\.\d)?\s+|\b(?:HTTP(?: Error)?|[Ss]tatus(?: [Cc]ode)?|[Ee]rror|returned error|response code)[:= ]\s*)$"
)
_HTTP_BEFORE_CUES = ("HTTP", "tatus", "rror", "response code")  # every _HTTP_BEFORE match holds one
_HTTP_AFTER = re.compile(rf"\s+(?:{_REASON_ALT}|Client Error|Server Error)\b")


def _http(text: str, lines: list[str]) -> Fingerprint | None:
    """A status only where it is one: after ``HTTP/1.1``/``status``/``Error`` or before its reason."""
    if not _contains_any(text, _HTTP_CUES) and not _HTTP_REASON_HINT.search(text):
        return None
    for match in _HTTP_CODE.finditer(text):
        start, end = match.span()
        code = match.group(0)
        before = max(0, start - 24)
        said_before = _contains_any(text[before:start], _HTTP_BEFORE_CUES) and _HTTP_BEFORE.search(
            text, before, start
        )
        if said_before or (code in _HTTP_REASONS and _HTTP_AFTER.match(text, end)):
            return _make("http", f"{code} {_HTTP_REASONS.get(code, '')}".strip())
    return None


def _first_group(match: re.Match[str]) -> str:
    return _mask_message(match.group(1))


_NPM_DETAIL = re.compile(
    r"^npm (?:ERR!|error) ((?!code |errno |syscall |path |A complete log|Log files|$)[^\n]+)", re.M
)


def _npm_code(match: re.Match[str]) -> str:
    """npm prints ``code X`` and then the message: key on both."""
    detail = _NPM_DETAIL.search(match.string)
    return f"{match.group(1)}: {_mask_message(detail.group(1)) if detail else ''}"


def _curl(match: re.Match[str]) -> str:
    return f"curl: ({match.group(1)}) {_mask_message(match.group(2))}"


def _command(match: re.Match[str]) -> str:
    return f"command not found: {match.group(1) or match.group(2)}"


_C_DIAG = r"^[^\s:][^\n:]*\.(?:c|h|cc|cpp|cxx|hpp|hh|m|mm):\d+(?::\d+)?: ((?:fatal )?error: [^\n]*)"
_PIP_ERROR = r"^ERROR: ((?:Could not|Cannot install|ResolutionImpossible|Invalid requirement|Failed building|Double requirement)[^\n]*)"
# Network errors key on their whole line: the words before the errno say who failed.
_NET_CODES = (
    r"^([^\n]*?\bE(?:CONNREFUSED|CONNRESET|TIMEDOUT|NOTFOUND|AI_AGAIN|HOSTUNREACH|NETUNREACH|PIPE)\b[^\n]*)"
)
_NET_PHRASES = (
    r"^([^\n]*?(?:Connection refused|Connection reset by peer|Connection timed out|Name or service not known"
    r"|Temporary failure in name resolution|Could not resolve host|No route to host|Network is unreachable)[^\n]*)"
)
_NET_CODE_CUES = ("ECONN", "ETIMEDOUT", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "EPIPE")
_NET_PHRASE_CUES = (
    "Connection ",
    "Name or service",
    "name resolution",
    "resolve host",
    "No route",
    "unreachable",
)
_DB_SEVERITY = re.compile(r"^(?:psql:[^\n]*?)?((?:ERROR|FATAL|PANIC):  [^\n]*)", re.M)
# (kind, cheap substrings one of which must be present, regex, body of the key from the match)
_LINE_FAMILIES: tuple[tuple[str, tuple[str, ...], re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    ("c", ("error: ",), re.compile(_C_DIAG, re.M), _first_group),
    ("c", ("undefined reference",), re.compile(r"(undefined reference to [^\n]*)"), _first_group),
    (
        "c",
        ("Assertion",),
        re.compile(r"^[^\n:]*: ([^\n]{0,300}?: Assertion `[^\n]{0,300}' failed\.)", re.M),
        _first_group,
    ),
    ("c", ("Sanitizer",), re.compile(r"ERROR: (\w+Sanitizer: [\w-]+)"), _first_group),
    ("go", ("panic: ",), re.compile(r"^(panic: [^\n]*)", re.M), _first_group),
    ("go", ("fatal error: ",), re.compile(r"^(fatal error: [^\n]*)", re.M), _first_group),
    ("database", ("ERROR:  ",), _DB_SEVERITY, _first_group),
    ("database", ("psql: error",), re.compile(r"^psql: error: ([^\n]*)", re.M), _first_group),
    (
        "database",
        (" error near line ",),
        re.compile(r"^((?:Parse|Runtime) error near line \d+: [^\n]*)", re.M),
        _first_group,
    ),
    (
        "database",
        ("Error: ",),
        re.compile(r"^Error: ((?:in prepare|stepping|near line \d+)[,:] [^\n]*)", re.M),
        _first_group,
    ),
    ("database", ("sqlite",), re.compile(r"(sqlite3?\.\w+Error: [^\n]*)"), _first_group),
    (
        "pip",
        ("ERROR: ",),
        re.compile(r"^ERROR: (No matching distribution found for [^\n]*)", re.M),
        _first_group,
    ),
    ("pip", ("ERROR: ",), re.compile(_PIP_ERROR, re.M), _first_group),
    (
        "pip",
        ("error: ",),
        re.compile(r"^error: ((?:externally-managed-environment|subprocess-exited-with-error)[^\n]*)", re.M),
        _first_group,
    ),
    ("npm", ("npm ",), re.compile(r"^npm (?:ERR!|error) code (\w+)", re.M), _npm_code),
    ("npm", ("npm ",), _NPM_DETAIL, _first_group),
    ("network", ("curl: (",), re.compile(r"curl: \((\d+)\) ([^\n]*)"), _curl),
    ("network", _NET_CODE_CUES, re.compile(_NET_CODES, re.M), _first_group),
    ("network", _NET_PHRASE_CUES, re.compile(_NET_PHRASES, re.M), _first_group),
    (
        "shell",
        ("not found",),
        re.compile(r"(?:^|: )([^\s:]+): (?:command )?not found$|command not found: (\S+)", re.M),
        _command,
    ),
    (
        "shell",
        ("No such file",),
        re.compile(r"^([\w./+-]+: [^\n]*No such file or directory)", re.M),
        _first_group,
    ),
    (
        "shell",
        ("ermission denied",),
        re.compile(r"^([\w./+-]+: [^\n]*[Pp]ermission denied)", re.M),
        _first_group,
    ),
    (
        "shell",
        ("Segmentation fault",),
        re.compile(r"(Segmentation fault(?: +\(core dumped\))?)"),
        _first_group,
    ),
    (
        "shell",
        ("(core dumped)",),
        re.compile(
            r"\b((?:Aborted|Bus error|Illegal instruction|Floating point exception) +\(core dumped\))"
        ),
        _first_group,
    ),
)


# Every family regex matches within one line, and every match holds one of the family's cues, except
# the server's severities: a FATAL line matches once the text holds an ``ERROR:  `` anywhere.
_MATCH_HOLDS = {_DB_SEVERITY: ("ERROR:  ", "FATAL:  ", "PANIC:  ")}
# A regex led by an anchor is tried at every position, so it is run on the lines holding a cue; one
# led by a literal already jumps from one occurrence of it to the next.
_BY_LINE = frozenset(
    regex for _, _, regex, _ in _LINE_FAMILIES if regex.pattern.startswith(("^", "(?:^", "\\b"))
)
# Every family's cues, once each: a fast string search per cue beats one regex alternation of
# them all, whose first letters (e, E, s, n, ...) start a try at most positions of a long output.
_LINE_CUES = tuple(dict.fromkeys(needle for _, needles, _, _ in _LINE_FAMILIES for needle in needles))


def _line_family(text: str, lines: list[str]) -> Fingerprint | None:
    """The one-line families, in table order; one pass over all cues skips most records."""
    present = {cue for cue in _LINE_CUES if cue in text}
    if not present:
        return None
    for kind, needles, regex, body in _LINE_FAMILIES:
        if not present.isdisjoint(needles):
            if regex in _BY_LINE:
                match = _first_match(regex, text, _MATCH_HOLDS.get(regex, needles))
            else:
                match = regex.search(text)
            if match:
                return _make(kind, body(match))
    return None


# Bare exception line (no traceback around it) -------------------------------------------
_EXC_SUFFIXES = ("Error", "Exception", "Warning", "Exit", "Interrupt", "Iteration", "Failure")
_BARE_EXC = re.compile(
    rf"^((?:[a-z_]\w*\.)*[A-Z]\w*(?:{'|'.join(_EXC_SUFFIXES)}))"
    r"(?: \[(\w+)\])?(?:: ?([^\n]*))?$",
    re.M,
)
_JS_ONLY = frozenset({"ReferenceError", "RangeError", "URIError", "EvalError", "AggregateError"})


def _exception_kind(cls: str, code: str | None) -> str:
    """The family of a bare exception class; ``exception`` when Python and JS share the name."""
    if cls in _JS_ONLY or code:
        return "javascript"
    if cls.startswith(("java.", "javax.", "org.", "com.")):
        return "java"
    if cls in _PY_BUILTINS or "." in cls:
        return "python"
    return "exception"


def _bare_exception(text: str, lines: list[str]) -> Fingerprint | None:
    """An ``XxxError: message`` line without a traceback; its family comes from the class."""
    if not _contains_any(text, _EXC_SUFFIXES):
        return None
    match = _BARE_EXC.search(text)
    if not match:
        return None
    cls, code, message = match.groups()
    anchor = f"{cls} [{code}]" if code else cls
    return _make(_exception_kind(cls, code), f"{anchor}: {_mask_message(message or '')}")


# Exit codes: only meaningful together with the line that explains them ---------------------
_EXIT = re.compile(
    r"(?:exit(?:ed with)? (?:status|code)|returned non-zero exit status|Error) (\d{1,3})\b",
    re.I,
)
_ERROR_WORD = re.compile(
    r"\b(?:error|errors|fail|failed|failure|fatal|exception|panic|panicked|traceback|denied|refused"
    r"|not found|cannot|can't|unable|invalid|timed? ?out|abort(?:ed)?|missing|undefined|unknown)\b",
    re.I,
)


# Every word of ``_ERROR_WORD`` starts with one of these (ignoring case): a case-insensitive regex led
# by ``\b`` is tried at every position, a fast string search finds where the first one could start.
_ERROR_STEMS = (
    "error", "fail", "fatal", "exception", "panic", "traceback", "denied", "refused", "not found",
    "cannot", "can't", "unable", "invalid", "time", "abort", "missing", "undefined", "unknown",
)  # fmt: skip
_EXIT_STEMS = ("exit", "error")  # every _EXIT match holds one of them (ignoring case)


def _first_stem(text: str, stems: tuple[str, ...]) -> int:
    """Where the first of ``stems`` starts in ``text``, ignoring case; -1 when none; 0 when not ASCII.

    Only ASCII text is searched (``lower()`` keeps its length and ``re.I`` folds nothing else in it);
    other text gets 0, a place no later than any match.
    """
    if not text.isascii():
        return 0
    lower = text.lower()
    first = -1
    for stem in stems:
        found = lower.find(stem) if first < 0 else lower.find(stem, 0, first + len(stem) - 1)  # only before
        if found >= 0:
            first = found
    return first


def _informative_line(lines: list[str]) -> str:
    """The line most likely to name the error: an error word that is not an exit-status line."""
    nonempty = [ln for ln in lines if ln.strip()]
    if len(nonempty) == 1:
        return nonempty[0][:_LINE_CAP]
    cuts = [line[:_LINE_CAP] for line in nonempty]
    # One search over the joined lines finds the next line with an error word: neither regex can
    # match across a line break, and a break is a non-word character like the end of a line.
    joined = "\n".join(cuts)
    first = _first_stem(joined, _ERROR_STEMS)
    found = _ERROR_WORD.search(joined, first) if first >= 0 else None
    while found:
        begin = joined.rfind("\n", 0, found.start()) + 1
        end = joined.find("\n", found.start())
        cut = joined[begin:] if end < 0 else joined[begin:end]
        if not _EXIT.search(cut):
            return cut
        found = _ERROR_WORD.search(joined, end + 1) if end >= 0 else None
    for cut in reversed(cuts):
        if not _EXIT.search(cut):
            return cut
    return cuts[-1] if cuts else ""


def _exit_code(text: str, lines: list[str]) -> Fingerprint | None:
    """A non-zero exit status, keyed with the line that explains it (alone it joins anything)."""
    if "xit" not in text and "Error " not in text and "exit" not in text:
        return None
    if sum(1 for line in lines if line.strip()) < 2:
        return None
    if _first_stem(text, _EXIT_STEMS) < 0:
        return None  # no line can hold an exit status: skip the case-insensitive scan of every line
    for line in reversed(lines):
        match = _EXIT.search(line[:_LINE_CAP])
        if match:
            return _make("shell", f"exit {match.group(1)}: {_mask_log(_informative_line(lines))}")
    return None


def _fallback(text: str, lines: list[str]) -> Fingerprint:
    """No family recognised: the masked most informative line."""
    return _make("fallback", _mask_log(_informative_line(lines)))


_DETECTORS: tuple[_Detector, ...] = (
    _rust,
    _lint,
    _pytest,
    _python,
    _go,
    _java,
    _typescript,
    _js_test,
    _javascript,
    _http,
    _line_family,
    _bare_exception,
    _exit_code,
)
