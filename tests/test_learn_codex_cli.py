"""`vlk-memact learn` on Codex CLI's own rollouts, written by the real CLI (pinned in tests/codex) against a
scripted model: the scenario of tests/learn_scenario.py, one CLI start per session, shared by the tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from codex_harness import missing_cli, shell, thread_id, workspace
from host_harness import require_cli
from learn_scenario import BUILD, ERROR, SETUP, check_first_learn, learned, shared_tests
from scripted_openai import ScriptedOpenAI, text

from vlk_memact import Memory

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900), pytest.mark.xdist_group("test_learn_codex_cli")]


@pytest.fixture(scope="module")
def lived(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    require_cli(missing_cli())
    with ScriptedOpenAI() as api:
        ws = workspace(tmp_path_factory.mktemp("learn-codex"), api)
        first = ws.run("build it", shell(BUILD), shell(SETUP), shell(BUILD), text("built."))
        done = {"ws": ws, "session": thread_id(first), "learned": ws.vlk("learn", "--json"),
                "again": ws.vlk("learn", "--json")}
        (ws.project / "config.ok").unlink()
        done["install"] = ws.vlk("install", ws.host)
        ws.run("build it again", shell(BUILD), text("noted."))
        done["later_text"] = ws.last[1].since_last_call()
        done["after_live"] = ws.vlk("learn", "--json")
        yield done


def test_learn_codex_reads_the_rollout_the_cli_wrote(lived: dict[str, Any]) -> None:
    rollouts = list((lived["ws"].home / ".codex" / "sessions").rglob("rollout-*.jsonl"))
    assert any(lived["session"] in p.name for p in rollouts), rollouts
    check_first_learn(learned(lived["learned"]), calls=3)


def test_learn_codex_records_the_exit_code_the_rollout_holds(lived: dict[str, Any]) -> None:
    ws = lived["ws"]
    with Memory(ws.url, project=str(ws.project)) as memory:
        slots = memory.get_history(session_id=lived["session"]).slots
    assert [s.raw_log.strip() for s in slots] == [f"Exit code 1\n{ERROR}"]


globals().update(shared_tests("codex"))
