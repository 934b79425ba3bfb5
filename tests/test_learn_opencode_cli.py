"""`vlk-memact learn` on OpenCode's own session database, written by the real CLI (pinned in tests/opencode)
against a scripted model: the scenario of tests/learn_scenario.py, one CLI start per session, shared by the
tests. OpenCode keeps its sessions in SQLite (opencode.db), which learn reads read-only."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from host_harness import require_cli
from learn_scenario import BUILD, ERROR, SETUP, learned, shared_tests
from opencode_harness import missing_cli, session_id, shell, workspace
from scripted_openai import ScriptedOpenAI, call, text

from vlk_memact import Memory

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900), pytest.mark.xdist_group("test_learn_opencode_cli")]


@pytest.fixture(scope="module")
def lived(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    require_cli(missing_cli())
    with ScriptedOpenAI() as api:
        ws = workspace(tmp_path_factory.mktemp("learn-opencode"), api)
        missing = ws.project / "missing.txt"
        first = ws.run("build it", shell(BUILD), call("read", filePath=str(missing)), shell(SETUP), shell(BUILD),
                       text("built."))
        database = ws.home / ".local" / "share" / "opencode" / "opencode.db"
        done = {"ws": ws, "session": session_id(first), "database": database,
                "db_bytes": database.read_bytes(), "learned": ws.vlk("learn", "--json"),
                "again": ws.vlk("learn", "--json")}
        done["db_after"] = database.read_bytes()
        (ws.project / "config.ok").unlink()
        done["install"] = ws.vlk("install", ws.host)
        ws.run("build it again", shell(BUILD), text("noted."))
        done["later_text"] = ws.last[1].since_last_call()
        done["after_live"] = ws.vlk("learn", "--json")
        yield done


def test_learn_opencode_reads_the_database_the_cli_wrote_and_never_writes_it(lived: dict[str, Any]) -> None:
    assert lived["database"].is_file()
    report = learned(lived["learned"])
    # The read of a missing file throws in OpenCode: a failure too (tool.error), and no fix of its own.
    assert (report["sessions_learned"], report["calls"], report["fixes"]) == (1, 4, 1), report
    assert report["failures"] == 2
    assert lived["db_after"] == lived["db_bytes"]


def test_learn_opencode_records_the_failures_the_plugin_would_have_sent(lived: dict[str, Any]) -> None:
    ws = lived["ws"]
    with Memory(ws.url, project=str(ws.project)) as memory:
        logs = sorted(s.raw_log.strip() for s in memory.get_history(session_id=lived["session"]).slots)
    assert logs[0] == f"Exit code 1\n{ERROR}" and "missing.txt" in logs[1], logs


globals().update(shared_tests("opencode"))
