"""Many writers on one SQLite file: 8 real server processes over stdio, every count checked exactly.

Each process records 500 slots, half into a session all of them share and half into its own
(a library user in the test process does the same, on its own connection),
while the processes fetch the shared context at the same moments (a barrier) and on their own
rhythm. Some texts repeat across processes, so loop interception (archive + anchor) races with
the writers and with the other pipelines. Afterwards the file itself is audited with sqlite3:
no lost write, gap-free sequences, every archived slot behind its anchor, no duplicate anchors,
and no tool call ever saw an error (in particular no "database is locked").
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from mcp_clients import database_url, server_env
from stdio_harness import ServerPipe, tool_data, words_for

from vlk_memact import Memory, Settings

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

PROJECT = "many-writers"
WORKERS = 8  # server processes
WRITERS = WORKERS + 1  # and one library user
RECORDS_PER_WORKER = 500
SHARED = "shared"
FETCH_EVERY = 25  # records between two unsynchronised fetches of the shared context
BARRIER_EVERY = 125  # records between two moments where every process fetches the shared context at once

# Errors that loop: every writer records each shared one once into the shared session (9 repeats
# across processes), and each private one three times into its own session (same text in every
# private session, so project-scoped anchors of different sessions supersede one another).
SHARED_LOOPS = [f"RuntimeError: shared step {words_for(i, 2)} exhausted its retries" for i in range(10)]
PRIVATE_LOOPS = [f"ImportError: cannot import {words_for(i, 2)} from private module" for i in range(4)]
PRIVATE_LOOP_REPEATS = 3


def private_session(worker: int) -> str:
    return f"private-{words_for(worker, 1)}"


def code(number: int) -> str:
    return "NOTE_" + words_for(number).upper().replace(" ", "_")


def plan(worker: int) -> list[tuple[str, str]]:
    """The worker's 500 (session, text) records: 250 shared and 250 private, interleaved.

    Distinct texts name the worker, the session and their position in words; the looping texts
    are spread evenly among them (each process in its own order, so repeats interleave).
    """
    tag = words_for(worker, 1)
    half = RECORDS_PER_WORKER // 2
    # Each distinct text carries its own code (an anchor), the writer's tag included: texts differing in a
    # plain word (the tag) where they agree elsewhere are one error with a parameter to fingerprint.group.
    mark = tag.upper()
    shared = [f"note shared {code(i)}_{mark} observed" for i in range(half - len(SHARED_LOOPS))]
    private_loops = [t for t in PRIVATE_LOOPS for _ in range(PRIVATE_LOOP_REPEATS)]
    private = [f"note private {code(i)}_{mark} observed" for i in range(half - len(private_loops))]
    loops = SHARED_LOOPS[worker % len(SHARED_LOOPS) :] + SHARED_LOOPS[: worker % len(SHARED_LOOPS)]
    for n, text in enumerate(loops):
        shared.insert(n * (len(shared) // len(loops)) + worker, text)
    for n, text in enumerate(private_loops):
        private.insert(n * (len(private) // len(private_loops)) + worker, text)
    session = private_session(worker)
    records: list[tuple[str, str]] = []
    for s, p in zip(shared, private, strict=True):
        records += [(SHARED, s), (session, p)]
    return records


@dataclass
class Outcome:
    """What one process acknowledged: timeline id -> (session, text), and every tool response."""

    acknowledged: dict[int, tuple[str, str]] = field(default_factory=dict)
    responses: list[dict[str, Any]] = field(default_factory=list)
    fetches: int = 0
    started: float = 0.0
    finished: float = 0.0


Call = Callable[[str, dict[str, Any]], dict[str, Any]]


def over_stdio(server: ServerPipe, outcome: Outcome) -> Call:
    """Call a tool on a server process; keep the response; return its structuredContent."""

    def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        (response,) = server.wait_for(server.tool_request(name, arguments), timeout=120)
        outcome.responses.append(response)
        return tool_data(response)

    return call


def in_library(memory: Memory) -> Call:
    """The same tools through the library API, as an embedding application calls them."""
    methods = {"vlk_record_state": memory.record_state, "vlk_fetch_context": memory.fetch_context}
    return lambda name, arguments: dataclasses.asdict(methods[name](**arguments))


def run_worker(call: Call, worker: int, barrier: threading.Barrier, outcome: Outcome) -> None:
    def fetch(session: str) -> None:
        call("vlk_fetch_context", {"session_id": session})
        outcome.fetches += 1

    barrier.wait(timeout=120)  # everyone starts writing together
    outcome.started = time.monotonic()
    for n, (session, text) in enumerate(plan(worker), start=1):
        data = call("vlk_record_state", {"raw_log": text, "session_id": session})
        assert data["session_id"] == session
        outcome.acknowledged[data["timeline_id"]] = (session, text)
        if n % BARRIER_EVERY == 0:
            barrier.wait(timeout=120)
            fetch(SHARED)
        elif n % FETCH_EVERY == worker % FETCH_EVERY:
            fetch(SHARED if n % (2 * FETCH_EVERY) else private_session(worker))
    outcome.finished = time.monotonic()


def keys_of(row: sqlite3.Row) -> set[str]:
    return set(json.loads(row["fingerprint_keys"] or "[]"))


def test_eight_server_processes_writing_and_fetching_at_once_lose_nothing_and_keep_every_invariant(
    tmp_path: Path,
) -> None:
    db_file = tmp_path / "shared.db"
    env = server_env(db_file, VLK_PROJECT=PROJECT)
    stderr_files = [tmp_path / f"server-{w}.stderr" for w in range(WORKERS)]
    servers: list[ServerPipe] = []
    try:
        # All eight start on a file that does not exist yet: creation and migration race too.
        for path in stderr_files:
            with path.open("wb") as stderr:
                servers.append(ServerPipe(env, stderr))
        for server in servers:
            server.initialize()

        # The ninth writer is a library user in this process, on its own connection to the same file.
        barrier = threading.Barrier(WRITERS)
        outcomes = [Outcome() for _ in range(WRITERS)]
        failures: list[BaseException] = []

        def guarded(worker: int) -> None:
            try:
                if worker < WORKERS:
                    run_worker(
                        over_stdio(servers[worker], outcomes[worker]), worker, barrier, outcomes[worker]
                    )
                else:
                    settings = Settings(log_level="WARNING")
                    with Memory(database_url(db_file), settings=settings, project=PROJECT) as memory:
                        run_worker(in_library(memory), worker, barrier, outcomes[worker])
            except BaseException as exc:  # noqa: BLE001 - re-raised by the test thread
                failures.append(exc)
                barrier.abort()

        threads = [threading.Thread(target=guarded, args=(w,), name=f"writer-{w}") for w in range(WRITERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=150)
        assert not any(t.is_alive() for t in threads), "a writer hung"
        if failures:
            raise failures[0]

        # One last pipeline per session, so loops still pending are intercepted before the audit.
        sessions = [SHARED, *(private_session(w) for w in range(WRITERS))]
        for session in sessions:
            final = servers[0].wait_for(servers[0].tool_request("vlk_fetch_context", {"session_id": session}))
            tool_data(final[0])

        for server in servers:
            assert server.process.poll() is None, "a server process died"
            assert server.process.stdin is not None
            server.process.stdin.close()  # all at once: they shut down in parallel
        exit_codes = [server.close_stdin_and_wait(timeout=30) for server in servers]
    finally:
        for server in servers:
            server.kill()

    assert exit_codes == [0] * WORKERS
    for path in stderr_files:
        stderr = path.read_text(encoding="utf-8", errors="replace")
        assert "Traceback" not in stderr and "locked" not in stderr.lower(), stderr[-3000:]

    elapsed = max(o.finished for o in outcomes) - min(o.started for o in outcomes)
    total = sum(len(o.acknowledged) for o in outcomes)
    fetches = sum(o.fetches for o in outcomes)
    print(
        f"\n[many writers] {WORKERS} server processes and 1 library user acknowledged {total} records and "
        f"{fetches} fetches in {elapsed:.1f}s: {total / elapsed:.0f} records/s "
        f"({(total + fetches) / elapsed:.0f} tool calls/s)"
    )

    # ---- every tool call got a non-error response, and none mentions a lock
    assert total == WRITERS * RECORDS_PER_WORKER
    for outcome in outcomes:
        for response in outcome.responses:
            tool_data(response)
            assert "locked" not in json.dumps(response).lower(), response

    acknowledged: dict[int, tuple[str, str]] = {}
    for outcome in outcomes:
        assert not acknowledged.keys() & outcome.acknowledged.keys(), "two processes got the same timeline id"
        acknowledged.update(outcome.acknowledged)
    assert len(acknowledged) == total

    audit(db_file, acknowledged, sessions)


def audit(db_file: Path, acknowledged: dict[int, tuple[str, str]], sessions: list[str]) -> None:
    """Check the file against what the processes acknowledged."""
    conn = sqlite3.connect(f"file:{db_file}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        rows = conn.execute(
            """SELECT t.*, c.raw_log FROM agent_timeline t LEFT JOIN memory_contents c ON c.id = t.content_id
               ORDER BY t.id"""
        ).fetchall()
        links = conn.execute("SELECT constraint_id, source_id, relation FROM constraint_links").fetchall()
    finally:
        conn.close()
    by_id = {r["id"]: r for r in rows}
    assert {r["project"] for r in rows} == {PROJECT}

    # ---- no lost write: the record slots of each session are exactly the acknowledged ones
    records = {r["id"]: r for r in rows if r["origin"] == "record"}
    assert set(records) == set(acknowledged)
    for rid, (session, text) in acknowledged.items():
        assert (records[rid]["session_id"], records[rid]["raw_log"]) == (session, text), rid
        assert records[rid]["temporal_state"] in ("PRESENT", "PAST")
    per_session = Counter(session for session, _ in acknowledged.values())
    assert per_session == {SHARED: WRITERS * RECORDS_PER_WORKER // 2} | {
        private_session(w): RECORDS_PER_WORKER // 2 for w in range(WRITERS)
    }

    # ---- sequence numbers unique and gap-free per session
    sequences: dict[str, list[int]] = defaultdict(list)
    for r in rows:
        sequences[r["session_id"]].append(r["sequence_order"])
    assert set(sequences) == set(sessions)
    for session, numbers in sequences.items():
        assert sorted(numbers) == list(range(1, len(numbers) + 1)), f"gaps or duplicates in {session}"

    # ---- loops: archived exactly once, each behind its anchor, and nothing looping is left PRESENT
    archived_by: dict[int, set[int]] = defaultdict(set)
    merged_into: dict[int, set[int]] = defaultdict(set)
    for constraint_id, source_id, relation in links:
        (archived_by if relation == "archived" else merged_into)[constraint_id].add(source_id)
    loop_texts = set(SHARED_LOOPS) | set(PRIVATE_LOOPS)
    for r in records.values():
        if r["raw_log"] in loop_texts:
            continue
        assert (r["temporal_state"], r["retired_reason"]) == ("PRESENT", None), (
            f"a distinct text was archived: {r}"
        )
    for r in records.values():
        if r["temporal_state"] == "PAST":
            assert r["retired_reason"] == "loop", r
            anchor = by_id[r["retired_by"]]
            assert anchor["origin"] == "anchor" and anchor["session_id"] == r["session_id"], dict(anchor)
            assert r["id"] in archived_by[anchor["id"]], (
                f"slot {r['id']} has no 'archived' link to its anchor"
            )
    present_loops = Counter(
        (r["session_id"], r["raw_log"])
        for r in records.values()
        if r["temporal_state"] == "PRESENT" and r["raw_log"] in loop_texts
    )
    assert all(n < 3 for n in present_loops.values()), f"loops left un-intercepted: {present_loops}"

    anchors = [r for r in rows if r["origin"] == "anchor"]
    assert anchors, "no loop was intercepted"
    for anchor in anchors:
        direct = {i for i, r in records.items() if r["retired_by"] == anchor["id"]}
        superseded = {i for i in merged_into[anchor["id"]] if by_id[i]["origin"] == "anchor"}
        inherited = set().union(*(archived_by[i] for i in superseded)) if superseded else set()
        assert len(direct) >= 3, (
            f"anchor #{anchor['id']} archived {len(direct)} slots itself (double archiving)"
        )
        assert archived_by[anchor["id"]] == direct | inherited, (
            f"anchor #{anchor['id']} links the wrong slots"
        )
        count = len(archived_by[anchor["id"]])
        assert f"appeared {count} times" in anchor["learning_summary"], (count, anchor["learning_summary"])
        for old in superseded:
            assert (by_id[old]["retired_reason"], by_id[old]["retired_by"]) == ("consolidated", anchor["id"])

    # ---- no duplicate anchors: active anchors of the project never share a fingerprint key
    active = [a for a in anchors if a["temporal_state"] == "FUTURE"]
    owners: dict[str, int] = {}
    for anchor in active:
        for key in keys_of(anchor):
            assert key not in owners, (
                f"anchors #{owners[key]} and #{anchor['id']} are both active for {key!r}"
            )
            owners[key] = anchor["id"]

    # ---- every retired constraint points to the row that replaced it
    for r in rows:
        if r["retired_reason"] == "consolidated":
            assert by_id[r["retired_by"]]["origin"] in ("anchor", "consolidated"), dict(r)
            assert r["id"] in merged_into[r["retired_by"]], f"#{r['id']} has no 'merged' link"
