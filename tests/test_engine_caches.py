"""The engine's caches (slot_cache.py, context_cache.py, the render and fingerprint memos) change no result.

One long-lived Memory, with a second one writing to the same file as another process would, runs a
randomized sequence of records, fetches, dry runs, time travels, revocations and fixes; a twin file gets
the same sequence, each call through a fresh Memory (empty caches: the plain path). Every result must be
equal, and the cached slots equal a plain read after every step.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from vlk_memact import Memory
from vlk_memact.config import Settings
from vlk_memact.core import render
from vlk_memact.core.loops import detect_loops
from vlk_memact.core.model import FixStep, NewFix, Origin, SessionKey, Slot, TemporalState
from vlk_memact.engine.loop_memo import LoopMemo
from vlk_memact.fingerprint import FINGERPRINT_VERSION, fingerprint

PROJECT = "test-project"
SESSIONS = ("s1", "s2")
HOSTS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot")


def _text(rng: random.Random) -> str:
    """Errors that repeat exactly, by fingerprint, or as one template with a word parameter (stage 2)."""
    kind = rng.randrange(6)
    if kind == 0:
        return f"error: cannot open file /tmp/build/{rng.choice('abc')}.o"
    if kind == 1:
        line = rng.randrange(1, 300)
        return (f'Traceback (most recent call last):\n  File "app.py", line {line}, in main\n'
                f"KeyError: '{rng.choice(['user', 'token'])}'")
    if kind == 2:
        return f"connection to host {rng.choice(HOSTS)} closed by remote peer during the handshake stage"
    if kind == 3:
        queue = rng.choice(["ingest", "export"])
        return f"worker {rng.choice(HOSTS)} reported queue {queue} stalled for a while now"
    if kind == 4:
        test = f"tests/test_{rng.choice(['a', 'b'])}.py::test_{rng.randrange(3)}"
        return f"FAILED {test} - AssertionError: 1 != 2"
    return f"unexpected output {rng.random():.6f} from the {rng.choice(HOSTS)} step"


class Twins:
    """The same calls on a cached file (one Memory, plus another writer) and on a plain one (fresh each)."""

    def __init__(self, tmp: Path, settings: Settings) -> None:
        self.cached_url = f"sqlite:///{tmp / 'cached.db'}"
        self.plain_url = f"sqlite:///{tmp / 'plain.db'}"
        self.settings = settings
        self.cached = Memory(self.cached_url, settings=settings, project=PROJECT)
        self.other = Memory(self.cached_url, settings=settings, project=PROJECT)

    def both(self, call: str, *, by_other: bool = False, **arguments: Any) -> Any:
        kept = getattr(self.other if by_other else self.cached, call)(**arguments)
        with Memory(self.plain_url, settings=self.settings, project=PROJECT) as fresh:
            plain = getattr(fresh, call)(**arguments)
        assert kept == plain, call
        return kept

    def add_fix(self, session: str, keys: tuple[str, ...]) -> None:
        for url in (self.cached_url, self.plain_url):
            with Memory(url, settings=self.settings, project=PROJECT) as m, m.store.write() as tx:
                tx.add_fix(NewFix(SessionKey("local", PROJECT, session), "fix", keys[0], keys, "the error",
                                  "make", "make", (FixStep(None, "Bash", "pip install x"),)))

    def rewrite_fingerprint(self, slot_id: int) -> None:
        """What another process running an older fingerprint algorithm leaves behind: the next pipeline
        re-fingerprints the slot (a column of a PRESENT slot changed under the cache)."""
        for url in (self.cached_url, self.plain_url):
            conn = sqlite3.connect(url.removeprefix("sqlite:///"))
            with conn:
                conn.execute("UPDATE agent_timeline SET fingerprint = 'fallback:old', "
                             "fingerprint_keys = NULL, fingerprint_version = 1 WHERE id = ?", (slot_id,))
            conn.close()

    def present_ids(self, session: str) -> list[int]:
        with Memory(self.plain_url, settings=self.settings, project=PROJECT) as m, m.store.read() as tx:
            return [s.id for s in tx.slots(SessionKey("local", PROJECT, session), TemporalState.PRESENT)]

    def check_slots(self, session: str) -> None:
        key = SessionKey("local", PROJECT, session)
        with self.cached.store.write() as tx:
            kept = self.cached._present.slots(tx, key, TemporalState.PRESENT)  # noqa: SLF001
            assert kept == tx.slots(key, TemporalState.PRESENT)

    def close(self) -> None:
        self.cached.close()
        self.other.close()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_cached_and_plain_results_are_equal(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    twins = Twins(tmp_path, Settings(prune_every=17, consolidate_above=3))
    try:
        for _ in range(260):
            session = rng.choice(SESSIONS)
            op = rng.randrange(100)
            if op < 45:
                result = twins.both("record_state", raw_log=_text(rng), session_id=session, by_other=op < 8)
                if rng.random() < 0.1:
                    twins.add_fix(rng.choice(SESSIONS), (result.fingerprint,))
            elif op < 75:
                twins.both("fetch_context", session_id=session, max_tokens=rng.choice([None, 300, 900]),
                           by_other=op < 50)
            elif op < 82:
                twins.both("preview_context", session_id=session, max_tokens=rng.choice([None, 400]))
            elif op < 88:
                twins.both("intercept_loops", session_id=session)
            elif op < 91:
                present = twins.present_ids(session)
                if present:
                    twins.rewrite_fingerprint(rng.choice(present))
            elif op < 96:
                present = twins.present_ids(session)
                if present:
                    twins.both("time_travel", target_timeline_ids=rng.sample(present, min(len(present), 2)),
                               learning=f"do not repeat step {rng.randrange(5)}", raw_log_excerpt="the error",
                               session_id=session)
            else:
                shown = twins.both("fetch_context", session_id=session).constraint_ids
                if shown:
                    twins.both("revoke_future", timeline_id=rng.choice(shown), session_id=session)
            twins.check_slots(session)
    finally:
        twins.close()


def test_a_record_then_a_fetch_reads_no_row_again(file_memory: Memory) -> None:
    """The model's step: after a fetch, a record advances the kept slots, so the next fetch reads none."""
    for text in ("error A", "error B"):
        file_memory.record_state(raw_log=text)
    file_memory.fetch_context()
    file_memory.record_state(raw_log="error C")
    reads: list[str] = []
    conn = file_memory.store._conn  # noqa: SLF001 (the statements the fetch runs)
    conn.set_trace_callback(reads.append)
    try:
        result = file_memory.fetch_context()
    finally:
        conn.set_trace_callback(None)
    assert "error C" in result.text
    assert not [q for q in reads if "agent_timeline t" in q and "PRESENT" in q], reads


def _slot(i: int, rng: random.Random) -> Slot:
    """A PRESENT slot with a stored fingerprint: anchored keys drawn from a few (so a new slot can bridge two
    groups), or a fallback line with a word parameter (stage 2 of fingerprint.group)."""
    if rng.random() < 0.3:
        text = f"connection to host {rng.choice(HOSTS)} closed by remote peer in the handshake stage {i % 2}"
        fp = fingerprint(text)
        key, keys = fp.key, fp.keys
    else:
        keys = tuple(sorted({f"python:E{rng.randrange(9)}" for _ in range(rng.randrange(1, 3))}))
        key, text = keys[0], f"Traceback {i}: {' '.join(keys)}"
    return Slot(id=i, session_id="s", sequence_order=i, temporal_state=TemporalState.PRESENT,
                origin=Origin.RECORD, created_at="2026-01-01 00:00:00", raw_log=text, fingerprint=key,
                fingerprint_keys=keys, fingerprint_version=FINGERPRINT_VERSION)


@pytest.mark.parametrize("seed", range(6))
def test_the_loop_memo_groups_as_detect_loops(seed: int) -> None:
    """Appending (the incremental path), archiving what looped and dropping slots (a fresh grouping)."""
    rng = random.Random(seed)
    memo, key, present = LoopMemo(), SessionKey("local", PROJECT, "s"), []
    for i in range(1, 400):
        present.append(_slot(i, rng))
        if rng.random() < 0.05:
            present.pop(rng.randrange(len(present)))
        found = memo.detect(key, present, 3)
        assert found == detect_loops(present, 3)
        if found and rng.random() < 0.7:
            archived = {i for g in found for i in g.slot_ids}
            present = [s for s in present if s.id not in archived]


@pytest.mark.parametrize("seed", range(4))
def test_the_render_bounds_never_exceed_an_entry(seed: int) -> None:
    """render_context leaves a slot out unrendered, and skips its first pass, on lower bounds of what an entry
    costs: whole (quoting and escaping never shorten a log) and cut (a cut log keeps its marker)."""
    rng = random.Random(seed)
    pieces = ["error", "[id:3]", "[SYSTEM ANCHOR]", "⚠", "\r\n", "\r", "\n", "é", '"', "\\", "\t", "=== vlk",
              "x" * 40]
    for i in range(300):
        log = "".join(rng.choice(pieces) for _ in range(rng.choice([0, 1, 3, 30, 300])))
        slot = Slot(id=rng.choice([1, 42, 123456]), session_id="s", sequence_order=i, origin=Origin.RECORD,
                    temporal_state=TemporalState.PRESENT, created_at="2026-01-01", raw_log=log,
                    file_context=rng.choice([None, "src/a.py"]))
        also = tuple(rng.sample(range(1, 50), rng.randrange(3)))
        whole = render._present_part(slot, also)[1]
        assert whole >= render._least_present_tokens(len(log)) >= render._least_cut_tokens(len(log))
        for left in (render.MIN_TRUNCATED_SLOT_TOKENS, 80, 200):
            cut = render._cut_to_fit(slot.id, slot.file_context, log, also, left)[1]
            assert cut >= render._least_cut_tokens(len(log))
