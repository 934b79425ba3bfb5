"""The store contract, run against both backends, and the two backends compared on the same calls.

Each PostgreSQL test gets a fresh schema from the `postgres_url` fixture (tests/conftest.py); without
a reachable server those tests skip, or fail when CI is set. What only PostgreSQL has (migrations,
URLs, several processes) is tests/test_store_postgres.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict
from typing import Any

import pytest
from store_slots import MILLIS, SECONDS, A, lesson, record, word

from vlk_memact import StoreError
from vlk_memact.core.model import ConstraintType, NewSlot, Origin, Retired, Scope, SessionKey, TemporalState
from vlk_memact.store import Store, open_store


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest) -> Iterator[Store]:
    if request.param == "sqlite":
        url = "sqlite::memory:"
    else:
        url = request.getfixturevalue("postgres_url")
    s = open_store(url)
    yield s
    s.close()


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


def test_an_inserted_slot_is_the_slot_a_read_returns(store: Store) -> None:
    """insert_slot builds its slot from the INSERT's RETURNING clause: every field equals the stored row's."""
    with store.write() as tx:
        content = tx.add_content("local", "boom again", None, '{"cmd":"y"}')
        record_slot = NewSlot(A, TemporalState.PRESENT, Origin.RECORD, content_id=content, fingerprint="fp",
                              fingerprint_keys=("k1",), fingerprint_version=3)
        lesson_slot = NewSlot(A, TemporalState.FUTURE, Origin.LESSON, scope=Scope.PROJECT,
                              learning_summary="check the key", constraint_type=ConstraintType.DERIVED,
                              evidence="seen twice", fingerprint_keys=("k1", "k2"), lessons=("one", "two"))
        inserted = [tx.insert_slot(record_slot), tx.insert_slot(lesson_slot)]
        # given what it just stored, the slot is not read back (the record's hot path): the same slot all the same
        told = tx.insert_slot(record_slot, ("boom again", None, '{"cmd":"y"}'))
        inserted.append(told)
    with store.read() as tx:
        assert tx.slots_by_id(A, [s.id for s in inserted]) == inserted
    assert told.raw_log == "boom again" and told.sequence_order == inserted[1].sequence_order + 1


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
