"""Fix memory inside the real Claude Code CLI (pinned in tests/claude-code), hooks installed by `vlk-memact
install`, driven by a scripted model on loopback: session A fixes a missing file with a command, a missing
config key with an Edit and a bad argument with a changed call; the repository is put back; in session B the
request right after each recurring failure carries its fix, and nothing else is named as one."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from claude_code_harness import require_claude_code, run_claude
from scripted_anthropic import ScriptedModel, ToolUse
from test_hooks_e2e import env_for, hook_texts, install_into, make_project, request_after

from vlk_memact import Memory

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]

FILES = {
    ".env.example": "API_URL=http://localhost\n",
    "check_env.sh": 'test -f .env || { echo "error: .env is missing (copy .env.example)" >&2; exit 1; }\necho env ok\n',
    "settings.toml": "[app]\nname = 'demo'\n",
    "app.py": ("import sys\ntext = open('settings.toml').read()\nif 'timeout' not in text:\n"
               "    sys.exit(\"config error: required key 'timeout' missing in settings.toml\")\nprint('app ok')\n"),
    "tool.py": ("import argparse\np = argparse.ArgumentParser(prog='tool.py')\n"
                "p.add_argument('--mode', choices=['fast', 'quick'], required=True)\nprint(p.parse_args().mode)\n"),
    "deploy.sh": 'echo "fatal: upstream refused the push (ERR_UPSTREAM_4711)" >&2\nexit 3\n',
}
TOOLS = ["Bash", "Read", "Edit"]


def repository(root: Path, name: str) -> Path:
    folder = make_project(root, name)
    for path, text in FILES.items():
        (folder / path).write_text(text)
    return folder


def put_back(folder: Path) -> None:
    """The repository as it was before session A: no .env, settings without the key."""
    (folder / ".env").unlink()
    (folder / "settings.toml").write_text(FILES["settings.toml"])


def bash(command: str, name: str) -> ToolUse:
    return ToolUse("Bash", {"command": command, "description": name}, id=f"toolu_{name}")


def session_b_calls(tag: str) -> dict[str, ToolUse]:
    return {
        "env": bash("sh check_env.sh", f"{tag}_env"),
        "key": bash("python3 app.py", f"{tag}_key"),
        "arg": bash("python3 tool.py --mode slow", f"{tag}_arg"),
        "deploy": bash("sh deploy.sh", f"{tag}_deploy"),
    }


@pytest.fixture
def setup(tmp_path: Path) -> dict[str, Any]:
    require_claude_code()
    if shutil.which("python3") is None:
        pytest.fail("python3 is needed on PATH by the scripted commands")
    home = tmp_path / "home"
    home.mkdir()
    return {"home": home, "db": tmp_path / "vlk.db", "root": tmp_path}


def test_a_later_session_is_told_each_fix_right_after_the_recurring_failure(setup: dict) -> None:
    home, db = setup["home"], setup["db"]
    project, other = repository(setup["root"], "app"), repository(setup["root"], "other")
    install_into(project, home)
    install_into(other, home)
    settings = str(project / "settings.toml")
    a = [
        bash("sh deploy.sh", "a_deploy"),  # fails, and nothing ever fixes it
        bash("touch notes.txt", "a_touch"),  # changes state, but before the failures below
        bash("sh check_env.sh", "a_env_fail"),
        ToolUse("Read", {"file_path": str(project / ".env.example")}, id="toolu_a_read"),
        bash("cp .env.example .env", "a_cp"),
        bash("sh check_env.sh", "a_env_pass"),
        bash("python3 app.py", "a_key_fail"),
        ToolUse("Edit", {"file_path": settings, "old_string": "[app]", "new_string": "[app]\ntimeout = 30"},
                id="toolu_a_edit"),
        bash("python3 app.py", "a_key_pass"),
        bash("python3 tool.py --mode slow", "a_arg_fail"),
        bash("python3 tool.py --mode quick", "a_arg_pass"),
    ]
    with ScriptedModel([*a, "All fixed."]) as model:
        run_a = run_claude("Get the app running.", cwd=project, model=model, env=env_for(db), home=home,
                           allowed_tools=TOOLS)
    assert run_a.returncode == 0 and not run_a.is_error, run_a.describe()
    model.assert_done()
    for passed in ("a_env_pass", "a_key_pass", "a_arg_pass", "a_cp", "a_touch"):
        assert not model.tool_result(f"toolu_{passed}").is_error, passed
    for failed in ("a_deploy", "a_env_fail", "a_key_fail", "a_arg_fail"):
        assert model.tool_result(f"toolu_{failed}").is_error, failed
    put_back(project)

    b = session_b_calls("b")
    with ScriptedModel([*b.values(), "Seen."]) as model:
        run_b = run_claude("Get the app running.", cwd=project, model=model, env=env_for(db), home=home,
                           allowed_tools=TOOLS)
    assert run_b.returncode == 0 and not run_b.is_error, run_b.describe()
    model.assert_done()
    said = {name: "\n".join(hook_texts(request_after(model, call.id))) for name, call in b.items()}
    assert "vlk-memact: fixed in an earlier session by: cp .env.example .env (then sh check_env.sh passed)" in \
        said["env"], said["env"]
    # The file is named relative to the repository (core/portable.py): the fix reads right in any checkout.
    assert "Edit settings.toml: +'timeout = 30' (then python3 app.py passed)" in said["key"], said["key"]
    assert str(project) not in said["key"]
    assert "the changed call python3 tool.py --mode quick (it passed)" in said["arg"], said["arg"]
    assert "fixed" not in said["deploy"], said["deploy"]  # nothing fixed it: nothing invented
    every = "\n".join(said.values())
    assert "touch notes.txt" not in every and ".env.example\"" not in every and "Read" not in every

    # A session of another project meets the same errors and hears no fix.
    c = session_b_calls("c")
    with ScriptedModel([c["env"], c["key"], "Seen."]) as model:
        run_c = run_claude("Get the app running.", cwd=other, model=model, env=env_for(db), home=home,
                           allowed_tools=TOOLS)
    assert run_c.returncode == 0, run_c.describe()
    assert all("fixed" not in "\n".join(hook_texts(request_after(model, c[n].id))) for n in ("env", "key"))

    log = home / ".local" / "share" / "vlk-memact" / "hooks.log"
    assert not log.exists() or log.read_text().strip() == "", log.read_text()  # no hook error
    with Memory(f"sqlite:///{db}", project=str(project)) as memory, memory.store.read() as tx:
        fixes = tx.fixes(memory.tenant, memory.project, run_a.session_id, 10)
    assert sorted(f.passed for f in fixes) == ["python3 app.py", "python3 tool.py --mode quick", "sh check_env.sh"]
    assert {s.tool_use_id for f in fixes for s in f.steps} == {"toolu_a_cp", "toolu_a_edit", "toolu_a_arg_pass"}
