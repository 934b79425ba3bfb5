"""A database written by the previous release (fingerprint keys of version 3) is keyed again on open, in both stores.

``tests/data/v3_store.json`` holds the rows that release wrote (``tests/corpus/v3_store.py``): a loop of
``KeyError: 'host'`` that became a lesson, a ``KeyError: 'port'`` in another session and a fix kept for
it. Version 3 keyed both errors alike (``KeyError: <*>@app.py:load``), so its lesson would be recalled and
its fix told for the other key. The test builds that release's schema, loads the rows, opens the store
with the current engine and checks what a user gets.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from vlk_memact import Memory
from vlk_memact.core.model import SessionKey
from vlk_memact.engine.fix_memory import match_keys
from vlk_memact.engine.rekey import rekey_if_stale
from vlk_memact.fingerprint import FINGERPRINT_VERSION, fingerprint
from vlk_memact.store import postgres_schema, sqlite_schema

DUMP = json.loads((Path(__file__).parent / "data" / "v3_store.json").read_text(encoding="utf-8"))
PROJECT = "proj"
ORDER = ("memory_contents", "agent_timeline", "constraint_links", "constraint_keys", "fixes", "fix_keys")  # references
TABLES = sorted(DUMP["tables"].items(), key=lambda item: ORDER.index(item[0]) if item[0] in ORDER else len(ORDER))
for _, _data in TABLES:  # a retired slot references the lesson that retired it: the lesson first
    if "retired_by" in _data["columns"]:
        _by = _data["columns"].index("retired_by")
        _data["rows"].sort(key=lambda row: row[_by] is not None)


def traceback(key: str, where: str) -> str:
    return (f'Traceback (most recent call last):\n  File "/srv/{where}/app.py", line 7, in load\n'
            f"    return cfg[{key!r}]\nKeyError: {key!r}\n")


def _load_sqlite(url: str) -> None:
    conn = sqlite3.connect(url.removeprefix("sqlite:///"))
    for step in sqlite_schema.MIGRATIONS[: DUMP["schema_version"]]:
        step(conn)
    conn.execute(f"PRAGMA user_version = {DUMP['schema_version']}")
    for table, data in TABLES:
        marks = ", ".join("?" for _ in data["columns"])
        conn.executemany(f"INSERT INTO {table} ({', '.join(data['columns'])}) VALUES ({marks})", data["rows"])
    conn.commit()
    conn.close()


def _load_postgres(url: str) -> None:
    import psycopg

    from vlk_memact.store.postgres import postgres_target

    conninfo, schema = postgres_target(url)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{schema}"')
        conn.execute(f"CREATE TABLE {postgres_schema.VERSION_TABLE} (version integer PRIMARY KEY, name text NOT NULL,"
                     f" applied_at text NOT NULL DEFAULT {postgres_schema.NOW_MILLIS})")
        # The release before the fingerprint keys' version (later steps, issue 33's interventions, come after it).
        previous = [m.__name__ for m in postgres_schema.MIGRATIONS].index("m009_fingerprint_keys_version")
        for number, step in enumerate(postgres_schema.MIGRATIONS[:previous], start=1):
            step(conn)
            conn.execute(f"INSERT INTO {postgres_schema.VERSION_TABLE} (version, name) VALUES (%s, %s)",
                         (number, step.__name__))
        for table, data in TABLES:
            marks = ", ".join("%s" for _ in data["columns"])
            with conn.cursor() as cur:
                cur.executemany(f"INSERT INTO {table} ({', '.join(data['columns'])}) VALUES ({marks})", data["rows"])
            if "id" in data["columns"]:
                conn.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")


@pytest.fixture
def old_database(database_url: str) -> str:
    (_load_postgres if database_url.startswith("postgres") else _load_sqlite)(database_url)
    return database_url


def test_the_dump_is_of_the_previous_keys() -> None:
    keys = {row[1] for row in DUMP["tables"]["constraint_keys"]["rows"]} | {
        row[1] for row in DUMP["tables"]["fix_keys"]["rows"]
    }
    assert "python:KeyError: <*>@app.py:load" in keys  # one key for both errors: what version 3 did
    assert FINGERPRINT_VERSION > 3


def test_opening_keys_every_row_again(old_database: str) -> None:
    with Memory(old_database, project=PROJECT) as memory, memory.store.read() as tx:
        assert tx.keys_version() == FINGERPRINT_VERSION
        assert not tx.stale_fingerprints(FINGERPRINT_VERSION)
        slots = tx.history(SessionKey("local", PROJECT, "s1"), 50) + tx.history(SessionKey("local", PROJECT, "s2"), 50)
        records = [s for s in slots if s.origin.value == "record"]
        assert len(records) == 5
        for slot in records:
            fp = fingerprint(slot.raw_log or "")
            assert (slot.fingerprint, slot.fingerprint_keys, slot.fingerprint_version) == (fp.key, fp.keys,
                                                                                            FINGERPRINT_VERSION)
        lesson = next(s for s in slots if s.origin.value != "record")
        assert lesson.fingerprint_keys == fingerprint(traceback("host", "x")).keys
    with Memory(old_database, project=PROJECT) as memory:
        assert rekey_if_stale(memory.store) == 0  # once only


def test_a_lesson_of_version_3_is_recalled_for_its_error_and_no_other(old_database: str) -> None:
    with Memory(old_database, project=PROJECT) as memory:
        same = memory.record_state(raw_log=traceback("host", "checkout-2"), session_id="s3")
        other = memory.record_state(raw_log=traceback("port", "checkout-2"), session_id="s4")
    assert len(same.recalled) == 1
    assert other.recalled == []  # version 3 recalled the 'host' lesson here too


def test_a_fix_of_version_3_is_found_for_its_error_and_no_other(old_database: str) -> None:
    with Memory(old_database, project=PROJECT) as memory, memory.store.read() as tx:
        later = SessionKey("local", PROJECT, "s9")
        port = tx.fixes_matching(later, match_keys(fingerprint(traceback("port", "y")).keys), 10)
        host = tx.fixes_matching(later, match_keys(fingerprint(traceback("host", "y")).keys), 10)
    assert [f.error.splitlines()[-1] for f in port] == ["KeyError: 'port'"]
    assert host == []
