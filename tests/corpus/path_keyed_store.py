"""Write tests/data/path_keyed_store.json: what a vlk-memact that keyed projects by path stores (issue 35).

    PYTHONPATH=<checkout of commit 0e77150>/src python tests/corpus/path_keyed_store.py

Run with the previous release on the path: in the project `/home/alice/src/app` (the git root of a checkout,
the key that release used) a loop that became a lesson (session s1), a fix kept the way its hooks did (s2),
a host call and the session's injected items, a record in the tools' session `default`; and in the project
`/home/alice/src/other` one record that must stay where it is. Every table of the SQLite file is dumped as
column names and rows. ``tests/test_project_merge.py`` builds that release's schema in both stores, loads
the rows and opens them with the current engine from a checkout of the repository.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import tempfile
from pathlib import Path

from vlk_memact import Memory
from vlk_memact.core.model import NewFix, NewHostCall, SessionKey
from vlk_memact.engine.fix_memory import match_keys
from vlk_memact.store import sqlite_schema

OUT = Path(__file__).resolve().parents[1] / "data" / "path_keyed_store.json"
APP, OTHER = "/home/alice/src/app", "/home/alice/src/other"


def traceback(key: str) -> str:
    return (f'Traceback (most recent call last):\n  File "{APP}/app.py", line 3, in load\n'
            f"    return cfg[{key!r}]\nKeyError: {key!r}\n")


def main() -> None:
    assert sqlite_schema.SCHEMA_VERSION == 10, "run with the release before issue 35 on PYTHONPATH"
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "old.db"
        with Memory(f"sqlite:///{db}", project=APP) as memory:
            for _ in range(4):  # a loop: the lesson is learned from these slots
                memory.record_state(raw_log=traceback("host"), session_id="s1")
            memory.fetch_context(session_id="s1")
            first = memory.record_state(raw_log=traceback("user"), session_id="s1")
            memory.time_travel([first.timeline_id], "Set cfg['user'] in config.json before load()",
                               "KeyError: 'user'", session_id="s1")
            failure = memory.record_state(raw_log=traceback("port"), session_id="s2")
            memory.record_state(raw_log="error: the tools' own session", session_id=None)
            key = SessionKey("local", APP, "s2")
            with memory.store.write() as tx:
                slot = tx.slots_by_id(key, [failure.timeline_id])[0]
                tx.add_fix(NewFix(key, "fix", slot.fingerprint, match_keys(slot.fingerprint_keys),
                                  (slot.raw_log or "")[:300], "python app.py", "python app.py", (), 0, (slot.uid,),
                                  "project"))
                tx.add_host_call(key, NewHostCall("toolu_old", "k", "failure", tool="Bash", target="app.py",
                                                  summary="python app.py", host="claude-code"), failure.timeline_id)
                tx.set_injected(key, ["lesson:1"], "claude-code")
        with Memory(f"sqlite:///{db}", project=OTHER) as memory:
            memory.record_state(raw_log="error: another repository", session_id="o1")
        conn = sqlite3.connect(db)
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        dump = {"schema_version": conn.execute("PRAGMA user_version").fetchone()[0], "tables": {}}
        for table in tables:
            cursor = conn.execute(f"SELECT * FROM {table} ORDER BY 1")
            rows = cursor.fetchall()
            if rows:
                dump["tables"][table] = {"columns": [d[0] for d in cursor.description], "rows": rows}
    OUT.write_text(json.dumps(dump, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
