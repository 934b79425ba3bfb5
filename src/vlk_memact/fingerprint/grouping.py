"""Group a session's outputs: equal keys first, then token positions the batch shows to be parameters.

``group(texts)`` is what the loop detector applies to a session's PRESENT slots and what
``bench/grouping.py`` measures. Stage 1 joins records that share their exact text or a
fingerprint key (union-find). Stage 2 handles what no mask can: a word that is a parameter (a
user, host, service or process name). It learns which positions vary from the records themselves,
not from rules per log format: among records that no family recognised (kind ``fallback``: no
error code, exception class or HTTP status anchors them) whose masked keys have the same number of
tokens, a position is a parameter for the records that agree on every other position when they
show at least ``VARIANTS`` different values there and the positions they agree on hold at least
``AGREE`` tokens that are not placeholders (evidence of a shared template, not of a shared header).
The found position becomes a wildcard in their template and the pass repeats, so a template with
two parameters is learned one position at a time (the idea of Brain's longest common pattern and
of Logram's n-gram counts, in its simplest exact form: a parameter is what varies while the rest is
the same).

Precision guards, each a reason two records are different errors whatever the batch says: a
position never becomes a parameter when one of its values is an anchor (error code, exception
class, errno or signal name, CONSTANT_CASE code, log severity, the digest of a key's cut tail) or a
name (quoted or backticked, snake_case, camelCase, dotted, ``::``-joined, called, a digit beside a
letter: a plain word such as a user name still can be one);
records of different length never join; anchored records join only by equal keys; and when
``KEY_FIELDS`` is on, plain words of one ``key=`` field are categories (``user=root``/``user=guest``),
not parameters. Two records that differ in one word never join on their own: it takes
``VARIANTS`` different values agreeing elsewhere. ``VARIANTS``, ``AGREE`` and ``KEY_FIELDS`` were
chosen leave-one-system-out on the eight development log sets (``bench/grouping.py``); one
parameter set serves every input.

General value classes and the independent sources that justify each. No rule is written for one
source: "dev" counts loghub-dev Content lines holding the class, "agent" the failed steps of
trajectories-dev holding it (of 307), "corpus" tests/data/fingerprint_corpus.jsonl.

| class (rule, where)                                  | sources                                              |
|------------------------------------------------------|------------------------------------------------------|
| URL, e-mail (all)                                    | dev Hadoop 6, Linux 1; corpus pip, npm, curl          |
| absolute, relative, Windows path (all)               | dev Apache 601, HDFS 378, BGL 100; corpus, agent      |
| host name with a public suffix (all)                 | dev Linux, Hadoop; corpus curl                        |
| month-day date, clock time (all)                     | raw lines of Linux, Apache, Zookeeper; corpus logs    |
| token holding a digit: numbers, ids, hex, IPs,       | all 8 dev systems; corpus (ports, pids, lines); agent |
| versions, clock values (all)                         |                                                      |
| run of values ``<*> <*>, <*>`` -> one (all)           | dev HealthApp 409, BGL 7 (number lists); agent        |
| ``key=value`` value, quoted or punctuated (log);     | dev Linux 491, BGL 43, HealthApp 23; agent 80         |
| an option's value (``-std=c++17``) is kept           | compiler and linter options (bench/diagnostics.py)    |
| location ``path:line:col``, ``path(line,col)``,      | compilers and linters of bench/diagnostics.py; agent  |
| ``File "path", line N``, ``path:[l,c]`` (all)        |                                                      |
| MAC, hex bytes ``FF:F2:9F:16`` (all)                  | dev BGL                                              |
| number with a unit: sizes, durations (log)           | dev Spark 487, Hadoop 327, Zookeeper 40; agent 18     |
| bound on a value ``<1 sec``, ``time<1ms`` (log)      | Proxifier and Windows ``ping`` output formats          |
| empty value ``()``, ``[]``, ``""`` (log)             | dev Linux 617; agent 63 (``got []``)                  |
| dot leader ``label.....value`` is a separator (log)  | dev BGL 79; agent 26; autoconf ``checking x... yes``  |
| word parameter: varies where the rest agrees (st. 2) | learned per batch; user, host, service names           |
| kept verbatim: error codes, exception classes,       | corpus (rustc, tsc, flake8, errno, JS codes); Oracle  |
| errno, CONSTANT_CASE, severities (anchors)           | ``ORA-``, Windows ``CBS_E_*``, raw lines' levels       |
| kept verbatim: names (version 4): quoted or           | bench/diagnostics.py (the rules were chosen on six    |
| backticked names and types, identifiers with a short | tools, held out on twenty-two); never a stage-2       |
| digit run (``x1``, ``int32``), file names, a path's  | parameter (``_is_name``)                              |
| file name (its directories are noise)                |                                                      |

"all" = every family's message masking; "log" = lines no family recognised (``_mask_log``).
Version 4 dropped the file-name class (``name.ext`` masked in log lines): a file name is a name, and
masking it changed no Loghub figure.
Rules removed in version 3 because one source motivated them: `` ()`` read as a value only after
a space (Linux ftpd; now the general empty-value class), and HTTP 1xx-3xx statuses as error
anchors (an access log's ``status: 200`` is not an error; the http family keeps 4xx and 5xx).
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Sequence

from .dispatch import fingerprint as _fingerprint_text
from .core import _CODE, Fingerprint, log_degraded_once

#: Different values a position must show, among records that agree elsewhere, to be a parameter.
VARIANTS = 3
#: Non-placeholder tokens the records must agree on besides that position.
AGREE = 4
#: Plain words after one ``key=`` are categories, never parameters.
KEY_FIELDS = True
#: Passes over the positions of one length (each pass can turn one more position into a wildcard).
_ROUNDS = 4

_VARYING_KINDS = frozenset({"fallback"})
_ANCHOR_TOKEN = re.compile(  # the codes _mask_log keeps verbatim, exception classes, errno/signal names, severities
    rf"(?<![\w$])(?:{_CODE}|[A-Z]\w*(?:Error|Exception|Warning)|E[A-Z]{{3,}}|SIG[A-Z]{{2,}}"
    r"|TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|SEVERE|CRITICAL|FATAL|ALERT|EMERG)"
    r"(?![\w$])"
)
# Names are never parameters, however many of them the batch shows: quotes, an inner underscore, an inner
# capital after a lowercase letter, a dot or ``::`` between letters, a call, a digit beside a letter.
_NAME_TOKEN = re.compile(r"['\"`‘’“”]|[A-Za-z0-9]_[A-Za-z0-9]|[a-z][A-Z]|[A-Za-z](?:\.|::)[A-Za-z_]|\w\(\)|[A-Za-z]\d")
_CUT = re.compile(r"~[0-9a-f]{8}$")  # the digest that ends a key cut at its cap: the unseen rest differs
_PLACEHOLDER = "<*>"

Template = tuple[str | None, ...]  # a key's tokens; None = a position learned to be a parameter


def _find(parent: list[int], i: int) -> int:
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


def _union(parent: list[int], a: int, b: int) -> None:
    ra, rb = _find(parent, a), _find(parent, b)
    if ra != rb:
        parent[max(ra, rb)] = min(ra, rb)  # the oldest record stays the root: labels are stable


@functools.lru_cache(maxsize=4096)
def _is_anchor(token: str) -> bool:
    return _ANCHOR_TOKEN.search(token) is not None or _CUT.search(token) is not None


def _join_by_keys(texts: Sequence[str], fps: Sequence[Fingerprint], parent: list[int]) -> None:
    """Stage 1: the same exact text (stripped) or any shared fingerprint key.

    A text met again with the same keys joins its first occurrence, whose keys are already owned: a session
    repeats its outputs, and a long text's stripped copy is then made and hashed once.
    """
    owner: dict[str, int] = {}
    seen: dict[str, int] = {}
    for index, (text, fp) in enumerate(zip(texts, fps, strict=True)):
        first = seen.setdefault(text, index)
        if first != index and fps[first].keys == fp.keys:
            _union(parent, index, first)
            continue
        for key in ("exact:" + text.strip(), *fp.keys):
            first = owner.setdefault(key, index)
            if first != index:
                _union(parent, index, first)


def _categories(values: set[str]) -> bool:
    """Plain words of one ``key=`` field (``level=error``, ``state=open``): a category, not a free value."""
    fields = set()
    for value in values:
        key, eq, rest = value.partition("=")
        if not eq or _PLACEHOLDER in rest:
            return False
        fields.add(key)
    return len(fields) == 1


@functools.lru_cache(maxsize=4096)
def _is_name(token: str) -> bool:
    """A token shaped like a name in code: quoted or backticked, snake_case, camelCase or CamelCase, dotted,
    ``::``-joined, called, or holding a digit beside letters (values with digits are masked before)."""
    return _NAME_TOKEN.search(token) is not None


def _parameter(values: set[str], variants: int, key_fields: bool) -> bool:
    """Enough different values, none of them an anchor or a name (merging two errors is the worse mistake)."""
    if len(values) < variants:
        return False
    for value in values:
        if _is_anchor(value) or _is_name(value):
            return False
    return not (key_fields and _categories(values))


def _rare(template: Template, counts: list[dict[str | None, int]], variants: int) -> tuple[int, ...]:
    """Positions whose token fewer than ``variants`` templates share (None, a learned wildcard, never counts)."""
    return tuple(
        k for k, token in enumerate(template) if token is not None and counts[k].get(token, variants) < variants
    )


def _file(template: Template, rare: tuple[int, ...], anywhere: list[Template], only: dict[int, list[Template]]) -> None:
    """Where a template can still learn a parameter: anywhere, at its one rare position, or nowhere."""
    if not rare:
        anywhere.append(template)
    elif len(rare) == 1:
        only.setdefault(rare[0], []).append(template)


def _learn_positions(
    templates: dict[Template, int], parent: list[int], variants: int, agree: int, key_fields: bool
) -> None:
    """Stage 2 on the templates of one length (each with its first record): see the module docstring.

    Pruning that changes no result: a template joins ``variants`` others that agree on every position but
    ``j`` only if each of its other tokens is shared by ``variants`` templates, so a template with two rare
    positions is skipped, and one with a single rare position is tried only there. Counts taken at the start
    of a pass only fall during it (joined templates leave), so they stay a valid bound.
    """
    width = len(next(iter(templates)))
    for _ in range(_ROUNDS):
        counts: list[dict[str | None, int]] = [{} for _ in range(width)]
        for template in templates:
            for k, token in enumerate(template):
                counts[k][token] = counts[k].get(token, 0) + 1
        anywhere: list[Template] = []  # templates that may vary at any position
        only: dict[int, list[Template]] = {}  # templates that may vary only at one position
        for template in templates:
            _file(template, _rare(template, counts, variants), anywhere, only)
        changed = False
        for j in range(width):
            rests: dict[Template, list[Template]] = {}
            for template in (*anywhere, *only.get(j, ())):  # each template is filed once per pass
                if template[j] is not None and template in templates:
                    rests.setdefault(template[:j] + template[j + 1 :], []).append(template)
            for rest, members in rests.items():
                if len(members) < variants:
                    continue
                if sum(1 for t in rest if t is not None and _PLACEHOLDER not in t) < agree:
                    continue
                if not _parameter({t[j] for t in members}, variants, key_fields):  # type: ignore[misc]
                    continue
                merged = rest[:j] + (None,) + rest[j:]
                root = templates.get(merged)
                if root is None:
                    _file(merged, _rare(merged, counts, variants), anywhere, only)
                for template in members:
                    index = templates.pop(template)
                    if root is None:
                        root = index
                    else:
                        _union(parent, root, index)
                templates[merged] = root  # type: ignore[assignment]
                changed = True
        if not changed:
            return


def _join_varying(
    fps: Sequence[Fingerprint], parent: list[int], variants: int, agree: int, key_fields: bool
) -> None:
    """Stage 2: bucket unanchored keys by token count, then learn their parameter positions."""
    buckets: dict[int, dict[Template, int]] = {}
    for index, fp in enumerate(fps):
        if fp.kind not in _VARYING_KINDS:
            continue
        tokens: Template = tuple(fp.key.split(":", 1)[-1].split(" "))
        bucket = buckets.setdefault(len(tokens), {})
        first = bucket.setdefault(tokens, index)
        if first != index:
            _union(parent, first, index)
    for templates in buckets.values():
        if len(templates) >= variants:
            _learn_positions(templates, parent, variants, agree, key_fields)


def _fingerprints(texts: Sequence[str]) -> list[Fingerprint]:
    """One fingerprint per distinct text: a session repeats its outputs (a loop is the same output again)."""
    seen: dict[str, Fingerprint] = {}
    fps = []
    for text in texts:
        fp = seen.get(text)
        if fp is None:
            fp = seen[text] = _fingerprint_text(text)
        fps.append(fp)
    return fps


def _labels(parent: list[int]) -> list[int]:
    """Dense labels numbered in order of first appearance."""
    dense: dict[int, int] = {}
    return [dense.setdefault(_find(parent, i), len(dense)) for i in range(len(parent))]


def group(
    texts: Sequence[str],
    *,
    fingerprints: Sequence[Fingerprint] | None = None,
    variants: int = VARIANTS,
    agree: int = AGREE,
    key_fields: bool = KEY_FIELDS,
) -> list[int]:
    """One label per text (equal labels = the same error). Deterministic for a given order; never raises.

    ``fingerprints`` are the texts' fingerprints when the caller already has them (the engine
    stores them per slot); they must be ``fingerprint(text)`` of the current version.
    ``variants=0`` switches stage 2 off (keys only).
    """
    clean = [t if isinstance(t, str) else str(t) for t in texts]
    try:
        fps = list(fingerprints) if fingerprints is not None else _fingerprints(clean)
        if len(fps) != len(clean):
            fps = _fingerprints(clean)
        parent = list(range(len(clean)))
        _join_by_keys(clean, fps, parent)
        if variants >= 2:
            _join_varying(fps, parent, variants, agree, key_fields)
        return _labels(parent)
    except Exception as exc:  # a defect here must degrade grouping to exact text, never break the pipeline
        log_degraded_once("group()", exc)
        dense: dict[str, int] = {}
        digests = [hashlib.blake2b(t.encode("utf-8", "replace"), digest_size=8).hexdigest() for t in clean]
        return [dense.setdefault(d, len(dense)) for d in digests]
