"""Pure conflict detection between active constraints (spec §8).

Fixes defect 9: keywords match on word boundaries, a keyword inside its own negated twin or after a
negation does not count ("never retry" twice is no conflict), and every active constraint is
checked, consolidated ones lesson by lesson.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from .model import Conflict, Origin, Slot

# (keyword A, keyword B, description), in the prototype's order.
DIRECTIVE_PAIRS: tuple[tuple[str, str, str], ...] = (
    ("retry", "never retry", "retry vs. never retry"),
    ("retry", "do not retry", "retry vs. do not retry"),
    ("use cache", "do not cache", "cache vs. do not cache"),
    ("use cache", "never cache", "cache vs. never cache"),
    ("use cache", "avoid cache", "cache vs. avoid cache"),
    ("always retry", "stop retrying", "always retry vs. stop retrying"),
    ("format!", "avoid format!", "format! vs. avoid format!"),
    ("push_str", "avoid push_str", "push_str vs. avoid push_str"),
    ("exponential backoff", "linear backoff", "exponential vs. linear backoff"),
    ("connect directly", "use proxy", "direct connection vs. proxy"),
)

_CONTRACTIONS = re.compile(r"\b(do|does|did|should|must|can|could|would)(?:n['’]?t)\b")
_NEGATION_BEFORE = re.compile(r"(?:\b(?:not|never|no|avoid|stop|without|nor)\s+(?:\S+\s+)?)$")


def _pattern(keyword: str) -> re.Pattern[str]:
    words = (re.escape(w) for w in keyword.split())
    return re.compile(r"(?<![\w!])" + r"\s+".join(words) + r"(?![\w!])")


_COMPILED = tuple((_pattern(a), _pattern(b), a, b, desc) for a, b, desc in DIRECTIVE_PAIRS)


@dataclass(frozen=True, slots=True)
class _Directives:
    """Which sides of each pair a lesson asserts."""

    a: frozenset[int]
    b: frozenset[int]


def normalise(text: str) -> str:
    """Lower-case and spell out contractions so "don't retry" reads as "do not retry"."""
    return _CONTRACTIONS.sub(r"\1 not", text.casefold().replace("’", "'"))


def _asserted(pattern: re.Pattern[str], text: str, blocked: list[tuple[int, int]]) -> bool:
    for match in pattern.finditer(text):
        if any(start <= match.start() and match.end() <= end for start, end in blocked):
            continue
        if _NEGATION_BEFORE.search(text, 0, match.start()):
            continue
        return True
    return False


@lru_cache(maxsize=4096)
def directives(lesson: str) -> _Directives:
    """Which directives a lesson asserts (cached: the same lessons are checked on every fetch)."""
    text = normalise(lesson)
    has_a, has_b = set(), set()
    for index, (pat_a, pat_b, _a, _b, _desc) in enumerate(_COMPILED):
        spans_b = [m.span() for m in pat_b.finditer(text)]
        if _asserted(pat_b, text, []):
            has_b.add(index)
        if _asserted(pat_a, text, spans_b):
            has_a.add(index)
    return _Directives(frozenset(has_a), frozenset(has_b))


def _lessons_of(constraint: Slot) -> list[str]:
    if constraint.origin is Origin.CONSOLIDATED and constraint.lessons:
        return list(constraint.lessons)
    return [constraint.learning_summary or ""]


def find_conflicts(constraints: Sequence[Slot]) -> list[Conflict]:
    """At most one conflict per pair of constraints, older constraint first, first matching pattern."""
    ordered = sorted(constraints, key=lambda c: c.id)  # ids grow with time across sessions
    found: list[Conflict] = []
    asserted = []
    for c in ordered:
        a: set[int] = set()
        b: set[int] = set()
        for lesson in _lessons_of(c):
            d = directives(lesson)
            a |= d.a
            b |= d.b
        asserted.append((a, b))
    for i, first in enumerate(ordered):
        for j in range(i + 1, len(ordered)):
            a1, b1 = asserted[i]
            a2, b2 = asserted[j]
            hits = (a1 & b2) | (b1 & a2)
            if hits:
                _pa, _pb, kw_a, kw_b, desc = _COMPILED[min(hits)]
                found.append(Conflict(first.id, ordered[j].id, desc, kw_a, kw_b))
    return found
