"""Write tests/data/v3_store.json: the rows a version-3 vlk-memact (fingerprint keys of version 3) stores.

    PYTHONPATH=<checkout of commit af37c35>/src python tests/corpus/v3_store.py

Run with the previous release on the path: it records errors through that release's Memory (a loop
that becomes a lesson, an error of another key, a second session), keeps a fix the way that release's
hooks did (``match_keys`` of the error's keys), and dumps every table of the SQLite file as column
names and rows. ``tests/test_rekey.py`` builds that release's schema in both stores, loads the rows
and opens them with the current engine, which must key them again.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import tempfile
from pathlib import Path

from vlk_memact import Memory
from vlk_memact.core.model import NewFix, SessionKey
from vlk_memact.engine.fix_memory import match_keys
from vlk_memact.fingerprint import FINGERPRINT_VERSION

OUT = Path(__file__).resolve().parents[1] / "data" / "v3_store.json"


def traceback(key: str, where: str) -> str:
    return (f'Traceback (most recent call last):\n  File "/home/dev/{where}/app.py", line 3, in load\n'
            f"    return cfg[{key!r}]\nKeyError: {key!r}\n")


def main() -> None:
    assert FINGERPRINT_VERSION == 3, "run with the version-3 release on PYTHONPATH"
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "v3.db"
        with Memory(f"sqlite:///{db}", project="proj") as memory:
            for _ in range(4):  # a loop: the lesson is learned from these slots
                memory.record_state(raw_log=traceback("host", "a"), session_id="s1")
            memory.fetch_context(session_id="s1")
            failure = memory.record_state(raw_log=traceback("port", "a"), session_id="s2")
            with memory.store.write() as tx:
                slot = tx.slots_by_id(SessionKey("local", "proj", "s2"), [failure.timeline_id])[0]
                tx.add_fix(NewFix(SessionKey("local", "proj", "s2"), "fix", slot.fingerprint,
                                  match_keys(slot.fingerprint_keys), (slot.raw_log or "")[:300],
                                  "python app.py", "python app.py", (), 0, (slot.uid,), "project"))
        conn = sqlite3.connect(db)
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        dump = {"schema_version": conn.execute("PRAGMA user_version").fetchone()[0], "tables": {}}
        for table in tables:
            cursor = conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2")
            rows = cursor.fetchall()
            if rows:
                dump["tables"][table] = {"columns": [d[0] for d in cursor.description], "rows": rows}
    OUT.write_text(json.dumps(dump, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
