"""Searching a regex only where it can match: on the lines that hold one of its cues, or from the first place a
case-insensitive word can start; a fast string search finds them.

A regex led by ``^`` or a lookbehind is tried at every position of the text; several families
(flake8 findings, pytest summaries, the one-line table) find their line this way instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

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


class LineLed:
    """A regex whose every match is one whole line from its start (``^...`` in MULTILINE, never crossing a
    line break), searched as two: the first line matched alone, the others led by their line break. A literal
    lead lets the scan jump from line to line; a ``^`` is tried at every position of a long output. A match
    from the second form starts at the line break before the line (its groups and its end are the same)."""

    def __init__(self, body: str) -> None:
        self._first = re.compile(body, re.M)
        self._after = re.compile(rf"\n(?:{body})", re.M)

    def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
        """The first match at a line start from ``pos`` on (a line break just before ``pos`` counts)."""
        if pos == 0:
            first = self._first.match(text)
            if first:
                return first
        return self._after.search(text, max(pos - 1, 0))

    def finditer(self, text: str, pos: int = 0) -> Iterator[re.Match[str]]:
        """Every match at a line start from ``pos`` on, in order."""
        if pos == 0:
            first = self._first.match(text)
            if first:
                yield first
        yield from self._after.finditer(text, max(pos - 1, 0))
