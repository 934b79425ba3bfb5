"""A realistic memory for the viewer tests and the README screenshot, with hostile text in it.

Two projects; a session that loops on one error (intercepted), learns lessons (two of them
conflict, one later revoked), records tool output that tries to inject markup and script, and has
failures a host hook captured and then saw resolved (an edit, then the same command passing): one still
live when it passed (retired as RESOLVED), one the agent had already turned into a lesson.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC

from vlk_memact import Memory

SHOP = "/home/dev/shop-api"
INFRA = "/home/dev/infra"
MAIN = "fix-checkout-total"
HOSTILE_SESSION = 'evil" onmouseover="window.__pwned=3'
SCRIPT = "<script>window.__pwned=1</script>"
IMG = '<img src=x onerror="window.__pwned=2">'
JS_LINK = "javascript:window.__pwned=4"
QUOTES = '"><b id="injected">bold</b><a href="javascript:window.__pwned=5">x</a>'

LOOP = (
    "FAILED tests/test_checkout.py::test_total_with_coupon - TypeError: unsupported operand type(s) for +: "
    "'Decimal' and 'float'\n  File \"/home/dev/shop-api/shop/cart.py\", line {line}, in total\n"
    "    return sum(item.price for item in self.items) + self.shipping"
)

PG_ERROR = ('psycopg.OperationalError: connection to server at "127.0.0.1", port {port} failed: '
            'FATAL: database "shop_test" does not exist')


@dataclass(frozen=True)
class Seeded:
    anchor_id: int
    lesson_id: int
    conflict_ids: tuple[int, int]
    hostile_id: int
    revoked_id: int
    resolved_id: int
    fixed_lesson_id: int  # a lesson learned from a captured failure that was resolved later


def seed(memory: Memory) -> Seeded:
    """Fill memory (its tenant) with the scenario; `memory` is any project, both are written."""
    shop = memory.for_project(SHOP)
    infra = memory.for_project(INFRA)
    shop.record_state(raw_log="$ pytest -q tests/test_checkout.py\n12 passed, 1 failed in 2.31s",
                      file_context="tests/test_checkout.py", session_id=MAIN)
    for line in (41, 42, 44):
        shop.record_state(raw_log=LOOP.format(line=line), file_context="shop/cart.py",
                          tool_payload={"command": "pytest -q tests/test_checkout.py"}, session_id=MAIN)
    anchor = shop.fetch_context(session_id=MAIN).loops[0].anchor_id
    hostile = shop.record_state(
        raw_log=f"npm WARN deprecated {SCRIPT} {IMG} see {JS_LINK} {QUOTES}",
        file_context=JS_LINK, session_id=MAIN).timeline_id
    pg = shop.record_state(raw_log=PG_ERROR.format(port=5432), session_id=MAIN).timeline_id
    lesson = shop.time_travel(
        target_timeline_ids=[pg], learning="Create the test database with `make db-test` before running pytest.",
        raw_log_excerpt='FATAL: database "shop_test" does not exist', session_id=MAIN).constraint_id
    a = shop.record_state(raw_log="HTTP 503 from payments sandbox (attempt 1)", session_id=MAIN).timeline_id
    first = shop.time_travel(target_timeline_ids=[a], learning="Always retry the payments sandbox call twice.",
                             raw_log_excerpt="HTTP 503 from payments sandbox", session_id=MAIN,
                             scope="session").constraint_id
    b = shop.record_state(raw_log="HTTP 409 duplicate charge after a retry", session_id=MAIN).timeline_id
    second = shop.time_travel(target_timeline_ids=[b], learning="Never retry a charge call: it is not idempotent.",
                              raw_log_excerpt="HTTP 409 duplicate charge", session_id=MAIN,
                              scope="session").constraint_id
    c = shop.record_state(raw_log="Deploy freeze starts Friday 18:00 UTC", session_id=MAIN).timeline_id
    freeze = shop.time_travel(target_timeline_ids=[c], learning="Ship before the Friday 18:00 UTC freeze.",
                              raw_log_excerpt="Deploy freeze starts Friday", constraint_type="PROSPECTIVE",
                              session_id=MAIN).constraint_id
    shop.revoke_future(timeline_id=freeze, session_id=MAIN)
    shop.record_state(raw_log="mypy: shop/cart.py:44: error: Unsupported operand types for + (\"Decimal\" and "
                      "\"float\")  [operator]", file_context="shop/cart.py", session_id=MAIN)
    resolved = resolve_a_failure(shop, MAIN)
    fixed_lesson = learn_then_resolve(shop, MAIN)
    shop.record_state(raw_log="$ pytest -q\n48 passed in 5.02s", session_id="add-payment-webhook")
    shop.record_state(raw_log=f"{SCRIPT} in a session named with quotes", session_id=HOSTILE_SESSION)
    infra.record_state(raw_log="Error: Invalid provider configuration: region is required", session_id="plan-vpc")
    return Seeded(anchor, lesson, (first, second), hostile, freeze, resolved, fixed_lesson)


REFUND_FAILURE = ("FAILED tests/test_refunds.py::test_partial_refund_rounds_half_up - AssertionError: "
                  "assert Decimal('9.99') == Decimal('10.00')")


def resolve_a_failure(memory: Memory, session: str) -> int:
    """What a host hook records (Claude Code or Gemini CLI alike): a failing test command, an edit, the same
    command passing, which retires the failure as RESOLVED. The failure's slot id."""
    from vlk_memact.hosts.shared.capture import ToolCall, on_failure, on_success

    test = {"command": "pytest -q tests/test_refunds.py", "description": "Run the refund tests"}
    cwd = memory.project
    on_failure(memory, ToolCall(session, cwd, "Bash", test, "toolu_01refundsfail"), REFUND_FAILURE)
    on_success(memory, ToolCall(session, cwd, "Edit", {
        "file_path": "shop/refunds.py", "old_string": "amount.quantize(CENTS)",
        "new_string": "amount.quantize(CENTS, rounding=ROUND_HALF_UP)"}, "toolu_02refundsedit"))
    on_success(memory, ToolCall(session, cwd, "Bash", test, "toolu_03refundspass"))
    history = memory.get_history(session_id=session, limit=500).slots
    return next(s.id for s in history if s.raw_log == REFUND_FAILURE)


MIGRATION_FAILURE = ("alembic.util.exc.CommandError: Multiple head revisions are present for given argument "
                     "'head'; please specify a specific target revision, '<branchname>@head' to narrow to a "
                     "specific head, or 'heads' for all heads")


def learn_then_resolve(memory: Memory, session: str) -> int:
    """A captured failure the agent turns into a lesson (vlk_time_travel), then fixes: the same command
    passes once the two heads are merged. The lesson's id."""
    from vlk_memact.hosts.shared.capture import ToolCall, on_failure, on_success

    upgrade = {"command": "alembic upgrade head"}
    cwd = memory.project
    on_failure(memory, ToolCall(session, cwd, "Bash", upgrade, "toolu_04alembicfail"), MIGRATION_FAILURE)
    failed = next(s.id for s in memory.get_history(session_id=session, limit=500).slots if s.raw_log == MIGRATION_FAILURE)
    lesson = memory.time_travel(
        target_timeline_ids=[failed], learning="After a pull that adds migrations, run `alembic merge heads` "
        "before `alembic upgrade head`.", raw_log_excerpt="Multiple head revisions are present",
        session_id=session).constraint_id
    on_success(memory, ToolCall(session, cwd, "Bash", {"command": "alembic merge heads -m 'merge refunds'"},
                                "toolu_05alembicmerge"))
    on_success(memory, ToolCall(session, cwd, "Bash", upgrade, "toolu_06alembicpass"))
    return lesson


HISTORY_ERRORS = (
    "error[E0382]: borrow of moved value: `config` --> src/main.rs:{n}:9",
    "ModuleNotFoundError: No module named 'shop.payments.v{n}'",
    "Error: Cannot find module './routes/orders{n}' imported from /srv/app.js",
    "go: build failed: undefined: parseInvoice{n} (pkg/billing/invoice.go:{n}:2)",
    "AssertionError: expected 200, got 500 (tests/test_api.py:{n})",
)


HISTORY_PROJECTS = ("/home/dev/web-frontend", "/home/dev/billing-go", INFRA, "/home/dev/ml-pipeline")


def seed_history(memory: Memory, sessions: int = 10) -> None:
    """Earlier sessions of other projects, each with a loop of 3 to 5 repeats intercepted (at most three
    per project, so that none of them consolidates)."""
    for number in range(sessions):
        project = memory.for_project(HISTORY_PROJECTS[number % len(HISTORY_PROJECTS)])
        name = f"task-{number + 1:02d}"
        pattern = HISTORY_ERRORS[number % len(HISTORY_ERRORS)]
        for repeat in range(3 + number % 3):
            project.record_state(raw_log=pattern.format(n=10 + repeat * 7), session_id=name)
        project.fetch_context(session_id=name)
        project.record_state(raw_log="$ make test\nall tests passed", session_id=name)


def spread_over_days(db_path: str, days: float = 3.0) -> None:
    """Back-date an SQLite file's rows evenly over the last `days` days, in id order, and the hooks' calls and
    fixes with them (for the pictures)."""
    import sqlite3
    from datetime import datetime, timedelta

    now = datetime.now(UTC).replace(tzinfo=None)
    with sqlite3.connect(db_path) as conn:
        ids = [row[0] for row in conn.execute("SELECT id FROM agent_timeline ORDER BY id")]
        for index, slot in enumerate(ids):
            moment = now - timedelta(days=days) * (1 - index / max(len(ids) - 1, 1))
            conn.execute("UPDATE agent_timeline SET created_at = ? WHERE id = ?",
                         (moment.strftime("%Y-%m-%d %H:%M:%S"), slot))
        # The hooks' calls follow: a capture at its slot's time; any other call 40 seconds after the newest slot
        # of its session written before it (those older than the next capture) or the call before, if later.
        slots = {i: (t, p, s, datetime.strptime(c, "%Y-%m-%d %H:%M:%S")) for i, t, p, s, c in conn.execute(
            "SELECT id, tenant, project, session_id, created_at FROM agent_timeline")}
        calls = conn.execute("SELECT id, tenant, project, session_id, slot_id FROM host_calls ORDER BY id").fetchall()
        at = None
        for index, (call, tenant, project, session, slot_id) in enumerate(calls):
            if slot_id is not None:
                at = slots[slot_id][3]
            else:
                bound = min((c[4] for c in calls[index + 1:] if c[4] is not None), default=None)
                base = max((when for i, (t, p, s, when) in slots.items() if (t, p, s) == (tenant, project, session)
                            and (bound is None or i < bound)), default=now)
                at = max(base, at or base) + timedelta(seconds=40)
            conn.execute("UPDATE host_calls SET created_at = ? WHERE id = ?",
                         (at.strftime("%Y-%m-%d %H:%M:%S.000"), call))
        # A fix is recorded when its call passes: at the time of the newest success of that call in its session.
        conn.execute("""UPDATE fixes SET created_at = COALESCE((SELECT MAX(c.created_at) FROM host_calls c
                            WHERE c.tenant = fixes.tenant AND c.project = fixes.project
                            AND c.session_id = fixes.session_id AND c.outcome = 'success' AND c.summary = fixes.passed),
                        created_at)""")

