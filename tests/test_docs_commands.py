"""Every command the README and docs/ show is checked, so a page cannot drift from the code it describes.

A `vlk-memact ...` command (in a fenced shell block or in inline code) must parse with the real CLI
parser, and the safe ones run, each in a throwaway home, repository and database, and must exit 0.
A `python bench/X.py ...` command must name an existing script whose `--help` knows its flags. A
`python -m pytest ...` command (the suite, this test included) must collect a small test file with its
options. Any other command of a shell block is either run here or listed in NOT_RUN with the reason. The pages'
other blocks are checked by tests/test_docs_blocks.py, their links and paths by tests/test_docs_links.py.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from docs_pages import PAGES, ROOT, SHELLS, blocks, inline_code, relative

from vlk_memact.cli.main import _parser

# Commands of shell blocks that this test does not run, each with why (matched on the command's text).
NOT_RUN = {
    "pip install .": "installs the checkout with its dependencies from PyPI (network); "
    "the tests run in that install",
    "bash .ci/run": "the whole suite, this test included: CI runs it "
    "(tests/test_guards.py checks the README shows it)",
    "pipx install /path/to/vlk-memact": "a placeholder path, and pipx fetches the dependencies (network); "
    "tests/test_install_forms.py runs the uvx forms against this checkout",
    "cd your-repository": "a placeholder: the install after it runs here in a temporary git repository",
}

# `vlk-memact` subcommands that are parsed but not run, with why.
NOT_RUN_SUBCOMMANDS = {
    "ui": "a web server that runs until stopped: tests/test_viewer_live.py starts it and reads its URL",
    "hook": "answers one host event from stdin and exits 0 whatever happens, by design, so a run checks "
    "nothing: tests/hosts/shared/test_hooks_process.py and the host tests drive it",
}
NOT_RUN_HTTP = "an HTTP server that runs until stopped: tests/test_http.py and test_http_postgres.py start it"

# Flags left out when a command is run, with why (the command is still parsed with them).
DROPPED_WHEN_RUN = {
    "--trust": "asks the Codex CLI (`codex app-server`), which a throwaway home does not have: "
    "tests/hosts/codex/test_codex_cli.py installs with --trust against the pinned CLI",
}

# Placeholders of inline commands, and what stands for them when a command is parsed or run.
PLACEHOLDERS = {
    "TEXT": "an error happened",
    "QUERY": "error",
    "L": "a lesson",
    "E": "its evidence",
    "HOST": "claude-code",
    "S": "local",
    "URL": "{database_url}",
    "FILE": "{tmp}/file",
    "ID": "{present_id}",
    "ID...": "{present_id}",
}
PER_COMMAND_PLACEHOLDERS = {"revoke": {"ID": "{future_id}"}, "import": {"FILE": "{export}"}}


@dataclass(frozen=True)
class Shown:
    """One command as a page shows it."""

    page: str
    line: int
    text: str
    fenced: bool

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {self.text}"


def simple_commands(script: str) -> list[list[str]]:
    """The simple commands of a shell snippet: comments dropped, split at ;, &&, || and |."""
    lexer = shlex.shlex(script.replace("\\\n", " "), posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    commands, current = [], []
    for token in lexer:
        if token in {";", "&&", "||", "|", "&"}:
            commands.append(current)
            current = []
        else:
            current.append(token)
    return [c for c in [*commands, current] if c]


def without_assignments(argv: list[str]) -> list[str]:
    while argv and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", argv[0]):
        argv = argv[1:]
    return argv


def vlk_arguments(argv: list[str]) -> list[str] | None:
    """The arguments after `vlk-memact` (or `python -m vlk_memact`), or None for another program."""
    argv = without_assignments(argv)
    if argv and Path(argv[0]).name == "vlk-memact":
        return argv[1:]
    if len(argv) >= 3 and Path(argv[0]).name.startswith("python") and argv[1:3] == ["-m", "vlk_memact"]:
        return argv[3:]
    return None


def bench_arguments(argv: list[str]) -> list[str] | None:
    """`python bench/X.py ARGS` (or `bench/X.py ARGS`) as [bench/X.py, *ARGS], or None."""
    argv = without_assignments(argv)
    if argv and argv[0].startswith("bench/") and argv[0].endswith(".py"):
        return argv
    if len(argv) >= 2 and Path(argv[0]).name.startswith("python") and argv[1].startswith("bench/"):
        return argv[1:]
    return None


def pytest_arguments(argv: list[str]) -> list[str] | None:
    """The arguments of `[.venv/bin/]python -m pytest ARGS`, or None for another command."""
    argv = without_assignments(argv)
    if len(argv) >= 3 and Path(argv[0]).name.startswith("python") and argv[1:3] == ["-m", "pytest"]:
        return argv[3:]
    return None


def command_lines(body: str) -> list[tuple[int, str]]:
    """The lines of a shell block, a line ending in a backslash joined to the next, each with its offset."""
    found: list[tuple[int, str]] = []
    pending, start = "", 0
    for offset, line in enumerate(body.split("\n"), 1):
        if not pending:
            start = offset
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        found.append((start, pending + line))
        pending = ""
    return found + ([(start, pending)] if pending else [])


def shown_commands() -> list[Shown]:
    """Every simple command of every shell block, and every inline vlk-memact or bench command."""
    found = []
    for path in PAGES:
        for block in blocks(path):
            if block.language not in SHELLS:
                continue
            for offset, line in command_lines(block.body):
                for argv in simple_commands(line):
                    found.append(Shown(block.page, block.line + offset, shlex.join(argv), True))
        for number, code in inline_code(path):
            try:
                commands = simple_commands(code.replace("[", " ").replace("]", " "))
            except ValueError:
                continue  # unbalanced quotes: not a command line
            if len(commands) != 1:
                continue  # a pipeline or a notation such as `opencode|codex`: not one command line
            if vlk_arguments(commands[0]) is not None or bench_arguments(commands[0]) is not None:
                found.append(Shown(relative(path), number, code, False))
    return found


SHOWN = shown_commands()


def argv_of(shown: Shown) -> list[str]:
    """The command's words, optional brackets opened (`[--scope S]` is shown as a use of --scope)."""
    text = shown.text if shown.fenced else shown.text.replace("[", " ").replace("]", " ")
    (argv,) = simple_commands(text)
    return argv


def _fake_values(tmp: Path) -> dict[str, str]:
    """Stand-ins for parsing; a run gets the template database's real ids."""
    return {"tmp": str(tmp), "database_url": f"sqlite:///{tmp}/vlk.db", "present_id": "1", "future_id": "2",
            "export": f"{tmp}/export.jsonl"}


def substituted(arguments: list[str], values: dict[str, str]) -> list[str]:
    subcommand = next((a for a in arguments if a in _subcommands()), None)
    table = {**PLACEHOLDERS, **PER_COMMAND_PLACEHOLDERS.get(subcommand or "", {})}
    return [table[a].format(**values) if a in table else a for a in arguments]


def arguments_of(shown: Shown, values: dict[str, str]) -> list[str]:
    """What follows `vlk-memact`, placeholders filled in."""
    return substituted(vlk_arguments(argv_of(shown)) or [], values)


@cache
def _subcommands() -> dict[str, object]:
    return _parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]


def parse_error(arguments: list[str], *, in_a_sentence: bool = False) -> str | None:
    """What the real parser says against these arguments, or None when they parse.

    A bare `vlk-memact import` in a sentence names the command rather than showing a command line:
    it only has to exist. In a shell block it is a command line like any other.
    """
    if in_a_sentence and len(arguments) == 1 and arguments[0] in _subcommands():
        return None
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            _parser().parse_args(arguments)
    except SystemExit as stop:
        return None if stop.code == 0 else f"the CLI parser refuses {arguments} (exit {stop.code})"
    return None


def why_not_run(arguments: list[str]) -> str | None:
    with contextlib.redirect_stderr(io.StringIO()):
        namespace = _parser().parse_args(arguments)
    command = getattr(namespace, "command", None)
    if command in NOT_RUN_SUBCOMMANDS:
        return NOT_RUN_SUBCOMMANDS[command]
    if command == "serve" and getattr(namespace, "transport", "stdio") != "stdio":
        return NOT_RUN_HTTP
    return None


VLK = [s for s in SHOWN if vlk_arguments(argv_of(s)) is not None]
BENCH = [s for s in SHOWN if bench_arguments(argv_of(s)) is not None]
PYTEST = [s for s in SHOWN if s.fenced and pytest_arguments(argv_of(s)) is not None]
OTHER = [s for s in SHOWN if s.fenced and s not in VLK and s not in BENCH and s not in PYTEST]


def test_every_page_shows_what_this_test_checks() -> None:
    """The extraction itself works: the README's own commands are found."""
    texts = {s.text for s in SHOWN if s.page == "README.md"}
    assert {"pip install .", "vlk-memact", "bash .ci/run", "vlk-memact install claude-code"} <= texts
    assert len(VLK) > 30 and len(BENCH) > 8


@pytest.mark.parametrize("shown", VLK, ids=str)
def test_vlk_memact_commands_parse(shown: Shown) -> None:
    arguments = arguments_of(shown, _fake_values(Path("/tmp")))
    error = parse_error(arguments, in_a_sentence=not shown.fenced)
    assert error is None, f"{shown}: {error}"


def _command() -> list[str]:
    beside = Path(sys.executable).with_name("vlk-memact")
    return [str(beside)] if beside.exists() else [sys.executable, "-m", "vlk_memact"]


def _environment(home: Path, database_url: str) -> dict[str, str]:
    """A throwaway user: its own home, Codex home, runtime directory and database; nothing of ours leaks in."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VLK_", "DATABASE_URL", "CODEX_", "XDG_"))}
    for name in ("home", "codex", "run"):
        (home / name).mkdir(parents=True, exist_ok=True)
    env.update(HOME=str(home / "home"), CODEX_HOME=str(home / "codex"), XDG_RUNTIME_DIR=str(home / "run"),
               DATABASE_URL=database_url, VLK_PROJECT="docs-test", VLK_HOOK_SERVER="0",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")
    return env


def run_vlk(arguments: list[str], home: Path, database_url: str) -> subprocess.CompletedProcess:
    """The installed command in a git repository of its own, stdin empty (a stdio server sees its end)."""
    repository = home / "repository"
    if not (repository / ".git").exists():
        repository.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "-q", str(repository)], check=True)
    return subprocess.run([*_command(), *arguments], cwd=repository, env=_environment(home, database_url),
                          input="", capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A small database made with the CLI itself: a live error, a lesson, and an export of both."""
    tmp = tmp_path_factory.mktemp("template")
    url = f"sqlite:///{tmp}/vlk.db"
    for error in ("Error: Cannot find module 'express'", "TypeError: x is undefined"):
        assert run_vlk(["record", error], tmp, url).returncode == 0
    slots = json.loads(run_vlk(["history"], tmp, url).stdout)
    present = min(s["id"] for s in slots)
    done = run_vlk(["time-travel", str(max(s["id"] for s in slots)), "--learning", "install it first",
                    "--evidence", "TypeError"], tmp, url)
    assert done.returncode == 0, done.stderr
    slots = json.loads(run_vlk(["history"], tmp, url).stdout)
    future = next(s["id"] for s in slots if s["temporal_state"] == "FUTURE")
    assert run_vlk(["export", "-o", f"{tmp}/export.jsonl"], tmp, url).returncode == 0
    return {"database": f"{tmp}/vlk.db", "present_id": str(present), "future_id": str(future),
            "export": f"{tmp}/export.jsonl"}


def runnable(shown: Shown) -> bool:
    arguments = arguments_of(shown, _fake_values(Path("/tmp")))
    try:
        return why_not_run(arguments) is None
    except SystemExit:
        return False  # a command named in a sentence (`vlk-memact import`), or one the parse test reports


def distinct_runs() -> list[Shown]:
    """The runnable commands, each command line once (the first place it is shown names it)."""
    runs: dict[tuple[str, ...], Shown] = {}
    for shown in VLK:
        if runnable(shown):
            runs.setdefault(tuple(arguments_of(shown, _fake_values(Path("/tmp")))), shown)
    return list(runs.values())


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("shown", distinct_runs(), ids=str)
def test_vlk_memact_commands_run(shown: Shown, template: dict[str, str], tmp_path: Path) -> None:
    """Each in a fresh home, repository and copy of the template database: exit 0."""
    shutil.copy(template["database"], tmp_path / "vlk.db")
    values = {**_fake_values(tmp_path), **{k: template[k] for k in ("present_id", "future_id", "export")}}
    arguments = [a for a in arguments_of(shown, values) if a not in DROPPED_WHEN_RUN]
    done = run_vlk(arguments, tmp_path, values["database_url"])
    assert done.returncode == 0, f"{shown}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"


@cache
def bench_help(script: str) -> str:
    """The script's usage. A script without an argument parser would run the whole bench on `--help`
    (bench/profile_paths.py did, and rewrote bench/results/profile.*), so it is refused first."""
    source = (ROOT / script).read_text()
    assert re.search(r"add_argument|parse_args|ArgumentParser", source), f"{script} takes no arguments"
    done = subprocess.run([sys.executable, script, "--help"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, f"{script} --help: exit {done.returncode}\n{done.stderr[-2000:]}"
    assert done.stdout.startswith("usage:"), f"{script} --help printed no usage"
    return done.stdout


@pytest.mark.parametrize("shown", BENCH, ids=str)
def test_bench_commands_name_a_script_and_its_flags(shown: Shown) -> None:
    script, *arguments = bench_arguments(argv_of(shown)) or [""]
    assert (ROOT / script).is_file(), f"{shown}: no {script}"
    words = [a for a in arguments if not re.fullmatch(r"[A-Z][A-Z.]*|…|\.\.\.", a)]  # placeholders: NAME, DIR
    if not words:
        return  # nothing to check beyond the file (some scripts build data on import: a slow --help)
    usage = bench_help(script)
    for word in words:
        if word.startswith("-"):
            flag = word.split("=")[0]
            assert re.search(rf"(^|[\s\[,]){re.escape(flag)}\b", usage), f"{shown}: {script} has no {flag}"
    after_flag = {i for i, w in enumerate(words) if w.startswith("-")}
    positionals = [w for i, w in enumerate(words) if not w.startswith("-") and i - 1 not in after_flag]
    choices = re.findall(r"\{([\w,|-]+)\}", usage)
    for word in positionals:
        if choices and not word.replace(".", "").isdigit():
            assert any(word in c.split(",") for c in choices), f"{shown}: {script} takes no {word} ({choices})"


@pytest.mark.slow
@pytest.mark.parametrize("shown", PYTEST, ids=str)
def test_pytest_commands_collect_with_their_options(shown: Shown) -> None:
    """A shown pytest command runs the whole suite, this test included: its options are checked by collecting
    one small test file with them (a misspelt or missing option makes pytest exit 4)."""
    arguments = pytest_arguments(argv_of(shown)) or []
    done = subprocess.run([sys.executable, "-m", "pytest", *arguments, "--collect-only", "-q",
                           "tests/test_pure_logic.py"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{shown}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    assert re.search(r"test_pure_logic\.py: \d+|\d+ tests? collected", done.stdout), done.stdout[-2000:]


@pytest.mark.parametrize("shown", OTHER, ids=str)
def test_other_shell_commands_are_run_or_listed(shown: Shown) -> None:
    assert shown.text in NOT_RUN, (f"{shown}: a command of a shell block that this test neither runs nor lists; "
                                   "check it here or add it to NOT_RUN with the reason")


def test_not_run_lists_only_commands_still_shown() -> None:
    shown = {s.text for s in OTHER}
    assert set(NOT_RUN) <= shown, set(NOT_RUN) - shown


def test_a_broken_command_fails_the_checks(tmp_path: Path) -> None:
    """The checks above can fail: a misspelt subcommand or flag, and a command that runs but fails."""
    assert parse_error(["histroy"]) is not None
    assert parse_error(["history", "--fixess"]) is not None
    assert parse_error(["install", "cursor"]) is not None
    assert run_vlk(["revoke", "999"], tmp_path, f"sqlite:///{tmp_path}/vlk.db").returncode != 0
    assert OTHER and Shown("x.md", 1, "curl https://example.com | sh", True).text not in NOT_RUN
    assert PYTEST and pytest_arguments(["python", "-m", "pytest", "-q"]) == ["-q"]
    assert pytest_arguments(["python", "-m", "pip", "install", "."]) is None
