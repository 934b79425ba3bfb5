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
    "log masking and empty values": [*(gate for gate, _ in core._LOG_BRANCHES), (core._EMPTY_CUES, None)],
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


# ------------------------------------------------------------------ the fast paths give what the slow ones gave

from vlk_memact.fingerprint import javascript, last_resort, one_line, python  # noqa: E402
from vlk_memact.fingerprint.line_search import LineLed  # noqa: E402

_PIECES = ["E  ", "E   boom", "E x", "\n", "\nE  ", "  File \"a.py\", line 3, in f", "File \"b.py\", line 9", "exit",
           "Exit status 2", "error 1", "Error 12", "returned non-zero exit status 3", " 404 ", "x404", "500 Not Found",
           "HTTP/1.1 503 ", "status: 451", "ı", "word", " ", "\t", "E", "45", "5"]


def _mixes(seed: str, count: int = 3000) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 14))) for _ in range(count)]


def test_the_last_pytest_e_line_is_the_regex_s_last_match() -> None:
    for text in _mixes("e-line"):
        for end in sorted({0, len(text), *(i + 1 for i, ch in enumerate(text) if ch == "\n")}):
            slow = [m.group(1) for m in python._PYTEST_E.finditer(text, 0, end)]
            fast = python._last_e_line(text, end)
            assert (fast.group(1) if fast else None) == (slow[-1] if slow else None), (text, end)


def test_the_last_exit_status_is_the_one_of_the_last_line_that_holds_one() -> None:
    for text in _mixes("exit"):
        lines = text.split("\n")
        slow = next((m for line in reversed(lines) if (m := last_resort._EXIT.search(line[:600]))), None)
        fast = last_resort._last_exit(text, lines)
        assert (fast and fast.group(0)) == (slow and slow.group(0)), text


def test_http_codes_come_in_the_order_of_one_regex() -> None:
    one = re.compile(r"[45](?<!\w[45])\d\d\b")
    for text in _mixes("http"):
        merged = sorted((m for r in one_line._HTTP_CODES for m in r.finditer(text)), key=re.Match.start)
        assert [m.span() for m in merged] == [m.span() for m in one.finditer(text)], text


def test_python_frames_are_the_file_lines_with_only_blanks_before() -> None:
    frame = re.compile(r'File "([^"\n]{0,500})", line \d+(?:, in ([^\n]{1,200}))?')
    for text in _mixes("frames"):
        slow = [m.span(1) for m in frame.finditer(text)
                if not text[text.rfind("\n", 0, m.start()) + 1 : m.start()].strip(" \t")]
        assert [m.span(1) for m in python._python_frames(text)] == slow, text


@pytest.mark.parametrize("led", [one_line._BARE_EXC, javascript._JS_FRAME, javascript._JS_EXC], ids=["bare", "frame", "exc"])
def test_a_line_led_regex_finds_what_its_caret_form_found(led: LineLed) -> None:
    caret = re.compile("^" + led._first.pattern, re.M)
    pieces = ["ValueError: x", "  at f (a.js:1:2)", "\tat g", "Uncaught TypeError: y", "os.error", "Error", "\n", " ",
              "foo.BarException [E1]: z", "at h", "x", ":", "\n\n"]
    rng = random.Random(caret.pattern)
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 10)))
        for pos in range(len(text) + 1):
            slow, fast = caret.search(text, pos), led.search(text, pos)
            assert (slow and (slow.groups(), slow.end())) == (fast and (fast.groups(), fast.end())), (text, pos)
        assert [(m.groups(), m.end()) for m in caret.finditer(text)] == [
            (m.groups(), m.end()) for m in led.finditer(text)], text


def test_a_detector_recognises_only_texts_its_gate_passes() -> None:
    """A gate is a test the detector's result needs: where it fails, skipping the detector changes nothing."""
    gates = [gate for _, gate in dispatch._GATED]
    rng = random.Random("gates")
    pieces = fragments(gates) + CORPUS[::7] + ["\n", "  at f (a.js:1:2)\n", "HTTP/1.1 404 Not Found", "status 503",
                                              "TypeError: x\n", "Error [ERR_X]: y\n", "exit status 2\n", "a.c:3:4: "]
    texts = CORPUS + LINES + ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 6))) for _ in range(3000)]
    wrong = [(detect.__name__, text) for text in texts for i, (detect, _) in enumerate(dispatch._GATED)
             if detect(text, text.split("\n")) is not None and not exact(gates, text) >> i & 1]
    assert wrong == []
