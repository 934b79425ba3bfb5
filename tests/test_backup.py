"""`vlk-memact backup FILE` under 4 real server processes that keep writing: a verified, consistent copy."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest
from mcp_clients import server_env
from stdio_harness import ServerPipe, tool_data, words_for

from vlk_memact import Memory
from vlk_memact.cli import main

WRITERS = 4


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_backup_taken_while_four_servers_write_is_intact_and_holds_every_write_acknowledged_before_it(
    tmp_path: Path,
) -> None:
    db_file = tmp_path / "vlk.db"
    copy = tmp_path / "backups" / "vlk-copy.db"
    copy.parent.mkdir()
    with Memory(f"sqlite:///{db_file}", project="backup") as memory:  # some bulk, so the copy takes a while
        for n in range(150):
            memory.record_state(raw_log=f"bulk {words_for(n)} " + "payload " * 6000, session_id="bulk")
    acked: dict[int, float] = {}  # timeline id -> when its acknowledgement arrived
    failures: list[str] = []
    stop = threading.Event()
    ready = threading.Barrier(WRITERS + 1)
    servers = [ServerPipe(server_env(db_file, VLK_PROJECT="backup"), (tmp_path / f"s{i}.log").open("wb"))
               for i in range(WRITERS)]

    def write(index: int, server: ServerPipe) -> None:
        try:
            server.initialize()
            ready.wait(timeout=60)
            n = 0
            while not stop.is_set():
                n += 1
                session = f"writer-{index}" if n % 2 else "shared"
                (response,) = server.wait_for(server.tool_request(
                    "vlk_record_state", {"raw_log": f"writer {words_for(index, 1)} note {words_for(n)}",
                                         "session_id": session}), timeout=60)
                acked[tool_data(response)["timeline_id"]] = time.monotonic()
                if n % 10 == 0:
                    (response,) = server.wait_for(server.tool_request("vlk_fetch_context", {"session_id": session}),
                                                  timeout=60)
                    tool_data(response)
        except Exception as exc:  # reported below: a writer must never fail
            failures.append(repr(exc))

    threads = [threading.Thread(target=write, args=(i, s)) for i, s in enumerate(servers)]
    for thread in threads:
        thread.start()
    try:
        ready.wait(timeout=60)
        time.sleep(1.0)
        began = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "vlk_memact", "backup", str(copy)], env=server_env(db_file),
                              capture_output=True, text=True, timeout=120)
        ended = time.monotonic()
        time.sleep(0.5)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=120)
        for server in servers:
            server.close_stdin_and_wait(30)
    assert not failures, failures
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Backed up {db_file} to {copy}: ") and "integrity_check ok" in done.stdout

    before = {i for i, t in acked.items() if t < began}
    during = {i for i, t in acked.items() if began <= t <= ended}
    after = {i for i, t in acked.items() if t > ended}
    assert before and after, "the writers must keep writing before and after the backup"
    with sqlite3.connect(copy) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)  # one self-contained file
        in_copy = {row[0] for row in conn.execute("SELECT id FROM agent_timeline")}
        orders = defaultdict(list)
        for session, order in conn.execute("SELECT session_id, sequence_order FROM agent_timeline"):
            orders[session].append(order)
        dangling = conn.execute("SELECT COUNT(*) FROM agent_timeline t WHERE t.retired_by IS NOT NULL AND NOT EXISTS "
                                "(SELECT 1 FROM agent_timeline a WHERE a.id = t.retired_by)").fetchone()[0]
    assert before <= in_copy, f"missing from the copy: {sorted(before - in_copy)[:10]}"
    assert not (after & in_copy), "the copy holds writes acknowledged after it was complete"
    assert all(sorted(o) == list(range(1, len(o) + 1)) for o in orders.values())  # one snapshot: no gaps
    assert dangling == 0
    print(f"{len(before)} writes acknowledged before the backup, {len(during)} during its "
          f"{ended - began:.2f} s, {len(after)} after")
    with Memory(f"sqlite:///{copy}", project="backup") as restored:  # the copy opens as a database
        assert restored.summarize_session(session_id="bulk").total == 150


def test_backup_refuses_postgres_and_points_at_export(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--database-url", "postgresql://u:pw@127.0.0.1:1/db", "backup", "/tmp/x.db"]) == 1
    err = capsys.readouterr().err
    assert err == ("Error: backup copies a SQLite database; for PostgreSQL use `vlk-memact export -o FILE` "
                   "(lossless, loaded back with `vlk-memact import FILE`) or pg_dump.\n")


def test_backup_help_names_export_for_postgres(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["backup", "--help"])
    assert "For PostgreSQL use `vlk-memact export -o FILE`" in " ".join(capsys.readouterr().out.split())


def test_backup_refuses_to_write_over_the_database_itself(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db_file = tmp_path / "vlk.db"
    with Memory(f"sqlite:///{db_file}", project="backup") as memory:
        memory.record_state(raw_log="keep me")
    before = db_file.read_bytes()
    assert main(["--database-url", f"sqlite:///{db_file}", "backup", str(db_file)]) == 1
    assert "the backup must go to another file than the database itself" in capsys.readouterr().err
    assert db_file.read_bytes() == before


def test_backup_of_a_damaged_database_fails_and_leaves_no_file(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    db_file = tmp_path / "vlk.db"
    db_file.write_text("not a database at all\n" * 100)
    target = tmp_path / "copy.db"
    assert main(["--database-url", f"sqlite:///{db_file}", "backup", str(target)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"Error: {db_file} is not a vlk-memact database or is damaged"), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vlk.db"]
