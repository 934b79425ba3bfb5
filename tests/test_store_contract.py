"""The store contract, run against both backends; then PostgreSQL's migrations, URLs and processes.

Each PostgreSQL test gets a fresh schema from the `postgres_url` fixture (tests/conftest.py); without
a reachable server those tests skip, or fail when CI is set.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from vlk_memact import ConfigError, Memory, StoreError
from vlk_memact.core.model import ConstraintType, NewSlot, Origin, Retired, Scope, SessionKey, TemporalState
from vlk_memact.store import Store, open_store

ROOT = Path(__file__).resolve().parent.parent
A = SessionKey("local", "proj", "s1")
SECONDS = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")
MILLIS = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}$")


def word(i: int) -> str:
    """A distinct alphabetic word per i (digits would be masked by fingerprints)."""
    return "".join(chr(97 + (i // 26**k) % 26) for k in range(3)) + "zork"


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest) -> Iterator[Store]:
    if request.param == "sqlite":
        url = "sqlite::memory:"
    else:
        url = request.getfixturevalue("postgres_url")
    s = open_store(url)
    yield s
    s.close()


def record(s: Store, key: SessionKey, text: str, fp: str | None = None, keys: tuple[str, ...] = ()) -> int:
    with s.write() as tx:
        content = tx.add_content(key.tenant, text, None, None)
        slot = tx.insert_slot(
            NewSlot(
                key,
                TemporalState.PRESENT,
                Origin.RECORD,
                content_id=content,
                fingerprint=fp,
                fingerprint_keys=keys,
                fingerprint_version=1,
            )
        )
    return slot.id


def lesson(s: Store, key: SessionKey, text: str, scope: Scope | None, keys: tuple[str, ...] = ()) -> int:
    with s.write() as tx:
        slot = tx.insert_slot(
            NewSlot(
                key,
                TemporalState.FUTURE,
                Origin.LESSON,
                scope=scope,
                learning_summary=text,
                constraint_type=ConstraintType.DERIVED,
                evidence="evidence of " + text,
                fingerprint_keys=keys,
            )
        )
    return slot.id


# ---- the contract, on both stores ----


def test_sequence_numbers_count_per_session_project_and_tenant(store: Store) -> None:
    for key in (
        A,
        A,
        SessionKey("local", "proj", "s2"),
        SessionKey("local", "other", "s1"),
        SessionKey("acme", "proj", "s1"),
        A,
    ):
        record(store, key, f"log of {key}")
    with store.read() as tx:
        assert [s.sequence_order for s in tx.history(A, 10)] == [3, 2, 1]
        assert [s.sequence_order for s in tx.history(SessionKey("acme", "proj", "s1"), 10)] == [1]
        assert [s.id for s in tx.history(A, 2)] == [6, 2]


def test_inserted_slots_come_back_whole_with_sqlite_timestamp_formats(store: Store) -> None:
    with store.write() as tx:
        content = tx.add_content("local", "boom", "a.py", '{"cmd":"x"}')
        slot = tx.insert_slot(
            NewSlot(
                A,
                TemporalState.PRESENT,
                Origin.RECORD,
                content_id=content,
                fingerprint="fp",
                fingerprint_keys=("k1", "k2"),
                fingerprint_version=2,
            )
        )
    assert (slot.raw_log, slot.file_context, slot.tool_payload) == ("boom", "a.py", '{"cmd":"x"}')
    assert (slot.fingerprint, slot.fingerprint_keys, slot.fingerprint_version) == ("fp", ("k1", "k2"), 2)
    assert (slot.tenant, slot.project, slot.session_id, slot.scope, slot.fire_count) == (
        "local",
        "proj",
        "s1",
        None,
        0,
    )
    assert SECONDS.match(slot.created_at) and slot.last_fired_at is None and len(slot.uid) == 32


def test_identical_content_is_stored_once_per_tenant(store: Store) -> None:
    with store.write() as tx:
        first = tx.add_content("local", "same", "a.py", None)
        again = tx.add_content("local", "same", "a.py", None)
        other_context = tx.add_content("local", "same", None, None)
        other_tenant = tx.add_content("acme", "same", "a.py", None)
        after = tx.add_content("local", "new", None, None)
    assert first == again
    assert len({first, other_context, other_tenant, after}) == 4


def test_visible_constraints_are_the_sessions_the_projects_and_the_tenants_global_ones(store: Store) -> None:
    mine = lesson(store, A, "session one", Scope.SESSION)
    legacy = lesson(store, A, "unscoped", None)
    lesson(store, SessionKey("local", "proj", "s2"), "other session", Scope.SESSION)
    shared = lesson(store, SessionKey("local", "proj", "s2"), "project one", Scope.PROJECT)
    lesson(store, SessionKey("local", "other", "s1"), "other project", Scope.PROJECT)
    lesson(store, SessionKey("local", "other", "s1"), "other project, same session name", Scope.SESSION)
    world = lesson(store, SessionKey("local", "other", "x"), "global one", Scope.GLOBAL)
    lesson(store, SessionKey("acme", "proj", "s1"), "other tenant", Scope.GLOBAL)
    record(store, A, "not a constraint")
    with store.read() as tx:
        assert [c.id for c in tx.visible_constraints(A)] == [mine, legacy, shared, world]
        assert [c.learning_summary for c in tx.visible_constraints(SessionKey("acme", "x", "y"))] == [
            "other tenant"
        ]


def test_constraints_matching_uses_the_key_index_within_what_is_visible(store: Store) -> None:
    hit = lesson(store, A, "hit", Scope.PROJECT, ("k1", "k2"))
    lesson(store, SessionKey("local", "proj", "s2"), "hidden", Scope.SESSION, ("k2",))
    gone = lesson(store, A, "retired", Scope.PROJECT, ("k2",))
    with store.write() as tx:
        assert tx.retire("local", [gone], TemporalState.FUTURE, Retired.REVOKED, None) == [gone]
    with store.read() as tx:
        assert [c.id for c in tx.constraints_matching(A, ["k2", "zz"])] == [hit]
        assert tx.constraints_matching(A, ["zz"]) == []
        assert tx.constraints_matching(A, []) == []


def test_fire_counts_and_stamps_in_milliseconds(store: Store) -> None:
    cid = lesson(store, A, "lesson", Scope.PROJECT)
    other = lesson(store, A, "other", Scope.PROJECT)
    with store.write() as tx:
        tx.fire([cid])
        tx.fire([cid, 999])
    with store.read() as tx:
        fired, untouched = tx.visible_constraints(A)
    assert (fired.id, fired.fire_count, untouched.id, untouched.fire_count) == (cid, 2, other, 0)
    assert MILLIS.match(fired.last_fired_at or "") and untouched.last_fired_at is None


def test_retire_is_guarded_by_tenant_and_by_state(store: Store) -> None:
    ids = [record(store, A, f"log {word(i)}") for i in range(3)]
    foreign = record(store, SessionKey("acme", "proj", "s1"), "foreign")
    cid = lesson(store, A, "lesson", Scope.SESSION)
    with store.write() as tx:
        assert tx.retire(
            "local", [ids[2], ids[0], foreign, 999], TemporalState.PRESENT, Retired.TIME_TRAVEL, cid
        ) == [ids[0], ids[2]]
        assert tx.retire("local", ids, TemporalState.PRESENT, Retired.LOOP, cid) == [ids[1]]
        assert tx.retire("local", ids, TemporalState.PRESENT, Retired.LOOP, cid) == []
        assert tx.retire("local", [cid], TemporalState.PRESENT, Retired.LOOP, None) == []
    with store.read() as tx:
        by_id = {s.id: s for s in tx.history(A, 10)}
        assert [s.id for s in tx.slots(SessionKey("acme", "proj", "s1"), TemporalState.PRESENT)] == [foreign]
    assert (by_id[ids[0]].retired_reason, by_id[ids[0]].retired_by) == (Retired.TIME_TRAVEL, cid)
    assert by_id[ids[1]].retired_reason is Retired.LOOP and by_id[cid].temporal_state is TemporalState.FUTURE


def test_slots_by_id_keeps_to_the_session(store: Store) -> None:
    mine = record(store, A, "mine")
    theirs = record(store, SessionKey("local", "proj", "s2"), "theirs")
    with store.read() as tx:
        assert [s.id for s in tx.slots_by_id(A, [theirs, mine, 42])] == [mine]
        assert tx.slots_by_id(A, []) == []


def test_links_are_idempotent_and_sources_ascend(store: Store) -> None:
    ids = [record(store, A, f"log {word(i)}") for i in range(3)]
    cid = lesson(store, A, "lesson", Scope.SESSION)
    with store.write() as tx:
        tx.link(cid, [ids[2], ids[0]], "archived")
        tx.link(cid, [ids[0]], "archived")
        tx.link(cid, [ids[1]], "merged")
        tx.link(cid, [], "merged")
    with store.read() as tx:
        assert tx.sources(cid, "archived") == [ids[0], ids[2]]
        assert tx.sources(cid, "merged") == [ids[1]]


def test_search_is_literal_unicode_case_insensitive_and_session_confined(store: Store) -> None:
    for text in (
        "progress 50% done",
        "progress 50 percent",
        "snake_case name",
        "snakeXcase name",
        "ÉCHEC: Straße gesperrt",
        "İstanbul ΣΑΣ",
        "secret",
    ):
        record(store, A, text)
    with store.write() as tx:
        tx.insert_slot(
            NewSlot(
                A,
                TemporalState.FUTURE,
                Origin.LESSON,
                scope=Scope.SESSION,
                learning_summary="Pin the toolchain",
                evidence="rustc 1.70 mismatch",
            )
        )

    def found(query: str, key: SessionKey = A) -> list[str | None]:
        with store.read() as tx:
            return [s.raw_log or s.learning_summary for s in tx.search(key, query, 10)]

    assert found("50%") == ["progress 50% done"]
    assert found("snake_case") == ["snake_case name"]
    assert found("%") == ["progress 50% done"] and found("_") == ["snake_case name"]
    assert found("échec: STRASSE") == ["ÉCHEC: Straße gesperrt"]
    assert found("istanbul") == [] and found("i̇stanbul σας") == ["İstanbul ΣΑΣ"]
    assert found("1.70 MISMATCH") == found("toolchain") == ["Pin the toolchain"]
    assert found("secret", SessionKey("local", "proj", "s2")) == []


def test_counts_are_per_state_with_log_characters(store: Store) -> None:
    ids = [record(store, A, "x" * n) for n in (3, 5, 7)]
    lesson(store, A, "lesson", Scope.SESSION)
    with store.write() as tx:
        tx.retire("local", ids[:1], TemporalState.PRESENT, Retired.LOOP, None)
    with store.read() as tx:
        assert tx.counts(A) == {
            TemporalState.PRESENT: (2, 12),
            TemporalState.PAST: (1, 3),
            TemporalState.FUTURE: (1, 0),
        }
        assert tx.counts(SessionKey("local", "proj", "empty")) == {}


def test_update_fingerprints_rewrites_what_count_fingerprint_groups_on(store: Store) -> None:
    ids = [record(store, A, f"log {word(i)}", fp="old") for i in range(3)]
    with store.write() as tx:
        assert tx.count_fingerprint(A, "old") == ids
        tx.update_fingerprints([(ids[0], "new", ("n1", "n2"), 9), (ids[2], "new", (), 9)])
        tx.update_fingerprints([])
        assert tx.count_fingerprint(A, "new") == [ids[0], ids[2]]
        slot = tx.slots_by_id(A, [ids[0]])[0]
    assert (slot.fingerprint, slot.fingerprint_keys, slot.fingerprint_version) == ("new", ("n1", "n2"), 9)


def make_old(s: Store, slot_id: int, days: int) -> None:
    """Backdate a slot's created_at (each store's own SQL: this is test set-up, not the contract)."""
    with s.write() as tx:
        if type(s).__name__ == "SqliteStore":
            tx._conn.execute(  # type: ignore[attr-defined]
                "UPDATE agent_timeline SET created_at = datetime('now', ?) WHERE id = ?",
                (f"-{days} days", slot_id),
            )
        else:
            tx._conn.execute(  # type: ignore[attr-defined]
                "UPDATE agent_timeline SET created_at = "
                "to_char(now() AT TIME ZONE 'UTC' - make_interval(days => %s),"
                " 'YYYY-MM-DD HH24:MI:SS') WHERE id = %s",
                (days, slot_id),
            )


def test_prune_keeps_the_newest_past_slots_and_drops_old_ones_with_their_links(store: Store) -> None:
    other = SessionKey("local", "proj", "s2")
    ids = [record(store, A, f"log {word(i)}") for i in range(5)]
    theirs = [record(store, other, f"theirs {word(i)}") for i in range(3)]
    shared = record(store, other, "log " + word(0))  # same content as ids[0]: the content must survive
    cid = lesson(store, A, "lesson", Scope.SESSION, ("k",))
    with store.write() as tx:
        tx.link(cid, tx.retire("local", ids[:4], TemporalState.PRESENT, Retired.TIME_TRAVEL, cid), "archived")
        tx.retire("local", theirs, TemporalState.PRESENT, Retired.LOOP, None)
    make_old(store, theirs[2], 40)
    with store.write() as tx:
        assert tx.prune(A, 2, 30) == (2, 1)  # ids[0] and ids[1]; the content of ids[0] is still shared
    with store.read() as tx:
        assert [s.id for s in tx.history(A, 10)] == [cid, ids[4], ids[3], ids[2]]
        assert tx.sources(cid, "archived") == [ids[2], ids[3]]
        assert [s.id for s in tx.history(other, 10)] == [shared, *theirs[::-1]]
    with store.write() as tx:
        assert tx.prune(None, 2, 30) == (2, 2)  # theirs[2] is too old, theirs[0] is the third PAST slot
    with store.read() as tx:
        assert [s.id for s in tx.history(other, 10)] == [shared, theirs[1]]
        assert tx.slots_by_id(A, [cid])[0].temporal_state is TemporalState.FUTURE
    store.optimize(vacuum=False)
    store.optimize(vacuum=True)


def test_a_failed_write_rolls_back_and_driver_errors_become_store_errors(store: Store) -> None:
    with pytest.raises(RuntimeError), store.write() as tx:
        record_id = tx.insert_slot(NewSlot(A, TemporalState.PRESENT, Origin.RECORD)).id
        raise RuntimeError("engine decided to give up")
    with pytest.raises(StoreError) as caught, store.write() as tx:
        tx.insert_slot(NewSlot(A, TemporalState.PRESENT, Origin.RECORD, content_id=12345))  # no such content
    assert caught.value.__cause__ is not None and "vlk_memact" not in type(caught.value.__cause__).__module__
    with store.read() as tx:
        assert tx.history(A, 10) == [] and record_id == 1


def test_both_stores_return_equal_results_for_the_same_calls(postgres_url: str) -> None:
    def script(s: Store) -> list[dict[str, Any]]:
        ids = [record(s, A, f"Ünïcode log {word(i)}", fp=f"fp{i % 2}", keys=(f"k{i}",)) for i in range(4)]
        cid = lesson(s, A, "Use the lock", Scope.PROJECT, ("k1", "k3"))
        with s.write() as tx:
            tx.fire([cid])
            tx.link(
                cid, tx.retire("local", ids[1:3], TemporalState.PRESENT, Retired.TIME_TRAVEL, cid), "archived"
            )
        with s.read() as tx:
            slots = [*tx.history(A, 50), *tx.search(A, "ÜNÏCODE", 50), *tx.constraints_matching(A, ["k3"])]
        return [
            {k: v for k, v in asdict(x).items() if k not in ("uid", "created_at", "last_fired_at")}
            for x in slots
        ]

    sqlite, postgres = open_store("sqlite::memory:"), open_store(postgres_url)
    try:
        assert script(sqlite) == script(postgres)
    finally:
        sqlite.close()
        postgres.close()


def test_an_export_of_one_store_loads_into_the_other_unchanged(postgres_url: str) -> None:
    sqlite, postgres = open_store("sqlite::memory:"), open_store(postgres_url)
    try:
        ids = [record(sqlite, A, f"log {word(i)}", keys=(f"k{i}",)) for i in range(3)]
        cid = lesson(sqlite, A, "Use the lock", Scope.PROJECT, ("zeta", "alpha", "Ä"))
        with sqlite.write() as tx:
            tx.fire([cid])
            tx.link(
                cid, tx.retire("local", ids[:2], TemporalState.PRESENT, Retired.TIME_TRAVEL, cid), "archived"
            )
        with sqlite.read() as tx:
            exported = list(tx.dump(None, None, None))
        with postgres.write() as tx:
            assert all(tx.load(r) for r in exported)
            assert not any(tx.load(r) for r in exported)  # loading twice adds nothing
        with postgres.read() as tx:
            assert list(tx.dump(None, None, None)) == exported
            assert list(tx.dump("local", "proj", "nobody")) == []
        with postgres.write() as tx, pytest.raises(ValueError, match="altered"):
            tx.load({**exported[0], "raw_log": "tampered"})
    finally:
        sqlite.close()
        postgres.close()


# ---- PostgreSQL only: migrations and URLs ----


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


# ---- PostgreSQL only: several processes ----


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
