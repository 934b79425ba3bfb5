"""A newcomer's first hour, as the README walks it (issue 36): its "Your first hour" block, run in order in a fresh
home and git repository with the installed `vlk-memact`, and where the block says to work with the agent, the
hooks that `install` wrote record a session, as Claude Code runs them (the command and arguments read back from
the settings file, an event on stdin each). Then the issue's own checks of that hour, on the same home.

Each command runs once (a module fixture); the tests assert on what it printed.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import hook_events as ev
import pytest
from docs_pages import ROOT, blocks
from test_docs_commands import command_lines, simple_commands, vlk_arguments

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("test_first_hour")]

SESSION = "4f7c1e9a-first-hour"
EXPRESS = ("Exit code 1\nnode:internal/modules/cjs/loader:1228\n  throw err;\n  ^\n\nError: Cannot find module "
           "'express'\nRequire stack:\n- {repo}/app.js")


def first_hour_block() -> list[str]:
    """The command lines of the README's "Your first hour" block, comment lines kept (one says: work now)."""
    text = (ROOT / "README.md").read_text()
    start = text.index("## Your first hour")
    [block] = [b for b in blocks(ROOT / "README.md")
               if b.language == "bash" and start < text.index(b.body) < text.index("\n## ", start + 1)]
    return [line for _, line in command_lines(block.body)]


@dataclass
class Ran:
    argv: list[str]
    code: int
    out: str
    err: str


class Newcomer:
    """A throwaway user: home, data directory, runtime directory, a repository with one commit; `vlk-memact`
    on PATH from this environment, no agent CLI (the hooks are run as the host runs them)."""

    def __init__(self, root: Path) -> None:
        self.home, self.repo = root / "home", root / "home" / "work" / "app"
        self.repo.mkdir(parents=True)
        (root / "run").mkdir()
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("VLK_", "DATABASE_URL", "CODEX_", "XDG_", "CLAUDE_CODE_SESSION_ID"))}
        env.update(HOME=str(self.home), XDG_RUNTIME_DIR=str(root / "run"), VLK_HOOK_SERVER="0",
                   PATH=f"{Path(sys.executable).parent}{os.pathsep}/usr/bin{os.pathsep}/bin")
        self.env = env
        self.git("init", "-q")
        (self.repo / "app.js").write_text("require('express')\n")
        self.git("add", "app.js")
        self.git("commit", "-q", "-m", "first")

    def git(self, *args: str) -> str:
        return subprocess.run(["git", "-c", "user.name=n", "-c", "user.email=n@example.com", *args], cwd=self.repo,
                              env=self.env, capture_output=True, text=True, check=True).stdout

    def vlk(self, *args: str, cwd: Path | None = None) -> Ran:
        done = subprocess.run(["vlk-memact", *args], cwd=cwd or self.repo, env=self.env, capture_output=True,
                              text=True, timeout=180, stdin=subprocess.DEVNULL)
        return Ran(["vlk-memact", *args], done.returncode, done.stdout, done.stderr)

    def agent_works(self) -> list[str]:
        """Claude Code's hooks through the command install wrote: a session starts, `node app.js` fails three
        times, `npm install express` succeeds, and `node app.js` then passes. The answers printed."""
        settings = json.loads((self.repo / ".claude" / "settings.local.json").read_text())
        [group] = settings["hooks"]["PostToolUseFailure"]
        [handler] = group["hooks"]
        command = [handler["command"], *handler.get("args", [])]
        answers = []

        def hook(event: dict) -> None:
            event = {**event, "cwd": str(self.repo), "session_id": SESSION}
            done = subprocess.run(command, input=json.dumps(event), cwd=self.repo, env=self.env,
                                  capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr
            answers.append(done.stdout)

        hook(ev.session_start(session=SESSION))
        node = ev.bash("node app.js")
        for _ in range(3):
            tid = ev.use_id()
            hook(ev.pre("Bash", node, SESSION, tid))
            hook(ev.failure("Bash", node, EXPRESS.format(repo=self.repo), SESSION, tid))
        for command_line in ("npm install express", "node app.js"):
            tid = ev.use_id()
            hook(ev.pre("Bash", ev.bash(command_line), SESSION, tid))
            hook(ev.success("Bash", ev.bash(command_line), session=SESSION, tool_use_id=tid))
        return answers


@pytest.fixture(scope="module")
def hour(tmp_path_factory: pytest.TempPathFactory) -> tuple[Newcomer, dict[str, Ran], list[str]]:
    """The README's block, run line by line; results by subcommand (`--version` for the version)."""
    user = Newcomer(tmp_path_factory.mktemp("first-hour"))
    results: dict[str, Ran] = {}
    answers: list[str] = []
    for line in first_hour_block():
        commands = simple_commands(line)
        if not commands:  # the comment: now the agent works
            answers = user.agent_works()
            continue
        [argv] = commands
        arguments = vlk_arguments(argv)
        assert arguments is not None, f"the first-hour block runs vlk-memact only: {line}"
        ran = user.vlk(*arguments)
        results[arguments[0]] = ran
        if arguments[0] == "install":
            results["status after install"] = Ran([], 0, user.git("status", "--porcelain"), "")
    results["status after uninstall"] = Ran([], 0, user.git("status", "--porcelain", "--ignored"), "")
    return user, results, answers


def test_the_block_is_the_first_hour_the_issue_names(hour: tuple[Newcomer, dict[str, Ran], list[str]]) -> None:
    _, results, answers = hour
    assert list(results)[:4] == ["--version", "demo", "install", "status after install"]
    assert {"doctor", "sessions", "summary", "search", "context", "uninstall"} <= set(results)
    assert any("loop anchor" in a for a in answers)  # the hooks did record (and announce) the loop
    for name, ran in results.items():
        assert ran.code == 0, f"{name}: exit {ran.code}\n{ran.out[-2000:]}\n{ran.err[-2000:]}"


def test_version_demo_install_and_doctor(hour: tuple[Newcomer, dict[str, Ran], list[str]]) -> None:
    user, results, _ = hour
    assert re.fullmatch(r"vlk-memact \d+\.\d+\.\d+\S*\n", results["--version"].out)
    assert "Without vlk-memact the three failures stay in the model's context" in results["demo"].out
    assert "\nvlk-memact is installed for Claude Code.\nNo past Claude Code sessions" in results["install"].out
    assert f"{user.repo}/.claude/settings.local.json: added the SessionStart" in results["install"].out
    doctor = results["doctor"].out
    assert "ok   hosts: claude-code hooks installed once" in doctor and "hosts: gemini:" in doctor
    assert "hosts: opencode:" in doctor and "hosts: codex:" in doctor


def test_what_the_hooks_recorded_is_found_by_the_read_commands(hour: tuple[Newcomer, dict[str, Ran], list[str]]) -> None:
    user, results, _ = hour
    [header, row] = results["sessions"].out.splitlines()
    assert header.startswith("SESSION") and row.split()[:2] == [SESSION, "claude-code"]
    summary = results["summary"]
    assert summary.out.startswith(f"Session '{SESSION}': 4 total timeline slots | 0 PRESENT (active) | 3 PAST")
    assert f"session '{SESSION}' (the latest of project '{user.repo}': claude-code" in summary.err
    assert " INFO " not in summary.err  # quiet by default
    found = json.loads(results["search"].out)
    assert found and {s["session_id"] for s in found} == {SESSION}


def test_the_context_names_the_fix_without_ordering_a_change_of_approach(
        hour: tuple[Newcomer, dict[str, Ran], list[str]]) -> None:
    context = results_of(hour)["context"].out
    assert "[SYSTEM ANCHOR] Loop detected (exact): the same error pattern appeared 3 times (identical logs)." in context
    assert "A fix for this error is known" in context and "    Fixed by: npm install express" in context
    assert "CURRENT STRATEGY EXHAUSTED" not in context and 'Last signature: "Error: Cannot find module' in context


def test_install_then_uninstall_leaves_the_repository_as_it_was(hour: tuple[Newcomer, dict[str, Ran], list[str]]) -> None:
    results = results_of(hour)
    assert results["status after install"].out == "?? .claude/\n"
    assert results["uninstall"].out.endswith("vlk-memact is uninstalled from Claude Code.\n")
    assert results["status after uninstall"].out == ""


def results_of(hour: tuple[Newcomer, dict[str, Ran], list[str]]) -> dict[str, Ran]:
    return hour[1]


# ---- the issue's other checks of that hour, on the same home and database ----


def test_doctor_takes_the_database_url_after_the_command(hour: tuple[Newcomer, dict[str, Ran], list[str]]) -> None:
    user = hour[0]
    url = f"sqlite:///{user.home}/.local/share/vlk-memact/vlk.db"
    done = user.vlk("doctor", "--database-url", url)
    assert "unrecognized arguments" not in done.err and f"SQLite {url} (from --database-url)" in done.out
    assert user.vlk("summary", "--database-url", url).out.startswith(f"Session '{SESSION}'")


def test_hook_help_prints_usage_and_starts_nothing(hour: tuple[Newcomer, dict[str, Ran], list[str]]) -> None:
    user = hour[0]
    run_dir = Path(user.env["XDG_RUNTIME_DIR"])
    before = sorted(run_dir.rglob("*"))
    env = {**user.env, "VLK_HOOK_SERVER": "1"}
    for argv in (["hook", "--help"], ["hook", "claude-code", "--help"]):
        done = subprocess.run(["vlk-memact", *argv], env=env, cwd=user.repo, capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL)
        assert done.returncode == 0 and done.stdout.startswith("usage: vlk-memact hook"), done.stderr
    assert sorted(run_dir.rglob("*")) == before  # no warm server, no socket


def test_doctor_mentions_gemini_after_install_gemini(hour: tuple[Newcomer, dict[str, Ran], list[str]]) -> None:
    user = hour[0]
    assert "\nvlk-memact is installed for Gemini CLI.\nNo past Gemini CLI sessions" in user.vlk("install", "gemini").out
    try:
        doctor = user.vlk("doctor").out
        assert re.search(r"ok   hosts: gemini: hooks and MCP server in .*/\.gemini/settings\.json \(user scope\)",
                         doctor), doctor
    finally:
        assert user.vlk("uninstall", "gemini").code == 0


def test_install_codex_dry_run_without_codex_says_it_is_missing(hour: tuple[Newcomer, dict[str, Ran], list[str]]) -> None:
    user = hour[0]
    done = user.vlk("install", "codex", "--dry-run", "--trust")
    assert done.code == 1 and "the `codex` command is not on PATH" in done.err
    assert not (user.home / ".codex").exists()


def test_the_blocks_commands_are_the_ones_a_newcomer_types(hour: tuple[Newcomer, dict[str, Ran], list[str]]) -> None:
    """The block holds only `vlk-memact` lines and one comment, and each line fits a terminal."""
    lines = first_hour_block()
    assert sum(1 for line in lines if not simple_commands(line)) == 1
    assert all(len(line) <= 110 for line in lines)
    assert all(shlex.split(line, comments=True)[0] == "vlk-memact" for line in lines if simple_commands(line))


def test_the_viewer_shows_the_session(hour: tuple[Newcomer, dict[str, Ran], list[str]]) -> None:
    """`vlk-memact ui`, named beside the block: its URL opens the session list, the hooks' session in it."""
    user = hour[0]
    proc = subprocess.Popen(["vlk-memact", "ui"], cwd=user.repo, env=user.env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())  # the token becomes a cookie
        with browser.open(url, timeout=30) as page:  # loopback, the URL it printed
            assert SESSION in page.read().decode()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
