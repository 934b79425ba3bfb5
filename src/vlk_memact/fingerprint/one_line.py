"""The families recognised by one line, whatever the ecosystem: HTTP statuses, the table of one-line
families (C, databases, pip, npm, network, shell) and a bare exception line without its traceback."""

from __future__ import annotations

import re
from collections.abc import Callable

from .core import Fingerprint, _contains_any, _make, _mask_message
from .line_search import LineLed, _first_match


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
_HTTP_REASON_HINTS = tuple(re.compile(rf"{digit}\d\d [A-Z]") for digit in "45")  # led by a literal
# ``\b[45]\d\d\b`` written as two regexes led by their digit, so that the scan jumps from one 4 (or 5) to the
# next (a leading ``\b`` or a class is tried at every position); their matches cannot overlap (a code never
# follows a word character). Only an error status anchors an error: an access log's ``status: 200`` is not one.
_HTTP_CODES = tuple(re.compile(rf"{digit}(?<!\w{digit})\d\d\b") for digit in "45")
_HTTP_CODE_LEAD = ("45", r"(?<!\w[45])(?=\d\d\b)")  # the dispatcher's gate (one character): no code, no key
_HTTP_BEFORE = re.compile(
    r"(?:\bHTTP/\d(?:\.\d)?\s+|\b(?:HTTP(?: Error)?|[Ss]tatus(?: [Cc]ode)?|[Ee]rror|returned error|response code)[:= ]\s*)$"
)
_HTTP_BEFORE_CUES = ("HTTP", "tatus", "rror", "response code")  # every _HTTP_BEFORE match holds one
_HTTP_AFTER = re.compile(rf"\s+(?:{_REASON_ALT}|Client Error|Server Error)\b")


def _http(text: str, lines: list[str]) -> Fingerprint | None:
    """A status only where it is one: after ``HTTP/1.1``/``status``/``Error`` or before its reason."""
    if not _contains_any(text, _HTTP_CUES) and not any(hint.search(text) for hint in _HTTP_REASON_HINTS):
        return None
    four, five = _HTTP_CODES
    for match in sorted((*four.finditer(text), *five.finditer(text)), key=re.Match.start):
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
_BARE_EXC = LineLed(
    rf"((?:[a-z_]\w*\.)*[A-Z]\w*(?:{'|'.join(_EXC_SUFFIXES)}))"
    r"(?: \[(\w+)\])?(?:: ?([^\n]*))?$"
)
_JS_ONLY = frozenset({"ReferenceError", "RangeError", "URIError", "EvalError", "AggregateError"})
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
