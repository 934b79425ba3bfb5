"""A database written by the previous release (fingerprint keys of version 3) is keyed again on open, in both stores.

``tests/data/v3_store.json`` holds the rows that release wrote (``tests/corpus/v3_store.py``): a loop of
``KeyError: 'host'`` that became a lesson, a ``KeyError: 'port'`` in another session and a fix kept for
it. Version 3 keyed both errors alike (``KeyError: <*>@app.py:load``), so its lesson would be recalled and
its fix told for the other key. The test builds that release's schema, loads the rows, opens the store
with the current engine and checks what a user gets.
"""

from __future__ import annotations

import pytest
from old_release import load_postgres, load_sqlite, read_dump

from vlk_memact import Memory
from vlk_memact.core.model import SessionKey
from vlk_memact.engine.fix_memory import match_keys
from vlk_memact.engine.rekey import rekey_if_stale
from vlk_memact.fingerprint import FINGERPRINT_VERSION, fingerprint

DUMP, TABLES = read_dump("v3_store.json")
PROJECT = "proj"


def traceback(key: str, where: str) -> str:
    return (f'Traceback (most recent call last):\n  File "/srv/{where}/app.py", line 7, in load\n'
            f"    return cfg[{key!r}]\nKeyError: {key!r}\n")


@pytest.fixture
def old_database(database_url: str) -> str:
    if database_url.startswith("postgres"):  # the release before the fingerprint keys' version
        load_postgres(database_url, TABLES, "fingerprint_keys_version")
    else:
        load_sqlite(database_url, DUMP, TABLES)
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
