"""`vlk-memact doctor`: a healthy database passes; each broken state fails on its own line with its fix."""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from fault_harness import fill_up, small_filesystem, without_permission_override
from mcp_clients import server_env

from vlk_memact import Memory
from vlk_memact.cli import main
from vlk_memact.store import health


@pytest.fixture(autouse=True)
def no_host_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A HOME and a working directory without any Claude Code files, unless a test installs some."""
    (tmp_path / "empty-home").mkdir()
    (tmp_path / "empty-cwd").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "empty-home"))
    monkeypatch.chdir(tmp_path / "empty-cwd")


def make_db(path: Path, records: int = 3) -> None:
    with Memory(f"sqlite:///{path}", project="doctor") as memory:
        for n in range(records):
            memory.record_state(raw_log=f"observed failure number {'abcdefghij'[n % 10]} " + "x " * 400)


def doctor(capsys: pytest.CaptureFixture[str], url: str, *extra: str) -> tuple[int, list[str]]:
    code = main(["--database-url", url, "doctor", *extra])
    return code, capsys.readouterr().out.splitlines()


def line(lines: list[str], start: str) -> str:
    found = [x for x in lines if x.startswith(start)]
    assert len(found) == 1, (start, lines)
    return found[0]


def test_a_healthy_database_passes_every_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db_file = tmp_path / "vlk.db"
    make_db(db_file)
    code, lines = doctor(capsys, f"sqlite:///{db_file}")
    assert code == 0, lines
    assert lines[-1].endswith("checks, all passed.")
    assert all(x.startswith("ok   ") for x in lines[:-1]), lines
    assert line(lines, "ok   configuration: DATABASE_URL: ") == \
        f"ok   configuration: DATABASE_URL: SQLite sqlite:///{db_file} (from --database-url)"
    assert line(lines, "ok   database: opens: ").endswith("; 3 slots")
    assert line(lines, "ok   database: schema version: ").endswith("(current)")
    assert line(lines, "ok   database: integrity (quick_check): ") == "ok   database: integrity (quick_check): ok"
    assert line(lines, "ok   database: write lock: ")
    assert line(lines, "ok   database: WAL size: ")
    assert line(lines, "ok   database: free space: ")


def test_json_output_carries_every_check_and_the_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db_file = tmp_path / "vlk.db"
    make_db(db_file)
    code, lines = doctor(capsys, f"sqlite:///{db_file}", "--json")
    report = json.loads("\n".join(lines))
    assert code == 0 and report["ok"] is True
    assert {c["group"] for c in report["checks"]} >= {"configuration", "database"}
    assert all(set(c) == {"group", "name", "ok", "detail", "fix"} for c in report["checks"])


def test_a_file_that_is_not_a_database_fails_with_the_way_out(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    db_file = tmp_path / "vlk.db"
    db_file.write_text("my notes\n" * 500)
    before = db_file.read_bytes()
    code, lines = doctor(capsys, f"sqlite:///{db_file}")
    assert code == 1 and lines[-1].endswith("1 failed.")
    failed = line(lines, "FAIL database: opens: ")
    assert f"{db_file} is not a database or is damaged (SQLite: file is not a database)" in failed
    assert "restore a backup over it" in failed and f"mv {db_file} {db_file}.damaged" in failed
    assert db_file.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty-cwd", "empty-home", "vlk.db"]  # no -wal, no -shm


def test_damaged_pages_fail_and_say_how_to_restore(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db_file = tmp_path / "vlk.db"
    make_db(db_file, records=40)
    data = bytearray(db_file.read_bytes())
    data[4096:] = random.Random(3).randbytes(len(data) - 4096)
    db_file.write_bytes(bytes(data))
    code, lines = doctor(capsys, f"sqlite:///{db_file}")
    assert code == 1
    failed = line(lines, "FAIL database: opens: ")
    assert "is damaged (SQLite: database disk image is malformed)" in failed and "restore a backup" in failed


def test_a_newer_schema_fails_and_says_to_upgrade(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db_file = tmp_path / "vlk.db"
    make_db(db_file)
    with sqlite3.connect(db_file) as conn:
        conn.execute("PRAGMA user_version = 99")
    code, lines = doctor(capsys, f"sqlite:///{db_file}")
    assert code == 1
    assert "upgrade vlk-memact" in line(lines, "FAIL database: schema version: 99, newer than this vlk-memact")


def test_a_read_only_file_and_directory_fail_the_permissions_check(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    db_file = folder / "vlk.db"
    make_db(db_file)
    db_file.chmod(0o444)
    folder.chmod(0o555)
    try:
        done = subprocess.run([sys.executable, "-m", "vlk_memact", "doctor"], env=server_env(db_file, HOME=str(tmp_path)),
                              cwd=tmp_path, preexec_fn=without_permission_override, capture_output=True, text=True,
                              timeout=60)
    finally:
        folder.chmod(0o755)
        db_file.chmod(0o644)
    assert done.returncode == 1, done.stdout
    failed = line(done.stdout.splitlines(), "FAIL database: permissions: ")
    assert f"{db_file} is not writable" in failed and f"{folder} is not writable" in failed
    assert f"chmod u+w {db_file} {folder}" in failed
    assert line(done.stdout.splitlines(), "ok   database: opens: ")  # reads still work


def test_mode_ro_is_reported_as_intended_read_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db_file = tmp_path / "vlk.db"
    make_db(db_file)
    code, lines = doctor(capsys, f"sqlite:///{db_file}?mode=ro")
    assert code == 0, lines
    assert "read-only by DATABASE_URL (mode=ro)" in line(lines, "ok   database: permissions: ")
    assert not any(": write lock: " in x for x in lines)


def test_a_stuck_writer_fails_the_write_lock_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db_file = tmp_path / "vlk.db"
    make_db(db_file)
    locker = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1], isolation_level=None); "
         "c.execute('BEGIN IMMEDIATE'); print('locked', flush=True); sys.stdin.read()", str(db_file)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert locker.stdout is not None and locker.stdout.readline().strip() == "locked"
        code, lines = doctor(capsys, f"sqlite:///{db_file}")
    finally:
        assert locker.stdin is not None
        locker.stdin.close()
        locker.wait(timeout=30)
    assert code == 1
    failed = line(lines, "FAIL database: write lock: another process has held the write lock")
    assert f"fuser {db_file}" in failed
    code, lines = doctor(capsys, f"sqlite:///{db_file}")
    assert code == 0, lines


def test_a_full_disk_fails_the_free_space_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with small_filesystem(tmp_path / "small", "2m") as folder:
        db_file = folder / "vlk.db"
        make_db(db_file)
        fill_up(folder)
        code, lines = doctor(capsys, f"sqlite:///{db_file}")
    assert code == 1
    failed = line(lines, "FAIL database: free space: ")
    assert "0 bytes free" in failed or "KiB free" in failed
    assert "free space on that disk" in failed


def test_a_large_wal_fails_with_maintenance_as_the_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    db_file = tmp_path / "vlk.db"
    make_db(db_file)
    keep = sqlite3.connect(db_file)  # an open connection keeps the -wal file in place
    keep.execute("PRAGMA journal_mode = WAL")
    keep.execute("CREATE TABLE IF NOT EXISTS filler (x)")
    keep.commit()
    monkeypatch.setattr(health, "WAL_LIMIT_BYTES", 1024)
    try:
        code, lines = doctor(capsys, f"sqlite:///{db_file}")
    finally:
        keep.close()
    assert code == 1
    assert "run `vlk-memact maintenance`" in line(lines, "FAIL database: WAL size: ")


def test_a_missing_file_is_fine_when_it_will_be_created(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, lines = doctor(capsys, f"sqlite:///{tmp_path / 'new.db'}")
    assert code == 0, lines
    assert "does not exist yet; it is created at the first start" in line(lines, "ok   database: database file: ")
    assert not (tmp_path / "new.db").exists()
    code, lines = doctor(capsys, f"sqlite:///{tmp_path / 'new.db'}?mode=rw")
    assert code == 1


def test_a_bad_setting_fails_the_configuration_check(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLK_LOOP_THRESHOLD", "three")
    code, lines = doctor(capsys, f"sqlite:///{tmp_path / 'x.db'}")
    assert code == 1
    assert line(lines, "FAIL configuration: settings: VLK_LOOP_THRESHOLD must be a whole number, got 'three' -> fix: ")


def test_the_postgres_password_is_masked_and_a_healthy_schema_passes(capsys: pytest.CaptureFixture[str],
                                                                    postgres_url: str) -> None:
    with Memory(postgres_url, project="doctor") as memory:
        memory.record_state(raw_log="observed on postgres")
    scheme, rest = postgres_url.split("://", 1)
    user, host = rest.split("@", 1)
    url = f"{scheme}://{user.split(':')[0]}:doctor-secret-pw@{host}"  # trust auth: the password is never asked
    code, lines = doctor(capsys, url)
    assert code == 0, lines
    assert line(lines, "ok   database: server reachable: ")
    assert line(lines, "ok   database: schema version: ").endswith("(current)")
    assert "every table read in full (1 slots)" in line(lines, "ok   database: integrity: ")
    assert line(lines, "ok   database: permissions: ")
    assert f"{user.split(':')[0]}:***@{host}" in line(lines, "ok   configuration: DATABASE_URL: PostgreSQL ")
    assert "doctor-secret-pw" not in "\n".join(lines)


def test_mask_password_hides_userinfo_and_parameters() -> None:
    from vlk_memact.ops.doctor import mask_password

    assert mask_password("postgresql://u:pw@h:5/db") == "postgresql://u:***@h:5/db"
    assert mask_password("postgresql://u@h/db?password=pw&sslmode=require") == \
        "postgresql://u@h/db?password=***&sslmode=require"
    assert mask_password("sqlite:///tmp/x.db") == "sqlite:///tmp/x.db"



# ---------------------------------------------------------------- host integrations


@pytest.fixture
def host_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, str]:
    """A HOME and a project directory (a git repository) of their own, and a healthy database."""
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    (project / ".git").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(project)
    db_file = tmp_path / "vlk.db"
    make_db(db_file)
    return home, project, f"sqlite:///{db_file}"


def install(*args: str) -> None:
    assert main(["install", "claude-code", *args]) == 0


def test_one_installation_passes_the_host_checks(host_dirs: tuple[Path, Path, str],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    home, project, url = host_dirs
    install("--scope", "project")
    capsys.readouterr()
    code, lines = doctor(capsys, url)
    assert code == 0, lines
    commands = [x for x in lines if x.startswith("ok   hosts: claude-code command: ")]
    assert len(commands) == 2 and " hook claude-code exists (5 entries in " in commands[0]
    assert " serve exists (1 entries in " in commands[1]
    assert line(lines, "ok   hosts: claude-code hooks installed once: ") == \
        "ok   hosts: claude-code hooks installed once: 5 events in the project scope"
    assert line(lines, "ok   hosts: claude-code MCP server installed once: ").endswith(
        f"vlk-memact in project ({project / '.mcp.json'})")


def test_nothing_installed_is_fine(host_dirs: tuple[Path, Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    code, lines = doctor(capsys, host_dirs[2])
    assert code == 0
    assert line(lines, "ok   hosts: claude-code: no hooks or MCP entry installed")


def test_hooks_installed_in_two_scopes_are_a_double_installation(host_dirs: tuple[Path, Path, str],
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    home, project, url = host_dirs
    install("--scope", "user")
    install("--scope", "project")
    capsys.readouterr()
    code, lines = doctor(capsys, url)
    assert code == 1 and lines[-1].endswith("1 failed.")
    failed = line(lines, "FAIL hosts: claude-code hooks installed once: ")
    assert "PostToolUse, PostToolUseFailure, PreToolUse, SessionStart, UserPromptSubmit run 2 times" in failed
    assert str(home / ".claude" / "settings.json") in failed and str(project / ".claude" / "settings.json") in failed
    assert "vlk-memact uninstall claude-code --scope" in failed
    assert main(["uninstall", "claude-code", "--scope", "user"]) == 0  # the fix it names works
    capsys.readouterr()
    assert doctor(capsys, url)[0] == 0


def test_two_mcp_entries_under_different_names_are_a_double_installation(host_dirs: tuple[Path, Path, str],
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    home, project, url = host_dirs
    install("--scope", "project")
    config = home / ".claude.json"
    config.write_text(json.dumps({"mcpServers": {"memory": {"command": "vlk-memact", "args": ["serve"]}}}))
    capsys.readouterr()
    code, lines = doctor(capsys, url)
    assert code == 1
    failed = line(lines, "FAIL hosts: claude-code MCP server installed once: 2 MCP servers run vlk-memact: ")
    assert f"memory in user ({config})" in failed and "claude mcp remove NAME -s SCOPE" in failed


def test_an_entry_whose_command_is_gone_fails_with_the_reinstall_fix(host_dirs: tuple[Path, Path, str],
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    home, project, url = host_dirs
    install("--scope", "project", "--no-mcp")
    settings = project / ".claude" / "settings.json"
    settings.write_text(settings.read_text().replace(json.dumps(
        json.loads(settings.read_text())["hooks"]["PreToolUse"][0]["hooks"][0]["command"]),
        json.dumps(str(home / "deleted-venv" / "bin" / "vlk-memact"))))
    capsys.readouterr()
    code, lines = doctor(capsys, url)
    assert code == 1
    failed = line(lines, f"FAIL hosts: claude-code command: {home / 'deleted-venv' / 'bin' / 'vlk-memact'} hook "
                         "claude-code does not exist")
    assert "run `vlk-memact install claude-code` again" in failed


def test_an_unreadable_settings_file_is_named(host_dirs: tuple[Path, Path, str],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    home, project, url = host_dirs
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.local.json").write_text("{ not json")
    code, lines = doctor(capsys, url)
    assert code == 1
    assert "is not readable JSON" in line(lines, "FAIL hosts: claude-code settings: ")


def test_the_plugin_beside_settings_hooks_is_a_double_installation(host_dirs: tuple[Path, Path, str],
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    home, project, url = host_dirs
    install("--scope", "local", "--no-mcp")
    record = home / ".claude" / "plugins" / "installed_plugins.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"version": 2, "plugins": {"vlk-memact@vlk-memact": [{"scope": "user"}]}}))
    capsys.readouterr()
    code, lines = doctor(capsys, url)
    assert code == 1
    failed = [x for x in lines if x.startswith("FAIL hosts: claude-code hooks installed once: the vlk-memact plugin")]
    assert len(failed) == 1 and "both run on every event" in failed[0]


def test_the_project_line_says_which_key_and_why(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'vlk.db'}"
    repo = tmp_path / "src" / "app"
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    monkeypatch.chdir(repo)
    assert line(doctor(capsys, url)[1], "ok   configuration: project:") == (
        f"ok   configuration: project: {repo} (the git repository at {repo} has no remote: its path (add an "
        "`origin` remote to share its memories across checkouts))")
    subprocess.run(["git", "-C", str(repo), "remote", "add", "origin", "https://alice:pw@git.example.com/acme/app.git"],
                   check=True)
    said = line(doctor(capsys, url)[1], "ok   configuration: project:")
    assert said.startswith("ok   configuration: project: git.example.com/acme/app (the remote 'origin' "
                           f"(https://git.example.com/acme/app.git) of the git repository at {repo}); memories "
                           f"stored under its path key {repo} by an earlier release are merged into it"), said
    monkeypatch.setenv("VLK_PROJECT", "mine")
    assert line(doctor(capsys, url)[1], "ok   configuration: project:") == \
        "ok   configuration: project: mine (from VLK_PROJECT)"
