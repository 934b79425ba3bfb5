"""Which detectors can recognise a text, from one scan for the cues of them all: the others are not called.

Every detector starts by testing for cues that each of its matches holds (``'File "'`` for a traceback,
``"error["`` for rustc, a regex for a location). On a short text, a log line, those dozens of tests cost more
in calls than in scanning, and most texts hold none of the cues; one regex scan for all the literal cues
(written as a trie, so that a position is tried once and not once per cue) tells which detectors may match.

A regex reports matches that do not overlap, so a match may hide a cue overlapping it (one it contains, one its
end begins, one that begins with it): those are tested with a substring search, and a match keeps the gates of
the regex leads that can match inside it. The candidates are thus a superset of the detectors that can match:
the keys are exactly those of trying every detector in order (``tests/test_fingerprint_triggers.py``). On a long
text a substring search per cue is faster than a regex scan (``str.find`` skips ahead, a regex tries most
positions), and the detectors' own tests are the cheaper guard there. The masking of ``core.py`` tests the
gates of its branches with the same scan.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

#: Longer texts skip the dispatcher's scan: chosen on agent failures (mean 650 chars) and log lines (80-300 chars).
SCAN_LIMIT = 150

# A gate: cues one of which every text the detector recognises holds, and a lead (or None): characters and a tail
# such that the others hold one of the characters followed by the tail, a pattern of lookarounds only. A lead
# match is thus that one character, which hides only the cues that begin with it.
Lead = tuple[str, str]
Gate = tuple[tuple[str, ...], "Lead | None"]


def scan_pattern(needles: Iterable[str], leads: Iterable[Lead] = ()) -> str:
    """One alternation of ``needles`` (as a trie: shared prefixes factored out, ``E(?:RROR: |rror: )``) and of the
    leads, every branch led by a literal character: the regex engine then skips the characters that lead none."""
    trie: dict = {}
    for needle in needles:
        node = trie
        for char in needle:
            node = node.setdefault(char, {})
        node[""] = {}

    def pattern(node: dict) -> str:
        branches = [re.escape(char) + pattern(child) for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 and "" not in node else f"(?:{'|'.join(branches)})"
        return f"{body}?" if "" in node else body

    by_char: dict[str, list[str]] = {char: [re.escape(char) + pattern(child)] for char, child in trie.items()}
    for chars, tail in leads:
        for char in chars:
            by_char.setdefault(char, []).append(re.escape(char) + f"(?:{tail})")
    return "|".join(branch for char in sorted(by_char) for branch in by_char[char])


def overlapping(cue: str, cues: Iterable[str]) -> set[str]:
    """The cues a match of ``cue`` can hide: itself, those inside it, those that its end begins or that begin with it."""
    hidden = {cue}
    for other in cues:
        if other in cue or any(other.startswith(cue[-k:]) and len(other) > k for k in range(1, len(cue) + 1)):
            hidden.add(other)
    return hidden


# Characters from the most to the least frequent in agent failures and log lines (measured on the development
# data: the trajectories' failures, Loghub lines, the corpus); a character not listed is rarer than all of them.
_FREQUENT = " et-inorasldcp.:\n_muf/yh=g5,4b)(k\"vxFNRTESOCIA[PDMqjLUW>zJHG\\@\t"


def _rarity(char: str) -> int:
    found = _FREQUENT.find(char)
    return len(_FREQUENT) if found < 0 else found


def scan_key(cue: str) -> str:
    """The part of ``cue`` the scan looks for: up to four characters led by its rarest character (one at least
    after it). The regex engine tries a match only where a key's first character stands, so a key led by ``[``
    or ``x`` costs less than one led by a blank or an ``e``; a key found is confirmed by a search for the cue."""
    if len(cue) <= 2:
        return cue
    start = max(range(len(cue) - 1), key=lambda i: (_rarity(cue[i]), -i))
    return cue[start : start + 4]


class Triggers:
    """The gates that may pass on a text (the candidate detectors, the masking branches to try), as bits in the
    order of ``gates``."""

    def __init__(self, gates: Sequence[Gate], limit: int | None = SCAN_LIMIT) -> None:
        self._limit = limit
        cues = sorted({cue for needles, _ in gates for cue in needles})
        leads = [(1 << i, lead) for i, (_, lead) in enumerate(gates) if lead is not None]
        bits_of = {cue: sum(1 << i for i, (needles, _) in enumerate(gates) if cue in needles) for cue in cues}
        cues_of: dict[str, list[str]] = {}
        for cue in cues:
            cues_of.setdefault(scan_key(cue), []).append(cue)
        keys = sorted(cues_of)
        self.every = (1 << len(gates)) - 1
        # the keys first: where a key and a lead match at one place, the key is reported and the lead hidden
        self._scan = re.compile(scan_pattern(keys, [lead for _, lead in leads]))
        # What a match stands for: the leads that can match inside it (a regex, kept as candidates), and the cues
        # whose key it is or can hide, each confirmed by a substring search before its bits are added.
        self._bits: dict[str, int] = {}
        self._confirm: dict[str, tuple[tuple[str, int], ...]] = {}
        for key in keys:
            bits = 0
            for bit, (chars, _) in leads:
                if not set(chars).isdisjoint(key):
                    bits |= bit
            self._bits[key] = bits
            hidden = sorted(overlapping(key, keys))
            self._confirm[key] = tuple((cue, bits_of[cue]) for other in hidden for cue in cues_of[other])
        for bit, (chars, _) in leads:
            for char in chars:
                self._bits[char] = self._bits.get(char, 0) | bit
                confirm = dict(self._confirm.get(char, ()))
                confirm.update((cue, bits_of[cue]) for key in keys if key.startswith(char) for cue in cues_of[key])
                self._confirm[char] = tuple(sorted(confirm.items()))

    def candidates(self, text: str) -> int:
        """The bits of the gates that may pass on ``text`` (every one on a text longer than the limit)."""
        if self._limit is not None and len(text) > self._limit:
            return self.every
        found = 0
        for match in set(self._scan.findall(text)):
            found |= self._bits[match]
            for cue, bits in self._confirm[match]:
                if found & bits != bits and cue in text:
                    found |= bits
        return found
