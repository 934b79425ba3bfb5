"""`vlk-memact impact` after real Claude Code sessions (the CLI pinned in tests/claude-code, hooks installed by
`vlk-memact install`, a scripted model on loopback): session A fails on a deploy three times (a loop, carried
to the next session as a fact) and fixes three errors (a missing file by a command, a missing config key by an
Edit, a bad argument by a changed call); the repository is put back; session B meets each error, is told its
fix, applies it and passes, then fails on the deploy until the guard denies the unchanged call, and changes it.
What `impact` reports is what happened, computed from what was recorded."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from claude_code_harness import require_claude_code, run_claude
from scripted_anthropic import ScriptedModel, ToolUse
from test_hooks_e2e import env_for, hook_texts, install_into, make_project, request_after

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400), pytest.mark.xdist_group("impact_claude_code")]

VLK = str(Path(sys.executable).with_name("vlk-memact"))
FILES = {
    ".env.example": "API_URL=http://localhost\n",
    "check_env.sh": 'test -f .env || { echo "error: .env is missing (copy .env.example)" >&2; exit 1; }\necho env ok\n',
    "settings.toml": "[app]\nname = 'demo'\n",
    "app.py": ("import sys\ntext = open('settings.toml').read()\nif 'timeout' not in text:\n"
               "    sys.exit(\"config error: required key 'timeout' missing in settings.toml\")\nprint('app ok')\n"),
    "tool.py": ("import argparse\np = argparse.ArgumentParser(prog='tool.py')\n"
                "p.add_argument('--mode', choices=['fast', 'quick'], required=True)\nprint(p.parse_args().mode)\n"),
    "deploy.sh": ('[ "$1" = "--dry-run" ] && { echo "dry run ok"; exit 0; }\n'
                  'echo "deploy.sh: 2: deployctl: not found" >&2\nexit 127\n'),  # a missing tool
}
TOOLS = ["Bash", "Read", "Edit"]


def bash(command: str, name: str) -> ToolUse:
    return ToolUse("Bash", {"command": command, "description": name}, id=f"toolu_{name}")


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Both sessions, run once for every test of the module."""
    require_claude_code()
    if shutil.which("python3") is None:
        pytest.fail("python3 is needed on PATH by the scripted commands")
    root = tmp_path_factory.mktemp("impact")
    home, db = root / "home", root / "vlk.db"
    home.mkdir()
    project = make_project(root, "app")
    for path, text in FILES.items():
        (project / path).write_text(text)
    install_into(project, home)
    settings = str(project / "settings.toml")
    edit = {"file_path": settings, "old_string": "[app]", "new_string": "[app]\ntimeout = 30"}
    a = [
        *(bash("sh deploy.sh", f"a_deploy{n}") for n in range(3)),
        bash("sh check_env.sh", "a_env_fail"),
        bash("touch .env.local", "a_touch"),  # a wrong first attempt: the fix took session A one step more
        bash("cp .env.example .env", "a_cp"),
        bash("sh check_env.sh", "a_env_pass"),
        bash("python3 app.py", "a_key_fail"),
        ToolUse("Edit", edit, id="toolu_a_edit"),
        bash("python3 app.py", "a_key_pass"),
        bash("python3 tool.py --mode slow", "a_arg_fail"),
        bash("python3 tool.py --mode slow", "a_arg_again"),
        bash("python3 tool.py --mode quick", "a_arg_pass"),
    ]
    with ScriptedModel([*a, "All fixed."]) as model:
        run_a = run_claude("Get the app running.", cwd=project, model=model, env=env_for(db), home=home,
                           allowed_tools=TOOLS)
    assert run_a.returncode == 0 and not run_a.is_error, run_a.describe()
    model.assert_done()
    (project / ".env").unlink()
    (project / "settings.toml").write_text(FILES["settings.toml"])
    b = {
        "env": bash("sh check_env.sh", "b_env_fail"), "cp": bash("cp .env.example .env", "b_cp"),
        "env_pass": bash("sh check_env.sh", "b_env_pass"),
        "key": bash("python3 app.py", "b_key_fail"), "edit": ToolUse("Edit", edit, id="toolu_b_edit"),
        "key_pass": bash("python3 app.py", "b_key_pass"),
        "arg": bash("python3 tool.py --mode slow", "b_arg_fail"),
        "arg_pass": bash("python3 tool.py --mode quick", "b_arg_pass"),
        **{f"deploy{n}": bash("sh deploy.sh", f"b_deploy{n}") for n in range(4)},
        "changed": bash("sh deploy.sh --dry-run", "b_deploy_changed"),
    }
    with ScriptedModel([*b.values(), "Done."]) as model:
        run_b = run_claude("Get the app running.", cwd=project, model=model, env=env_for(db), home=home,
                           allowed_tools=TOOLS)
    assert run_b.returncode == 0 and not run_b.is_error, run_b.describe()
    model.assert_done()
    said = {name: "\n".join(hook_texts(request_after(model, call.id))) for name, call in b.items()}
    denied = model.tool_result("toolu_b_deploy3")
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{db}", "HOME": str(home)}
    report = subprocess.run([VLK, "impact", "--json"], cwd=project, env=env, capture_output=True, text=True,
                            timeout=60)
    readable = subprocess.run([VLK, "impact"], cwd=project, env=env, capture_output=True, text=True, timeout=60)
    return {"a": run_a, "b": run_b, "said": said, "denied": denied, "report": report, "readable": readable,
            "first_request": model.main_requests[0], "home": home}


def test_session_b_is_told_each_fix_and_the_fourth_deploy_is_denied(sessions: dict[str, Any]) -> None:
    said = sessions["said"]
    assert "vlk-memact: fixed in an earlier session by:" in said["env"] and "cp .env.example .env" in said["env"]
    assert "timeout = 30" in said["key"] and "python3 tool.py --mode quick" in said["arg"]
    assert sessions["denied"].is_error and "vlk-memact: not run." in sessions["denied"].text
    start = sessions["first_request"].text()  # the fact session B started with: session A's deploy loop
    assert "Bash `sh deploy.sh` failed 3 times" in start and "deployctl: not found" in start
    log = sessions["home"] / ".local" / "share" / "vlk-memact" / "hooks.log"
    assert not log.exists() or log.read_text().strip() == "", log.read_text()  # no hook error


def test_impact_json_reports_what_happened(sessions: dict[str, Any]) -> None:
    run = sessions["report"]
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    told = report["fixes_told"]
    assert told["total"] >= 3 and told["applied"] >= 3 and told["resolved"] >= 3, told
    assert report["denials"]["total"] == 1 and report["denials"]["then_changed"] == 1, report["denials"]
    assert report["denials"]["then_succeeded"] == 1 and report["denials"]["overridden"] == 0
    carried = report["carried_facts"]
    assert carried["told"] >= 1 and 1 <= carried["met_again"] <= carried["told"], carried
    assert report["chars_injected"] > 0 and report["steps_saved"] >= 1, report
    assert report["sessions"] == 2
    b = sessions["b"].session_id
    assert [d["session"] for d in report["denied_calls"]] == [b]
    assert "sh deploy.sh" in report["denied_calls"][0]["call"]
    assert report["denied_calls"][0]["changed_to"] == "sh deploy.sh --dry-run"  # the changed call after it


def test_impact_names_the_three_fixes(sessions: dict[str, Any]) -> None:
    run = sessions["readable"]
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "cp .env.example .env" in out and "+'timeout = 30'" in out and "python3 tool.py --mode quick" in out, out
    assert "Denials: 1, then changed the call 1" in out, out
    assert "changed to `sh deploy.sh --dry-run`, then succeeded" in out, out

