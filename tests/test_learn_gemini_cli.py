"""`vlk-memact learn` on Gemini CLI's own chat files, written by the real CLI (pinned in tests/gemini-cli)
against a scripted model: the scenario of tests/learn_scenario.py, one CLI start per session, shared by the
tests."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import pytest
from gemini_harness import ScriptedGemini, missing_cli, run_gemini, shell, text, write_settings
from host_harness import Workspace, git_project, require_cli
from learn_scenario import BUILD, ERROR, SETUP, check_first_learn, learned, shared_tests

from vlk_memact import Memory

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900), pytest.mark.xdist_group("test_learn_gemini_cli")]


@pytest.fixture(scope="module")
def lived(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    require_cli(missing_cli())
    root = tmp_path_factory.mktemp("learn-gemini")
    write_settings(root / "home")
    with ScriptedGemini() as api:
        ws = Workspace("gemini", root / "home", git_project(root / "project"), root / "vlk.db", api,
                       functools.partial(run_gemini, base_url=api.base_url))
        ws.run("build it", shell(BUILD), shell(SETUP), shell(BUILD), text("built."))
        chats = sorted((ws.home / ".gemini" / "tmp").rglob("session-*.jsonl"))
        done = {"ws": ws, "chats": chats, "learned": ws.vlk("learn", "--json"), "again": ws.vlk("learn", "--json")}
        (ws.project / "config.ok").unlink()
        done["install"] = ws.vlk("install", ws.host)
        ws.run("build it again", shell(BUILD), text("noted."))
        done["later_text"] = ws.last[1].last_parts_text()
        done["after_live"] = ws.vlk("learn", "--json")
        yield done


def test_learn_gemini_reads_the_chat_file_the_cli_wrote(lived: dict[str, Any]) -> None:
    assert len(lived["chats"]) == 1, lived["chats"]
    check_first_learn(learned(lived["learned"]), calls=3)


def test_learn_gemini_records_the_failure_as_the_live_hook_words_it(lived: dict[str, Any]) -> None:
    import json

    ws = lived["ws"]
    session = json.loads(lived["chats"][0].read_text().splitlines()[0])["sessionId"]
    with Memory(ws.url, project=str(ws.project)) as memory:
        logs = [s.raw_log for s in memory.get_history(session_id=session).slots]
    assert logs == [f"Exit code 1\n{ERROR}"], logs


globals().update(shared_tests("gemini"))
