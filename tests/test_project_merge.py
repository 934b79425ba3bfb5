"""A database written by the release that keyed projects by path keeps working from a checkout of the repository,
in both stores (issue 35).

``tests/data/path_keyed_store.json`` holds the rows that release wrote (``tests/corpus/path_keyed_store.py``)
for the checkout `/home/alice/src/app`: a loop that became a lesson, a lesson of time travel, a fix, a host
call, the injected items of a session, a record in the tools' `default` session; and one record of another
repository. The test builds that release's schema, loads the rows and opens them with the current engine
from a checkout whose repository is `git.example.com/acme/app` (its main checkout at that path).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from old_release import load_postgres, load_sqlite, read_dump

from vlk_memact import Memory, Settings
from vlk_memact.core.model import SessionKey
from vlk_memact.engine.fix_memory import match_keys
from vlk_memact.engine.projects import merge_path_key
from vlk_memact.fingerprint import fingerprint
from vlk_memact.repository import Identity

DUMP, TABLES = read_dump("path_keyed_store.json")
APP, OTHER, KEY = "/home/alice/src/app", "/home/alice/src/other", "git.example.com/acme/app"
CHECKOUT = Identity(KEY, "/home/bob/work/app", "git@git.example.com:acme/app.git", "the remote 'origin'", APP)


def traceback(key: str) -> str:
    return (f'Traceback (most recent call last):\n  File "{APP}/app.py", line 3, in load\n'
            f"    return cfg[{key!r}]\nKeyError: {key!r}\n")


@pytest.fixture
def old_database(database_url: str) -> str:
    if database_url.startswith("postgres"):
        load_postgres(database_url, TABLES, "project_merges")
    else:
        load_sqlite(database_url, DUMP, TABLES)
    return database_url


def test_the_dump_is_keyed_by_path() -> None:
    projects = {row[4] for row in DUMP["tables"]["agent_timeline"]["rows"]}
    assert projects == {APP, OTHER} and DUMP["schema_version"] == 10


def test_a_checkout_of_the_repository_finds_everything_stored_under_its_path(old_database: str) -> None:
    with Memory(old_database, identity=CHECKOUT) as memory, memory.store.read() as tx:
        assert memory.project == KEY and tx.project_merged(APP) == KEY
        s1, s2 = SessionKey("local", KEY, "s1"), SessionKey("local", KEY, "s2")
        assert len([s for s in tx.history(s1, 50) if s.origin.value == "record"]) == 5
        call = tx.host_call_by_use_id(s2, "toolu_old")
        assert call is not None and call.summary == "python app.py"
        assert tx.injected(s2) == ["lesson:1"]
        assert [f.passed for f in tx.fixes("local", KEY, None, 10)] == ["python app.py"]
        assert tx.fixes("local", APP, None, 10) == []
        assert dict(tx.projects("local")) == {KEY: 3, OTHER: 1}  # s1, s2, default; the other repository stays
        [(path, key, moved, _)] = tx.project_merges()
        assert (path, key) == (APP, KEY) and moved >= 12


def test_its_lessons_are_recalled_and_its_fix_found_under_the_repository_key(old_database: str) -> None:
    with Memory(old_database, identity=CHECKOUT) as memory:
        again = memory.record_state(raw_log=traceback("user"), session_id="new")
        context = memory.fetch_context(session_id="new")
        with memory.store.read() as tx:
            found = tx.fixes_matching(SessionKey("local", KEY, "new"), match_keys(fingerprint(traceback("port")).keys), 5)
    assert len(again.recalled) == 1 and "Set cfg['user'] in config.json" in context.text
    assert [f.error.splitlines()[-1] for f in found] == ["KeyError: 'port'"]


def test_the_merge_runs_once_and_keeps_a_session_both_keys_hold(old_database: str) -> None:
    # A teammate on the new release wrote into the tools' default session under the repository key first.
    with Memory(old_database, project=KEY) as teammate:
        teammate.record_state(raw_log="error: written under the repository key", session_id=None)
    with Memory(old_database, identity=CHECKOUT) as memory, memory.store.read() as tx:
        slots = tx.history(SessionKey("local", KEY, "default"), 10)
    assert sorted(s.raw_log for s in slots) == ["error: the tools' own session", "error: written under the repository key"]
    assert len({s.sequence_order for s in slots}) == 2
    with Memory(old_database, identity=CHECKOUT) as memory:
        assert merge_path_key(memory.store, CHECKOUT) == 0
        with memory.store.write() as tx:  # nothing left under the path, and a second merge is refused by the probe
            assert tx.project_merged(APP) == KEY


def test_vlk_project_overrides_and_merges_nothing(old_database: str) -> None:
    with Memory(old_database, settings=Settings(project="mine"), identity=CHECKOUT) as memory, \
            memory.store.read() as tx:
        assert memory.project == "mine" and tx.project_merged(APP) is None
        assert dict(tx.projects("local"))[APP] == 3


def test_what_a_hook_tells_names_a_former_checkout_s_files_relative(old_database: str, tmp_path: Path) -> None:
    """Texts an earlier release stored with the first checkout's paths read right in any checkout once told."""
    from contextlib import nullcontext

    from vlk_memact.hosts.shared import runner

    event = json.dumps({"hook_event_name": "PostToolUse", "cwd": str(tmp_path)}).encode()
    with Memory(old_database, identity=CHECKOUT) as memory:
        name, reply, problem = runner.answer_event(
            lambda _event, _memory: {"said": f"fixed by: Edit {APP}/config.json; not {OTHER}/x.py"}, event,
            Settings(), opener=lambda *_: nullcontext(memory))
    assert (name, problem) == ("PostToolUse", None)
    assert reply == {"said": f"fixed by: Edit config.json; not {OTHER}/x.py"}
