"""bench/carried.py, the judge of what a session start carried and what a failure was told (issue 34's figures):
counted against what happened next, by the bench's own identity of an error."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import carried  # noqa: E402


def identity(error: str) -> str:
    return error.strip().splitlines()[-1] if error.strip() else ""


def test_facts_met_again_recurrences_answered_and_fixes_told_are_counted_per_session() -> None:
    split, ledger = carried.Split(), carried.Ledger(identity)
    ledger.start(split, "")
    ledger.failure(split, "x\nE1: broken", "")
    ledger.failure(split, "x\nE2: other", "")
    ledger.end(split, lambda _id: [])
    ledger.resolved_earlier.add("E2: other")
    start = "vlk-memact: what happened ...\n- [id:7] a loop fact\n- [id:9] another fact\n- a lesson"
    ledger.start(split, start)
    ledger.failure(split, "y\nE1: broken", "vlk-memact: failed the same way in session 'A'; not resolved there.")
    ledger.failure(split, "y\nE1: broken", "")  # the same error again in the session: not a second recurrence
    ledger.failure(split, "y\nE2: other", "vlk-memact: fixed in an earlier session by: make setup")
    ledger.failure(split, "y\nE3: new", "")  # never failed before: no recurrence
    ledger.end(split, lambda i: {7: ["z\nE1: broken"], 9: ["z\nE9: never again"]}[i])
    figures = split.as_dict()
    assert figures["sessions"] == 2 and figures["sessions_with_start_text"] == 1
    assert figures["mean_start_chars_per_session"] == round(len(start) / 2, 1)
    assert (figures["facts_told"], figures["facts_met_again"]) == (3, 1)
    assert (figures["recurrences"], figures["recurrences_answered"]) == (2, 2)
    assert (figures["recurrences_fixed_before"], figures["fixes_told_on_them"]) == (1, 1)


def test_a_recurrence_nothing_was_said_at_is_listed() -> None:
    split, ledger = carried.Split(), carried.Ledger(identity)
    for said in ("", ""):
        ledger.start(split, "")
        ledger.failure(split, "E1: broken", said)
        ledger.end(split, lambda _id: [])
    assert split.as_dict()["recurrences_answered"] == 0 and split.unanswered == ["E1: broken"]
