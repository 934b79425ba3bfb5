"""Issue 36, item by item where one process shows it: an anchor with a known fix, failure summaries, the loop kinds,
doctor on Gemini CLI, quiet logs, a closed pipe, a mistyped database folder, `hook --help`, the terminal hint of
the stdio server. The whole first hour, as the README walks it, is tests/test_first_hour.py."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import hook_events as ev
import pytest
from test_fixes import ENV_ERROR, session_a

from vlk_memact import Memory
from vlk_memact.core.render import ANCHOR_ORDER, KNOWN_FIX
from vlk_memact.hosts.claude_code import adapter as claude_code
from vlk_memact.hosts.gemini import install as gemini_install
from vlk_memact.ops.hosts_check import host_checks

EXPRESS = "Exit code 1\nnode:internal/modules/cjs/loader:1228\n  throw err;\n\nError: Cannot find module 'express'"


def test_an_anchor_whose_error_has_a_known_fix_tells_the_fix_instead_of_ordering_a_new_approach(memory: Memory) -> None:
    session_a(memory)  # session A fixed the error: `cp .env.example .env`
    for _ in range(3):
        memory.record_state(raw_log=ENV_ERROR, session_id="C")
    text = memory.fetch_context(session_id="C").text
    anchor = next(line for line in text.splitlines() if "[SYSTEM ANCHOR]" in line)
    assert KNOWN_FIX in anchor and "CURRENT STRATEGY EXHAUSTED" not in text and "change approach." not in anchor
    assert "    Fixed by: cp .env.example .env (then sh check_env.sh passed)" in text
    for _ in range(3):  # an error nobody fixed keeps the order
        memory.record_state(raw_log="Exit code 3\nfatal: nothing fixed this (ERR_42)", session_id="E")
    assert ANCHOR_ORDER in memory.fetch_context(session_id="E").text


def test_the_loop_kinds_are_explained_where_they_are_shown(memory: Memory) -> None:
    for n in range(3):
        memory.record_state(raw_log="Exit code 1\nError: same", session_id="x")
        memory.record_state(raw_log=f"Error: timeout after {n + 10} s at /tmp/job-{n}.log", session_id="y")
    exact = memory.fetch_context(session_id="x").text
    assert "Loop detected (exact): the same error pattern appeared 3 times (identical logs)." in exact
    assert "intercepted a loop of 3 (exact: identical logs)" in exact
    assert 'Last signature: "Error: same...' in exact  # the error line, not the host's leading "Exit code 1"
    fingerprint = memory.fetch_context(session_id="y").text
    assert "Loop detected (fingerprint): the same error pattern appeared 3 times (same error, details differ)." \
        in fingerprint


def test_the_viewer_summarises_a_failure_by_its_error_line_and_explains_the_loop_kinds(memory: Memory) -> None:
    from viewer_site import open_site

    claude_code.handle(ev.session_start(session="cc"), memory)
    ev.run_failing(claude_code.handle, memory, "node app.js", EXPRESS, 3, session="cc")
    memory.fetch_context(session_id="cc")
    site = open_site(memory, allow_write=False)
    found = site.client.get("/search?q=express").text
    assert "<code>Error: Cannot find module &#39;express&#39;</code>" in found and "<code>Exit code 1" not in found
    page = site.client.get(f"/session?project={memory.project}&session=cc").text
    archived = page[page.index("Archived slots it links to"):]
    assert archived.count("<code>Error: Cannot find module &#39;express&#39;</code>") == 3
    assert "<code>Exit code 1" not in page
    assert "Loop kinds: exact, identical logs; fingerprint, same error, details differ" in page


def test_doctor_checks_gemini_once_it_is_installed(tmp_path: Path) -> None:
    home, repo = tmp_path / "home", tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    home.mkdir()
    assert [c.detail for c in host_checks(repo, home) if c.name == "gemini"] == [
        "no hooks installed (optional: `vlk-memact install gemini`)"]
    ours = [sys.executable, "-m", "vlk_memact", "hook", "gemini"]
    gemini_install.install(gemini_install.settings_path("user", home=home), command=ours)
    checks = [c for c in host_checks(repo, home) if c.name.startswith("gemini")]
    assert all(c.ok for c in checks) and any("hooks and MCP server in" in c.detail for c in checks)
    gemini_install.install(gemini_install.settings_path("project", repo, home),
                           command=["/gone/venv/bin/vlk-memact", "hook", "gemini"])
    bad = [c for c in host_checks(repo, home) if c.name == "gemini hook command" and not c.ok]
    assert bad and "/gone/venv/bin/vlk-memact does not exist" in bad[0].detail


# ---- as a process ----


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("VLK_", "DATABASE_URL", "XDG_", "CLAUDE_CODE_SESSION_ID"))}
    (tmp_path / "run").mkdir(exist_ok=True)
    env.update(HOME=str(tmp_path), XDG_RUNTIME_DIR=str(tmp_path / "run"), XDG_DATA_HOME=str(tmp_path / "data"),
               VLK_PROJECT="newcomer")
    return env


def _vlk() -> list[str]:
    beside = Path(sys.executable).with_name("vlk-memact")
    return [str(beside)] if beside.exists() else [sys.executable, "-m", "vlk_memact"]


@pytest.mark.slow
def test_commands_are_quiet_unless_asked(tmp_path: Path) -> None:
    env = _env(tmp_path)
    quiet = subprocess.run([*_vlk(), "summary"], env=env, capture_output=True, text=True, timeout=60)
    assert quiet.returncode == 0 and " INFO " not in quiet.stderr and "store ready" not in quiet.stderr
    loud = subprocess.run([*_vlk(), "summary", "-v"], env=env, capture_output=True, text=True, timeout=60)
    assert "INFO vlk_memact.store.sqlite: SQLite store ready" in loud.stderr
    chosen = subprocess.run([*_vlk(), "summary"], env={**env, "VLK_LOG_LEVEL": "INFO"}, capture_output=True,
                            text=True, timeout=60)
    assert "store ready" in chosen.stderr  # VLK_LOG_LEVEL, when set, is what it says


@pytest.mark.slow
def test_a_reader_that_closes_the_pipe_ends_the_command_quietly(tmp_path: Path) -> None:
    env = _env(tmp_path)
    big = "Error: " + "x" * 60_000
    for n in range(3):
        subprocess.run([*_vlk(), "record", f"{big} {n}"], env=env, check=True, capture_output=True, timeout=60)
    for command in ("export", "history --limit 3"):
        done = subprocess.run(f"{' '.join(_vlk())} {command} | head -c 100 > /dev/null; echo \"status ${{PIPESTATUS[0]}}\"",
                              shell=True, executable="/bin/bash", env=env, capture_output=True, text=True, timeout=60)
        assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
        assert done.stdout.strip() == "status 0", command


@pytest.mark.slow
def test_a_database_url_naming_a_missing_folder_is_an_error_and_creates_nothing(tmp_path: Path) -> None:
    done = subprocess.run([*_vlk(), "summary", "--database-url", f"sqlite:///{tmp_path}/typo/dir/vlk.db"],
                          env=_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and f"names a file in {tmp_path}/typo/dir, which does not exist" in done.stderr
    assert not (tmp_path / "typo").exists()
    default = subprocess.run([*_vlk(), "summary"], env=_env(tmp_path), capture_output=True, text=True, timeout=60)
    assert default.returncode == 0 and (tmp_path / "data" / "vlk-memact" / "vlk.db").exists()  # the default is made


@pytest.mark.slow
@pytest.mark.parametrize("argv", [["hook", "--help"], ["hook", "claude-code", "--help"], ["hook", "-h"]])
def test_hook_help_prints_the_usage_and_starts_nothing(tmp_path: Path, argv: list[str]) -> None:
    env = {**_env(tmp_path), "VLK_HOOK_SERVER": "1"}  # the warm server is on: still nothing may start
    done = subprocess.run([*_vlk(), *argv], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0
    assert done.stdout.startswith("usage: vlk-memact hook [-h] {claude-code,gemini,opencode,codex}")
    assert "reads its JSON from stdin" not in done.stderr and "nothing was done" not in done.stderr
    time.sleep(0.3)
    assert list((tmp_path / "run").iterdir()) == []  # no socket folder, no server, no spawn marker
    assert not (tmp_path / "data").exists()  # not even the hook log


@pytest.mark.slow
def test_the_stdio_server_started_in_a_terminal_says_it_waits_for_a_host(tmp_path: Path) -> None:
    leader, follower = pty.openpty()
    proc = subprocess.Popen([*_vlk()], env=_env(tmp_path), stdin=follower, stdout=subprocess.DEVNULL, stderr=follower,
                            start_new_session=True)
    os.close(follower)
    seen = b""
    try:
        deadline = time.monotonic() + 30
        while b"waiting for an MCP host" not in seen and time.monotonic() < deadline:
            if select.select([leader], [], [], 0.5)[0]:
                seen += os.read(leader, 4096)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        os.close(leader)
    text = seen.decode(errors="replace")
    assert "vlk-memact: serving MCP over stdio, waiting for an MCP host on stdin (Ctrl-C to stop)" in text
    assert "INFO vlk_memact" in text  # the server keeps its start-up lines: database and project


def test_doctor_on_a_fresh_home_passes_the_default_database_and_fails_a_mistyped_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vlk_memact.ops.doctor import run_checks

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "fresh" / "data"))  # nothing there yet, not even the folder
    monkeypatch.delenv("DATABASE_URL", raising=False)
    [fresh] = [c for c in run_checks(None, "p") if c.name == "database file"]
    assert fresh.ok and "it and its folder are created at the first start" in fresh.detail
    [typo] = [c for c in run_checks(f"sqlite:///{tmp_path}/typo/vlk.db", "p") if c.name == "database file"]
    assert not typo.ok and f"is in {tmp_path}/typo, which does not exist" in typo.detail
    assert not (tmp_path / "fresh").exists() and not (tmp_path / "typo").exists()  # doctor creates nothing
