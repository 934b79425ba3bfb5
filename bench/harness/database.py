"""Databases of 10^3 .. 10^6 slots, shaped like the files the engine writes, built once and copied per use.

Large files are bulk-inserted with sqlite3 into a file whose schema `Memory` created, with the rows the
engine writes (content hashes, uids, fingerprints of the current algorithm, constraint keys and links),
spread over many sessions and projects, mostly archived (PAST), from real agent output. The active
session is then written through `Memory`: tens of PRESENT slots and a few visible constraints.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from harness.log import speaker
from harness.texts import LESSONS, PoolText, distinct_errors
from vlk_memact import Memory, Settings
from vlk_memact.fingerprint import FINGERPRINT_VERSION
from vlk_memact.store.sqlite_schema import SCHEMA_VERSION, content_hash

TENANT = "local"
ACTIVE_PROJECT = "bench-p000"
ACTIVE_SESSION = "active"
NEEDLE = "vlkbench-needle-7f3a"  # planted once, in an archived slot of the active session
COMMON_QUERY = "error"
SLOTS_PER_SESSION = 200  # below the default retention (500 PAST slots per session), as a pruned file is
SESSIONS_PER_PROJECT = 50
ACTIVE_PRESENT = 30  # PRESENT slots recorded in the active session
BLOCK = 25  # a bulk session archives its records behind one constraint every BLOCK slots
BUILD_VERSION = 4  # bump when the generated data changes (invalidates --cache)

say = speaker("databases")


def engine_settings() -> Settings:
    """The engine as the benchmarks run it: default settings, warnings only on stderr."""
    return Settings.from_env({"VLK_LOG_LEVEL": "WARNING"})


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path.resolve()}"


def _time(base: datetime, index: int, total: int) -> str:
    # Spread over the last 20 days (inside the default 30-day retention), oldest first.
    moment = base - timedelta(days=20) + timedelta(seconds=index * (20 * 86400 - 3600) / max(total, 1))
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def build_database(path: Path, n: int, pool: list[PoolText], seed: int) -> dict[str, Any]:
    """A file of about n timeline slots (see the module docstring)."""
    started = time.perf_counter()
    rng = random.Random(seed + n)
    if path.exists():
        path.unlink()
    Memory(sqlite_url(path), settings=engine_settings(), project=ACTIVE_PROJECT).close()  # schema, migrations

    active_rows = ACTIVE_PRESENT + 2  # recorded through Memory below, plus two lessons
    bulk = n - active_rows
    n_sessions = max(5, round(n / SLOTS_PER_SESSION))
    n_projects = max(1, n_sessions // SESSIONS_PER_PROJECT)
    sessions = []
    for s in range(n_sessions):
        project = f"bench-p{s % n_projects:03d}"
        name = ACTIVE_SESSION if s == 0 else f"s{s:05d}"
        sessions.append((project, name, bulk // n_sessions + (1 if s < bulk % n_sessions else 0)))
    project_scoped_home = n_projects  # another session of the active project (session s is in project s % n)
    global_home = n_sessions - 1

    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = OFF")  # a bulk load into a file nobody else has open; WAL again below
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute("PRAGMA cache_size = -1000000")
    conn.execute("PRAGMA temp_store = MEMORY")
    base_id = conn.execute("SELECT COALESCE(MAX(id), 0) FROM agent_timeline").fetchone()[0]
    base_content = conn.execute("SELECT COALESCE(MAX(id), 0) FROM memory_contents").fetchone()[0]
    now = datetime.now(UTC).replace(tzinfo=None)
    next_id = base_id
    next_content = base_content
    contents: list[tuple] = []
    timeline: list[list] = []
    keys_rows: list[tuple] = []
    links: list[tuple] = []
    written = 0
    needle_planted = False
    counts = {"PRESENT": 0, "PAST": 0, "FUTURE": 0}

    def flush() -> None:
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO memory_contents (id, raw_log, file_context, tool_payload, content_hash) VALUES (?, ?, ?, ?, ?)",
            contents,
        )
        conn.executemany(
            """INSERT INTO agent_timeline (id, uid, content_id, tenant, project, session_id, sequence_order,
                   temporal_state, learning_summary, constraint_type, created_at, origin, scope, evidence,
                   fingerprint, fingerprint_keys, fingerprint_version, retired_reason, retired_by, lessons, fire_count)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            timeline,
        )
        conn.executemany("INSERT OR IGNORE INTO constraint_keys (key, constraint_id) VALUES (?, ?)", keys_rows)
        conn.executemany(
            "INSERT OR IGNORE INTO constraint_links (constraint_id, source_id, relation) VALUES (?, ?, ?)", links
        )
        conn.execute("COMMIT")
        for state in ("PRESENT", "PAST", "FUTURE"):
            counts[state] += sum(1 for row in timeline if row[7] == state)
        contents.clear()
        timeline.clear()
        keys_rows.clear()
        links.clear()

    for s, (project, session, count) in enumerate(sessions):
        pending: list[list] = []
        pending_items: list[PoolText] = []
        first_constraint = True
        for j in range(count):
            next_id += 1
            if written % 64 == 0:
                created = _time(now, written, bulk)
            written += 1
            if j % BLOCK == BLOCK - 1 and pending:
                # A constraint learned from the records just before it; they are archived behind it.
                keys = tuple(dict.fromkeys(k for item in reversed(pending_items) for k in item.keys))[:16]
                anchor = rng.random() < 0.4
                scope = "session"
                state = "FUTURE" if rng.random() < 0.7 else "PAST"
                special = None
                if first_constraint:
                    first_constraint = False
                    special = {project_scoped_home: "project", global_home: "global"}.get(s)
                if special:
                    scope, state, anchor = special, "FUTURE", False
                elif session == ACTIVE_SESSION:
                    state = "PAST"  # the active session's constraints are the two lessons written below
                elif project != ACTIVE_PROJECT and rng.random() < 0.1:
                    scope = "project"
                last = pending_items[-1]
                excerpt = last.text[-200:]
                lesson = (
                    f"[SYSTEM ANCHOR] This error has appeared {len(pending)} times in this session: "
                    f"{excerpt[-120:]!r}. Stop repeating the same command; change the approach."
                    if anchor
                    else LESSONS[rng.randrange(len(LESSONS))]
                )
                timeline.append([
                    next_id, uuid.uuid4().hex, None, TENANT, project, session, j + 1, state, lesson, "DERIVED",
                    created, "anchor" if anchor else "lesson", scope, excerpt, last.key,
                    json.dumps(list(keys), ensure_ascii=False), FINGERPRINT_VERSION,
                    None if state == "FUTURE" else "revoked", None, None, 0,
                ])
                keys_rows.extend((k, next_id) for k in keys)
                for row in pending:
                    row[7] = "PAST"
                    row[17] = "loop" if anchor else "time_travel"
                    row[18] = next_id
                    links.append((next_id, row[0], "archived"))
                pending, pending_items = [], []
                continue
            next_content += 1
            item = pool[rng.randrange(len(pool))]
            header = f"$ {session} step {j + 1} pid={rng.randrange(1, 99999)}"
            if session == ACTIVE_SESSION and j == 10:
                header += f" {NEEDLE}"
                needle_planted = True
            text = f"{header}\n{item.text}"
            file_context = f"src/{project}/module_{rng.randrange(40)}.py" if rng.random() < 0.3 else None
            payload = json.dumps({"command": "pytest -x -q", "exit_code": 1}) if rng.random() < 0.1 else None
            contents.append((next_content, text, file_context, payload, content_hash(TENANT, text, file_context, payload)))
            row = [
                next_id, uuid.uuid4().hex, next_content, TENANT, project, session, j + 1, "PRESENT", None, None,
                created, "record", None, None, item.key, item.keys_json,
                FINGERPRINT_VERSION, None, None, None, 0,
            ]
            timeline.append(row)
            pending.append(row)
            pending_items.append(item)
        # The end of a session: its last records stay PRESENT (the active session gets its own below).
        keep_present = 0 if session == ACTIVE_SESSION else 5
        for row in pending[: max(0, len(pending) - keep_present)]:
            row[7], row[17] = "PAST", "loop"
        if len(timeline) >= 50000:
            flush()
    flush()
    if conn.execute("PRAGMA journal_mode = WAL").fetchone()[0].lower() != "wal":
        raise RuntimeError(f"could not switch {path} back to WAL")
    conn.close()

    # The active session, through the engine: tens of PRESENT errors and two lessons (a few constraints).
    settings = engine_settings()
    with Memory(sqlite_url(path), settings=settings, project=ACTIVE_PROJECT) as memory:
        ids = []
        for k, item in enumerate(distinct_errors(pool, ACTIVE_PRESENT)):
            ids.append(memory.record_state(raw_log=f"$ active step {k}\n{item.text}", session_id=ACTIVE_SESSION)
                       .timeline_id)
        memory.time_travel(target_timeline_ids=ids[:2], learning=LESSONS[0], raw_log_excerpt="pytest: error: "
                           "unrecognized arguments", session_id=ACTIVE_SESSION, scope="session")
        memory.time_travel(target_timeline_ids=ids[2:4], learning=LESSONS[4], raw_log_excerpt="ModuleNotFoundError:"
                           " No module named 'pkg'", session_id=ACTIVE_SESSION, scope="project")
        context = memory.fetch_context(session_id=ACTIVE_SESSION)
        visible = memory.summarize_session(session_id=ACTIVE_SESSION)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    slots = conn.execute("SELECT COUNT(*) FROM agent_timeline").fetchone()[0]
    conn.close()
    meta = {
        "n": n,
        "slots": slots,
        "sessions": n_sessions,
        "projects": n_projects,
        "bulk_states": counts,
        "active_present": visible.present,
        "active_past": visible.past,
        "active_visible_constraints": visible.visible_constraints,
        "active_context_tokens": context.tokens,
        "active_context_loops": len(context.loops),
        "active_context_merges": len(context.merges),
        "active_context_conflicts": len(context.conflicts),
        "needle_planted": needle_planted,
        "file_bytes": path.stat().st_size,
        "bytes_per_slot": path.stat().st_size / slots,
        "build_seconds": time.perf_counter() - started,
        "build_version": BUILD_VERSION,
        "schema_version": SCHEMA_VERSION,
    }
    return meta


class Databases:
    """Built files, pristine; each section works on a copy in the run's folder."""

    def __init__(self, work: Path, cache: Path | None, pool: list[PoolText], seed: int, pool_tag: str) -> None:
        self.work = work
        self.cache = cache
        self.pool = pool
        self.seed = seed
        self.pool_tag = pool_tag
        self.meta: dict[int, dict[str, Any]] = {}

    @staticmethod
    def storage(path: Path, slots: int) -> dict[str, float]:
        """Bytes per slot of each table and index (the dbstat virtual table, where SQLite has it)."""
        try:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                rows = conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC").fetchall()
                text = conn.execute("SELECT COALESCE(SUM(LENGTH(CAST(raw_log AS BLOB))), 0) FROM memory_contents").fetchone()[0]
            finally:
                conn.close()
        except sqlite3.Error:
            return {}
        found = {name: round(size / slots, 1) for name, size in rows}
        found["(raw_log bytes)"] = round(text / slots, 1)
        return found

    def pristine(self, n: int) -> Path:
        folder = self.cache or self.work
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"pristine-{n}-p{len(self.pool)}.db"
        meta_file = path.with_suffix(".json")
        if path.exists() and meta_file.exists():
            meta = json.loads(meta_file.read_text())
            if meta.get("build_version") == BUILD_VERSION and meta.get("pool") == self.pool_tag and \
                    meta.get("schema_version") == SCHEMA_VERSION:
                if "storage" not in meta:
                    meta["storage"] = self.storage(path, meta["slots"])
                    meta_file.write_text(json.dumps(meta))
                self.meta[n] = meta
                return path
        say(f"building a database of {n:,} slots ...")
        meta = build_database(path, n, self.pool, self.seed)
        meta["pool"] = self.pool_tag
        meta["storage"] = self.storage(path, meta["slots"])
        meta_file.write_text(json.dumps(meta))
        self.meta[n] = meta
        say(f"  built in {meta['build_seconds']:.1f} s: {meta['slots']:,} slots, "
            f"{meta['file_bytes'] / 1e6:.1f} MB, {meta['bytes_per_slot']:.0f} bytes/slot")
        return path

    def copy(self, n: int, name: str) -> Path:
        source = self.pristine(n)
        target = self.work / f"{name}-{n}.db"
        for suffix in ("", "-wal", "-shm"):
            Path(str(target) + suffix).unlink(missing_ok=True)
        shutil.copyfile(source, target)
        # Let the kernel finish writing the copy back: a 2 GB writeback running during the timings slows the
        # engine and its floor alike and says nothing about either.
        os.sync()
        return target

