"""The failure note (issue 34) reads a failure's earlier sessions by the project's fingerprint: that read must
search by the fingerprint within the project, not walk every slot of the project (the session-led fingerprint
index left it only the (tenant, project) prefix)."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from vlk_memact import Memory, Settings
from vlk_memact.fingerprint import fingerprint

ERROR = "Traceback (most recent call last):\n  File \"app.py\", line 3, in load\nKeyError: 'port'"


def test_the_earlier_session_read_searches_by_fingerprint_within_the_project(tmp_path: Path) -> None:
    with Memory(f"sqlite:///{tmp_path / 'm.db'}", settings=Settings(log_level="WARNING"), project="here") as memory:
        memory.record_state(raw_log=ERROR, session_id="earlier")
        memory.record_state(raw_log="error[E0425]: cannot find value `x` in this scope", session_id="other")
        seen: list[str] = []
        with memory.reading() as tx:
            conn: sqlite3.Connection = tx._conn  # noqa: SLF001 - the test reads SQLite's own plan
            conn.set_trace_callback(seen.append)
            found = tx.project_failures(memory.session_key("now"), fingerprint(ERROR).key, 20)
            conn.set_trace_callback(None)
        assert [s.session_id for s in found] == ["earlier"]
        statement = next(s for s in seen if "fingerprint = " in s)
        plan = " ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + statement))
    searched = re.search(r"SEARCH t USING (?:COVERING )?INDEX \w+ \((.*?)\)", plan)
    assert searched and "fingerprint=?" in searched.group(1).replace(" ", ""), plan
