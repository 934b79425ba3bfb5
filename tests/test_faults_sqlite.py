"""Faults of the environment under a real stdio server on SQLite, each really injected.

- disk full: a 2 MiB tmpfs filled to the last byte (real ENOSPC, which SQLite reports as SQLITE_FULL
  for the database, its -wal and its -shm alike). A file-size limit (RLIMIT_FSIZE) is the other way;
  it fails writes with EFBIG, which SQLite reports as a generic I/O error, so it gets its own test
  below (with SIGXFSZ ignored, as the signal would kill the process before write() returns EFBIG).
- read-only: chmod on the file and its directory, with the server stripped of root's permission
  override (fault_harness.without_permission_override); and mode=ro in the URL.
- damaged: bytes of the file overwritten with garbage while the server runs, and a file that
  never was a database at start-up.
- stuck writer: a second process holding BEGIN IMMEDIATE past the server's lock wait.

Each test asserts the message, that the server kept serving, that every acknowledged write is
still there, and that the same process works again once the fault is gone.
"""

from __future__ import annotations

import hashlib
import random
import resource
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fault_harness import FaultServer, fill_up, history_ids, small_filesystem, without_permission_override
from mcp_clients import server_env
from stdio_harness import id_key

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

LOOP = "ConnectionError: upstream cache refused the handshake"


def start(db_file: Path, log: Path, preexec=None, url: str | None = None, **env: str) -> FaultServer:  # type: ignore[no-untyped-def]
    settings = server_env(db_file, VLK_PROJECT="faults", **env)
    if url is not None:
        settings["DATABASE_URL"] = url
    server = FaultServer(settings, log.open("wb"), preexec)
    server.initialize()
    return server


def record_some(server: FaultServer, words: list[str]) -> dict[int, str]:
    """Distinct observations, too short to share a template (grouping learns a word parameter only where
    lines agree on four other tokens), so only LOOP forms a loop."""
    acknowledged = {}
    for word in words:
        data = server.ok("vlk_record_state", raw_log=f"step {word} failed")
        acknowledged[data["timeline_id"]] = word
    return acknowledged


def integrity(db_file: Path) -> str:
    with sqlite3.connect(db_file) as conn:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])


# ---------------------------------------------------------------- disk full


def test_a_full_disk_refuses_writes_whole_keeps_reads_and_recovers_once_space_is_freed(tmp_path: Path) -> None:
    with small_filesystem(tmp_path / "small", "2m") as folder:
        db_file = folder / "vlk.db"
        server = start(db_file, tmp_path / "server.log")
        try:
            acknowledged = record_some(server, ["alpha", "bravo", "charlie", "delta"])
            looped = [server.ok("vlk_record_state", raw_log=LOOP)["timeline_id"] for _ in range(3)]
            filler = fill_up(folder)

            is_error, text, _ = server.tool("vlk_record_state", raw_log="step echo failed")
            assert is_error
            assert text.startswith(f"The disk holding {db_file} is full"), text
            assert "nothing of this call was saved" in text and "free space" in text
            # The pipeline would archive the loop and write an anchor: refused whole, nothing half-applied.
            is_error, text, _ = server.tool("vlk_fetch_context")
            assert is_error and "is full" in text, text

            assert server.alive()
            slots = history_ids(server)  # reads keep working on a full disk
            assert set(acknowledged) | set(looped) == set(slots)
            assert all(slots[i]["temporal_state"] == "PRESENT" for i in looped)
            assert not any(s["origin"] == "anchor" for s in slots.values())

            filler.unlink()  # space is back: the same process writes again
            data = server.ok("vlk_record_state", raw_log="step echo failed")
            acknowledged[data["timeline_id"]] = "echo"
            context = server.ok("vlk_fetch_context")
            assert len(context["loops"]) == 1 and sorted(context["loops"][0]["archived_ids"]) == looped
            slots = history_ids(server)
            assert set(acknowledged) <= set(slots)
            assert all(slots[i]["retired_by"] == context["loops"][0]["anchor_id"] for i in looped)
        finally:
            assert server.close_stdin_and_wait(30) == 0
        assert integrity(db_file) == "ok"


def test_a_file_size_limit_is_reported_with_the_limit_and_lifting_it_is_enough(tmp_path: Path) -> None:
    db_file = tmp_path / "vlk.db"

    def ignore_sigxfsz() -> None:  # else the first write past the limit kills the server
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    server = start(db_file, tmp_path / "server.log", ignore_sigxfsz)
    try:
        acknowledged = record_some(server, ["alpha", "bravo", "charlie"])
        wal = db_file.with_name(db_file.name + "-wal")
        limit = wal.stat().st_size  # the next frame appended to the WAL goes past it
        resource.prlimit(server.process.pid, resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))

        is_error, text, _ = server.tool("vlk_record_state", raw_log="x" * 20000)
        assert is_error, text
        assert text.startswith(f"The operating system refused to write {db_file}"), text
        assert f"at most {limit} bytes (ulimit -f)" in text and "nothing of this call was saved" in text
        assert server.alive() and set(acknowledged) == set(history_ids(server))

        resource.prlimit(server.process.pid, resource.RLIMIT_FSIZE,
                         (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        data = server.ok("vlk_record_state", raw_log="x" * 20000)
        acknowledged[data["timeline_id"]] = "big"
        assert set(acknowledged) == set(history_ids(server))
    finally:
        assert server.close_stdin_and_wait(30) == 0
    assert integrity(db_file) == "ok"


# ---------------------------------------------------------------- read-only


def test_a_read_only_file_and_directory_refuse_the_first_write_serve_reads_and_recover_after_chmod(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    db_file = folder / "vlk.db"
    server = start(db_file, tmp_path / "first.log", without_permission_override)
    acknowledged = record_some(server, ["alpha", "bravo"])
    assert server.close_stdin_and_wait(30) == 0
    db_file.chmod(0o444)
    folder.chmod(0o555)
    server = start(db_file, tmp_path / "server.log", without_permission_override)
    try:
        assert set(acknowledged) == set(history_ids(server))  # start-up and reads work
        is_error, text, _ = server.tool("vlk_record_state", raw_log="step charlie failed")
        assert is_error
        assert text.startswith(f"The database {db_file} is read-only for this process"), text
        assert "permissions" in text and "chmod u+w" in text and "nothing of this call was saved" in text
        # A pipeline with nothing to archive writes nothing, so the context is still served.
        assert sorted(server.ok("vlk_fetch_context")["present_ids"]) == sorted(acknowledged)
        assert server.alive()
        assert server.ok("vlk_summarize_session")["total"] == 2
        assert server.ok("vlk_search_memory", query="bravo")["slots"]

        folder.chmod(0o755)
        db_file.chmod(0o644)
        data = server.ok("vlk_record_state", raw_log="step charlie failed")  # no restart
        acknowledged[data["timeline_id"]] = "charlie"
        assert set(acknowledged) == set(history_ids(server))
    finally:
        folder.chmod(0o755)
        db_file.chmod(0o644)
        assert server.close_stdin_and_wait(30) == 0
    assert integrity(db_file) == "ok"


def test_the_permission_override_is_really_gone_for_the_server(tmp_path: Path) -> None:
    """Guard for the test above: as root, chmod 444 alone would change nothing."""
    target = tmp_path / "locked.txt"
    target.write_text("x")
    target.chmod(0o444)
    done = subprocess.run([sys.executable, "-c", f"open({str(target)!r}, 'a')"], preexec_fn=without_permission_override,
                          capture_output=True, text=True)
    assert done.returncode != 0 and "PermissionError" in done.stderr


def test_mode_ro_in_the_url_serves_reads_and_names_the_setting_at_the_first_write(tmp_path: Path) -> None:
    db_file = tmp_path / "vlk.db"
    server = start(db_file, tmp_path / "first.log")
    acknowledged = record_some(server, ["alpha"])
    assert server.close_stdin_and_wait(30) == 0
    server = start(db_file, tmp_path / "server.log", url=f"sqlite:///{db_file}?mode=ro")
    try:
        assert set(acknowledged) == set(history_ids(server))
        is_error, text, _ = server.tool("vlk_record_state", raw_log="step bravo failed")
        assert is_error
        assert text == (f"The database {db_file} is opened read-only (mode=ro in DATABASE_URL), so nothing of "
                        "this call was saved; remove mode=ro from DATABASE_URL to record: reads keep working.")
        assert server.alive() and set(acknowledged) == set(history_ids(server))
    finally:
        assert server.close_stdin_and_wait(30) == 0


def test_a_database_that_cannot_be_opened_at_all_stops_start_up_with_one_clear_line(tmp_path: Path) -> None:
    db_file = tmp_path / "vlk.db"
    sqlite3.connect(db_file).close()
    db_file.chmod(0o000)
    done = subprocess.run([sys.executable, "-m", "vlk_memact", "summary"], env=server_env(db_file),
                          preexec_fn=without_permission_override, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines()[-1].startswith(f"Error: vlk-memact could not open SQLite database {db_file} ("), done.stderr
    assert "Traceback" not in done.stderr


# ---------------------------------------------------------------- damaged file


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_file_that_is_not_a_database_stops_start_up_naming_it_and_is_left_untouched(tmp_path: Path) -> None:
    db_file = tmp_path / "vlk.db"
    db_file.write_text("these are my notes, not a database\n" * 200)
    before = digest(db_file)
    for command in (["serve"], ["record", "x"]):
        done = subprocess.run([sys.executable, "-m", "vlk_memact", *command], env=server_env(db_file),
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        assert done.returncode == 1 and done.stdout == ""
        last = done.stderr.splitlines()[-1]
        assert last.startswith(f"Error: {db_file} is not a vlk-memact database or is damaged"), done.stderr
        assert "left untouched" in last and "vlk-memact doctor" in last and "restore a backup" in last
    assert digest(db_file) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vlk.db"]  # no -wal, no -shm, no new file


def test_a_file_damaged_under_a_running_server_is_reported_and_a_restored_backup_is_picked_up(tmp_path: Path) -> None:
    db_file = tmp_path / "vlk.db"
    backup = tmp_path / "backup.db"
    server = start(db_file, tmp_path / "server.log")
    try:
        acknowledged = record_some(server, [f"step{n:03d} " + "detail " * 40 for n in range(60)])
        done = subprocess.run([sys.executable, "-m", "vlk_memact", "backup", str(backup)], env=server_env(db_file),
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        with sqlite3.connect(db_file) as conn:  # another process checkpoints: the file holds everything
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        data = bytearray(db_file.read_bytes())
        noise = random.Random(7).randbytes(len(data) - 4096)
        data[4096:] = noise  # every page but the header page is garbage now
        db_file.write_bytes(bytes(data))
        damaged = digest(db_file)

        for name, arguments in (("vlk_get_history", {"limit": 500}), ("vlk_record_state", {"raw_log": "late"}),
                                ("vlk_summarize_session", {})):
            is_error, text, _ = server.tool(name, **arguments)
            assert is_error, (name, text)
            assert text.startswith(f"{db_file} is not a vlk-memact database or is damaged"), text
            assert "left untouched" in text and "restore a backup" in text
        assert server.alive()
        assert digest(db_file) == damaged  # never "repaired" or overwritten

        for suffix in ("", "-wal", "-shm"):  # what the README says: move the file aside, restore the backup
            aside = db_file.with_name(db_file.name + suffix)
            if aside.exists():
                aside.rename(aside.with_name(aside.name + ".damaged"))
        backup.replace(db_file)
        assert set(acknowledged) == set(history_ids(server))  # the same process, no restart
        data2 = server.ok("vlk_record_state", raw_log="observed the restore work")
        acknowledged[data2["timeline_id"]] = "restored"
        assert set(acknowledged) == set(history_ids(server))
    finally:
        assert server.close_stdin_and_wait(30) == 0
    assert integrity(db_file) == "ok"


# ---------------------------------------------------------------- stuck writer

LOCKER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("CREATE TABLE stuck_writer_scratch (x)")
print("locked", flush=True)
sys.stdin.read()
conn.execute("ROLLBACK")
"""


def test_a_stuck_writer_gives_a_bounded_wait_then_a_retryable_error_and_the_next_call_succeeds(
    tmp_path: Path,
) -> None:
    db_file = tmp_path / "vlk.db"
    server = start(db_file, tmp_path / "server.log", VLK_BUSY_TIMEOUT_MS="200", VLK_LOCK_WAIT_MS="1500")
    try:
        acknowledged = record_some(server, ["alpha", "bravo"])
        locker = subprocess.Popen([sys.executable, "-c", LOCKER, str(db_file)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert locker.stdout is not None and locker.stdout.readline().strip() == "locked"
            assert set(acknowledged) == set(history_ids(server))  # reads do not wait for the writer

            started = time.monotonic()
            waiting = server.tool_request("vlk_record_state", {"raw_log": "step charlie failed"})
            time.sleep(0.2)  # the write is now waiting for the lock; a read in the same server does not queue
            (read,) = server.wait_for(server.tool_request("vlk_get_history", {"limit": 500}), timeout=1.0)
            assert {s["id"] for s in read["result"]["structuredContent"]["slots"]} == set(acknowledged)
            assert id_key(waiting) not in server.responses, "the write did not wait for the lock"
            (response,) = server.wait_for(waiting, timeout=60)
            waited = time.monotonic() - started
            result = response["result"]
            is_error = bool(result.get("isError"))
            text = result["content"][0]["text"].removeprefix("Error executing tool vlk_record_state: ")
            assert is_error
            assert text.startswith(f"The database {db_file} stayed locked by another process for "), text
            assert "so this call did nothing; call again in a moment" in text and f"fuser {db_file}" in text
            assert 1.4 < waited < 10, waited  # bounded by VLK_LOCK_WAIT_MS, not hung

            cli = subprocess.run([sys.executable, "-m", "vlk_memact", "record", "from the cli"],
                                 env=server_env(db_file, VLK_BUSY_TIMEOUT_MS="200", VLK_LOCK_WAIT_MS="500"),
                                 capture_output=True, text=True, timeout=60)
            assert cli.returncode == 1 and cli.stdout == ""
            assert cli.stderr.splitlines()[-1].startswith(f"Error: The database {db_file} stayed locked"), cli.stderr
            assert server.alive()
        finally:
            assert locker.stdin is not None
            locker.stdin.close()
            assert locker.wait(timeout=30) == 0

        data = server.ok("vlk_record_state", raw_log="step charlie failed")
        acknowledged[data["timeline_id"]] = "charlie"
        server.ok("vlk_fetch_context")
        assert set(acknowledged) == set(history_ids(server))
    finally:
        assert server.close_stdin_and_wait(30) == 0
    with sqlite3.connect(db_file) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "stuck_writer_scratch" not in tables
    assert integrity(db_file) == "ok"


def test_the_typed_errors_say_which_faults_a_retry_can_cure() -> None:
    from vlk_memact.core.errors import (
        DatabaseCorrupt,
        DatabaseIOError,
        DatabaseLocked,
        DatabaseUnavailable,
        DiskFull,
        ReadOnlyDatabase,
        StoreError,
    )

    for kind in (DiskFull, ReadOnlyDatabase, DatabaseCorrupt, DatabaseIOError):
        assert issubclass(kind, StoreError) and not kind.retryable
    for kind in (DatabaseLocked, DatabaseUnavailable):
        assert issubclass(kind, StoreError) and kind.retryable
