"""Quoting recorded text inside the server's own frame, so that data can never pass for a marker.

Recorded logs, lessons, evidence and session ids are data: whatever they contain, they must not
forge `[SYSTEM ANCHOR]`, `[PREVENTIVE FUTURE CONSTRAINT]`, an `[id:N]` tag or the conflict block.
Two rules make that hold: recorded text never starts a line of the context (continuation lines are
indented behind a bar), and the markers' distinctive characters are swapped for look-alikes when
they appear inside data. Stored text is never changed; only what is shown.
"""

from __future__ import annotations

import re
from functools import lru_cache

CONTINUATION = "  │ "

_WHITESPACE = re.compile(r"\s+")
# Brackets that open one of the server's markers, the conflict block's words and symbols, the header.
_FORGEABLE = re.compile(
    r"\[(?=\s*(?:system\s+anchor|preventive\s+future|prospective\s+constraint|consolidated\s+constraints"
    r"|active\s+present|present\s+note|vlk|id\s*:))"
    r"|conflicting\s+future\s+constraints|={3}\s*vlk|[⚠→─]",
    re.IGNORECASE,
)
_SAFE = {"⚠": "(!)", "→": "->", "─": "-"}


def _swap(match: re.Match[str]) -> str:
    found = match.group(0)
    if found == "[":
        return "［"  # fullwidth: reads the same to a person, is not the server's marker
    if found in _SAFE:
        return _SAFE[found]
    return found.lower().replace(" ", "-") if found[0] != "=" else found.replace("=", "≡")


def neutralize(text: str) -> str:
    """The same text with every marker-like sequence made visibly different from the real marker."""
    return _FORGEABLE.sub(_swap, text)


def one_line(text: str, limit: int) -> str:
    """Collapse whitespace so an excerpt can never span lines, then cut to limit characters."""
    flat = _WHITESPACE.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@lru_cache(maxsize=1024)
def quoted_line(text: str, limit: int) -> str:
    """Data shown inline: one line, bounded, neutralized."""
    return neutralize(one_line(text, limit))


@lru_cache(maxsize=256)
def quoted_block(text: str) -> str:
    """Data shown as a block: the first line inline, every further line indented behind a bar."""
    return neutralize(text).replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\n" + CONTINUATION)
