"""The scan that decides which detectors (and masking branches) to try must never leave out one that passes.

``triggers.Triggers.candidates`` stands in for testing every gate (its cues with ``in``, its lead with a regex);
it may say yes too often, never too rarely, or a key would change (``test_fingerprint_keys.py`` checks the keys).
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from vlk_memact.fingerprint import core, dispatch
from vlk_memact.fingerprint.triggers import Gate, Triggers, overlapping, scan_pattern

DATA = Path(__file__).parent / "data"
CORPUS = [json.loads(line)["text"] for line in (DATA / "fingerprint_corpus.jsonl").open(encoding="utf-8")]
LINES = [text for text, _, _ in json.loads((DATA / "fingerprint_keys.json").read_text(encoding="utf-8"))["lines"]]


def exact(gates: list[Gate], text: str) -> int:
    """The bits of the gates that pass on ``text``, each tested on its own."""
    bits = 0
    for i, (cues, lead) in enumerate(gates):
        if any(cue in text for cue in cues) or (
            lead is not None and re.search(f"[{re.escape(lead[0])}](?:{lead[1]})", text)
        ):
            bits |= 1 << i
    return bits


def fragments(gates: list[Gate]) -> list[str]:
    """Pieces that make cues overlap: every cue, its halves, the lead characters, digits, blanks."""
    pieces = ["0", "1", "12 ", " ", "\n", "a", "x.py", ".com", "ab:cd:ef:", ", line 3"]
    for cues, lead in gates:
        for cue in cues:
            pieces += [cue, cue[: len(cue) // 2], cue[len(cue) // 2 :]]
        if lead is not None:
            pieces += list(lead[0])
    return pieces


GATE_SETS = {
    "detectors": [gate for _, gate in dispatch._GATED],
    **{f"masking {which}": [gate for gate, _ in branches] for which, branches in enumerate(core._BRANCH_SETS)},
}


@pytest.mark.parametrize("name", sorted(GATE_SETS))
def test_the_candidates_hold_every_gate_that_passes(name: str) -> None:
    gates = GATE_SETS[name]
    scan = Triggers(gates, limit=None)
    rng = random.Random(name)
    pieces = fragments(gates)
    texts = CORPUS + LINES + ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 12))) for _ in range(4000)]
    missed = [(text, bin(exact(gates, text) & ~scan.candidates(text))) for text in texts
              if exact(gates, text) & ~scan.candidates(text)]
    assert missed == []


def test_the_candidates_are_not_every_gate() -> None:
    """Without cues the scan rules every detector out: the speed-up is real, not a pass-through."""
    assert dispatch._TRIGGERS.candidates("a plain line of words") == 0
    assert dispatch._TRIGGERS.candidates('File "x.py", line 3') != dispatch._TRIGGERS.every


def test_a_long_text_tries_every_detector() -> None:
    assert dispatch._TRIGGERS.candidates("word " * 1000) == dispatch._TRIGGERS.every


def test_a_match_stands_for_the_cues_it_can_hide() -> None:
    cues = ["ab", "b", "bc", "abc", "xab", "ca"]
    # inside it (b), begun by its end (bc, and abc by all of it); xab and ca cannot hide behind a match of ab
    assert overlapping("ab", cues) == {"ab", "b", "bc", "abc"}


def test_the_scan_finds_cues_and_leads_in_order() -> None:
    """Cues and leads in one alternation, each branch led by its literal character (a class or a lookaround
    first would make the regex engine try every position of the text)."""
    pattern = scan_pattern(["error[E", "-->", "Error"], [(":(", r"(?=\d)")])
    assert re.compile(pattern).findall("x:1 --> Error(2") == [":", "-->", "Error", "("]
    assert re.compile(pattern).findall("x1 - > error [E") == []
