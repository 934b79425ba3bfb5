"""Group a session's outputs: equal keys first, then Drain-style similarity among unanchored lines.

``group(texts)`` is what the loop detector applies to a session's PRESENT slots and what
``bench/grouping.py`` measures. Stage 1 joins records that share their exact text or a
fingerprint key (union-find). Stage 2 handles what no mask can: a word that is a parameter (a
user, host, service or process name). Among records that no family recognised (kind
``fallback``: no error code, exception class or HTTP status to anchor them) and whose masked keys
have the same number of tokens, a record joins the most similar earlier group when at least
``SIMILARITY`` of the positions hold the same token (Drain, He et al. ICWS'17: equal positions /
length, compared with the group's template whose differing positions become parameters).
Precision guards: groups of different length never join; a differing position never holds an
anchor token (error code, exception class, errno or signal name, CONSTANT_CASE code); keys
shorter than ``MIN_TOKENS`` never join (one word of three is too much to call a parameter).
``SIMILARITY`` and ``MIN_TOKENS`` were chosen leave-one-system-out on the development log sets
(``bench/grouping.py``): each held-out system's choice, made on the other seven, is the same.

General value classes and the independent sources that justify each (every rule names a class,
none is written for one source; "dev" = loghub-dev, "corpus" = tests/data, "fmt" = a documented
format of a system not in the development data):

| class (rule)                                | sources                                                           |
|---------------------------------------------|-------------------------------------------------------------------|
| URL, e-mail                                 | Hadoop (wiki URL), corpus (pip, npm, curl), fmt: OpenStack        |
| absolute / relative / Windows path          | HDFS, BGL, corpus (every toolchain), fmt: Windows CBS, OpenStack  |
| month-day date and clock time               | raw lines of Linux, Apache, Zookeeper; fmt: OpenSSH, Mac syslog   |
| token holding a digit (numbers, ids, hex,   | all 8 dev systems, corpus (ports, pids, line numbers); fmt: HPC   |
| IPs, sizes and durations with units, clock) | temperatures ``41C``, Proxifier ``2.41 KB``                        |
| run of values (``<*> <*>``, ``a, b`` lists) | HDFS (block lists), Zookeeper (notification tuples), fmt: HPC fans |
| ``key=value`` value                         | Linux (``user=root``, ``rhost=``), HealthApp, corpus (logfmt);    |
|                                             | fmt: Android (``name=com.x``, ``ws=null``), OpenSSH               |
| dotted identifier (host, package, file.ext) | Linux and Hadoop (host names), Spark and Hadoop (Java classes),   |
|                                             | HealthApp (intent names); fmt: Android, Proxifier, Mac            |
| word parameter (stage 2, token positions)   | Linux (``for user cyrus``/``news``), Spark (``acls to: yarn``),   |
|                                             | BGL, Hadoop (states); fmt: OpenSSH, Thunderbird user names        |
| anchors kept verbatim: error codes,         | corpus (rustc, tsc, flake8, npm, errno), fmt: ORA-, HRESULT names  |
| exception classes, errno, CONSTANT_CASE     |                                                                   |

Rules removed in version 3 because a single source motivated them: ``()`` read as an empty
value (Linux ftpd), the list of top-level domains for host names (replaced by dotted
identifiers), and HTTP 1xx-3xx statuses as anchors (access-log lines are not errors).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from . import fingerprint as _fingerprint_text
from .core import Fingerprint

#: Fraction of token positions that must agree for an unanchored line to join a group.
SIMILARITY = 0.8
#: Keys with fewer tokens are only grouped by equality.
MIN_TOKENS = 6
#: Two groups that both have at least this many records are not joined by similarity.
STABLE = 3

_SIMILAR_KINDS = frozenset({"fallback"})
_PLACEHOLDER = "<*>"
_ANCHOR_TOKEN = re.compile(
    r"(?<![\w$])(?:[A-Z]{1,4}-?\d{3,5}|[A-Z]\w*(?:Error|Exception|Warning)|E[A-Z]{3,}|SIG[A-Z]{2,}"
    r"|[A-Z][A-Z0-9]*_[A-Z0-9_]+|TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|SEVERE|CRITICAL|FATAL|ALERT|EMERG)"
    r"(?![\w$])"
)


def _find(parent: list[int], i: int) -> int:
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


def _union(parent: list[int], a: int, b: int) -> None:
    ra, rb = _find(parent, a), _find(parent, b)
    if ra != rb:
        parent[max(ra, rb)] = min(ra, rb)  # the oldest record stays the root: labels are stable


def _is_anchor(token: str) -> bool:
    return _ANCHOR_TOKEN.search(token) is not None


def _conflict(a: str, b: str) -> bool:
    """Differing tokens that name different things: an anchor, or another word for the same field.

    A plain word after ``key=`` is a category (``level=error``, ``state=open``, ``user=root``),
    not a free parameter: masking leaves it, and similarity must not erase it either.
    """
    if _is_anchor(a) or _is_anchor(b):
        return True
    key_a, eq_a, _ = a.partition("=")
    return bool(eq_a) and key_a == b.partition("=")[0] and "=" in b


def _join_by_keys(texts: Sequence[str], fps: Sequence[Fingerprint], parent: list[int]) -> None:
    """Stage 1: the same exact text (stripped) or any shared fingerprint key."""
    owner: dict[str, int] = {}
    for index, (text, fp) in enumerate(zip(texts, fps, strict=True)):
        for key in ("exact:" + text.strip(), *fp.keys):
            first = owner.setdefault(key, index)
            if first != index:
                _union(parent, index, first)


def _similarity(template: list[str | None], tokens: list[str]) -> float:
    """Share of the informative positions that agree; -1 when a differing position holds an anchor.

    A position where both sides are masked values (``<*>``) says nothing about the words, so it
    counts on neither side: otherwise a long masked header would make any two lines look alike.
    """
    equal = informative = 0
    for known, token in zip(template, tokens, strict=True):
        if known == token:
            if token != _PLACEHOLDER:
                equal += 1
                informative += 1
            continue
        if known is not None and _conflict(known, token):
            return -1.0
        informative += 1
    return equal / informative if informative else -1.0


def _join_similar(
    fps: Sequence[Fingerprint], parent: list[int], similarity: float, min_tokens: int, stable: int
) -> None:
    """Stage 2: Drain's online clustering over the first record of each stage-1 group, in input order.

    Two groups that each repeat ``stable`` times or more are never joined: each is a loop on its own
    already, so joining them gains nothing and risks hiding a real difference (``opened``/``closed``).
    """
    sizes: dict[int, int] = {}
    for index in range(len(fps)):
        root = _find(parent, index)
        sizes[root] = sizes.get(root, 0) + 1
    templates: dict[int, list[list]] = {}  # token count -> [first root, template, records so far]
    seen: set[int] = set()
    for index, fp in enumerate(fps):
        root = _find(parent, index)
        if root in seen or fp.kind not in _SIMILAR_KINDS:
            continue
        seen.add(root)
        tokens = fp.key.split(":", 1)[-1].split(" ")
        if len(tokens) < min_tokens:
            continue
        bucket = templates.setdefault(len(tokens), [])
        size = sizes[root]
        best, best_score = None, similarity - 1e-9
        for entry in bucket:
            if size >= stable and entry[2] >= stable:
                continue
            score = _similarity(entry[1], tokens)
            if score >= best_score and (best is None or score > best_score):
                best, best_score = entry, score
        if best is None:
            bucket.append([root, list(tokens), size])
            continue
        template = best[1]
        for i, token in enumerate(tokens):
            if template[i] is not None and template[i] != token:
                template[i] = None
        best[2] += size
        _union(parent, best[0], root)


def _labels(parent: list[int]) -> list[int]:
    """Dense labels numbered in order of first appearance."""
    dense: dict[int, int] = {}
    return [dense.setdefault(_find(parent, i), len(dense)) for i in range(len(parent))]


def group(
    texts: Sequence[str],
    *,
    fingerprints: Sequence[Fingerprint] | None = None,
    similarity: float = SIMILARITY,
    min_tokens: int = MIN_TOKENS,
    stable: int = STABLE,
) -> list[int]:
    """One label per text (equal labels = the same error). Deterministic for a given order; never raises.

    ``fingerprints`` are the texts' fingerprints when the caller already has them (the engine
    stores them per slot); they must be ``fingerprint(text)`` of the current version.
    """
    clean = [t if isinstance(t, str) else str(t) for t in texts]
    try:
        fps = list(fingerprints) if fingerprints is not None else [_fingerprint_text(t) for t in clean]
        if len(fps) != len(clean):
            fps = [_fingerprint_text(t) for t in clean]
        parent = list(range(len(clean)))
        _join_by_keys(clean, fps, parent)
        if similarity <= 1.0:
            _join_similar(fps, parent, similarity, min_tokens, stable)
        return _labels(parent)
    except Exception:  # a defect here must degrade grouping to exact text, never break the pipeline
        dense: dict[str, int] = {}
        digests = [hashlib.blake2b(t.encode("utf-8", "replace"), digest_size=8).hexdigest() for t in clean]
        return [dense.setdefault(d, len(dense)) for d in digests]
