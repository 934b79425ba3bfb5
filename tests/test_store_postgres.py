"""PostgreSQL only: its migrations, its URLs and several processes on one schema (the store contract, run on
both backends, is tests/test_store_contract.py).

Each test gets a fresh schema from the `postgres_url` fixture (tests/conftest.py); without a reachable
server these tests skip, or fail when CI is set.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from store_slots import MILLIS, word

from vlk_memact import ConfigError, Memory, StoreError
from vlk_memact.store import open_store

ROOT = Path(__file__).resolve().parent.parent


# ---- migrations and URLs ----


def connect(url: str) -> Any:
    """A psycopg connection whose search_path is the URL's schema."""
    import psycopg

    from vlk_memact.store.postgres import postgres_target

    conninfo, schema = postgres_target(url)
    conn = psycopg.connect(conninfo, autocommit=True)
    if schema:
        conn.execute("SELECT set_config('search_path', quote_ident(%s), false)", (schema,))
    return conn


def versions(url: str) -> list[tuple[int, str, str]]:
    with connect(url) as conn:
        return conn.execute(
            "SELECT version, name, applied_at FROM vlk_schema_version ORDER BY version"
        ).fetchall()


def test_an_empty_schema_gets_every_step_once_and_reopening_is_a_no_op(postgres_url: str) -> None:
    from vlk_memact.store.postgres_schema import SCHEMA_VERSION

    open_store(postgres_url).close()
    first = versions(postgres_url)
    assert [v for v, _, _ in first] == list(range(1, SCHEMA_VERSION + 1))
    assert all(MILLIS.match(at) for _, _, at in first)
    open_store(postgres_url).close()
    assert versions(postgres_url) == first


def test_the_tables_have_the_columns_of_the_sqlite_schema(postgres_url: str, tmp_path: Path) -> None:
    import sqlite3

    open_store(postgres_url).close()
    open_store(f"sqlite:///{tmp_path / 'v.db'}").close()
    lite = sqlite3.connect(tmp_path / "v.db")
    with connect(postgres_url) as conn:
        for table in ("memory_contents", "agent_timeline", "constraint_links", "constraint_keys"):
            pg = [
                r[0]
                for r in conn.execute(
                    "SELECT column_name FROM information_schema.columns "
                    "WHERE table_schema = current_schema() AND table_name = %s ORDER BY ordinal_position",
                    (table,),
                )
            ]
            assert pg == [r[1] for r in lite.execute(f"PRAGMA table_info({table})")], table
    lite.close()


def test_the_schema_rejects_what_the_prototype_allowed(postgres_url: str) -> None:
    import psycopg

    open_store(postgres_url).close()
    with connect(postgres_url) as conn:
        for bad in (
            (
                "INSERT INTO agent_timeline (uid, session_id, sequence_order, temporal_state, origin) "
                "VALUES ('u1', 's', 1, NULL, 'record')"
            ),
            (
                "INSERT INTO agent_timeline (uid, session_id, sequence_order, temporal_state, origin) "
                "VALUES ('u2', 's', 1, 'NOW', 'record')"
            ),
        ):
            with pytest.raises(psycopg.errors.IntegrityError):
                conn.execute(bad)
        insert = (
            "INSERT INTO agent_timeline (uid, session_id, sequence_order, temporal_state, origin) "
            "VALUES (%s, 's', 1, 'PRESENT', 'record')"
        )
        conn.execute(insert, ("u3",))
        with pytest.raises(psycopg.errors.UniqueViolation):
            conn.execute(insert, ("u4",))


def test_a_schema_from_a_newer_release_is_refused(postgres_url: str) -> None:
    open_store(postgres_url).close()
    with connect(postgres_url) as conn:
        conn.execute("INSERT INTO vlk_schema_version (version, name) VALUES (99, 'm099_future')")
    with pytest.raises(StoreError, match="newer than this vlk-memact"):
        open_store(postgres_url)


def test_the_libpq_search_path_option_selects_the_schema_too(postgres_url: str) -> None:
    from vlk_memact.store.postgres import postgres_target

    conninfo, schema = postgres_target(postgres_url)
    url = conninfo + ("&" if "?" in conninfo else "?") + f"options=-csearch_path%3D{schema}"
    with Memory(url, project="p") as m:
        m.record_state(raw_log="via options")
    with Memory(postgres_url, project="p") as m:
        assert [s.raw_log for s in m.get_history().slots] == ["via options"]


def test_a_missing_schema_is_created_when_named_by_the_schema_parameter(postgres_url: str) -> None:
    from vlk_memact.store.postgres import postgres_target

    conninfo, schema = postgres_target(postgres_url)
    url = conninfo + ("&" if "?" in conninfo else "?") + f"schema={schema}_new"
    try:
        with Memory(url, project="p") as m:
            assert m.record_state(raw_log="x").sequence_order == 1
    finally:
        with connect(conninfo) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}_new" CASCADE')


def test_an_unreachable_server_is_a_store_error_without_the_password() -> None:
    started = time.monotonic()
    with pytest.raises(StoreError, match="could not open PostgreSQL") as caught:
        open_store("postgresql://u:hunter2@127.0.0.1:1/db?connect_timeout=2")
    assert "hunter2" not in str(caught.value) and time.monotonic() - started < 10


def test_without_psycopg_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    monkeypatch.delitem(sys.modules, "vlk_memact.store.postgres", raising=False)
    with pytest.raises(ConfigError, match=re.escape("pip install 'vlk-memact[postgres]'")):
        open_store("postgresql://localhost/db")


# ---- several processes ----


def run_processes(script: str, *args_per_process: list[str], timeout: float = 180) -> list[str]:
    """Run `python -c script ARGS` once per argument list, all at once; return their stdout."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for args in args_per_process
    ]
    results = [p.communicate(timeout=timeout) for p in procs]
    for p, (_, err) in zip(procs, results, strict=True):
        assert p.returncode == 0, err[-3000:]
    return [out for out, _ in results]


STARTER = """
import sys, time
from vlk_memact.store import open_store
time.sleep(max(0.0, float(sys.argv[2]) - time.time()))
open_store(sys.argv[1]).close()
"""


def test_four_processes_opening_an_empty_schema_migrate_it_exactly_once(postgres_url: str) -> None:
    from vlk_memact.store.postgres_schema import SCHEMA_VERSION

    start = str(time.time() + 3)
    run_processes(STARTER, *([postgres_url, start] for _ in range(4)))
    assert [v for v, _, _ in versions(postgres_url)] == list(range(1, SCHEMA_VERSION + 1))


WRITER = """
import json, sys, time
from vlk_memact import Memory
url, name, n, start = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
word = lambda i: "".join(chr(97 + (i // 26**k) % 26) for k in range(3)) + "zork"
with Memory(url, project="shared-project") as m:
    time.sleep(max(0.0, start - time.time()))
    began = time.perf_counter()
    seqs = []
    for i in range(n):
        seqs.append(m.record_state(raw_log=f"{name} {word(i)} happened", session_id="shared").sequence_order)
        if i % 10 == 9:
            m.fetch_context(session_id="shared")
    print(json.dumps({"seqs": seqs, "seconds": time.perf_counter() - began}))
"""


def test_four_processes_writing_one_session_lose_nothing(postgres_url: str) -> None:
    per_process = 100
    Memory(postgres_url, project="shared-project").close()
    start = time.time() + 3
    outputs = [
        json.loads(out)
        for out in run_processes(
            WRITER, *([postgres_url, f"writer{word(n)}", str(per_process), str(start)] for n in range(4))
        )
    ]
    elapsed = time.time() - start
    seqs = [s for out in outputs for s in out["seqs"]]
    assert sorted(seqs) == list(range(1, 4 * per_process + 1))
    with Memory(postgres_url, project="shared-project") as m:
        history = m.get_history(limit=500, session_id="shared").slots
        summary = m.summarize_session(session_id="shared")
    assert sorted(s.sequence_order for s in history) == list(range(1, 4 * per_process + 1))
    assert (summary.total, summary.present, summary.past, summary.future) == (400, 400, 0, 0)
    assert len({s.content_id for s in history}) == 400
    print(
        f"\n4 processes x {per_process} records (+ a fetch_context every 10): {elapsed:.2f}s wall, "
        f"{4 * per_process / elapsed:.0f} records/s; per process {[round(o['seconds'], 2) for o in outputs]}s"
    )


FETCHER = """
import json, sys, time
from vlk_memact import Memory
url, rounds, start, session_prefix = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
with Memory(url, project="loops") as m:
    reports = []
    for r in range(rounds):
        time.sleep(max(0.0, start + r * 0.3 - time.time()))
        result = m.fetch_context(session_id=f"{session_prefix}{r}")
        reports.append({"loops": [loop.anchor_id for loop in result.loops],
                        "merges": [merge.consolidated_id for merge in result.merges]})
    print(json.dumps(reports))
"""

PANIC = (
    "thread 'main' ({tid}) panicked at src/parser.rs:{line}:9:\ncalled `Option::unwrap()` on a `None` value"
)


def test_two_processes_fetching_one_looping_session_make_one_anchor(postgres_url: str) -> None:
    rounds = 8
    with Memory(postgres_url, project="loops") as m:
        for r in range(rounds):
            for line in range(3):
                m.record_state(raw_log=PANIC.format(tid=r * 10 + line, line=line), session_id=f"loop{r}")
    start = str(time.time() + 3)
    a, b = (
        json.loads(out)
        for out in run_processes(FETCHER, *([postgres_url, str(rounds), start, "loop"] for _ in range(2)))
    )
    with Memory(postgres_url, project="loops") as m:
        history = [m.get_history(limit=50, session_id=f"loop{r}").slots for r in range(rounds)]
    for r, slots in enumerate(history):
        assert len(a[r]["loops"]) + len(b[r]["loops"]) == 1, (r, a[r], b[r])
        assert [s.origin for s in slots].count("anchor") == 1
        assert all(
            s.temporal_state == "PAST" and s.retired_reason == "loop" for s in slots if s.origin == "record"
        )
    # The same panic in every session: each new anchor supersedes the previous one, so one stays active.
    anchors = [s for slots in history for s in slots if s.origin == "anchor"]
    assert [s.temporal_state for s in anchors].count("FUTURE") == 1


def test_two_processes_consolidating_one_projects_constraints_merge_once(postgres_url: str) -> None:
    with Memory(postgres_url, project="loops") as m:
        for i in range(6):
            slot = m.record_state(raw_log=f"failure {word(i)}", session_id="teacher").timeline_id
            m.time_travel(
                target_timeline_ids=[slot],
                learning=f"Rule {word(i)}",
                raw_log_excerpt=f"failure {word(i)}",
                session_id="teacher",
            )
    start = str(time.time() + 3)
    a, b = (
        json.loads(out)
        for out in run_processes(
            FETCHER, [postgres_url, "1", start, "reader-a"], [postgres_url, "1", start, "reader-b"]
        )
    )
    assert len(a[0]["merges"]) + len(b[0]["merges"]) == 1, (a, b)
    with Memory(postgres_url, project="loops") as m:
        assert m.summarize_session(session_id="anyone").visible_constraints == 1
