"""Group a session's outputs: equal keys first, then Drain-style similarity among unanchored lines.

``group(texts)`` is what the loop detector applies to a session's PRESENT slots and what
``bench/grouping.py`` measures. Stage 1 joins records that share their exact text or a
fingerprint key (union-find). Stage 2 handles what no mask can: a word that is a parameter (a
user, host, service or process name). Among records that no family recognised (kind
``fallback``: no error code, exception class or HTTP status anchors them) whose masked keys have
the same number of tokens, the first record of each stage-1 group joins the most similar earlier
template when Drain's simSeq (equal positions / length; He et al., ICWS'17) reaches
``SIMILARITY``; the template's differing positions become parameters.

Precision guards, each a reason two records are different errors whatever their similarity:
lines of different length never join; a differing position never holds an anchor (error code,
exception class, errno or signal name, CONSTANT_CASE code, log severity, the digest of a key's cut
tail) nor two plain words for the same ``key=`` field (``user=root``/``user=guest``: a category, not a free parameter); keys
shorter than ``MIN_TOKENS`` never join; and two groups that each have ``STABLE`` records or more
never join (each is a loop by itself already, so joining them gains nothing and risks hiding a real
difference; the engine passes its loop threshold). ``SIMILARITY`` and ``MIN_TOKENS`` were chosen
leave-one-system-out on the eight development log sets (``bench/grouping.py``).

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
| ``key=value`` value, quoted or punctuated (log)      | dev Linux 491, BGL 43, HealthApp 23; agent 80         |
| file name ``name.ext``, ext of 1-4 lowercase (log)   | dev Apache 569, Linux 483, Hadoop 92, BGL 84; agent 253 |
| number with a unit: sizes, durations (log)           | dev Spark 487, Hadoop 327, Zookeeper 40; agent 18     |
| bound on a value ``<1 sec``, ``time<1ms`` (log)      | Proxifier and Windows ``ping`` output formats          |
| empty value ``()``, ``[]``, ``""`` (log)             | dev Linux 617; agent 63 (``got []``)                  |
| dot leader ``label.....value`` is a separator (log)  | dev BGL 79; agent 26; autoconf ``checking x... yes``  |
| word parameter: token position similarity (stage 2)  | dev Linux, Spark, Zookeeper, BGL; OpenSSH user names  |
| kept verbatim: error codes, exception classes,       | corpus (rustc, tsc, flake8, errno, JS codes); Oracle  |
| errno, CONSTANT_CASE, severities (anchors)           | ``ORA-``, Windows ``CBS_E_*``, raw lines' levels       |

"all" = every family's message masking; "log" = lines no family recognised (``_mask_log``).
Rules removed in version 3 because one source motivated them: `` ()`` read as a value only after
a space (Linux ftpd; now the general empty-value class), and HTTP 1xx-3xx statuses as error
anchors (an access log's ``status: 200`` is not an error; the http family keeps 4xx and 5xx).
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from . import fingerprint as _fingerprint_text
from .core import _CODE, Fingerprint

#: Fraction of token positions that must agree for an unanchored line to join a group.
SIMILARITY = 0.85
#: Keys with fewer tokens are only grouped by equality.
MIN_TOKENS = 6
#: Two groups that both have at least this many records are not joined by similarity.
STABLE = 3

_SIMILAR_KINDS = frozenset({"fallback"})
_ANCHOR_TOKEN = re.compile(  # the codes _mask_log keeps verbatim, exception classes, errno/signal names, severities
    rf"(?<![\w$])(?:{_CODE}|[A-Z]\w*(?:Error|Exception|Warning)|E[A-Z]{{3,}}|SIG[A-Z]{{2,}}"
    r"|TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|SEVERE|CRITICAL|FATAL|ALERT|EMERG)"
    r"(?![\w$])"
)


_CUT = re.compile(r"~[0-9a-f]{8}$")  # the digest that ends a key cut at its cap: the unseen rest differs


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
    return _ANCHOR_TOKEN.search(token) is not None


def _conflict(a: str, b: str) -> bool:
    """Differing tokens that name different things: an anchor, or another word for the same field.

    A plain word after ``key=`` is a category (``level=error``, ``state=open``, ``user=root``),
    not a free parameter: masking leaves it, and similarity must not erase it either.
    """
    if _is_anchor(a) or _is_anchor(b) or _CUT.search(a) or _CUT.search(b):
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
    """Drain's simSeq: equal positions / length (learned parameter positions do not count as equal).

    -1 when a differing position names different things (see ``_conflict``).
    """
    equal = 0
    for known, token in zip(template, tokens, strict=True):
        if known == token:
            equal += 1
        elif known is not None and _conflict(known, token):
            return -1.0
    return equal / len(tokens)


@dataclass(slots=True)
class _Cluster:
    """A stage-2 cluster: its first group, its template (None = parameter), its records so far."""

    order: int
    root: int
    template: list[str | None]
    size: int


def _join_similar(
    fps: Sequence[Fingerprint], parent: list[int], similarity: float, min_tokens: int, stable: int
) -> None:
    """Stage 2: Drain's online clustering over the first record of each stage-1 group, in input order.

    Two groups that each repeat ``stable`` times or more are never joined: each is a loop on its own
    already, so joining them gains nothing and risks hiding a real difference (``opened``/``closed``).
    Candidates come from an index of (length, position, token): only clusters that can share enough
    positions with a record are compared, so many distinct lines of one length stay cheap.
    """
    sizes: dict[int, int] = {}
    for index in range(len(fps)):
        root = _find(parent, index)
        sizes[root] = sizes.get(root, 0) + 1
    postings: dict[tuple[int, int, str], list[_Cluster]] = {}
    clusters: list[_Cluster] = []
    seen: set[int] = set()
    for index, fp in enumerate(fps):
        root = _find(parent, index)
        if root in seen or fp.kind not in _SIMILAR_KINDS:
            continue
        seen.add(root)
        tokens = fp.key.split(":", 1)[-1].split(" ")
        size, length = sizes[root], len(tokens)
        if length < min_tokens:
            continue
        # Pigeonhole: a cluster with at least `need` equal positions shares a token with the record in
        # any `length - need + 1` positions, so the rarest ones give every candidate.
        need = math.ceil(similarity * length - 1e-9)
        lists = sorted((postings.get((length, i, t), ()) for i, t in enumerate(tokens)), key=len)
        candidates = sorted({c.order for found in lists[: max(1, length - need + 1)] for c in found})
        best: _Cluster | None = None
        best_score = similarity - 1e-9  # the first cluster at the threshold, then only a better one
        for order in candidates:
            cluster = clusters[order]
            if size >= stable and cluster.size >= stable:
                continue
            score = _similarity(cluster.template, tokens)
            if score > best_score:
                best, best_score = cluster, score
        if best is None:
            cluster = _Cluster(len(clusters), root, list(tokens), size)
            clusters.append(cluster)
            for position, token in enumerate(tokens):
                postings.setdefault((length, position, token), []).append(cluster)
            continue
        template = best.template
        for i, token in enumerate(tokens):
            if template[i] is not None and template[i] != token:
                template[i] = None  # its postings go stale; _similarity checks the template itself
        best.size += size
        _union(parent, best.root, root)


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
