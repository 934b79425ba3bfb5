"""Every SQL statement the SQLite store issues stays on an index.

A realistic workload runs through `Memory` (records in several sessions, loops intercepted and
re-intercepted, lessons of every scope, consolidation, conflicts, recall, revoke, listings, stale
fingerprints, opportunistic retention and full maintenance) while the store's connection traces
every statement with its bound values inlined. Each distinct statement is then explained
(EXPLAIN QUERY PLAN) on a fresh file with the same schema and no statistics, so the planner
assumes big tables, as it would for a user's file that never ran ANALYZE.

Rules:
- no statement outside maintenance reads a whole table: no `SCAN` of agent_timeline,
  memory_contents, constraint_keys or constraint_links (with or without an index: a full index
  scan is still linear in the file). Scans of json_each (the id lists we pass), constant rows
  and subquery results are fine;
- a SEARCH of agent_timeline must narrow by more than (tenant, temporal_state): those two
  columns alone select every FUTURE (or PAST) slot of every session in the file;
- the full-database passes of `vlk-memact maintenance` may scan; they are listed in
  MAINTENANCE_SCANS with the reason.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from vlk_memact import Memory, Settings

BIG_TABLES = ("agent_timeline", "memory_contents", "constraint_keys", "constraint_links", "host_calls")
EXPLAINED = ("SELECT", "INSERT", "UPDATE", "DELETE", "WITH", "REPLACE")

# Maintenance (`Memory.maintenance`, `vlk-memact maintenance`) visits the whole file by design.
MAINTENANCE_SCANS = {
    r"ROW_NUMBER\(\) OVER": "retention over every session ranks every PAST slot once; it runs from cron, "
    "not on a tool call (the per-session prune of record_state is checked like any other statement)",
    r"^DELETE FROM memory_contents WHERE NOT EXISTS": "the sweep of content no slot references checks every "
    "content row once (each probe of agent_timeline is on idx_timeline_content)",
    r"^DELETE FROM host_calls WHERE created_at <": "the age sweep of hook call records reads each row once; per "
    "session (on a record) the same delete is narrowed by the session's index",
}

# Statements allowed to narrow agent_timeline by (tenant, temporal_state) only: pattern on the flattened SQL ->
# why. None.
KNOWN_WEAK: dict[str, str] = {}

ERROR_A = (
    "Traceback (most recent call last):\n"
    '  File "/tmp/run_{i}/app/handlers.py", line {line}, in handle\n'
    "    value = registry[key]\n"
    "KeyError: 'session-{i}'"
)
ERROR_B = "error[E0277]: the trait bound `Foo: Bar` is not satisfied\n --> src/lib.rs:{line}:5"
ERROR_C = "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree (attempt {i})"


def _alias_map(sql: str) -> dict[str, str]:
    """Alias -> table for the big tables ("FROM agent_timeline t" plans as "SCAN t")."""
    aliases = {name: name for name in BIG_TABLES}
    for table, alias in re.findall(r"\b(agent_timeline|memory_contents|constraint_keys|constraint_links)\s+(?:AS\s+)?"
                                   r"([A-Za-z_]\w*)", sql, re.IGNORECASE):
        if alias.upper() not in {"WHERE", "ON", "SET", "LEFT", "JOIN", "USING", "ORDER", "GROUP", "VALUES", "WHEN",
                                 "INNER", "AND", "OR", "LIMIT", "DEFAULT", "SELECT"}:
            aliases[alias] = table
    return aliases


def _hook_workload(memory: Memory) -> None:
    """The Claude Code hooks (vlk_memact.hosts): capture, loop, guard, warning, resolution, carry-over."""
    from hook_events import bash, failure, pre, prompt, session_start, success

    from vlk_memact.hosts.claude_code.adapter import handle

    for n in range(4):
        handle(pre("Bash", bash("npm test"), session="h1", tool_use_id=f"t{n}"), memory)
        handle(failure("Bash", bash("npm test"), ERROR_C.format(i=7), session="h1", tool_use_id=f"t{n}"), memory)
    memory.record_state(raw_log="npm ERR! ERESOLVE unable to resolve dependency tree", session_id="h1")
    handle(success("Edit", {"file_path": "/a", "old_string": "x", "new_string": "y"}, session="h1"), memory)
    handle(pre("Bash", bash("npm test"), session="h1"), memory)
    handle(success("Bash", bash("npm test"), session="h1"), memory)
    handle(session_start("compact", session="h1"), memory)
    handle(prompt(session="h1"), memory)
    handle(session_start("startup", session="h2"), memory)
    # The same error in a later session: the note on where it failed before (issue 34) reads the project's failures.
    handle(failure("Bash", bash("npm run build"), ERROR_C.format(i=7), session="h2", tool_use_id="t9"), memory)


def _workload(path: Path) -> tuple[list[str], list[str]]:
    """(statements of tool calls, statements of maintenance), distinct, in first-seen order."""
    settings = Settings(log_level="WARNING", prune_every=2, retention_past_per_session=2, consolidate_above=3)
    calls: dict[str, None] = {}
    maintenance: dict[str, None] = {}
    sink = calls
    with Memory(f"sqlite:///{path}", settings=settings, project="proj-a") as memory:
        memory.store.set_trace_callback(lambda sql: sink.setdefault(sql.strip(), None))  # type: ignore[attr-defined]
        other = Memory(store=memory.store, settings=settings, project="proj-b")
        # Records, a loop intercepted twice (the second anchor replaces the first), duplicates.
        for round_ in range(2):
            for i in range(3):
                memory.record_state(raw_log=ERROR_A.format(i=i + 10 * round_, line=40 + i), session_id="s1")
            memory.record_state(raw_log=ERROR_B.format(line=round_), file_context="src/lib.rs",
                                tool_payload={"cmd": "cargo build"}, session_id="s1")
            memory.fetch_context(session_id="s1")
        memory.record_state(raw_log="same text", session_id="s1")
        memory.record_state(raw_log="same text", session_id="s1")  # content dedup path
        # Lessons of every scope and type, a conflict, consolidation above 3 constraints.
        ids = [memory.record_state(raw_log=ERROR_C.format(i=i), session_id="s2").timeline_id for i in range(8)]
        memory.time_travel(target_timeline_ids=ids[:2], learning="Always retry the install with --legacy-peer-deps.",
                           raw_log_excerpt="npm ERR! code ERESOLVE", session_id="s2")
        memory.time_travel(target_timeline_ids=ids[2:3], learning="Never retry npm install; fix the peer range.",
                           raw_log_excerpt="npm ERR! code ERESOLVE", session_id="s2", scope="session")
        memory.time_travel(target_timeline_ids=ids[3:4], learning="Deploy window closes Friday.",
                           raw_log_excerpt="maintenance window", constraint_type="PROSPECTIVE", session_id="s2")
        memory.time_travel(target_timeline_ids=ids[4:5], learning="Use the project's .nvmrc Node version.",
                           raw_log_excerpt="engine node", session_id="s2", scope="global")
        memory.time_travel(target_timeline_ids=ids[5:6], learning="Run npm ci, not npm install, in CI.",
                           raw_log_excerpt="lockfile", session_id="s2", scope="project")
        context = memory.fetch_context(session_id="s2")
        # Recall on record: the same error again, in another session, sees the project's lesson.
        memory.record_state(raw_log=ERROR_C.format(i=99), session_id="s3")
        other.record_state(raw_log=ERROR_C.format(i=98), session_id="s1")  # another project, global lesson
        other.fetch_context(session_id="s1")
        # A slot fingerprinted by an older algorithm is re-fingerprinted by the next fetch.
        sink = {}  # (the test's own statement is not the store's)
        memory.store._conn.execute(  # type: ignore[attr-defined]
            "UPDATE agent_timeline SET fingerprint_version = 0 WHERE session_id = 's3'")
        sink = calls
        memory.fetch_context(session_id="s3")
        # Revoke, listings, summary.
        if context.constraint_ids:
            memory.revoke_future(timeline_id=context.constraint_ids[0], session_id="s2")
        memory.get_history(session_id="s1", limit=500)
        memory.search_memory(query="KeyError", session_id="s1")
        memory.search_memory(query="nothing matches this", session_id="s2")
        memory.summarize_session(session_id="s2")
        # Opportunistic retention: every 2nd record of a session prunes it (2 PAST slots kept).
        for i in range(12):
            memory.record_state(raw_log=ERROR_B.format(line=100 + i), session_id="s4")
            if i % 4 == 3:
                memory.fetch_context(session_id="s4")
        sink = maintenance
        _hook_workload(memory)
        memory.maintenance(vacuum=False)
        memory.store.set_trace_callback(None)  # type: ignore[attr-defined]
    keep = [s for s in calls if s.upper().startswith(EXPLAINED)]
    keep_m = [s for s in maintenance if s.upper().startswith(EXPLAINED) and s not in calls]
    return keep, keep_m


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, list[tuple[str, list[str]]]]]:
    folder = tmp_path_factory.mktemp("plans")
    calls, maintenance = _workload(folder / "workload.db")
    # Explain on a fresh file: same schema and functions (vlk_fold), no sqlite_stat1.
    with Memory(f"sqlite:///{folder / 'fresh.db'}", settings=Settings(log_level="WARNING"), project="p") as fresh:
        conn: sqlite3.Connection = fresh.store._conn  # type: ignore[attr-defined]
        assert conn.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'sqlite_stat1'").fetchone()[0] == 0
        explained = {
            name: [(sql, [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql)]) for sql in statements]
            for name, statements in (("calls", calls), ("maintenance", maintenance))
        }
    yield explained


def _full_scans(sql: str, plan: list[str]) -> list[str]:
    aliases = _alias_map(sql)
    found = []
    for detail in plan:
        m = re.match(r"SCAN (\w+)", detail)
        if m and aliases.get(m.group(1)) in BIG_TABLES:
            found.append(detail)
    return found


def _weak_searches(sql: str, plan: list[str]) -> list[str]:
    aliases = _alias_map(sql)
    found = []
    for detail in plan:
        m = re.match(r"SEARCH (\w+) USING (?:COVERING )?INDEX \w+ \((.*)\)", detail)
        if m and aliases.get(m.group(1)) == "agent_timeline":
            columns = {c.split("=")[0].split(">")[0].split("<")[0].strip() for c in m.group(2).split(" AND ")}
            if columns <= {"tenant", "temporal_state"}:
                found.append(detail)
    return found


def _short(sql: str) -> str:
    flat = re.sub(r"\s+", " ", sql)
    return flat if len(flat) <= 300 else flat[:300] + " ..."


def test_workload_covers_the_store(plans: dict[str, list[tuple[str, list[str]]]]) -> None:
    """The workload reaches every statement family of the store (a refactor that stops tracing fails here)."""
    text = "\n".join(sql for sql, _ in plans["calls"])
    for fragment in (
        "INSERT INTO memory_contents", "SELECT id FROM memory_contents WHERE content_hash",
        "INSERT INTO agent_timeline", "INSERT OR IGNORE INTO constraint_keys", "FROM constraint_keys k WHERE k.constraint_id = t.id",
        "UPDATE agent_timeline SET fire_count", "UPDATE agent_timeline SET temporal_state = 'PAST'",
        "UPDATE agent_timeline SET fingerprint", "INSERT OR IGNORE INTO constraint_links",
        "SELECT source_id FROM constraint_links", "ORDER BY t.sequence_order DESC LIMIT", "vlk_fold",
        "GROUP BY t.temporal_state", "ROW_NUMBER() OVER", "DELETE FROM agent_timeline", "DELETE FROM memory_contents",
        "DELETE FROM constraint_keys", "DELETE FROM constraint_links", "UPDATE agent_timeline SET retired_by = NULL",
    ):
        assert fragment in text, f"the workload never issued a statement with {fragment!r}"
    assert plans["maintenance"], "maintenance issued no statement of its own"


def test_no_full_scan_outside_maintenance(plans: dict[str, list[tuple[str, list[str]]]]) -> None:
    offenders = []
    for sql, plan in plans["calls"]:
        scans = _full_scans(sql, plan)
        if scans:
            offenders.append(f"{_short(sql)}\n    plan: {plan}")
    assert not offenders, "statements issued by tool calls scan a whole table:\n" + "\n".join(offenders)


def test_maintenance_scans_are_the_listed_ones(plans: dict[str, list[tuple[str, list[str]]]]) -> None:
    offenders = []
    for sql, plan in plans["maintenance"]:
        if _full_scans(sql, plan) and not any(re.search(p, sql.strip()) for p in MAINTENANCE_SCANS):
            offenders.append(f"{_short(sql)}\n    plan: {plan}")
    assert not offenders, "maintenance statements scan a table without a listed reason:\n" + "\n".join(offenders)


def _weak(plans: dict[str, list[tuple[str, list[str]]]]) -> list[tuple[str, list[str]]]:
    return [(sql, plan) for sql, plan in plans["calls"] if _weak_searches(sql, plan)]


def test_no_weak_search_of_the_timeline(plans: dict[str, list[tuple[str, list[str]]]]) -> None:
    offenders = [f"{_short(sql)}\n    plan: {plan}" for sql, plan in _weak(plans)]
    assert not offenders, "statements narrow agent_timeline by (tenant, temporal_state) only:\n" + "\n".join(offenders)


def test_weak_searches_are_only_the_known_ones(plans: dict[str, list[tuple[str, list[str]]]]) -> None:
    """No statement beyond KNOWN_WEAK is weak (passes before and after the fixes)."""
    for sql, plan in _weak(plans):
        flat = re.sub(r"\s+", " ", sql).strip()
        assert any(re.search(p, flat) for p in KNOWN_WEAK), f"{_short(sql)}\n    plan: {plan}"


# ---- work that must not grow with what other sessions stored (counted in SQLite VM steps, not time) ----

SHARED_ERROR = 'Traceback (most recent call last):\n  File "/x/app.py", line 3, in handle\nKeyError: \'{i}\''


def _file_with_foreign_constraints(path: Path, count: int) -> str:
    """A file whose other projects hold `count` active constraints learned from the very error recorded below."""
    from vlk_memact.fingerprint import FINGERPRINT_VERSION, fingerprint

    fp = fingerprint(SHARED_ERROR.format(i=0))
    with Memory(f"sqlite:///{path}", settings=Settings(log_level="WARNING"), project="here") as memory:
        memory.record_state(raw_log="warm-up", session_id="s")
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    for i in range(count):
        cid = conn.execute(
            "INSERT INTO agent_timeline (uid, tenant, project, session_id, sequence_order, temporal_state, origin, scope, "
            "learning_summary, constraint_type, evidence, fingerprint, fingerprint_keys, fingerprint_version) VALUES "
            "(?, 'local', ?, ?, 1, 'FUTURE', 'lesson', ?, 'Check the key first.', 'DERIVED', 'KeyError', ?, ?, ?) "
            "RETURNING id",
            (f"u{i}", f"other-{i % 50}", f"s{i}", "project" if i % 2 else "session", fp.key, json.dumps(list(fp.keys)),
             FINGERPRINT_VERSION),
        ).fetchone()[0]
        conn.executemany("INSERT INTO constraint_keys (key, constraint_id) VALUES (?, ?)", [(k, cid) for k in fp.keys])
    conn.execute("COMMIT")
    conn.close()
    return f"sqlite:///{path}"


def _vm_steps(url: str, action: str) -> int:
    """SQLite VM instructions (in units of 100) spent by one engine call on a session of project 'here'."""
    with Memory(url, settings=Settings(log_level="WARNING"), project="here") as memory:
        for i in range(3):
            memory.record_state(raw_log=f"unrelated failure {i}: exit status 2", session_id="s")
        steps = [0]

        def count() -> int:
            steps[0] += 1
            return 0

        conn: sqlite3.Connection = memory.store._conn  # type: ignore[attr-defined]
        conn.set_progress_handler(count, 100)
        if action == "record_state":
            memory.record_state(raw_log=SHARED_ERROR.format(i=7), session_id="s")
        elif action == "fetch_context":
            memory.fetch_context(session_id="s")
        else:
            memory.summarize_session(session_id="s")
        conn.set_progress_handler(None, 0)
    return steps[0]


@pytest.mark.parametrize(
    "action",
    [
        "record_state",
        "fetch_context",
        "summarize_session",
    ],
)
def test_work_does_not_grow_with_other_projects(tmp_path: Path, action: str) -> None:
    small = _vm_steps(_file_with_foreign_constraints(tmp_path / "small.db", 10), action)
    large = _vm_steps(_file_with_foreign_constraints(tmp_path / "large.db", 3000), action)
    assert large <= 2 * small + 20, f"{action}: {small} -> {large} hundred VM steps when other projects hold 300x more"


def test_slots_named_by_id_are_found_by_primary_key(plans: dict[str, list[tuple[str, list[str]]]]) -> None:
    """A read of slots by their ids (slots_by_id, tenant_slots) looks each one up by id: narrowed by its session or
    tenant instead, it would walk every slot of a long session or of the whole tenant (issue 37: a record in a
    600-slot session took 3 ms, most of it here)."""
    by_id = [(sql, plan) for sql, plan in plans["calls"]
             if re.search(r"\bt\.id IN \(SELECT value FROM json_each", sql) and "FROM agent_timeline t" in sql]
    assert by_id, "the workload never read slots by id"
    offenders = [f"{_short(sql)}\n    plan: {plan}" for sql, plan in by_id
                 if not any(re.match(r"SEARCH t USING INTEGER PRIMARY KEY", d) for d in plan)]
    assert not offenders, "slots read by id through another index:\n" + "\n".join(offenders)
