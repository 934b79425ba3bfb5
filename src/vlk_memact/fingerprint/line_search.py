"""Searching a regex only on the lines that hold one of its cues: a fast string search finds them.

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
