"""The key type of fingerprints and the masking every family uses: volatile tokens out, anchors kept."""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass

from .triggers import Gate, Triggers

#: Bumped whenever the keys change; stored with each fingerprint so that an upgrade can
#: re-fingerprint old rows instead of silently regrouping them. ``group()`` learns from the
#: stored keys without changing them (its version-4 stage 2 reads version-3 keys as they are).
FINGERPRINT_VERSION = 4

_WINDOW = 8192  # chars kept from each end of huge inputs: errors live at the start or the end
_LINE_CAP = 600  # a single line is cut before masking, which bounds the regex work per line
_KEY_CAP = 200


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """The family of an error and its grouping keys (equal keys = the same error)."""

    kind: str
    key: str
    keys: tuple[str, ...]


# --------------------------------------------------------------------------- masking

_DELIM = r"\s,;:()\[\]{}\"'`=<>|‘’“”"
_MONTH = r"\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*"
_WEEKDAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*"
_TLD = (
    r"(?:com|net|org|edu|gov|mil|io|info|biz|local|localdomain|internal|invalid|example|arpa"
    r"|cn|jp|de|uk|kr|tw|hk|br|ru|fr|it|nl|au|ca|es|pl|in|se|ch|us|eu)"
)


# Each class of volatile token is a regex branch, gated by something every match of it holds (a
# substring, or a character and lookarounds: a gate of triggers.py); one scan tests the gates of all
# branches at once. Only the branches whose gate passes are joined into the alternation used for a
# line: one pass, one constant replacement. Every
# branch starts at a delimiter (lookbehind) or a fixed anchor, so the scan stays linear on long
# runs without delimiters. Every branch but the URL (the first) starts after a non-word
# character, so ``_masker`` tests that once per position instead of once per branch, and
# possessive ``*+`` runs skip backtracking that could never match (both change no result).
_PATH_END = r"[^\s'\"()<>\[\]{},;:|`‘’]"
# A token holding a digit is a value (number, id, hash, version, address) unless it is a name or a code.
# A name is identifier-shaped (segments of letters and underscores joined by dots) with one short run of
# digits right after a letter: x1, int32, sha256, Point2D, test_api_v2, base64, fmt.Sprintf2. A run after a
# separator (rdd_42, part-00000), a second run (a3f9c2e1, x86_64) or a longer one (user1234) is an id.
# Codes (E0277, ORA-00942, ERR_SSL_3, TS2304, SC2154) are anchors and stay verbatim.
_CODE = r"(?:[A-Z]{1,4}-?\d{3,5}|[A-Z][A-Z0-9]*_[A-Z0-9_]+)"  # E0277, ORA-00942, ERR_SSL_3
# A location is noise as a whole, file name included (the same error is met in other files): a path-shaped
# token (with a slash, a backslash or a file extension) before ``:line[:col]`` or ``(line[,col])``, any token
# before ``:line:col`` or ``(line,col)``, and Python's ``File "path", line N``.
_DRIVE = r"(?:file://)?(?:/?[A-Za-z]:[\\/])?"
_FILE_CHARS = r"[^\s:'\"()<>\[\]{},;|`]"
_FILE_TOKEN = rf"{_DRIVE}{_FILE_CHARS}++"
_LOCATION = (
    rf"(?<![^\s'\"(\[<])(?:File \"[^\"\n]{{1,300}}\", line \d+"
    # one possessive scan of the token rules out the tokens not followed by :digit or (digit
    rf"|(?=[A-Za-z_./~\\]){_DRIVE}(?={_FILE_CHARS}*+(?:[:(]|:\[)\d)(?:"
    rf"(?=[^\s:'\"()/\\.]*+[/\\.]){_FILE_CHARS}++(?::\d+(?::\d+)?(?=[:\s,)\]]|$)|:?[(\[]\d+(?:,\s*\d+)?[)\]](?=[:\s]|$))"
    rf"|{_FILE_CHARS}++(?::\d+:\d+(?=[:\s,)\]]|$)|\(\d+,\s*\d+\))))"
)
_HEX_BYTES_LEAD = (":", r"(?=[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}:)")  # led by its colon; a clock time has two
_TLD_LEAD = (".", rf"(?={_TLD}\b)")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_BY_DIGIT: Gate = ((), None)  # the value branch: its gate is a digit (``_DIGIT``), not a cue
# What a location needs: a file's last character before ``:digit`` or ``(digit`` (a clock time's digit is no
# file), or ``, line N``. Led by one of ``:(,[`` so that the scan skips from one to the next; it matches that
# character alone (the rest is looked at, not taken), so that the dispatcher's scan can hold it (triggers.py).
_LOCATION_LEAD = (":(,[", r"(?<=[A-Za-z_./\\][:(])(?=\d)|(?<=[A-Za-z_./\\]:\[)(?=\d)|(?<=,)(?= line \d)")
_LOCATION_CUE = re.compile(rf"[:(,\[](?:{_LOCATION_LEAD[1]})")
_NAME_DIGITS = r"(?:[A-Za-z_$]+\.)*[A-Za-z_$]*[A-Za-z]\d{1,3}[A-Za-z_$]*(?:\.[A-Za-z_$]+)*"
_NOT_NAME_OR_CODE = rf"(?!(?:{_CODE}|{_NAME_DIGITS})[.!?]*(?![^{_DELIM}]))"
# The name test runs only on tokens that hold a digit (the lookahead before it fails fast on words).
_DIGIT = re.compile(r"\d")  # what a value needs: most messages of exceptions hold none, and are left as they are
_VALUE = rf"(?<![^{_DELIM}])(?=[^{_DELIM}\d]*+\d){_NOT_NAME_OR_CODE}[^{_DELIM}\d]*+\d[^{_DELIM}]*"
_MASK_BRANCHES: tuple[tuple[Gate, str], ...] = (
    ((("://",), None), r"[A-Za-z][A-Za-z0-9+.-]{0,20}://[^\s'\"<>()\[\]]+"),  # URL
    ((("@",), None), r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+"),  # e-mail
    (((), _LOCATION_LEAD), _LOCATION),  # where a diagnostic points: a file and its line (and column)
    (
        (("/",), None),
        rf"(?<![\w/.~-])(?P<path>(?:~/|\.{{1,2}}/|/){_PATH_END}+"  # absolute path
        # the two relative forms need the token's run of [\w.-] to end at a slash: one possessive scan tests it
        r"|(?=[\w.-]*+/)(?:(?![\w-]+\.[a-z]{2,}/)[\w.-]+/(?:[\w.-]+/)+[\w.-]*"  # >= 2 slashes, not a module path
        r"|[\w-]+/[\w-]*\.[A-Za-z]\w{0,5}\b))",  # dir/file.ext
    ),
    ((("\\",), None), rf"(?<![\w/.~-])(?P<wpath>[A-Za-z]:\\{_PATH_END}+)"),  # Windows path
    (((), _TLD_LEAD), rf"(?<![\w.-])(?:[A-Za-z0-9-]+\.)+{_TLD}(?![\w.-])"),  # host name
    (
        (_MONTHS, None),
        rf"(?<!\w)(?:{_WEEKDAY},?\s+)?{_MONTH}\s+\d{{1,2}}\b(?:,?\s+\d{{4}})?(?:\s+\d{{1,2}}:\d\d(?::\d\d)?)?",
    ),
    (((), _HEX_BYTES_LEAD), r"(?<![\w:])[0-9A-Fa-f]{2}(?::[0-9A-Fa-f]{2}){3,}(?![\w:])"),  # MAC, hex bytes FF:F2:E9:...
    (_BY_DIGIT, _VALUE),  # a token holding a digit that is neither a name nor a code
)

# Log lines that no family recognised carry no anchor of their own, so more general value
# classes apply to them (see the rule table in ``grouping.py``): the value of a ``key=value``
# pair that is quoted or holds punctuation, a number with its unit, an empty value; dot leaders are
# separators. A file name is a name everywhere (version 4; masking it changed no Loghub figure). Error
# codes (``E0277``, ``ORA-00942``) and CONSTANT_CASE codes (``ERR_SSL_3``) stay verbatim: they are anchors.
_LOG_BRANCHES: tuple[tuple[Gate, str], ...] = (
    *_MASK_BRANCHES[:-1],
    # key=value: a quoted value, or one holding punctuation (a.b, a/b, a{b}); a plain word stays
    ((("=",), None), r"(?<=[\w\])]=)(?P<kv>\"[^\"\n]{0,200}\"|'[^'\n]{0,200}'|[\w-]*[^\w\s,;()\[\]<>|\"'=-][^\s,;()<>|\"'=]*)"),
    (_BY_DIGIT, _VALUE),  # digits; names and codes kept
)


_BRANCH_SETS = (_MASK_BRANCHES, _LOG_BRANCHES)
_URL = 0  # the one branch that may start after a word character


@functools.lru_cache(maxsize=1024)
def _masker(which: int, needed: int) -> re.Pattern[str]:
    """The compiled alternation of the branches whose bits are set (at most 2**9 per set, compiled once)."""
    chosen = [i for i in range(len(_BRANCH_SETS[which])) if needed >> i & 1]
    url = [_BRANCH_SETS[which][i][1] for i in chosen if i == _URL]
    rest = [_BRANCH_SETS[which][i][1] for i in chosen if i != _URL]
    if rest:
        url.append(rf"(?<!\w)(?:{'|'.join(rest)})")
    return re.compile("|".join(url))


# One scan for the gates of a branch set (triggers.py); the value branch's gate is a digit.
_GATE_SCANS = tuple(Triggers([gate for gate, _ in branches], limit=None) for branches in _BRANCH_SETS)
_VALUE_BITS = tuple(1 << (len(branches) - 1) for branches in _BRANCH_SETS)
_LAST_IS_VALUE = re.compile(rf"^(?:{_VALUE})|<\*>|[\s'\"]")


_PATH_BITS = 0b11000  # the POSIX and the Windows path branches (both sets start alike)
_CALLBACK_BITS = (_PATH_BITS, _PATH_BITS | 1 << 8)  # and the log set's key=value branch: _path_or_value


def _path_or_value(match: re.Match[str]) -> str:
    """A path keeps its last component when that is not a value itself: directories are noise (another
    checkout, a temp dir, in or out of the repository), the file or module named is not (``ssl.h``).
    The value of an option (``-std=c++17``, ``--max-line-length=100``) is part of the option's name."""
    group = match.lastgroup
    if group == "kv":
        line = match.string
        key = match.start() - 1  # the '='
        while key > 0 and (line[key - 1].isalnum() or line[key - 1] in "_-"):
            key -= 1
        return match.group() if line[key] == "-" else "<*>"
    if group not in ("path", "wpath"):
        return "<*>"
    last = match.group().replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    if not last or last in (".", "..") or _LAST_IS_VALUE.search(last):
        return "<*>"
    return last


def _volatile_sub(text: str, which: int = 0, gates: int | None = None) -> str:
    """Mask ``text`` with the alternation of the branches whose gate may pass on it (a superset of those that
    can match: a branch that matches nowhere changes nothing). ``gates``: their bits, when a scan found them."""
    needed = _GATE_SCANS[which].candidates(text) if gates is None else gates
    if _DIGIT.search(text):
        needed |= _VALUE_BITS[which]
    if not needed:  # no branch can match anywhere
        return text
    if not needed & _CALLBACK_BITS[which]:
        return _masker(which, needed).sub("<*>", text)
    return _masker(which, needed).sub(_path_or_value, text)


_PLACEHOLDER_RUN = re.compile(r"<\*>(?:[\s,;:./#_+-]*<\*>)+")
# Each branch starts with its quote (the "not after a word" test follows it, as ``(?<!\w')``), so the
# scan jumps from quote to quote instead of trying every position.
_QUOTED = re.compile(
    r"'(?<!\w')([^'\n]{0,300})'(?!\w)|\"(?<!\w\")([^\"\n]{0,300})\"(?!\w)|‘([^’\n]{0,300})’|“([^”\n]{0,300})”"
)
_IDENT = re.compile(r"-{0,2}[A-Za-z_$][\w$.:<>\[\]&*,+=-]{0,80}(?:\(\))?")  # a name, a type, an option
_TRAILING_LITERAL = re.compile(r"(:\s*)(b?'[^'\n]*'|b?\"[^\"\n]*\"|-?\d[\w.+-]*)\s*$")
_VALUE_CUE = re.compile(
    r"(?i)\b(?:literal|string|str|value|input|got|received|data|text|content|number|float|int|integer|json)\b"
)
_TYPE_PUNCTUATION = re.compile(r"[<>\[\]{}*&|:;()]")
_MASKED_AS_VALUE = re.compile(r"(?:<\*>)?")
_QUOTES = re.compile(r"['\"`‘’“”]")  # a sentence quoting a name is no value: ``"no item named 'host'"``
_WHOLE_LITERAL = re.compile(r"(?:b?'[^'\n]*'|b?\"[^\"\n]*\"|-?[\d.]+|\(.*\)|\[.*\]|\{.*\})")
# An empty value where a value is printed (``from 1.2.3.4 ()``, ``got []``, ``name=""``): the same slot.
_EMPTY_CUES = ("()", "[]", "{}", '""', "''")
_LOG_SCAN = Triggers([*(gate for gate, _ in _LOG_BRANCHES), (_EMPTY_CUES, None)], limit=None)
_EMPTY_GATE = 1 << len(_LOG_BRANCHES)
_EMPTY_VALUE = re.compile(r"([\s=:])(\(|\[|\{|\"|')(\)|\]|\}|\"|')(?=[\s,;.]|$)")
# A number with its unit is one value: sizes (2.41 KB, 3 GiB) and durations (19.84 seconds, 5 ms).
# A bound on a value (``<1 sec``, ``~3 MB``, ``>=5``) is the same value slot.
_UNITS = r"(?:[KMGTP]i?B|B|bytes?|ms|us|µs|ns|s|secs?|seconds?|mins?|minutes?|h|hours?|days?)(?![\w.])"
_UNIT = re.compile(rf"(?:[<>~≈]=?)?<\*>(?: {_UNITS})?")
# ``_UNIT`` changes a line only where a placeholder has a bound before it or a unit after it.
_UNIT_AFTER = re.compile(rf"<\*> {_UNITS}")
_BOUND_CUES = ("<<*>", "><*>", "~<*>", "≈<*>", "=<*>")
# Dot leaders align a label with its value (``instruction......0``, ``Checking deps.... ok``).
_DOT_LEADER = re.compile(r"\.{3,}")
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029]+")


def _mask(text: str) -> str:
    """Replace volatile tokens by ``<*>``, collapse placeholder runs and squeeze spaces."""
    text = text[:_LINE_CAP]
    masked = _volatile_sub(text)
    if "<*>" in masked:  # else no run to collapse
        masked = _PLACEHOLDER_RUN.sub("<*>", masked)
    return " ".join(masked.split())


def _mask_log(text: str) -> str:
    """``_mask`` for a line without an anchor: ``key=value`` values go too, error codes stay.

    One scan tests the branches' gates and the empty values' cues; it runs before the two edits, which only
    put ``<*>`` between a bracket or a quote and its pair and blank out dot leaders: no gate passes after them
    that did not before (more gates only cost time).
    """
    text = text[:_LINE_CAP]
    gates = _LOG_SCAN.candidates(text)
    if gates & _EMPTY_GATE:
        text = _EMPTY_VALUE.sub(r"\1\2<*>\3", text)
    if "..." in text:
        text = _DOT_LEADER.sub(" ", text)
    masked = _volatile_sub(text, 1, gates & ~_EMPTY_GATE)
    if "<*>" in masked and (_contains_any(masked, _BOUND_CUES) or _UNIT_AFTER.search(masked)):
        masked = _UNIT.sub("<*>", masked)
    if "<*>" in masked:
        masked = _PLACEHOLDER_RUN.sub("<*>", masked)
    return " ".join(masked.split())


def _is_value(inner: str) -> bool:
    """A quoted text that is a value, not a name: a sentence (five words or more and no type punctuation).

    Names, types and options stay, with spaces or digits (``'x1'``, ``'const char *'``, ``'dict[str, Any]'``,
    ``'-std=c++17'``): the masking that follows still takes numbers, paths and ids out of them.
    """
    return inner.count(" ") >= 4 and not _TYPE_PUNCTUATION.search(inner) and not _QUOTES.search(inner)


def _quote_repl(match: re.Match[str]) -> str:
    """Keep quoted names, types and short tokens (the signal); mask quoted sentences (values)."""
    inner = match.group(match.lastindex)  # the one group of the quote's branch
    if not _is_value(inner):
        return match.group(0)
    quote = match.group(0)[0]
    return f"{quote}<*>{quote}" if quote in "'\"" else "<*>"


def _trailing_repl(match: re.Match[str]) -> str:
    """A literal after the last colon is a value, unless it is a quoted name (``argument: 'timeout'``) and
    the words before it do not call it a value (``invalid literal for int(): 'abc'``, ``input string: "x"``)."""
    literal = match.group(2).lstrip("b")
    if literal[:1] in "'\"" and _IDENT.fullmatch(literal[1:-1]):
        before = match.string[max(0, match.start() - 48) : match.start()]
        if not _VALUE_CUE.search(before):
            return match.group(0)
    return f"{match.group(1)}<*>"


def _mask_message(message: str) -> str:
    """Mask an exception or diagnostic message: values go, names and anchors stay."""
    message = message.strip()[:_LINE_CAP]
    if _WHOLE_LITERAL.fullmatch(message):
        inner = message.lstrip("b")
        if inner[:1] not in "'\"" or _is_value(inner[1:-1]) or _MASKED_AS_VALUE.fullmatch(_mask(inner[1:-1])):
            return "<*>"
        return f"{inner[0]}{_mask_message(inner[1:-1])}{inner[0]}"  # ``KeyError: 'host'`` names a key
    if ":" in message:
        message = _TRAILING_LITERAL.sub(_trailing_repl, message)
    if "'" in message or '"' in message or "‘" in message or "“" in message:
        message = _QUOTED.sub(_quote_repl, message)
    return _mask(message)


def _cap(text: str, limit: int) -> str:
    """Cut to ``limit`` chars; a hash of the cut part keeps long distinct texts apart."""
    if len(text) <= limit:
        return text
    digest = hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=4).hexdigest()
    return f"{text[: limit - 10]}~{digest}"


def _make(kind: str, body: str) -> Fingerprint:
    """Build a Fingerprint with a safe, single-line, bounded key.

    Every family emits one key. Adding the output's first or last line as a secondary key
    dropped the corpus's pairwise precision to 0.10 and 0.30 (generic lines such as
    ``exit status 1`` join unrelated errors), and a false merge costs more than a missed loop.
    """
    if body.isprintable():  # then its only blank is the space: clean when no run, no lead or trailing one
        clean = body if "  " not in body and body[:1] != " " and body[-1:] != " " else " ".join(body.split())
    else:
        clean = " ".join(_UNSAFE.sub(" ", body).split())
    key = _cap(f"{kind}:{clean}", _KEY_CAP)
    return Fingerprint(kind, key, (key,))


def _contains_any(text: str, needles: tuple[str, ...]) -> bool:
    """``any(n in text ...)`` without a generator: this runs for every record."""
    for needle in needles:
        if needle in text:
            return True
    return False


def _basename(path: str) -> str:
    """The file name of a POSIX or Windows path: directories are volatile (temp dirs, checkouts)."""
    return path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


_DEGRADED: set[str] = set()  # the places that have logged their fallback in this process


def log_degraded_once(where: str, exc: BaseException) -> None:
    """Say on the log (stderr), once per place and process, that a defect made a fallback replace the real
    result by a hash: silent, it would only show as worse grouping nobody can explain."""
    if where in _DEGRADED:
        return
    _DEGRADED.add(where)
    import logging  # only on this rare path: the fingerprint is imported by every record

    logging.getLogger("vlk_memact.fingerprint").warning(
        "%s: an internal error (%s: %s) made it fall back to a hash of the exact text; texts that meet it "
        "group only when identical. Later occurrences in this process are not logged; please report it.",
        where, type(exc).__name__, str(exc)[:200], exc_info=exc)

