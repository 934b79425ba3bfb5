"""The hook process's fast path: the `vlk-memact` command imports only the warm client, hosts/shared/warm.py (no
`re`, which a generated console script imports first, no command-line modules, no `__future__`), and a
warm server steps down when its code changes, so that an edited or upgraded installation is never
answered by the old code for more than a moment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hook_events import bash, pre, prompt

from vlk_memact.hosts.shared import warm_server

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

VLK = Path(sys.executable).with_name("vlk-memact")
CLIENT_MODULES = {"vlk_memact", "vlk_memact.hosts", "vlk_memact.hosts.shared", "vlk_memact.hosts.shared.warm", "_socket", "marshal"}


def hook_env(tmp_path: Path) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path / "home"),
            "DATABASE_URL": f"sqlite:///{tmp_path / 'vlk.db'}", "VLK_PROJECT": "p",
            "VLK_HOOK_SERVER_IDLE_SECONDS": "5"}


def imported_by(args: list[str], event: object, env: dict[str, str]) -> set[str]:
    done = subprocess.run([sys.executable, "-X", "importtime", *args], input=json.dumps(event), env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")
            and "self [us]" not in line}


def test_the_command_imports_only_the_warm_client_beyond_the_interpreters_start(tmp_path: Path) -> None:
    env = hook_env(tmp_path)
    subprocess.run([str(VLK), "hook", "claude-code"], input=json.dumps(prompt()), env=env, capture_output=True,
                   text=True, timeout=60)  # starts the warm server
    time.sleep(1.5)
    floor = imported_by(["-c", "pass"], {}, env)
    hook = imported_by([str(VLK), "hook", "claude-code"], pre("Bash", bash("ls")), env)
    assert "re" not in hook and hook - floor <= CLIENT_MODULES, sorted(hook - floor)


def test_a_server_steps_down_when_its_code_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLK_HOOK_SERVER_IDLE_SECONDS", "60")
    monkeypatch.setattr(warm_server, "CODE_CHECK_SECONDS", 0.2)
    stamps = iter(["old", "old"])
    monkeypatch.setattr(warm_server, "_code_stamp", lambda: next(stamps, "new"))
    path = str(tmp_path / "hooks.sock")
    server = threading.Thread(target=warm_server.serve, args=(path,), daemon=True)
    started = time.monotonic()
    server.start()
    server.join(10)
    assert not server.is_alive(), "the server kept serving after its code changed"
    assert time.monotonic() - started < 5
    assert not os.path.exists(path)  # the next hook answers in its own process and starts a new server


def test_a_script_installed_before_the_split_still_takes_the_fast_path() -> None:
    """A `vlk-memact` script installed before hosts/ had sub-packages imports vlk_memact.hosts.warm: that path
    stays, and is the shared warm client itself (not a copy that could drift)."""
    from vlk_memact.hosts import warm as old_path
    from vlk_memact.hosts.shared import warm

    assert old_path.hook is warm.hook and old_path.leave is warm.leave
    script = (Path(__file__).resolve().parents[3] / "scripts" / "vlk-memact").read_text(encoding="utf-8")
    assert "from vlk_memact.hosts.shared.warm import hook, leave" in script
