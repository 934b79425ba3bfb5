"""Crash safety: writers killed with SIGKILL at random points, over and over, on one SQLite file.

Each round starts a writer on the same file and kills it at a random moment: a library-API writer
(`stdio_harness.crash_writer`, which prints an acknowledgement line after each call returned) or a
real stdio server fed a pipelined stream of tool calls (a response on stdout is the acknowledgement).
After every kill the file is audited: every acknowledged write is there, the database is intact,
and no operation is half-applied (no archived slot without its anchor or lesson, no anchor without
its archived slots, no merged constraint without its merge). The writers also run retention
(pruning on every N-th record, and `maintenance` with VACUUM now and then): the first test makes
retention keep everything so that every check is exact; the second prunes hard, and the audit
then accepts a missing row only where retention may have deleted it.

Kill moments are random but seeded per round (`SEED + round`), so a failing round can be replayed;
the exact instruction a kill lands on still depends on timing.
"""

from __future__ import annotations

import bisect
import json
import queue
import random
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from mcp_clients import database_url, server_env
from stdio_harness import CRASH_LOOPS, CRASH_SESSIONS, ServerPipe, id_key, words_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

PROJECT = "crash-safety"
SEED = 20261130
EXACT_ROUNDS = 24
RETENTION_ROUNDS = 12
STDIO_EVERY = 6  # every 6th round kills a stdio server instead of a library writer
HARNESS = Path(__file__).with_name("stdio_harness.py")
LOOP_THRESHOLD = 3
ANCHOR_COUNT = re.compile(r"appeared (\d+) times")


@dataclass
class Ledger:
    """Everything acknowledged so far, across rounds; each id with the session it belongs to."""

    records: dict[int, tuple[str, str]] = field(default_factory=dict)  # id -> (session, text)
    travels: dict[int, tuple[str, list[int]]] = field(default_factory=dict)  # lesson -> (session, moved ids)
    anchors: dict[int, str] = field(default_factory=dict)
    archived: dict[int, str] = field(default_factory=dict)
    merges: dict[int, str] = field(default_factory=dict)
    revoked: dict[int, str | None] = field(default_factory=dict)
    operations: int = 0
    pruned: int = 0  # acknowledged rows that retention deleted since (as the last audit found)

    def take(self, ack: dict[str, Any]) -> None:
        op = ack["op"]
        if op in ("ready", "done"):
            return
        self.operations += 1
        session = ack.get("session")
        if op == "record":
            self.records[ack["id"]] = (session, ack["text"])
        elif op == "fetch":
            self.anchors.update(dict.fromkeys(ack["anchors"], session))
            self.archived.update(dict.fromkeys(ack["archived"], session))
            self.merges.update(dict.fromkeys(ack["merged"], session))
        elif op == "travel":
            self.travels[ack["constraint"]] = (session, ack["moved"])
        elif op == "revoke":
            self.revoked[ack["constraint"]] = None  # a project constraint may belong to another session


# ---------------------------------------------------------------- the two kinds of round


def library_round(
    db_file: Path, number: int, rng: random.Random, ledger: Ledger, settings: dict[str, str]
) -> str:
    """Start a library-API writer, kill it at a random moment, take its acknowledgements."""
    writer = subprocess.Popen(
        [sys.executable, str(HARNESS), "crash-writer", database_url(db_file), PROJECT, str(number)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(db_file, **settings),
    )
    lines: queue.Queue[bytes | None] = queue.Queue()

    def read() -> None:
        assert writer.stdout is not None
        for line in writer.stdout:
            lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    if rng.random() < 0.15:
        where = "start-up"  # import, open, WAL switch, migrations
        time.sleep(rng.uniform(0.02, 0.3))
    else:
        where = "writes"
        first = lines.get(timeout=60)
        assert first is not None and json.loads(first)["op"] == "ready", (first, writer.stderr.read())
        time.sleep(rng.uniform(0.0, 0.6))
    writer.send_signal(signal.SIGKILL)
    writer.wait(timeout=30)
    reader.join(timeout=30)
    stderr = writer.stderr.read().decode(errors="replace") if writer.stderr else ""
    assert writer.returncode == -signal.SIGKILL, f"the writer ended by itself ({writer.returncode}): {stderr}"
    assert "Traceback" not in stderr, stderr
    while (line := lines.get_nowait()) is not None:
        if line.endswith(b"\n"):  # a line cut by the kill was never acknowledged
            ledger.take(json.loads(line))
    return where


def stdio_round(
    db_file: Path,
    number: int,
    rng: random.Random,
    ledger: Ledger,
    settings: dict[str, str],
    stderr_file: Path,
) -> str:
    """Start a real server, pipeline a burst of tool calls, SIGKILL it mid-burst, drain its responses."""
    present = present_ids(db_file)
    with stderr_file.open("wb") as stderr:
        server = ServerPipe(server_env(db_file, VLK_PROJECT=PROJECT, **settings), stderr)
    try:
        server.initialize()
        sent: dict[str, tuple[str, dict[str, Any]]] = {}
        for n in range(600):
            session = rng.choice(CRASH_SESSIONS)
            roll = rng.random()
            if roll < 0.7:
                text = (
                    rng.choice(CRASH_LOOPS)
                    if rng.random() < 0.35
                    else f"served {words_for(number * 1000 + n, 4)} over stdio"
                )
                arguments: dict[str, Any] = {"raw_log": text, "session_id": session}
                name = "vlk_record_state"
            elif roll < 0.9 or not present.get(session):
                name, arguments = "vlk_fetch_context", {"session_id": session}
            else:
                targets = rng.sample(present[session], min(2, len(present[session])))
                name = "vlk_time_travel"
                arguments = {
                    "target_timeline_ids": targets,
                    "learning": f"prefer {words_for(rng.randrange(26**3))} over stdio",
                    "raw_log_excerpt": "served over stdio",
                    "session_id": session,
                }
            sent[server.tool_request(name, arguments)] = (name, arguments)
        time.sleep(rng.uniform(0.0, 0.8))
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(timeout=30)
        server.drain()
    finally:
        server.kill()
    assert server.process.returncode == -signal.SIGKILL

    for rid, (name, arguments) in sent.items():
        response = server.responses.get(id_key(rid))
        if response is None:
            continue  # never acknowledged: it may or may not have been applied
        assert "error" not in response, response
        result = response["result"]
        if result.get("isError"):
            # Only a time travel may fail, when its targets were archived by a pipeline in between.
            assert name == "vlk_time_travel" and "None of the ids" in result["content"][0]["text"], result
            continue
        data = result["structuredContent"]
        if name == "vlk_record_state":
            ack = {"op": "record", "id": data["timeline_id"], "text": arguments["raw_log"]}
        elif name == "vlk_fetch_context":
            ack = {
                "op": "fetch",
                "anchors": [loop["anchor_id"] for loop in data["loops"]],
                "archived": [i for loop in data["loops"] for i in loop["archived_ids"]],
                "merged": [merge["consolidated_id"] for merge in data["merges"]],
            }
        else:
            ack = {"op": "travel", "constraint": data["constraint_id"], "moved": data["moved_ids"]}
        ledger.take({**ack, "session": arguments["session_id"]})
    return "stdio"


def present_ids(db_file: Path) -> dict[str, list[int]]:
    if not db_file.exists():
        return {}
    found: dict[str, list[int]] = defaultdict(list)
    conn = sqlite3.connect(db_file)
    try:
        for session, rid in conn.execute(
            "SELECT session_id, id FROM agent_timeline WHERE temporal_state = 'PRESENT'"
        ):
            found[session].append(rid)
    except sqlite3.OperationalError:  # killed before the schema was created
        pass
    finally:
        conn.close()
    return found


# ---------------------------------------------------------------- the audit


class Retention:
    """What retention may have deleted: PAST rows with at least `keep_past` newer PAST rows in their session.

    A pruned row had `keep_past` newer PAST rows when it was deleted, and a row is only ever pruned
    in turn when as many even newer PAST rows exist, so that stays true until the audit: a missing
    row, or a missing sequence number, without that many newer PAST rows was lost, not pruned.
    `keep_past=None` means nothing may have been deleted at all.
    """

    def __init__(self, keep_past: int | None, rows: dict[int, sqlite3.Row]) -> None:
        self.keep_past = keep_past
        self.past_ids: dict[str, list[int]] = defaultdict(list)
        self.past_sequences: dict[str, list[int]] = defaultdict(list)
        for r in sorted(rows.values(), key=lambda r: r["id"]):
            if r["temporal_state"] == "PAST":
                self.past_ids[r["session_id"]].append(r["id"])
                self.past_sequences[r["session_id"]].append(r["sequence_order"])
        for sequences in self.past_sequences.values():
            sequences.sort()

    def _allowed(self, newer: int) -> bool:
        return self.keep_past is not None and newer >= self.keep_past

    def may_have_pruned_id(self, session: str, rid: int) -> bool:
        ids = self.past_ids[session]
        return self._allowed(len(ids) - bisect.bisect_right(ids, rid))

    def may_have_pruned_sequence(self, session: str, sequence: int) -> bool:
        sequences = self.past_sequences[session]
        return self._allowed(len(sequences) - bisect.bisect_right(sequences, sequence))


def audit(db_file: Path, ledger: Ledger, keep_past: int | None) -> int:
    """Everything acknowledged is there (or legitimately pruned), the file is intact, nothing half-applied.

    Returns how many acknowledged rows retention has pruned."""
    if not db_file.exists():
        assert not ledger.records, "the database file vanished"
        return 0
    conn = sqlite3.connect(db_file)  # read-write: opening recovers the WAL a killed writer left
    conn.row_factory = sqlite3.Row
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        columns = {r[1] for r in conn.execute("PRAGMA table_info(agent_timeline)")}
        if "uid" not in columns:  # killed before the migrations that build this schema committed
            assert not ledger.records, "writes were acknowledged but the schema is gone"
            return 0
        rows = {
            r["id"]: r
            for r in conn.execute(
                "SELECT t.*, c.raw_log FROM agent_timeline t "
                "LEFT JOIN memory_contents c ON c.id = t.content_id"
            )
        }
        links: dict[tuple[int, str], set[int]] = defaultdict(set)
        for constraint_id, source_id, relation in conn.execute("SELECT * FROM constraint_links"):
            links[(constraint_id, relation)].add(source_id)
        indexed: dict[int, set[str]] = defaultdict(set)
        for key, constraint_id in conn.execute("SELECT key, constraint_id FROM constraint_keys"):
            indexed[constraint_id].add(key)
    finally:
        conn.close()
    retention = Retention(keep_past, rows)
    exact = keep_past is None
    pruned: set[int] = set()

    def present_or_pruned(rid: int, session: str | None, what: str) -> bool:
        """True if the row is there (in its session); else it must be one that retention may have pruned."""
        if rid in rows:
            assert session in (None, rows[rid]["session_id"]), (what, session, dict(rows[rid]))
            return True
        sessions = CRASH_SESSIONS if session is None else (session,)
        assert any(retention.may_have_pruned_id(s, rid) for s in sessions), (
            f"acknowledged {what} #{rid} is lost"
        )
        pruned.add(rid)
        return False

    # ---- every acknowledged write is present, as acknowledged (or pruned by retention)
    for rid, (session, text) in ledger.records.items():
        if present_or_pruned(rid, session, "record"):
            assert (rows[rid]["origin"], rows[rid]["raw_log"]) == ("record", text), dict(rows[rid])
    for lesson, (session, moved) in ledger.travels.items():
        if present_or_pruned(lesson, session, "lesson"):
            assert rows[lesson]["origin"] == "lesson"
        for rid in moved:
            if present_or_pruned(rid, session, "time-travelled slot"):
                assert rows[rid]["retired_reason"] == "time_travel"
                assert rows[rid]["retired_by"] == (lesson if lesson in rows else None), dict(rows[rid])
    for what, acknowledged, expected in (
        ("anchor", ledger.anchors, ("origin", "anchor")),
        ("merge", ledger.merges, ("origin", "consolidated")),
        ("loop-archived slot", ledger.archived, ("retired_reason", "loop")),
        ("revocation", ledger.revoked, ("retired_reason", "revoked")),
    ):
        column, value = expected
        for rid, session in acknowledged.items():
            if present_or_pruned(rid, session, what):
                assert rows[rid][column] == value, (what, dict(rows[rid]))

    # ---- sequence numbers unique (the schema) and gap-free (but for what retention pruned)
    sequences: dict[str, set[int]] = defaultdict(set)
    for r in rows.values():
        assert (r["tenant"], r["project"]) == ("local", PROJECT)
        sequences[r["session_id"]].add(r["sequence_order"])
    for session, numbers in sequences.items():
        for missing in set(range(1, max(numbers) + 1)) - numbers:
            assert retention.may_have_pruned_sequence(session, missing), (
                f"sequence {missing} of {session} is lost"
            )

    # ---- each row's state agrees with its reason, and each retirement with what replaced it
    replaced: dict[tuple[int, str], set[int]] = defaultdict(set)
    expected_replacement = {
        "loop": (("record",), ("anchor",), "archived"),
        "time_travel": (("record",), ("lesson",), "archived"),
        "consolidated": (("anchor", "lesson", "consolidated"), ("anchor", "consolidated"), "merged"),
        "revoked": (("anchor", "lesson", "consolidated"), (), None),
    }
    for r in rows.values():
        state, reason, by = r["temporal_state"], r["retired_reason"], r["retired_by"]
        if state == "PRESENT":
            assert (r["origin"], reason, by) == ("record", None, None), dict(r)
            continue
        if state == "FUTURE":
            assert r["origin"] != "record" and (reason, by) == (None, None), dict(r)
            assert set(json.loads(r["fingerprint_keys"] or "[]")) <= indexed[r["id"]], (
                f"#{r['id']} keys unindexed"
            )
            continue
        assert reason in expected_replacement, f"PAST row #{r['id']} has no valid reason: {dict(r)}"
        origins, replacement_origins, relation = expected_replacement[reason]
        assert r["origin"] in origins, dict(r)
        if relation is None:
            assert by is None, dict(r)
        elif by is None:
            assert not exact, f"#{r['id']} retired ({reason}) by nothing"  # its replacement was pruned
        else:
            assert rows[by]["origin"] in replacement_origins, (dict(r), dict(rows[by]))
            assert r["id"] in links[(by, relation)], (
                f"#{r['id']} retired by #{by} without a '{relation}' link"
            )
            replaced[(by, reason)].add(r["id"])

    # ---- no constraint without what it replaced: links and retirements agree both ways
    for (constraint_id, _relation), sources in links.items():
        assert rows[constraint_id]["origin"] != "record", f"record #{constraint_id} has links"
        for source in sources:
            assert source in rows, f"link to a missing row #{source}"
    for cid, r in rows.items():
        if r["origin"] == "lesson":
            assert links[(cid, "archived")] == replaced[(cid, "time_travel")], f"lesson #{cid} half-applied"
            assert links[(cid, "archived")] or not exact, f"lesson #{cid} archived nothing"
        elif r["origin"] == "consolidated":
            assert links[(cid, "merged")] == replaced[(cid, "consolidated")], f"merge #{cid} half-applied"
            assert links[(cid, "merged")] or not exact, f"consolidated #{cid} merged nothing"
        elif r["origin"] == "anchor":
            direct = replaced[(cid, "loop")]
            superseded = links[(cid, "merged")]
            assert superseded == replaced[(cid, "consolidated")], f"anchor #{cid} supersession half-applied"
            assert all(rows[s]["origin"] == "anchor" for s in superseded), (
                f"anchor #{cid} merged a non-anchor"
            )
            inherited = set().union(*(links[(s, "archived")] for s in superseded))
            archived = links[(cid, "archived")]
            assert direct | inherited <= archived, f"anchor #{cid} lacks links to the slots it archived"
            for source in archived:
                assert (rows[source]["origin"], rows[source]["retired_reason"]) == ("record", "loop"), dict(
                    rows[source]
                )
            count = ANCHOR_COUNT.search(r["learning_summary"])
            assert count, r["learning_summary"]
            if exact:
                assert len(direct) >= LOOP_THRESHOLD, f"anchor #{cid} without its archived slots: {direct}"
                assert archived == direct | inherited, f"anchor #{cid} links slots it did not archive"
                assert int(count.group(1)) == len(archived), (r["learning_summary"], archived)
            else:
                assert int(count.group(1)) >= len(archived), (r["learning_summary"], archived)

    # ---- no duplicate anchors: active anchors of the project share no fingerprint key
    owners: dict[str, int] = {}
    for cid, r in rows.items():
        if r["origin"] == "anchor" and r["temporal_state"] == "FUTURE":
            for key in json.loads(r["fingerprint_keys"] or "[]"):
                assert key not in owners, f"anchors #{owners[key]} and #{cid} are both active for {key!r}"
                owners[key] = cid
    return len(pruned)


# ---------------------------------------------------------------- the tests


def kill_rounds(
    tmp_path: Path, rounds: int, settings: dict[str, str], keep_past: int | None, label: str
) -> Ledger:
    """Run `rounds` kill rounds on one file (every STDIO_EVERY-th a stdio server), auditing after each."""
    db_file = tmp_path / "crash.db"
    ledger = Ledger()
    where: dict[str, int] = defaultdict(int)
    started = time.monotonic()
    for number in range(rounds):
        rng = random.Random(SEED + number)
        try:
            if number % STDIO_EVERY == STDIO_EVERY - 1:
                stderr_file = tmp_path / f"server-{number}.stderr"
                where[stdio_round(db_file, number, rng, ledger, settings, stderr_file)] += 1
                assert "Traceback" not in stderr_file.read_text(errors="replace")
            else:
                where[library_round(db_file, number, rng, ledger, settings)] += 1
            audit(db_file, ledger, keep_past)
        except BaseException as exc:
            exc.add_note(f"{label}: crash round {number} (replay: random.Random({SEED + number}))")
            raise
    elapsed = time.monotonic() - started

    # The file still works after all those kills: a last writer records and runs the pipeline.
    from vlk_memact import Memory, Settings

    env_settings = Settings.from_env({k: v for k, v in settings.items()})
    with Memory(database_url(db_file), settings=env_settings, project=PROJECT) as memory:
        for session in CRASH_SESSIONS:
            result = memory.record_state(raw_log="written after every crash", session_id=session)
            ledger.take(
                {
                    "op": "record",
                    "id": result.timeline_id,
                    "session": session,
                    "text": "written after every crash",
                }
            )
            memory.fetch_context(session_id=session)
    pruned = audit(db_file, ledger, keep_past)

    print(
        f"\n[crash safety, {label}] survived {rounds} SIGKILLs ({dict(where)}) in {elapsed:.1f}s; "
        f"{ledger.operations} acknowledged operations ({len(ledger.records)} records, "
        f"{len(ledger.anchors)} anchors, {len(ledger.travels)} time travels, {len(ledger.merges)} merges, "
        f"{len(ledger.revoked)} revocations) "
        f"all present or, for {pruned} of them, pruned by retention"
    )
    assert where["writes"] + where["stdio"] >= rounds // 2, "too few kills landed during writes"
    ledger.pruned = pruned
    return ledger


def test_writers_killed_with_sigkill_at_random_points_never_lose_an_acknowledged_write_or_half_apply_one(
    tmp_path: Path,
) -> None:
    # Retention runs (every 10th record of a session) but may delete nothing: every check is exact.
    settings = {
        "VLK_LOG_LEVEL": "WARNING",
        "VLK_RETENTION_PAST_PER_SESSION": "1000000",
        "VLK_PRUNE_EVERY": "10",
    }
    ledger = kill_rounds(tmp_path, EXACT_ROUNDS, settings, keep_past=None, label="no pruning")
    assert len(ledger.records) > 400 and ledger.anchors and ledger.travels and ledger.merges


def test_writers_killed_while_retention_prunes_lose_only_what_retention_allows(tmp_path: Path) -> None:
    # Retention keeps 30 PAST rows per session and prunes every 5th record: kills land inside prunes.
    settings = {"VLK_LOG_LEVEL": "WARNING", "VLK_RETENTION_PAST_PER_SESSION": "30", "VLK_PRUNE_EVERY": "5"}
    ledger = kill_rounds(tmp_path, RETENTION_ROUNDS, settings, keep_past=30, label="aggressive retention")
    assert len(ledger.records) > 200 and ledger.anchors and ledger.merges
    assert ledger.pruned > 0, "retention never pruned an acknowledged row: the test did not exercise it"
