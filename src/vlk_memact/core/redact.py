"""Secret redaction: recognisable credentials in recorded text -> visible placeholders.

Decision: a curated, stdlib-only rule table in this module, not a runtime dependency or a
vendored rule file. ``detect-secrets`` (Yelp) has not released since May 2024, is line-oriented,
returns secret values rather than spans and leans on entropy plugins that flag commit SHAs and
UUIDs; gitleaks' default ``gitleaks.toml`` (MIT, maintained) is Go/RE2 with mid-pattern flags
Python rejects and gets its precision from entropy thresholds and allowlists we would have to
re-implement, and secretlint's preset (MIT) is JavaScript logic rather than data. The vendor
token formats below follow the providers' documented prefixes, cross-checked against those two
public rule sets; precision comes from prefixes, exact lengths and key-name context.

Each rule yields a *span* of secret bytes; everything outside the span (the provider prefix such
as ``sk-ant-``/``AKIA``/``ghp_``, the key name of ``password=``, the user and host of a URL, the
PEM armour lines) is kept and the span becomes ``***REDACTED***``. Spans that already hold the
placeholder are skipped, so ``redact`` is idempotent. The module is pure: no I/O, no network.
A rule's regex is only tried (``match``, never ``search``) where one compiled scan of the lowered
text sees its anchor literal, its quantifiers are possessive or bounded, and a rule resumes after
its own previous match, so the work stays linear. It never raises on a ``str``.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from dataclasses import dataclass

from ..fingerprint.triggers import scan_pattern

__all__ = ["KINDS", "MARKER", "Redaction", "redact"]

MARKER = "***REDACTED***"


@dataclass(frozen=True, slots=True)
class Redaction:
    """The redacted text and what was found in it."""

    text: str
    kinds: tuple[str, ...]  # kinds found, in order of first appearance, deduplicated
    _count: int = 0

    @property
    def count(self) -> int:
        """Number of replacements made."""
        return self._count


Span = tuple[int, int]
Check = Callable[[re.Match[str]], "Span | None"]
Locate = Callable[[str, int], "int | None"]

_TOKEN_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


@dataclass(frozen=True, slots=True)
class _Rule:
    """A rule is tried only where one of its ``anchors`` occurs in the lowered text.

    ``locate`` maps an anchor's index to the index where ``regex.match`` is tried (default: the
    anchor itself, which must not be glued to a preceding character of ``boundary``). Anchoring
    on ``str.find`` hits keeps the work per rule proportional to its anchor's occurrences.
    """

    kind: str
    regex: re.Pattern[str]
    anchors: tuple[str, ...]
    check: Check
    locate: Locate | None = None
    boundary: frozenset[str] = _TOKEN_CHARS


def _has_digit(s: str) -> bool:
    return any(c.isdigit() for c in s)


def _mixed_case(s: str) -> bool:
    return any(c.isupper() for c in s) and any(c.islower() for c in s)


def _secret_span(pred: Callable[[str], bool] | None = None) -> Check:
    """Default check: the ``secret`` group is the span, if it is new and passes ``pred``."""

    def check(m: re.Match[str]) -> Span | None:
        value = m.group("secret")
        if not value or MARKER in value or (pred is not None and not pred(value)):
            return None
        return m.span("secret")

    return check


# --------------------------------------------------------------------------------------------
# Provider tokens with a documented, recognisable prefix: (kind, kept prefix, secret body,
# anchors = the prefix's lower-case spellings, extra predicate on the body).
_NA = r"(?![A-Za-z0-9_-])"  # the token ends here

_PROVIDERS: tuple[tuple[str, str, str, tuple[str, ...], Callable[[str], bool] | None], ...] = (
    ("anthropic-api-key", r"sk-ant-", r"(?:api|admin|oat|sid)\d\d-[A-Za-z0-9_-]{20,}+", ("sk-ant-",), None),
    ("openai-api-key", r"sk-(?!ant-)(?:(?:proj|svcacct|admin|None)-)?", r"[A-Za-z0-9_-]{20,}+", ("sk-",),
     lambda s: _has_digit(s) and _mixed_case(s)),
    ("aws-access-key", r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])", r"[A-Z0-9]{16}",
     ("akia", "asia", "abia", "acca", "a3t"), None),
    ("gcp-api-key", r"AIza", r"[A-Za-z0-9_-]{35}", ("aiza",), None),
    ("gcp-oauth-token", r"ya29\.", r"[A-Za-z0-9_-]{20,}+", ("ya29.",), None),
    ("gcp-oauth-client-secret", r"GOCSPX-", r"[A-Za-z0-9_-]{20,}+", ("gocspx-",), None),
    ("github-token", r"gh[pousr]_", r"[A-Za-z0-9]{36,251}+", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), None),
    ("github-token", r"github_pat_", r"[A-Za-z0-9_]{22,255}+", ("github_pat_",), None),
    ("gitlab-token", r"gl(?:pat|dt|rt|ptt|cbt|ft|soat|imt|agent|oas|ffct)-", r"[A-Za-z0-9_-]{20,}+",
     ("glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "glft-", "glsoat-", "glimt-", "glagent-", "gloas-",
      "glffct-"), None),
    ("slack-token", r"(?:xox[abposre]|xapp)-", r"[A-Za-z0-9-]{10,}+", ("xox", "xapp-"), _has_digit),
    ("stripe-key", r"(?:sk|rk)_(?:live|test)_", r"[A-Za-z0-9]{16,}+",
     ("sk_live_", "sk_test_", "rk_live_", "rk_test_"), None),
    ("stripe-key", r"whsec_", r"[A-Za-z0-9]{24,}+", ("whsec_",), None),
    ("huggingface-token", r"hf_", r"[A-Za-z0-9]{34,40}+", ("hf_",), _mixed_case),
    ("npm-token", r"npm_", r"[A-Za-z0-9]{36}", ("npm_",), None),
    ("pypi-token", r"pypi-", r"AgE[A-Za-z0-9_-]{50,}+", ("pypi-age",), None),
    ("sendgrid-api-key", r"SG\.", r"[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}", ("sg.",), None),
    ("twilio-api-key", r"SK", r"[0-9a-f]{32}", ("sk",), None),
    ("digitalocean-token", r"do[por]_v1_", r"[a-f0-9]{64}", ("dop_v1_", "doo_v1_", "dor_v1_"), None),
    ("shopify-token", r"shp(?:at|ca|pa|ss)_", r"[a-fA-F0-9]{32}",
     ("shpat_", "shpca_", "shppa_", "shpss_"), None),
    ("groq-api-key", r"gsk_", r"[A-Za-z0-9]{52}", ("gsk_",), None),
    ("vault-token", r"hv[sbr]\.", r"[A-Za-z0-9_-]{24,}+", ("hvs.", "hvb.", "hvr."), None),
    ("databricks-token", r"dapi", r"[a-f0-9]{32}(?:-\d)?", ("dapi",), None),
    ("xai-api-key", r"xai-", r"[A-Za-z0-9]{60,}+", ("xai-",), None),
    ("replicate-token", r"r8_", r"[A-Za-z0-9]{37}", ("r8_",), None),
    ("linear-api-key", r"lin_api_", r"[A-Za-z0-9]{32,128}+", ("lin_api_",), None),
    ("grafana-token", r"glc_", r"[A-Za-z0-9+/]{32,}+={0,2}", ("glc_",), None),
    ("grafana-token", r"glsa_", r"[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}", ("glsa_",), None),
    ("sentry-token", r"sntry[su]_", r"[A-Za-z0-9+/=_-]{30,}+", ("sntrys_", "sntryu_"), None),
    ("postman-api-key", r"PMAK-", r"[a-f0-9]{24}-[a-f0-9]{34}", ("pmak-",), None),
    ("atlassian-api-token", r"ATATT3", r"[A-Za-z0-9_=-]{100,}+", ("atatt3",), None),
    ("age-secret-key", r"AGE-SECRET-KEY-1", r"[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
     ("age-secret-key-1",), None),
)


# --------------------------------------------------------------------------------------------
# Structural rules: the secret is recognised by its surroundings.

_PEM = re.compile(
    r"-----BEGIN[ ](?P<label>[A-Z0-9 ]{0,40}?)PRIVATE[ ]KEY(?:[ ]BLOCK)?-----"
    r"(?:(?P<secret>(?:[^*\"'`<>-]|-(?!----))++)-----END[ ](?P=label)PRIVATE[ ]KEY(?:[ ]BLOCK)?-----"
    # a key cut off before its END line (a truncated log): only the base64 lines that follow
    r"|(?P<cut>(?:\r?\n|\\r?\\n|[ \t])*+[A-Za-z0-9+/=]{24,}+"
    r"(?:(?:\r?\n|\\r?\\n)[A-Za-z0-9+/=]{4,}+(?=\r?\n|\\r?\\n|[\"']|$))*+))"
)


def _check_pem(m: re.Match[str]) -> Span | None:
    group = "secret" if m.group("secret") is not None else "cut"
    body = m.group(group)
    if not body.strip() or MARKER in body:
        return None
    return m.span(group)


def _check_basic(m: re.Match[str]) -> Span | None:
    value = m.group("secret")
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None
    return m.span("secret") if b":" in decoded else None


def _back_over(chars: frozenset[str], limit: int) -> Locate:
    """Locate a match start up to ``limit`` characters of ``chars`` before the anchor."""

    def locate(text: str, i: int) -> int | None:
        j = i
        while j > 0 and i - j < limit and text[j - 1] in chars:
            j -= 1
        return j if j < i else None

    return locate


def _fixed_back(n: int, before: str = "") -> Locate:
    def locate(text: str, i: int) -> int | None:
        if i < n or (before and (i == n or text[i - n - 1] not in before)):
            return None
        return i - n

    return locate


_DIGITS = frozenset("0123456789")
_SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_Q = r"\\?[\"'`]?"  # an optional (possibly JSON-escaped) quote
_OP = r"[ \t]{0,3}(?::=|=>|=|:)[ \t]{0,3}"

# (kind, regex tried at the located start, anchors, check, locate, boundary)
_STRUCTURAL: tuple[tuple[str, str, tuple[str, ...], Check, Locate | None, frozenset[str]], ...] = (
    ("private-key", _PEM.pattern, ("-----begin ",), _check_pem, None, frozenset()),
    ("jwt", r"(?P<keep>eyJ)(?P<secret>[A-Za-z0-9_-]{10,}+\.eyJ[A-Za-z0-9_-]{10,}+\.[A-Za-z0-9_-]*+)",
     ("eyj",), _secret_span(), None, _TOKEN_CHARS),
    ("aws-secret-key",
     (rf"(?i)(?P<keep>aws_?secret_?(?:access_?)?key{_Q}{_OP}{_Q})"
     r"(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"),
     ("aws",), _secret_span(), None, _ALNUM),
    ("azure-storage-key", r"(?P<keep>(?:AccountKey|SharedAccessKey)=)(?P<secret>[A-Za-z0-9+/]{20,}+={0,2})",
     ("accountkey=", "sharedaccesskey="), _secret_span(), None, _ALNUM),
    ("azure-sas-signature", r"(?P<keep>sig=)(?P<secret>[A-Za-z0-9%+/=]{20,}+)",
     ("sig=",), _secret_span(), _fixed_back(0, "?&"), frozenset()),
    ("azure-client-secret", r"(?P<secret>[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}+)(?![A-Za-z0-9_~.-])",
     ("q~",), _secret_span(), _fixed_back(4), _TOKEN_CHARS | frozenset("~.")),
    ("telegram-bot-token", r"(?P<keep>\d{8,10}:)(?P<secret>AA[A-Za-z0-9_-]{33})(?![A-Za-z0-9_-])",
     (":aa",), _secret_span(), _back_over(_DIGITS, 10), _DIGITS),
    ("slack-webhook",
     r"(?P<keep>https://hooks\.slack\.com/(?:services|workflows|triggers)/)(?P<secret>[A-Za-z0-9/_-]{20,}+)",
     ("https://hooks.slack.com/",), _secret_span(), None, frozenset()),
    ("discord-webhook",
     (r"(?P<keep>https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d{5,30}/)"
     r"(?P<secret>[A-Za-z0-9_-]{40,}+)"),
     ("https://discord", "https://ptb.discord", "https://canary.discord"), _secret_span(), None, frozenset()),
    ("bearer-token", r"(?P<keep>(?i:bearer)[ \t]+)(?P<secret>[A-Za-z0-9._~+/-]{12,}+=*+)",
     ("bearer",), _secret_span(_has_digit), None, _ALNUM),
    ("basic-auth", r"(?P<keep>(?i:basic)[ \t]+)(?P<secret>[A-Za-z0-9+/]{8,}+={0,2})",
     ("basic",), _check_basic, None, _ALNUM),
    ("authorization-header",
     (rf"(?i)(?P<keep>authorization{_Q}{_OP}{_Q}(?:(?:token|bot|apikey|sso-key|key)[ \t]+)?)"
     r"(?P<secret>[A-Za-z0-9._~+/=:-]{8,}+)"),
     ("authorization",), _secret_span(_has_digit), None, _ALNUM),
    ("url-credentials",
     r"(?P<keep>[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s:/?#@'\"<>]{0,256}:)(?P<secret>[^\s/?#'\"<>]{1,256})@",
     ("://",), _secret_span(), _back_over(_SCHEME_CHARS, 31), _ALNUM),
)


def _build() -> tuple[_Rule, ...]:
    rules = []
    for kind, keep, body, anchors, pred in _PROVIDERS:
        rx = re.compile(rf"(?P<keep>{keep})(?P<secret>{body}){_NA}")
        rules.append(_Rule(kind, rx, anchors, _secret_span(pred)))
    for kind, pattern, anchors, check, locate, boundary in _STRUCTURAL:
        rules.append(_Rule(kind, re.compile(pattern), anchors, check, locate, boundary))
    return tuple(rules)


_RULES = _build()


# --------------------------------------------------------------------------------------------
# Generic key/value rules: a value whose key name ends in a secret-ish word. Found from the
# anchor words with str.find; the key is the run of key characters around the anchor.

_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_KEY_ANCHORS = ("pass", "pwd", "secret", "token", "key", "credential")
_SECRET_SUFFIXES = (
    "password", "passwd", "passphrase", "secret", "token", "apikey", "accesskey", "secretkey", "privatekey",
    "signingkey", "encryptionkey", "masterkey", "authkey", "clientkey", "credential", "credentials",
)
_NOT_SECRET = frozenset({
    "", "null", "none", "nil", "true", "false", "undefined", "redacted", "[redacted]", "<redacted>",
    "[filtered]", "[hidden]", "hidden", "masked", "[masked]", "secret", "password", "token", "required",
    "optional", "string", "str", "bool", "int", "any", "empty", "unset", "yes", "no", "on", "off", "n/a",
})
_KEY_RUN = re.compile(r"[A-Za-z0-9_.-]{0,120}+")
_SEGMENTS = re.compile(r"[_.-]")
_AFTER_KEY = re.compile(
    rf"(?P<op>\\?[\"'`]?{_OP})"
    r"(?:\\?\"(?P<s1>[^\"\\\r\n]++)|\\?'(?P<s2>[^'\\\r\n]++)|`(?P<s3>[^`\r\n]++)"
    r"|(?P<s4>[^\s\"'`,;&<>(){}\[\]\\]++))"
)
_AFTER_FLAG = re.compile(r"[ \t]+(?P<s4>[^\s\"'`-][^\s\"'`]*+)")
_LINE_VALUE = re.compile(r"[^\r\n]*+")
_UNQUOTED_END = re.compile(r"[ \t]+(?:#|[A-Za-z_][A-Za-z0-9_.-]*+=)")


def _key_is_secret(key: str) -> bool:
    """``DB_PASSWORD``, ``authToken``, ``X-Api-Key`` yes; ``max_tokens``, ``PWD``, ``bypass`` no."""
    low = key.lower().strip("_.-")
    norm = "".join(c for c in low if c.isalnum())
    if norm.endswith(_SECRET_SUFFIXES):
        return True
    # "pass"/"pwd" only as a whole segment (DB_PASS, MYSQL_PWD), never bare PWD/OLDPWD (a directory)
    last = _SEGMENTS.split(low)[-1]
    if last in ("pass", "pwd"):
        return low not in ("pwd", "oldpwd") and (low == "pass" or len(low) > len(last))
    return False


def _value_is_secret(value: str) -> bool:
    v = value.strip()
    if not v or MARKER in v or v.lower() in _NOT_SECRET:
        return False
    if v[0] in "$%<{[" or v.startswith(("os.environ", "process.env", "env(", "getenv(", "ENV[", "-----")):
        return False  # a template, a reference to where the secret lives, or a PEM block (its own rule)
    if "://" in v:
        return False  # a URL: credentials inside it are the url-credentials rule's
    return bool(set(v) - set("*xX."))  # "****", "xxxx", "..."


def _secret_looking(value: str) -> bool:
    """For unquoted ``key: value`` text that might be prose ("Unexpected token: punc")."""
    if len(value) < 6:
        return False
    return _has_digit(value) or not value.isalnum() or any(c.isupper() for c in value[1:])


def _match_end(pattern: re.Pattern[str], text: str, pos: int) -> int:
    """End of a match of a pattern that matches the empty string, so it always matches."""
    found = pattern.match(text, pos)
    return pos if found is None else found.end()


def _env_value(text: str, start: int) -> tuple[Span | None, int]:
    """The value of a ``KEY=value`` line (unquoted, without an inline comment) and the line's end."""
    line_end = _match_end(_LINE_VALUE, text, start)
    value = text[start:line_end].rstrip()
    if value[:1] in ("\"", "'"):
        close = value.find(value[0], 1)
        start += 1
        value = value[1:close] if close != -1 else value[1:]
    else:
        cut = _UNQUOTED_END.search(value)  # an inline comment, or the next key=value of a log line
        if cut is not None:
            value = value[: cut.start()]
    if not _value_is_secret(value):
        return None, line_end
    return (start, start + len(value)), line_end


def _at_line_start(text: str, a: int) -> bool:
    """Only blanks, or ``export``, stand between the line start and ``a``."""
    j = a
    while j > 0 and text[j - 1] in " \t":
        j -= 1
    if j >= 6 and text[j - 6 : j] == "export" and j < a:
        j -= 6
        while j > 0 and text[j - 1] in " \t":
            j -= 1
    return j == 0 or text[j - 1] in "\r\n"


_Found = tuple[int, int, str]


def _key_value(text: str, a: int, b: int) -> tuple[_Found | None, int]:
    """The secret span after the key ``text[a:b]`` with its kind (or None), and where the scan ended."""
    key = text[a:b]
    if not _key_is_secret(key):
        return None, b
    m = _AFTER_KEY.match(text, b)
    if m is None:
        if key.startswith("--"):  # a command-line flag: --password hunter2
            f = _AFTER_FLAG.match(text, b)
            if f is not None:
                ok = _value_is_secret(f.group("s4"))
                return ((*f.span("s4"), "secret-flag") if ok else None), f.end()
        return None, b
    op = m.group("op")
    if op.strip(" \t") == "=" and _at_line_start(text, a):  # a .env / shell assignment line
        span, line_end = _env_value(text, m.end("op"))
        return ((*span, "env-secret") if span is not None else None), line_end
    for g in ("s1", "s2", "s3", "s4"):
        value = m.group(g)
        if value is not None:
            break
    else:  # pragma: no cover - the regex always sets one group
        return None, m.end()
    if not _value_is_secret(value):
        return None, m.end()
    quoted_key = (a > 0 and text[a - 1] in "\"'`") or op.lstrip("\\")[:1] in ("\"", "'", "`")
    if op.strip(" \t\\\"'`") == ":" and not quoted_key and g == "s4" and not _secret_looking(value):
        return None, m.end()
    s = m.start(g)
    return (s, s + len(value.rstrip()), "secret-assignment"), m.end()


def _generic(text: str, low: str, out: list[_Found]) -> None:
    """Key/value secrets. Each anchor's scan resumes after the value it last read: linear time."""
    seen: set[int] = set()
    for anchor in _KEY_ANCHORS:
        i = low.find(anchor)
        while i != -1:
            a = i
            while a > 0 and i - a < 80 and text[a - 1] in _KEY_CHARS:
                a -= 1
            b = _match_end(_KEY_RUN, text, i)
            nxt = max(b, i + 1)
            if b not in seen and b - a <= 120:
                seen.add(b)
                found, scan_end = _key_value(text, a, b)
                nxt = max(nxt, scan_end)
                if found is not None and found[0] < found[1]:
                    out.append(found)
            i = low.find(anchor, nxt)


def _triggers() -> tuple[tuple[str, tuple[tuple[str, _Rule], ...]], ...]:
    """Anchors grouped under their first two characters, in the order the rules list them."""
    groups: dict[str, list[tuple[str, _Rule]]] = {}
    for rule in _RULES:
        for anchor in rule.anchors:
            groups.setdefault(anchor[:2], []).append((anchor, rule))
    return tuple((t, tuple(v)) for t, v in groups.items())


_TRIGGERS = _triggers()
_GROUP = {trigger: order for order, (trigger, _) in enumerate(_TRIGGERS)}
# Where any anchor starts, as one trie-shaped regex (a handful of branches tried per position, not every anchor).
_ANCHOR_AT = re.compile(scan_pattern([a for _, entries in _TRIGGERS for a, _ in entries]))
_PRIORITY = {rule: n for n, rule in enumerate(_RULES)}


def _anchor_places(low: str) -> list[tuple[int, int]]:
    """(group, index) of every index where an anchor starts, ordered group by group: the order in which
    rules are tried decides what ``resume`` skips, so it is the order of the anchor table."""
    places = []
    m = _ANCHOR_AT.search(low)
    while m is not None:
        i = m.start()
        places.append((_GROUP[low[i : i + 2]], i))
        m = _ANCHOR_AT.search(low, i + 1)
    places.sort()
    return places


def _candidates(text: str, low: str) -> list[tuple[int, int, str]]:
    """All (start, end, kind) secret spans, in rule-priority order."""
    found: list[tuple[int, int, int, str]] = []
    resume: dict[_Rule, int] = {}  # a rule is not tried again inside its own previous match
    for group, i in _anchor_places(low):
        for anchor, rule in _TRIGGERS[group][1]:
            if not low.startswith(anchor, i):
                continue
            start = i if rule.locate is None else rule.locate(text, i)
            if start is None or start < resume.get(rule, 0):
                continue
            if start > 0 and text[start - 1] in rule.boundary:
                continue
            m = rule.regex.match(text, start)
            if m is not None:
                resume[rule] = m.end()
                span = rule.check(m)
                if span is not None and span[0] < span[1]:
                    found.append((_PRIORITY[rule], span[0], span[1], rule.kind))
    found.sort()
    out = [(s, e, k) for _, s, e, k in found]
    _generic(text, low, out)
    return out


_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def redact(text: str) -> Redaction:
    """Replace recognisable secrets in ``text`` by ``***REDACTED***``, keeping non-secret prefixes."""
    if len(text) < 8:
        return Redaction(text, ())
    low = text.lower()
    if len(low) != len(text):  # a few non-ASCII characters lower-case to two: keep indices aligned
        low = text.translate(_ASCII_LOWER)
    cands = _candidates(text, low)
    if not cands:
        return Redaction(text, ())
    accepted: list[tuple[int, int, str]] = []
    covered = bytearray(len(text))
    for start, end, kind in cands:  # earlier rules win overlaps: provider kinds beat generic ones
        if covered.find(1, start, end) == -1:
            covered[start:end] = b"\x01" * (end - start)
            accepted.append((start, end, kind))
    accepted.sort()
    parts: list[str] = []
    pos = 0
    for start, end, _ in accepted:
        parts.append(text[pos:start])
        parts.append(MARKER)
        pos = end
    parts.append(text[pos:])
    kinds = tuple(dict.fromkeys(kind for _, _, kind in accepted))
    return Redaction("".join(parts), kinds, len(accepted))


#: Every kind ``redact`` can report.
KINDS: tuple[str, ...] = tuple(dict.fromkeys(
    [r.kind for r in _RULES] + ["env-secret", "secret-assignment", "secret-flag"]
))
