"""Performance of vlk-memact, side by side with its floors and with the official memory server.

    .venv/bin/python bench/perf.py            # the full run (10^3 .. 10^6 slots), about 10-15 minutes
    .venv/bin/python bench/perf.py --quick    # 10^3 and 10^4 only, few iterations: a CI smoke run

Sections, all measured in the same run:
 1. Engine, in process: median and p99 of each `Memory` method on databases of 10^3 .. 10^6 slots,
    beside its floor, the same rows written and read with raw `sqlite3` statements under the same
    durability settings (WAL, synchronous=FULL, BEGIN IMMEDIATE), as a ratio engine / floor.
 2. MCP over stdio, with the official SDK client: each tool against a no-op tool served by the same
    SDK (the protocol floor), as a ratio.
 3. The official reference server `@modelcontextprotocol/server-memory` (npm, pinned in bench/node),
    doing equivalent work through the same client, with 10^3 .. 10^5 items stored.
 4. Growth: latency and resident memory of the server against database size; bytes on disk per slot.
 5. Throughput: records per second of one client, and of 8 concurrent writer processes on one file.

Large databases are bulk-inserted with sqlite3 into a file whose schema `Memory` created, with the
rows the engine writes (content hashes, uids, fingerprints of the current algorithm, constraint keys
and links), spread over many sessions and projects, mostly archived (PAST), from real agent output
(shared/data/trajectories-dev when present). The active session is then written through `Memory`:
tens of PRESENT slots and a few visible constraints.

Figures go to bench/results/perf.json and perf.md (perf-quick.* for --quick). Targets are reported
as pass/fail; the exit status is 0 unless --strict is given and a target fails.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gzip
import hashlib
import io
import json
import math
import os
import platform
import pstats
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from vlk_memact import Memory, Settings  # noqa: E402
from vlk_memact.fingerprint import FINGERPRINT_VERSION, fingerprint  # noqa: E402
from vlk_memact.store.sqlite_schema import SCHEMA_VERSION, content_hash  # noqa: E402

SHARED = Path(os.environ.get("VLK_SHARED_DIR", ROOT.parent / "shared"))
DATA = SHARED / "data" / "trajectories-dev"
RESULTS = ROOT / "bench" / "results"
NODE_DIR = ROOT / "bench" / "node"
OFFICIAL_PACKAGE = "@modelcontextprotocol/server-memory"
OFFICIAL_ENTRY = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"

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

LESSONS = (
    "Run the test suite with `pytest -x -q` from the repository root, not from the package folder.",
    "Install the package in editable mode before running its tests: `pip install -e .`.",
    "The settings module is `tests.settings`; export DJANGO_SETTINGS_MODULE before running manage.py.",
    "Pin numpy below 2.0 for this package; its C extension is built against the 1.x ABI.",
    "Use the virtualenv's python (`.venv/bin/python`), not the system interpreter.",
    "Regenerate migrations after editing models; the test database is built from them.",
    "Read the whole traceback: the failing frame is in the project, not in site-packages.",
    "Edit the source under src/, never the copy installed in site-packages.",
    "Quote paths with spaces in shell commands; the workspace path contains one.",
    "Check the function signature before calling it; keyword-only arguments are required here.",
)


# ----------------------------------------------------------------------------------------- modes


@dataclass(frozen=True)
class Mode:
    name: str
    sizes: tuple[int, ...]
    official_sizes: tuple[int, ...]
    iterations: int  # engine samples per operation and size
    cap_seconds: float  # ... or fewer, when an operation has run this long (both sides together)
    mcp_iterations: int
    official_iterations: int
    official_cap_seconds: float
    official_call_timeout: float
    throughput_seconds: float
    writers: int
    pool: int


FULL = Mode("full", (10**3, 10**4, 10**5, 10**6), (10**3, 10**4, 10**5), 200, 5.0, 150, 15, 25.0, 60.0, 5.0, 8, 4000)
QUICK = Mode("quick", (10**3, 10**4), (10**3,), 12, 1.0, 12, 3, 6.0, 30.0, 1.0, 8, 600)


def say(*parts: object) -> None:
    print("[perf]", *parts, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------- stats


def summary(samples: list[float]) -> dict[str, float]:
    """Median and p99 (nearest rank) in milliseconds."""
    if not samples:
        return {"n": 0, "median_ms": math.nan, "p99_ms": math.nan, "mean_ms": math.nan}
    ordered = sorted(samples)
    n = len(ordered)
    mid = ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
    p99 = ordered[max(0, math.ceil(0.99 * n) - 1)]
    return {"n": n, "median_ms": mid * 1e3, "p99_ms": p99 * 1e3, "mean_ms": sum(ordered) / n * 1e3}


def ratio(a: float, b: float) -> float:
    return a / b if b and not math.isnan(a) and not math.isnan(b) else math.nan


# ------------------------------------------------------------------------------------ the texts


_SWE_FOOTER = re.compile(r"\n*\(Open file: [^\n]*\)\n\(Current directory: [^\n]*\)\n?bash-\$\s*$")
_SWE_FAILURE = re.compile(  # as bench/replay.py recognises a failed SWE-agent step
    r"Traceback \(most recent call last\)|^\w*(?:Error|Exception): |command not found|No such file or directory"
    r"|Your proposed edit has introduced new syntax error|syntax error|not found|^usage: |Usage: |"
    r"Error: |FAILED|fatal: |E\d{3} ",
    re.MULTILINE,
)
_RETURNCODE = re.compile(r"<returncode>(-?\d+)</returncode>")


def load_observations() -> tuple[list[str], str]:
    """Failed steps of real agents (what an agent records; both formats of trajectories-dev), else a
    synthetic stand-in."""
    texts: list[str] = []
    if DATA.is_dir():
        for path in sorted((DATA / "swe-agent").glob("*.json.gz")):
            turns = json.load(gzip.open(path)).get("trajectory", [])
            for before, turn in zip(turns, turns[1:]):
                if before.get("role") == "ai" and turn.get("role") == "user":
                    text = _SWE_FOOTER.sub("", turn.get("text") or "").strip()
                    if _SWE_FAILURE.search(text):
                        texts.append(text)
        for path in sorted((DATA / "mini-swe-agent").glob("*.json.gz")):
            messages = json.load(gzip.open(path)).get("messages", [])
            for before, message in zip(messages, messages[1:]):
                if before.get("role") == "assistant" and message.get("role") == "user":
                    text = message.get("content")
                    text = text if isinstance(text, str) else json.dumps(text)
                    code = _RETURNCODE.search(text)
                    if code is None or int(code.group(1)) != 0:
                        texts.append(re.sub(r"</?output>|<returncode>-?\d+</returncode>", "", text).strip())
    texts = [t for t in texts if len(t) >= 80]
    if texts:
        return texts, f"{DATA.relative_to(SHARED.parent) if SHARED.parent in DATA.parents else DATA}"
    rng = random.Random(7)
    synthetic = []
    for i in range(500):
        mod = rng.choice(["core", "api", "db", "cli", "utils"])
        exc = rng.choice(["KeyError", "ValueError", "TypeError", "AttributeError", "ImportError"])
        frames = "".join(
            f'  File "/repo/src/pkg/{mod}/f{j}.py", line {rng.randint(1, 900)}, in fn_{rng.randint(0, 40)}\n'
            f"    result = call_{j}(arg{j})\n"
            for j in range(rng.randint(1, 12))
        )
        synthetic.append(f"Traceback (most recent call last):\n{frames}{exc}: bad value {rng.randint(0, 10**6)} "
                         f"for option '{mod}_{i % 37}'")
    return synthetic, "synthetic (trajectories-dev not found)"


@dataclass(frozen=True)
class PoolText:
    text: str
    key: str
    keys: tuple[str, ...]
    keys_json: str


def make_pool(observations: list[str], size: int, rng: random.Random) -> list[PoolText]:
    """Texts of 200-2000 characters (log-uniform) of real failed steps: short ones joined, long ones cut
    to their head and tail."""
    pool = []
    for _ in range(size):
        length = int(math.exp(rng.uniform(math.log(200), math.log(2000))))
        text = observations[rng.randrange(len(observations))]
        while len(text) < length:
            text += "\n" + observations[rng.randrange(len(observations))]
        if len(text) > length:  # head and tail, as the engine keeps an over-long log (the cause, the error)
            head = length * 2 // 5
            text = text[:head] + "\n...\n" + text[-(length - head):]
        fp = fingerprint(text)
        pool.append(PoolText(text, fp.key, tuple(fp.keys), json.dumps(list(fp.keys), ensure_ascii=False)))
    return pool


def distinct_errors(pool: list[PoolText], count: int) -> list[PoolText]:
    """Pool texts whose fingerprint keys are pairwise disjoint: recorded together they form no loop."""
    chosen: list[PoolText] = []
    seen: set[str] = set()
    for item in pool:
        if len(item.text) > 1200 or seen.intersection(item.keys) or item.key in seen:
            continue
        chosen.append(item)
        seen.update(item.keys)
        seen.add(item.key)
        if len(chosen) == count:
            break
    return chosen


def loop_text(i: int) -> str:
    """The same error each time, with volatile parts (paths, line numbers, ids) that change."""
    return (
        "Traceback (most recent call last):\n"
        f'  File "/tmp/run_{i}/repo/src/app/handlers.py", line {40 + i % 50}, in handle\n'
        f"    value = registry[key_{i}]\n"
        f"KeyError: 'session-{1000 + i}'"
    )


class TextSource:
    """Unique texts: a pool text behind a header line that differs every time (as real runs do)."""

    def __init__(self, pool: list[PoolText], rng: random.Random, label: str) -> None:
        self.pool = pool
        self.rng = rng
        self.label = label
        self.count = 0

    def next(self) -> tuple[str, PoolText]:
        self.count += 1
        item = self.pool[self.rng.randrange(len(self.pool))]
        return f"$ {self.label} step {self.count} pid={self.rng.randrange(1, 99999)}\n{item.text}", item


# ------------------------------------------------------------------------------ building a file


def engine_settings() -> Settings:
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
    now = datetime.now(timezone.utc).replace(tzinfo=None)
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


# ------------------------------------------------------------------------------------ the floors


_COLUMNS = """t.id, t.session_id, t.sequence_order, t.temporal_state, t.origin, t.created_at, t.content_id,
    c.raw_log, c.file_context, c.tool_payload, t.learning_summary, t.constraint_type, t.evidence, t.fingerprint,
    t.fingerprint_keys, t.fingerprint_version, t.retired_reason, t.retired_by, t.lessons, t.tenant, t.project,
    t.scope, t.fire_count, t.last_fired_at, t.uid"""
_FROM = " FROM agent_timeline t LEFT JOIN memory_contents c ON c.id = t.content_id "


class Floor:
    """The same rows written and read with raw sqlite3 statements, under the engine's durability settings."""

    def __init__(self, path: Path, project: str = ACTIVE_PROJECT) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=5)
        self.conn.execute("PRAGMA busy_timeout = 5000")
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = FULL")
        self.conn.execute("PRAGMA foreign_keys = ON")
        self.project = project

    def close(self) -> None:
        self.conn.close()

    def record(self, session: str, text: str, item: PoolText) -> int:
        c = self.conn
        c.execute("BEGIN IMMEDIATE")
        content_id = c.execute(
            "INSERT INTO memory_contents (raw_log, file_context, tool_payload, content_hash) VALUES (?, ?, ?, ?) "
            "RETURNING id",
            (text, None, None, hashlib.sha256(text.encode()).hexdigest()),
        ).fetchone()[0]
        slot_id = c.execute(
            """INSERT INTO agent_timeline (uid, tenant, project, session_id, sequence_order, temporal_state, origin,
                   content_id, fingerprint, fingerprint_keys, fingerprint_version)
               VALUES (?, ?, ?, ?, (SELECT COALESCE(MAX(sequence_order), 0) + 1 FROM agent_timeline
                                    WHERE tenant = ? AND project = ? AND session_id = ?),
                       'PRESENT', 'record', ?, ?, ?, ?) RETURNING id""",
            (uuid.uuid4().hex, TENANT, self.project, session, TENANT, self.project, session, content_id, item.key,
             json.dumps(list(item.keys)), FINGERPRINT_VERSION),
        ).fetchone()[0]
        c.execute("COMMIT")
        return slot_id

    def context_rows(self, session: str) -> int:
        """PRESENT slots of the session with their content, and the FUTURE constraints it sees."""
        c = self.conn
        c.execute("BEGIN")
        present = c.execute(
            "SELECT " + _COLUMNS + _FROM + "WHERE t.tenant = ? AND t.project = ? AND t.session_id = ? "
            "AND t.temporal_state = 'PRESENT' ORDER BY t.sequence_order",
            (TENANT, self.project, session),
        ).fetchall()
        # The same filter as the engine's, written so that each scope is searched on its own index (the OR
        # distributed: a MULTI-INDEX OR), which is the floor for reading these rows.
        constraints = c.execute(
            "SELECT " + _COLUMNS + _FROM + """WHERE
                (t.tenant = ? AND t.temporal_state = 'FUTURE' AND t.scope = 'global')
                OR (t.tenant = ? AND t.temporal_state = 'FUTURE' AND t.scope = 'project' AND t.project = ?)
                OR (t.tenant = ? AND t.project = ? AND t.session_id = ? AND t.temporal_state = 'FUTURE'
                    AND (t.scope = 'session' OR t.scope IS NULL)) ORDER BY t.id""",
            (TENANT, TENANT, self.project, TENANT, self.project, session),
        ).fetchall()
        c.execute("COMMIT")
        return len(present) + len(constraints)

    def time_travel(self, session: str, ids: list[int], lesson: str, evidence: str) -> int:
        c = self.conn
        c.execute("BEGIN IMMEDIATE")
        rows = c.execute(
            "SELECT t.id, t.fingerprint, t.fingerprint_keys FROM agent_timeline t WHERE t.tenant = ? AND t.project = ? "
            "AND t.session_id = ? AND t.id IN (SELECT value FROM json_each(?)) AND t.temporal_state = 'PRESENT'",
            (TENANT, self.project, session, json.dumps(ids)),
        ).fetchall()
        keys = list(dict.fromkeys(k for row in rows for k in json.loads(row[2] or "[]")))
        constraint_id = c.execute(
            """INSERT INTO agent_timeline (uid, tenant, project, session_id, sequence_order, temporal_state, origin,
                   scope, learning_summary, constraint_type, evidence, fingerprint, fingerprint_keys,
                   fingerprint_version)
               VALUES (?, ?, ?, ?, (SELECT COALESCE(MAX(sequence_order), 0) + 1 FROM agent_timeline
                                    WHERE tenant = ? AND project = ? AND session_id = ?),
                       'FUTURE', 'lesson', 'session', ?, 'DERIVED', ?, ?, ?, ?) RETURNING id""",
            (uuid.uuid4().hex, TENANT, self.project, session, TENANT, self.project, session, lesson, evidence,
             rows[-1][1] if rows else None, json.dumps(keys), FINGERPRINT_VERSION),
        ).fetchone()[0]
        c.executemany("INSERT OR IGNORE INTO constraint_keys (key, constraint_id) VALUES (?, ?)",
                      [(k, constraint_id) for k in keys])
        moved = c.execute(
            "UPDATE agent_timeline SET temporal_state = 'PAST', retired_reason = 'time_travel', retired_by = ? "
            "WHERE tenant = ? AND temporal_state = 'PRESENT' AND id IN (SELECT value FROM json_each(?)) RETURNING id",
            (constraint_id, TENANT, json.dumps(ids)),
        ).fetchall()
        c.executemany("INSERT OR IGNORE INTO constraint_links (constraint_id, source_id, relation) VALUES (?, ?, ?)",
                      [(constraint_id, r[0], "archived") for r in moved])
        c.execute("COMMIT")
        return constraint_id

    def search(self, session: str, query: str, limit: int = 20) -> int:
        c = self.conn
        c.execute("BEGIN")
        rows = c.execute(
            "SELECT " + _COLUMNS + _FROM + """WHERE t.tenant = ? AND t.project = ? AND t.session_id = ?
                AND instr(lower(COALESCE(c.raw_log, '') || ' ' || COALESCE(c.file_context, '') || ' ' ||
                    COALESCE(t.learning_summary, '') || ' ' || COALESCE(t.evidence, '')), ?) > 0
                ORDER BY t.sequence_order DESC LIMIT ?""",
            (TENANT, self.project, session, query.lower(), limit),
        ).fetchall()
        c.execute("COMMIT")
        return len(rows)

    def history(self, session: str, limit: int = 50) -> int:
        c = self.conn
        c.execute("BEGIN")
        rows = c.execute(
            "SELECT " + _COLUMNS + _FROM + "WHERE t.tenant = ? AND t.project = ? AND t.session_id = ? "
            "ORDER BY t.sequence_order DESC LIMIT ?",
            (TENANT, self.project, session, limit),
        ).fetchall()
        c.execute("COMMIT")
        return len(rows)


# -------------------------------------------------------------------------------- measuring


Step = tuple[Callable[[], Any] | None, Callable[[Any], Any]]  # (setup, timed action on the setup's value)


def measure_pair(engine: Step, floor: Step, iterations: int, cap: float, warmup: int = 3,
                 floor_between: bool = False) -> tuple[list[float], list[float]]:
    """Interleaved samples of both sides (alternating who goes first, so drift and load hit both).

    floor_between: run the engine's setup, then the floor, then the engine (the floor reads the rows the
    engine is about to process, e.g. a loop about to be intercepted).
    """
    engine_samples: list[float] = []
    floor_samples: list[float] = []

    def run(step: Step, into: list[float] | None) -> None:
        setup, action = step
        arg = setup() if setup else None
        t0 = time.perf_counter()
        action(arg)
        if into is not None:
            into.append(time.perf_counter() - t0)

    def timed(step: Step, into: list[float] | None, arg: Any) -> None:
        t0 = time.perf_counter()
        step[1](arg)
        if into is not None:
            into.append(time.perf_counter() - t0)

    started = time.perf_counter()
    for i in range(warmup + iterations):
        keep = i >= warmup
        if floor_between:
            arg = engine[0]() if engine[0] else None
            run(floor, floor_samples if keep else None)
            timed(engine, engine_samples if keep else None, arg)
        elif i % 2:
            run(engine, engine_samples if keep else None)
            run(floor, floor_samples if keep else None)
        else:
            run(floor, floor_samples if keep else None)
            run(engine, engine_samples if keep else None)
        if keep and len(engine_samples) >= 10 and time.perf_counter() - started > cap:
            break
    return engine_samples, floor_samples


def bench_engine(path: Path, n: int, pool: list[PoolText], mode: Mode, seed: int) -> dict[str, Any]:
    """Section 1 on one file: each engine operation beside its raw-sqlite3 floor."""
    rng = random.Random(seed * 7 + n)
    texts = TextSource(pool, rng, "bench")
    memory = Memory(sqlite_url(path), settings=engine_settings(), project=ACTIVE_PROJECT)
    floor = Floor(path)
    out: dict[str, Any] = {}
    it, cap = mode.iterations, mode.cap_seconds

    def record_pair(result_key: str, engine: Step, floor_step: Step, **kw: Any) -> None:
        e, f = measure_pair(engine, floor_step, it, cap, **kw)
        se, sf = summary(e), summary(f)
        out[result_key] = {"engine": se, "floor": sf, "ratio_median": ratio(se["median_ms"], sf["median_ms"]),
                           "ratio_p99": ratio(se["p99_ms"], sf["p99_ms"])}
        say(f"  {n:>9,} {result_key:<24} engine {se['median_ms']:8.3f} ms (p99 {se['p99_ms']:8.3f})   "
            f"floor {sf['median_ms']:8.3f} ms   x{out[result_key]['ratio_median']:.2f}")

    try:
        record_pair(
            "fetch_context",
            (None, lambda _: memory.fetch_context(session_id=ACTIVE_SESSION)),
            (None, lambda _: floor.context_rows(ACTIVE_SESSION)),
        )
        record_pair(
            "search_memory (20 hits)",
            (None, lambda _: memory.search_memory(query=COMMON_QUERY, session_id=ACTIVE_SESSION)),
            (None, lambda _: floor.search(ACTIVE_SESSION, COMMON_QUERY)),
        )
        record_pair(
            "search_memory (rare)",
            (None, lambda _: memory.search_memory(query=NEEDLE, session_id=ACTIVE_SESSION)),
            (None, lambda _: floor.search(ACTIVE_SESSION, NEEDLE)),
        )
        record_pair(
            "get_history",
            (None, lambda _: memory.get_history(session_id=ACTIVE_SESSION)),
            (None, lambda _: floor.history(ACTIVE_SESSION)),
        )
        record_pair(
            "record_state",
            (lambda: texts.next()[0], lambda text: memory.record_state(raw_log=text, session_id="rec-engine")),
            (texts.next, lambda pair: floor.record("rec-floor", pair[0], pair[1])),
        )

        def tt_engine_setup() -> list[int]:
            return [memory.record_state(raw_log=texts.next()[0], session_id="tt-engine").timeline_id for _ in range(2)]

        def tt_floor_setup() -> list[int]:
            return [floor.record("tt-floor", *texts.next()) for _ in range(2)]

        record_pair(
            "time_travel",
            (tt_engine_setup, lambda ids: memory.time_travel(
                target_timeline_ids=ids, learning=LESSONS[2], raw_log_excerpt="django.core.exceptions."
                "ImproperlyConfigured: Requested setting INSTALLED_APPS", session_id="tt-engine", scope="session")),
            (tt_floor_setup, lambda ids: floor.time_travel("tt-floor", ids, LESSONS[2], "ImproperlyConfigured")),
        )
        counter = iter(range(10**9))
        intercepted: list[int] = []

        def loop_setup() -> None:
            for _ in range(3):
                memory.record_state(raw_log=loop_text(next(counter)), session_id=ACTIVE_SESSION)

        def loop_fetch(_: Any) -> None:
            intercepted.append(len(memory.fetch_context(session_id=ACTIVE_SESSION).loops))

        record_pair(
            "fetch_context (loop)",
            (loop_setup, loop_fetch),
            (None, lambda _: floor.context_rows(ACTIVE_SESSION)),
            floor_between=True,
        )
        out["fetch_context (loop)"]["loops_intercepted"] = sum(intercepted)
        out["fetch_context (loop)"]["fetches"] = len(intercepted)
    finally:
        floor.close()
        memory.close()
    return out


def profile_engine(path: Path, pool: list[PoolText], calls: int, seed: int) -> dict[str, str]:
    """cProfile of record_state and fetch_context on one file: where the engine spends its time."""
    rng = random.Random(seed)
    texts = TextSource(pool, rng, "profile")
    reports = {}
    with Memory(sqlite_url(path), settings=engine_settings(), project=ACTIVE_PROJECT) as memory:
        for name, action in (
            ("record_state", lambda: memory.record_state(raw_log=texts.next()[0], session_id="profile")),
            ("fetch_context", lambda: memory.fetch_context(session_id=ACTIVE_SESSION)),
            ("search_memory", lambda: memory.search_memory(query=NEEDLE, session_id=ACTIVE_SESSION)),
        ):
            for _ in range(3):
                action()
            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(calls):
                action()
            profiler.disable()
            buffer = io.StringIO()
            pstats.Stats(profiler, stream=buffer).sort_stats("tottime").print_stats(18)
            reports[name] = buffer.getvalue()
    return reports


# ------------------------------------------------------------------------------------- MCP helpers


def _node() -> str | None:
    return shutil.which("node")


def official_available() -> tuple[bool, str]:
    if not _node():
        return False, "node is not installed"
    if not OFFICIAL_ENTRY.exists():
        return False, f"{OFFICIAL_PACKAGE} is not installed (run: npm ci --prefix bench/node)"
    return True, ""


def official_version() -> str:
    try:
        return json.loads((OFFICIAL_ENTRY.parent.parent / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return "?"


def server_env(tag: str, **extra: str) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "PYTHONPATH": str(ROOT / "src"),
        "VLK_PERF_TAG": tag,
    }
    env.update(extra)
    return env


def vlk_params(path: Path, tag: str):  # type: ignore[no-untyped-def]
    from mcp import StdioServerParameters

    return StdioServerParameters(
        command=sys.executable, args=["-m", "vlk_memact"],
        env=server_env(tag, DATABASE_URL=sqlite_url(path), VLK_PROJECT=ACTIVE_PROJECT), cwd=str(path.parent),
    )


def noop_params(tag: str):  # type: ignore[no-untyped-def]
    from mcp import StdioServerParameters

    return StdioServerParameters(command=sys.executable, args=[str(ROOT / "bench" / "perf_noop_server.py")],
                                 env=server_env(tag))


def official_params(memory_file: Path, tag: str):  # type: ignore[no-untyped-def]
    from mcp import StdioServerParameters

    return StdioServerParameters(command=_node() or "node", args=[str(OFFICIAL_ENTRY)],
                                 env=server_env(tag, MEMORY_FILE_PATH=str(memory_file)), cwd=str(memory_file.parent))


@contextlib.asynccontextmanager
async def connect(params: Any, errlog: Path):  # type: ignore[no-untyped-def]
    from mcp import Client
    from mcp.client.stdio import stdio_client

    with open(errlog, "a", encoding="utf-8") as log:
        async with Client(stdio_client(params, errlog=log), read_timeout_seconds=600) as client:
            yield client


def find_pid(tag: str) -> int | None:
    """The server child started with VLK_PERF_TAG=tag (the SDK's client does not expose its pid)."""
    needle = f"VLK_PERF_TAG={tag}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                return int(entry.name)
        except OSError:
            continue
    return None


def rss_mb(pid: int | None) -> dict[str, float]:
    """Resident memory now (VmRSS) and at its peak (VmHWM), in MB."""
    found = {"rss_mb": math.nan, "peak_rss_mb": math.nan}
    if pid is None:
        return found
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                found["rss_mb"] = int(line.split()[1]) / 1024
            elif line.startswith("VmHWM:"):
                found["peak_rss_mb"] = int(line.split()[1]) / 1024
    except OSError:
        pass
    return found


async def timed_call(client: Any, tool: str, args: dict[str, Any]) -> float:
    t0 = time.perf_counter()
    result = await client.call_tool(tool, args)
    elapsed = time.perf_counter() - t0
    if result.is_error:
        text = result.content[0].text if result.content else ""
        raise RuntimeError(f"{tool} failed: {text[:300]}")
    return elapsed


# --------------------------------------------------------------------------------- section 2: MCP


async def bench_mcp(path: Path, pool: list[PoolText], mode: Mode, work: Path, seed: int) -> dict[str, Any]:
    """Each vlk tool against the SDK's no-op tool, interleaved, through one client session each."""
    rng = random.Random(seed + 2)
    texts = TextSource(pool, rng, "mcp")
    errlog = work / "mcp-servers.log"
    out: dict[str, Any] = {}
    async with connect(vlk_params(path, "mcp-vlk"), errlog) as vlk, connect(noop_params("mcp-noop"), errlog) as noop:
        out["protocol_version"] = vlk.protocol_version
        # Fresh ids for the tools that need them.
        async def tt_ids(session: str) -> list[int]:
            ids = []
            for _ in range(2):
                r = await vlk.call_tool("vlk_record_state", {"raw_log": texts.next()[0], "session_id": session})
                ids.append(r.structured_content["timeline_id"])
            return ids

        async def revoke_target() -> int:
            ids = await tt_ids("mcp-revoke")
            r = await vlk.call_tool("vlk_time_travel", {
                "target_timeline_ids": ids, "learning": LESSONS[3], "raw_log_excerpt": "ImportError: numpy",
                "session_id": "mcp-revoke", "scope": "session"})
            return r.structured_content["constraint_id"]

        tools: list[tuple[str, Callable[[], Any]]] = [
            ("vlk_fetch_context", lambda: _const({"session_id": ACTIVE_SESSION})),
            ("vlk_search_memory", lambda: _const({"query": COMMON_QUERY, "session_id": ACTIVE_SESSION})),
            ("vlk_get_history", lambda: _const({"session_id": ACTIVE_SESSION})),
            ("vlk_summarize_session", lambda: _const({"session_id": ACTIVE_SESSION})),
            ("vlk_record_state", lambda: _const({"raw_log": texts.next()[0], "session_id": "mcp-rec"})),
            ("vlk_time_travel", lambda: _tt_args(tt_ids)),
            ("vlk_revoke_future", lambda: _revoke_args(revoke_target)),
        ]
        for _ in range(5):
            await timed_call(noop, "noop", {})
        for tool, make_args in tools:
            tool_samples: list[float] = []
            noop_samples: list[float] = []
            started = time.perf_counter()
            for i in range(3 + mode.mcp_iterations):
                args = await make_args()
                if i % 2:
                    t_tool = await timed_call(vlk, tool, args)
                    t_noop = await timed_call(noop, "noop", {})
                else:
                    t_noop = await timed_call(noop, "noop", {})
                    t_tool = await timed_call(vlk, tool, args)
                if i >= 3:
                    tool_samples.append(t_tool)
                    noop_samples.append(t_noop)
                    if len(tool_samples) >= 10 and time.perf_counter() - started > mode.cap_seconds:
                        break
            st, sn = summary(tool_samples), summary(noop_samples)
            out[tool] = {"tool": st, "noop": sn, "ratio_median": ratio(st["median_ms"], sn["median_ms"]),
                         "ratio_p99": ratio(st["p99_ms"], sn["p99_ms"])}
            say(f"  MCP {tool:<22} {st['median_ms']:8.3f} ms (p99 {st['p99_ms']:8.3f})   noop "
                f"{sn['median_ms']:7.3f} ms   x{out[tool]['ratio_median']:.2f}")
        out["server"] = rss_mb(find_pid("mcp-vlk"))
        out["noop_server"] = rss_mb(find_pid("mcp-noop"))
    return out


async def _const(args: dict[str, Any]) -> dict[str, Any]:
    return args


async def _tt_args(tt_ids: Callable[[str], Any]) -> dict[str, Any]:
    return {"target_timeline_ids": await tt_ids("mcp-tt"), "learning": LESSONS[5],
            "raw_log_excerpt": "django.db.utils.OperationalError: no such table", "session_id": "mcp-tt",
            "scope": "session"}


async def _revoke_args(target: Callable[[], Any]) -> dict[str, Any]:
    return {"timeline_id": await target(), "session_id": "mcp-revoke"}


# ------------------------------------------------------------------- section 3: the official server


def write_official_file(db: Path, target: Path) -> dict[str, Any]:
    """The same logs as the vlk file, as the official server stores them: one entity per session
    (named after it), one observation per recorded log (format: its loadGraph/saveGraph, JSONL)."""
    conn = sqlite3.connect(db)
    entities: dict[str, list[str]] = {}
    for session, raw in conn.execute(
        "SELECT t.session_id, c.raw_log FROM agent_timeline t JOIN memory_contents c ON c.id = t.content_id "
        "WHERE t.project = ? OR t.session_id != ? ORDER BY t.id", (ACTIVE_PROJECT, ACTIVE_SESSION)
    ):
        entities.setdefault(session, []).append(raw)
    conn.close()
    entities.setdefault("cmp-rec", [])
    items = sum(len(v) for v in entities.values())
    with open(target, "w", encoding="utf-8") as f:
        f.write("\n".join(
            json.dumps({"type": "entity", "name": name, "entityType": "session", "observations": observations})
            for name, observations in entities.items()
        ))
    return {"entities": len(entities), "observations": items, "file_bytes": target.stat().st_size}


async def bench_official(dbs: Databases, mode: Mode, work: Path, pool: list[PoolText], seed: int) -> dict[str, Any]:
    import anyio

    ok, why = official_available()
    if not ok:
        say(f"  skipping the official server: {why}")
        return {"skipped": why}
    out: dict[str, Any] = {"package": f"{OFFICIAL_PACKAGE}@{official_version()}", "sizes": {}}
    errlog = work / "official-servers.log"
    rng = random.Random(seed + 3)
    texts = TextSource(pool, rng, "cmp")
    for n in mode.official_sizes:
        db = dbs.copy(n, "official-vlk")
        memory_file = work / f"memory-{n}.jsonl"
        stored = write_official_file(db, memory_file)
        say(f"  official server at {n:,}: {stored['observations']:,} observations in {stored['entities']:,} "
            f"entities, {stored['file_bytes'] / 1e6:.1f} MB")
        size: dict[str, Any] = {"stored": stored}
        tag_v, tag_o = f"cmp-vlk-{n}", f"cmp-official-{n}"
        async with connect(vlk_params(db, tag_v), errlog) as vlk, \
                connect(official_params(memory_file, tag_o), errlog) as official:
            pairs: list[tuple[str, str, Callable[[], dict[str, Any]], str, Callable[[], dict[str, Any]]]] = [
                ("write", "vlk_record_state", lambda: {"raw_log": texts.next()[0], "session_id": "cmp-rec"},
                 "add_observations",
                 lambda: {"observations": [{"entityName": "cmp-rec", "contents": [texts.next()[0]]}]}),
                ("search", "vlk_search_memory", lambda: {"query": NEEDLE, "session_id": ACTIVE_SESSION},
                 "search_nodes", lambda: {"query": NEEDLE}),
                ("read one session", "vlk_get_history", lambda: {"session_id": ACTIVE_SESSION, "limit": 500},
                 "open_nodes", lambda: {"names": [ACTIVE_SESSION]}),
                # Last: a read_graph too slow for the time limit leaves this client unusable.
                ("read active memory", "vlk_fetch_context", lambda: {"session_id": ACTIVE_SESSION},
                 "read_graph", lambda: {}),
            ]
            for label, vtool, vargs, otool, oargs in pairs:
                vs: list[float] = []
                os_: list[float] = []
                started = time.perf_counter()
                timed_out = False
                for i in range(1 + mode.official_iterations):
                    tv = await timed_call(vlk, vtool, vargs())
                    try:
                        with anyio.fail_after(mode.official_call_timeout):
                            to = await timed_call(official, otool, oargs())
                    except TimeoutError:
                        timed_out, to = True, mode.official_call_timeout  # a lower bound
                        vs.append(tv)
                        os_.append(to)
                        break
                    if i >= 1 or to > mode.official_cap_seconds / 2:
                        # (a call that slow is measured once: its warm-up is its sample)
                        vs.append(tv)
                        os_.append(to)
                        if to > mode.official_cap_seconds / 2 or (
                                len(vs) >= 3 and time.perf_counter() - started > mode.official_cap_seconds):
                            break
                sv, so = summary(vs), summary(os_)
                size[label] = {"vlk_tool": vtool, "official_tool": otool, "vlk": sv, "official": so,
                               "speedup_median": ratio(so["median_ms"], sv["median_ms"]), "timed_out": timed_out}
                say(f"  {n:>7,} {label:<20} vlk {vtool:<18} {sv['median_ms']:9.2f} ms   official {otool:<16} "
                    f"{'>' if timed_out else ''}{so['median_ms']:9.2f} ms   {size[label]['speedup_median']:.1f}x faster")
                if timed_out:
                    size["note"] = (f"{otool} did not answer within {mode.official_call_timeout:.0f} s (the whole graph "
                                    f"is {stored['file_bytes'] / 1e6:.0f} MB, sent twice: text and structuredContent); "
                                    "its time is a lower bound and the server was stopped there")
                    break
            size["vlk_server"] = rss_mb(find_pid(tag_v))
            size["official_server"] = rss_mb(find_pid(tag_o))
        out["sizes"][str(n)] = size
    return out


# -------------------------------------------------------------------------------- section 4: growth


async def bench_growth(dbs: Databases, mode: Mode, work: Path, pool: list[PoolText], seed: int) -> dict[str, Any]:
    """The server on each file: latency of fetch_context over MCP, resident memory, bytes per slot."""
    out: dict[str, Any] = {}
    errlog = work / "growth-servers.log"
    rng = random.Random(seed + 4)
    texts = TextSource(pool, rng, "growth")
    for n in mode.sizes:
        db = dbs.copy(n, "growth")
        meta = dbs.meta[n]
        tag = f"growth-{n}"
        async with connect(vlk_params(db, tag), errlog) as vlk:
            pid = find_pid(tag)
            after_start = rss_mb(pid)
            fetch: list[float] = []
            for i in range(3 + max(5, mode.mcp_iterations // 3)):
                t = await timed_call(vlk, "vlk_fetch_context", {"session_id": ACTIVE_SESSION})
                if i >= 3:
                    fetch.append(t)
                await timed_call(vlk, "vlk_search_memory", {"query": COMMON_QUERY, "session_id": ACTIVE_SESSION})
                await timed_call(vlk, "vlk_get_history", {"session_id": ACTIVE_SESSION, "limit": 500})
                await timed_call(vlk, "vlk_record_state", {"raw_log": texts.next()[0], "session_id": "growth"})
            memory = rss_mb(pid)
        out[str(n)] = {
            "slots": meta["slots"],
            "file_bytes": meta["file_bytes"],
            "bytes_per_slot": meta["bytes_per_slot"],
            "mcp_fetch_context": summary(fetch),
            "rss_after_start_mb": after_start["rss_mb"],
            "rss_mb": memory["rss_mb"],
            "peak_rss_mb": memory["peak_rss_mb"],
        }
        say(f"  growth {n:>9,}: {meta['bytes_per_slot']:.0f} B/slot, MCP fetch {summary(fetch)['median_ms']:.2f} ms,"
            f" RSS {memory['rss_mb']:.1f} MB (peak {memory['peak_rss_mb']:.1f})")
        db.unlink(missing_ok=True)
    return out


# ---------------------------------------------------------------------------- section 5: throughput


async def bench_throughput(dbs: Databases, mode: Mode, work: Path, pool: list[PoolText], seed: int) -> dict[str, Any]:
    n = 10**4
    out: dict[str, Any] = {"database_slots": n, "seconds": mode.throughput_seconds}
    rng = random.Random(seed + 5)
    texts = TextSource(pool, rng, "tp")
    # One client, in process.
    db = dbs.copy(n, "throughput")
    with Memory(sqlite_url(db), settings=engine_settings(), project=ACTIVE_PROJECT) as memory:
        count = 0
        started = time.perf_counter()
        while time.perf_counter() - started < mode.throughput_seconds:
            memory.record_state(raw_log=texts.next()[0], session_id="tp-engine")
            count += 1
        elapsed = time.perf_counter() - started
    out["engine_one_process"] = {"records": count, "records_per_s": count / elapsed}
    # One MCP client, through one server.
    async with connect(vlk_params(db, "tp-mcp"), work / "throughput-servers.log") as vlk:
        for _ in range(3):
            await timed_call(vlk, "vlk_record_state", {"raw_log": texts.next()[0], "session_id": "tp-mcp"})
        count = 0
        started = time.perf_counter()
        while time.perf_counter() - started < mode.throughput_seconds:
            await timed_call(vlk, "vlk_record_state", {"raw_log": texts.next()[0], "session_id": "tp-mcp"})
            count += 1
        elapsed = time.perf_counter() - started
    out["mcp_one_client"] = {"records": count, "records_per_s": count / elapsed}
    # N writer processes on one file, one session each.
    texts_file = work / "writer-texts.json"
    texts_file.write_text(json.dumps([p.text for p in pool[:200]]))
    start_at = time.time() + 3.0  # time for every process to import and open the file
    procs = [
        subprocess.Popen(
            [sys.executable, str(ROOT / "bench" / "perf_writer.py"), sqlite_url(db), ACTIVE_PROJECT, f"tp-w{i}",
             str(mode.throughput_seconds), str(start_at), str(texts_file)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for i in range(mode.writers)
    ]
    reports = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=120 + mode.throughput_seconds)
        if proc.returncode != 0:
            raise RuntimeError(f"writer failed: {stderr[-2000:]}")
        reports.append(json.loads(stdout.strip().splitlines()[-1]))
    records = sum(r["records"] for r in reports)
    window = max(r["seconds"] for r in reports)
    out["writers"] = {
        "processes": mode.writers,
        "records": records,
        "errors": sum(r["errors"] for r in reports),
        "records_per_s": records / window,
        "per_process_records_per_s": [round(r["records"] / r["seconds"], 1) for r in reports],
    }
    say(f"  throughput: engine {out['engine_one_process']['records_per_s']:.0f}/s, MCP client "
        f"{out['mcp_one_client']['records_per_s']:.0f}/s, {mode.writers} processes "
        f"{out['writers']['records_per_s']:.0f}/s ({out['writers']['errors']} errors)")
    db.unlink(missing_ok=True)
    return out


# ------------------------------------------------------------------------------------- reporting


def machine() -> dict[str, Any]:
    cpu = "?"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = "?"
    with contextlib.suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    node = None
    if _node():
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            node = subprocess.run([_node(), "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
    import mcp

    try:
        from importlib.metadata import version

        mcp_version = version("mcp")
    except Exception:  # noqa: BLE001
        mcp_version = getattr(mcp, "__version__", "?")
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory": mem,
        "load_average_at_start": os.getloadavg(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "mcp_sdk": mcp_version,
        "node": node,
    }


def fmt(value: float, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def evaluate_targets(results: dict[str, Any], mode: Mode) -> list[dict[str, Any]]:
    targets = []
    engine = results.get("engine", {})

    def add(name: str, measured: str, threshold: str, passed: bool | None, note: str = "") -> None:
        targets.append({"target": name, "measured": measured, "threshold": threshold,
                        "result": "n/a" if passed is None else ("pass" if passed else "FAIL"), "note": note})

    for op, label in (("record_state", "record_state vs raw sqlite3 floor"),
                      ("fetch_context", "fetch_context vs raw queries of the same rows")):
        ratios = {n: engine[n][op]["ratio_median"] for n in engine if op in engine[n]}
        if ratios:
            worst_n = max(ratios, key=lambda k: ratios[k])
            add(label, ", ".join(f"10^{len(n) - 1}: x{fmt(r)}" for n, r in ratios.items()), "<= 3x (median, every size)",
                all(r <= 3 for r in ratios.values()), f"worst at {int(worst_n):,} slots")
    mcp_res = results.get("mcp", {})
    tool_ratios = {k: v["ratio_median"] for k, v in mcp_res.items() if isinstance(v, dict) and "ratio_median" in v}
    if tool_ratios:
        worst = max(tool_ratios, key=lambda k: tool_ratios[k])
        add("MCP round trip of any tool vs SDK no-op", f"worst {worst} x{fmt(tool_ratios[worst])}",
            "<= 1.5x (median)", all(r <= 1.5 for r in tool_ratios.values()),
            ", ".join(f"{k.removeprefix('vlk_')} x{fmt(v)}" for k, v in tool_ratios.items()))
    official = results.get("official", {})
    at = official.get("sizes", {}).get(str(10**4)) if isinstance(official, dict) else None
    if at:
        write = at["write"]["speedup_median"]
        reads = {k: at[k]["speedup_median"] for k in ("search", "read active memory")}
        add("faster than the official memory server at 10^4, writes", f"{fmt(write, 1)}x", ">= 10x",
            write >= 10, "vlk_record_state vs add_observations")
        add("faster than the official memory server at 10^4, reads",
            ", ".join(f"{k} {fmt(v, 1)}x" for k, v in reads.items()), ">= 10x", all(v >= 10 for v in reads.values()),
            "vlk_search_memory vs search_nodes; vlk_fetch_context vs read_graph")
    else:
        add("faster than the official memory server at 10^4", "not measured", ">= 10x", None,
            official.get("skipped", "") if isinstance(official, dict) else "")
    small, large = str(min(mode.sizes)), str(10**6)
    if large in engine and small in engine:
        a = engine[small]["fetch_context"]["engine"]["median_ms"]
        b = engine[large]["fetch_context"]["engine"]["median_ms"]
        add("fetch_context at 10^6 slots vs at 10^3", f"{fmt(b)} ms vs {fmt(a)} ms: x{fmt(ratio(b, a))}",
            "<= 1.5x", ratio(b, a) <= 1.5)
    else:
        add("fetch_context at 10^6 slots vs at 10^3", "not measured", "<= 1.5x", None, "10^6 runs in the full mode")
    growth = results.get("growth", {})
    if large in growth:
        rss = growth[large]["peak_rss_mb"]
        add("server resident memory at 10^6 slots", f"{fmt(rss, 1)} MB peak", "< 150 MB", rss < 150)
    else:
        add("server resident memory at 10^6 slots", "not measured", "< 150 MB", None, "10^6 runs in the full mode")
    return targets


def markdown(results: dict[str, Any]) -> str:
    m = results["machine"]
    lines = [
        f"# vlk-memact performance ({results['mode']} run)",
        "",
        f"Command: `{results['command']}`; {results['started']}, {results['seconds']:.0f} s in all.",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory']}; {m['os']}; Python {m['python']}, SQLite "
        f"{m['sqlite']}, mcp {m['mcp_sdk']}, Node {m['node'] or 'absent'}. Load average at start: "
        f"{', '.join(f'{x:.2f}' for x in m['load_average_at_start'])} (other work on the machine shows up as noise).",
        f"Texts: {results['texts']}. Times are milliseconds, median and p99 (nearest rank) of interleaved samples.",
        "",
        "## Targets",
        "",
        "| target | measured | threshold | result | note |",
        "| --- | --- | --- | --- | --- |",
    ]
    lines += [f"| {t['target']} | {t['measured']} | {t['threshold']} | {t['result']} | {t['note']} |"
              for t in results["targets"]]
    lines += ["", "## 1. Engine in process vs the raw sqlite3 floor", "",
              "Floor: a raw `sqlite3` connection with the engine's PRAGMAs (WAL, synchronous=FULL, busy_timeout) "
              "writing or reading the same rows (record: BEGIN IMMEDIATE, INSERT content, INSERT slot with the "
              "MAX(sequence)+1 subquery, COMMIT; fetch_context: the PRESENT slots of the session joined to their "
              "content and the visible FUTURE constraints (each scope on its own index), in one transaction; "
              "search: the same filter with "
              "built-in lower(); the loop row reads the rows about to be intercepted).", "",
              "| slots | operation | engine median | engine p99 | floor median | floor p99 | ratio (median) | n |",
              "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for n, ops in results.get("engine", {}).items():
        for op, r in ops.items():
            lines.append(f"| {int(n):,} | {op} | {fmt(r['engine']['median_ms'], 3)} | {fmt(r['engine']['p99_ms'], 3)} "
                         f"| {fmt(r['floor']['median_ms'], 3)} | {fmt(r['floor']['p99_ms'], 3)} | "
                         f"x{fmt(r['ratio_median'])} | {r['engine']['n']} |")
    built = results.get("databases", {})
    if built:
        lines += ["", "Databases: " + "; ".join(
            f"{int(n):,}: {b['slots']:,} slots in {b['sessions']:,} sessions / {b['projects']} projects, active "
            f"session {b['active_present']} PRESENT + {b['active_past']} PAST, {b['active_visible_constraints']} "
            f"visible constraints (built in {b['build_seconds']:.0f} s)" for n, b in built.items()) + "."]
    mcp_res = results.get("mcp", {})
    lines += ["", "## 2. MCP over stdio vs the SDK's no-op tool", ""]
    if "skipped" in mcp_res:
        lines.append(f"Skipped: {mcp_res['skipped']}")
    elif mcp_res:
        lines += [f"Database: {mcp_res.get('database_slots', 0):,} slots; protocol {mcp_res.get('protocol_version')}; "
                  "one `mcp.Client` session per server; the no-op tool is a sync `def` on `MCPServer`, like the vlk "
                  "tools.", "",
                  "| tool | median | p99 | no-op median | no-op p99 | ratio (median) | minus no-op (ms) | n |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for tool, r in mcp_res.items():
            if isinstance(r, dict) and "ratio_median" in r:
                lines.append(f"| {tool} | {fmt(r['tool']['median_ms'], 3)} | {fmt(r['tool']['p99_ms'], 3)} | "
                             f"{fmt(r['noop']['median_ms'], 3)} | {fmt(r['noop']['p99_ms'], 3)} | "
                             f"x{fmt(r['ratio_median'])} | {fmt(r['tool']['median_ms'] - r['noop']['median_ms'], 3)}"
                             f" | {r['tool']['n']} |")
    official = results.get("official", {})
    lines += ["", "## 3. Against the official memory server", ""]
    if "skipped" in official:
        lines.append(f"Skipped: {official['skipped']}.")
    elif official:
        lines += [f"`{official['package']}` (Node), started with `MEMORY_FILE_PATH` on a temporary file preloaded "
                  "with the same logs (one entity per session, one observation per log), driven by the same client. "
                  "Speed-up = official median / vlk median.", "",
                  "| items | work | vlk tool | vlk median | official tool | official median | speed-up | "
                  "vlk RSS MB | official RSS MB |",
                  "| ---: | --- | --- | ---: | --- | ---: | ---: | ---: | ---: |"]
        for n, size in official["sizes"].items():
            for label in ("write", "search", "read active memory", "read one session"):
                if label not in size:
                    continue
                r = size[label]
                bound = ">" if r.get("timed_out") else ""
                lines.append(f"| {int(n):,} | {label} | {r['vlk_tool']} | {fmt(r['vlk']['median_ms'])} | "
                             f"{r['official_tool']} | {bound}{fmt(r['official']['median_ms'])} | "
                             f"{bound}{fmt(r['speedup_median'], 1)}x | {fmt(size['vlk_server']['peak_rss_mb'], 0)} | "
                             f"{fmt(size['official_server']['peak_rss_mb'], 0)} |")
            if size.get("note"):
                lines.append(f"| {int(n):,} | note | {size['note']} | | | | | | |")
    growth = results.get("growth", {})
    if growth:
        lines += ["", "## 4. Growth", "",
                  "| slots | file MB | bytes / slot | engine fetch_context median | MCP fetch_context median | "
                  "server RSS MB | server peak RSS MB |",
                  "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for n, g in growth.items():
            eng = results.get("engine", {}).get(n, {}).get("fetch_context", {}).get("engine", {}).get("median_ms")
            lines.append(f"| {g['slots']:,} | {g['file_bytes'] / 1e6:.1f} | {g['bytes_per_slot']:.0f} | "
                         f"{fmt(eng, 3)} | {fmt(g['mcp_fetch_context']['median_ms'], 3)} | {fmt(g['rss_mb'], 1)} | "
                         f"{fmt(g['peak_rss_mb'], 1)} |")
    built = results.get("databases", {})
    if built:
        largest = max(built, key=int)
        storage = built[largest].get("storage") or {}
        if storage:
            lines += ["", f"Bytes per slot by table and index at {int(largest):,} slots (dbstat; the logs themselves "
                      f"are {storage.get('(raw_log bytes)', 0):.0f} bytes per slot on average):", "",
                      "| table or index | bytes / slot |", "| --- | ---: |"]
            lines += [f"| {name} | {size:.1f} |" for name, size in storage.items() if name != "(raw_log bytes)"]
    tp = results.get("throughput", {})
    if tp:
        w = tp["writers"]
        lines += ["", "## 5. Throughput (records per second, synchronous=FULL)", "",
                  f"On a file of {tp['database_slots']:,} slots, {tp['seconds']:.0f} s each.", "",
                  "| writer | records / s |", "| --- | ---: |",
                  f"| one process, library API | {tp['engine_one_process']['records_per_s']:.0f} |",
                  f"| one MCP client through one server | {tp['mcp_one_client']['records_per_s']:.0f} |",
                  f"| {w['processes']} processes, library API, one session each | {w['records_per_s']:.0f} "
                  f"({w['errors']} errors; per process {', '.join(str(x) for x in w['per_process_records_per_s'])}) |"]
    if results.get("notes"):
        lines += ["", "## Notes", ""] + [f"- {note}" for note in results["notes"]]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10^3 and 10^4 only, few iterations (CI smoke run)")
    parser.add_argument("--sizes", help="comma-separated database sizes, overriding the mode's (e.g. 1000,100000)")
    parser.add_argument("--sections", default="engine,mcp,official,growth,throughput",
                        help="comma-separated subset of: engine,mcp,official,growth,throughput,profile")
    parser.add_argument("--cache", type=Path, help="keep the built databases in this folder and reuse them")
    parser.add_argument("--out", type=Path, help="results folder (default bench/results)")
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target fails")
    args = parser.parse_args(argv)

    mode = QUICK if args.quick else FULL
    if args.sizes:
        sizes = tuple(int(float(s)) for s in args.sizes.split(","))
        mode = Mode(**{**mode.__dict__, "sizes": sizes,
                       "official_sizes": tuple(s for s in mode.official_sizes if s in sizes)})
    sections = set(args.sections.split(","))
    out_dir = args.out or RESULTS
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = "perf-quick" if args.quick else "perf"
    started_wall = datetime.now(timezone.utc)
    started = time.perf_counter()
    import anyio

    observations, source = load_observations()
    pool_rng = random.Random(args.seed)
    pool = make_pool(observations, mode.pool, pool_rng)
    pool_tag = f"{source}|{len(observations)}|{mode.pool}|{args.seed}"
    results: dict[str, Any] = {
        "mode": mode.name,
        "command": "python bench/perf.py" + (" --quick" if args.quick else "") + (
            f" --sizes {args.sizes}" if args.sizes else ""),
        "started": started_wall.strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "texts": f"{len(observations):,} tool outputs from {source}; pool of {len(pool):,} texts of 200-2000 "
                 "characters (log-uniform)",
        "notes": [],
    }
    work = Path(tempfile.mkdtemp(prefix="vlk-perf-"))
    dbs = Databases(work, args.cache, pool, args.seed, pool_tag)
    try:
        for n in mode.sizes:
            dbs.pristine(n)
        results["databases"] = {str(n): dbs.meta[n] for n in mode.sizes}

        if "engine" in sections:
            say("section 1: engine vs raw sqlite3 floor")
            results["engine"] = {}
            for n in mode.sizes:
                db = dbs.copy(n, "engine")
                results["engine"][str(n)] = bench_engine(db, n, pool, mode, args.seed)
                db.unlink(missing_ok=True)
        if "profile" in sections:
            say("profile: cProfile of the engine at the largest size")
            db = dbs.copy(max(mode.sizes), "profile")
            results["profile"] = {"slots": max(mode.sizes),
                                  **profile_engine(db, pool, 50 if args.quick else 300, args.seed)}
            (out_dir / f"{stem}-profile.txt").write_text(
                "\n\n".join(f"==== {k} ====\n{v}" for k, v in results["profile"].items() if k != "slots"))
            db.unlink(missing_ok=True)
        if "mcp" in sections:
            say("section 2: MCP vs the SDK's no-op tool")
            n = 10**4 if 10**4 in mode.sizes else min(mode.sizes)
            db = dbs.copy(n, "mcp")
            results["mcp"] = {"database_slots": dbs.meta[n]["slots"], **anyio.run(bench_mcp, db, pool, mode, work,
                                                                                 args.seed)}
            db.unlink(missing_ok=True)
        if "official" in sections:
            say("section 3: the official memory server")
            results["official"] = anyio.run(bench_official, dbs, mode, work, pool, args.seed)
            if "skipped" in results["official"]:
                results["notes"].append(f"Section 3 skipped: {results['official']['skipped']}.")
        if "growth" in sections:
            say("section 4: growth")
            results["growth"] = anyio.run(bench_growth, dbs, mode, work, pool, args.seed)
        if "throughput" in sections:
            say("section 5: throughput")
            results["throughput"] = anyio.run(bench_throughput, dbs, mode, work, pool, args.seed)
    except BaseException:
        # Keep what the servers wrote on stderr: an "Error executing tool" result only says which tool failed.
        logs = out_dir / f"{stem}-server-logs"
        logs.mkdir(exist_ok=True)
        for log in work.glob("*.log"):
            shutil.copyfile(log, logs / log.name)
        say(f"failed; the servers' stderr is in {logs}")
        raise
    finally:
        shutil.rmtree(work, ignore_errors=True)

    results["seconds"] = time.perf_counter() - started
    results["targets"] = evaluate_targets(results, mode)
    if args.quick:
        results["notes"].append("Quick mode: few samples, no timing assertions; figures are indicative only.")
    (out_dir / f"{stem}.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    text = markdown(results)
    (out_dir / f"{stem}.md").write_text(text)
    print(text)
    failed = [t for t in results["targets"] if t["result"] == "FAIL"]
    return 1 if args.strict and failed else 0


if __name__ == "__main__":
    sys.exit(main())
