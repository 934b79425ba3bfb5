"""What every host on the scripted OpenAI-compatible model must do, run against Codex and against OpenCode.

The same tests, word for word, for both real CLIs (pinned in tests/codex and tests/opencode): each gets a
workspace from its harness with vlk-memact installed, and the model's replies in its own tool's shape.
What only one host does is tested in tests/hosts/codex/test_codex_cli.py and tests/hosts/opencode/test_opencode_cli.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import codex_harness
import opencode_harness
import pytest
from host_harness import Workspace, require_cli
from scripted_openai import ScriptedOpenAI, text

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900), pytest.mark.xdist_group("openai_hosts_cli")]


@pytest.fixture(scope="module")
def api() -> Iterator[ScriptedOpenAI]:
    """One scripted model for the module's sessions (both hosts speak its wire formats), one after another."""
    with ScriptedOpenAI() as server:
        yield server


@pytest.fixture(params=[codex_harness, opencode_harness], ids=["codex", "opencode"])
def host(request: pytest.FixtureRequest) -> ModuleType:
    """The host's harness (its workspace and its `shell` reply); skipped or failed without its CLI."""
    require_cli(request.param.missing_cli())
    return request.param


@pytest.fixture
def ws(host: ModuleType, tmp_path: Path, api: ScriptedOpenAI) -> Workspace:
    return host.workspace(tmp_path, api).installed()


def test_a_fix_from_an_earlier_session_is_recalled_right_after_the_error_recurs(host: ModuleType, ws: Workspace):
    settings = ws.project / "settings.ini"
    (ws.project / "settings.example.ini").write_text("[main]\n", encoding="utf-8")
    read = host.shell(f"cat {settings}")
    # It fails three times (a loop, so a lesson whatever fix memory keeps), then a copy fixes it.
    ws.run("read settings", read, read, read, host.shell(f"cp {ws.project}/settings.example.ini {settings}"), read,
           text("fixed."))
    settings.unlink()
    ws.run("read settings again", read, text("hm."))
    after_error = ws.last[1].since_last_call()
    assert "No such file" in after_error
    assert "settings.example.ini" in after_error  # what fixed it last time, next to the recurring error


def test_a_broken_database_leaves_the_session_working_and_injects_nothing(host: ModuleType, ws: Workspace):
    ls = host.shell("ls /nonexistent-vlk-e2e-dir")
    result = ws.run("build it", ls, ls, ls, ls, text("finished."), DATABASE_URL="bogus://nowhere")
    assert "finished." in result.stdout
    assert len(ws.last) == 5  # every call ran and answered; the session went to its end
    assert all("vlk-memact:" not in r.text() for r in ws.last)
    log = ws.home / ".local" / "share" / "vlk-memact" / "hooks.log"
    assert f"hook {ws.host}" in log.read_text(encoding="utf-8")
