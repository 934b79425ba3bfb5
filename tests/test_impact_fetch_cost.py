"""vlk_fetch_context records a lesson carried from an earlier session once per session (issue 33), and a model
fetches at every step: after the first fetch of a session, fetching again reads nothing to decide that
(server/said.py keeps what it settled), so the fetch costs what the context costs (bench/goals.py mcp)."""

from __future__ import annotations

from pathlib import Path

from vlk_memact import Memory, Settings
from vlk_memact.core import interventions as kinds
from vlk_memact.server import said

ERROR = "Traceback (most recent call last):\n  File \"app.py\", line 3\nKeyError: 'token'"


def test_a_carried_lesson_is_recorded_once_and_not_looked_up_again(tmp_path: Path) -> None:
    with Memory(settings=Settings.from_env({"DATABASE_URL": f"sqlite:///{tmp_path / 'vlk.db'}"}), project="p") as m:
        for _ in range(3):  # a loop in session A: its anchor is a project lesson
            m.record_state(raw_log=ERROR, session_id="A")
        m.fetch_context(session_id="A")
        statements: list[str] = []
        first = m.fetch_context(session_id="B")
        assert first.constraint_ids, "session B should be shown A's lesson"
        said.context(m, first)
        with m.reading() as tx:
            carried = [i for i in tx.interventions("local", "p", session="B") if i.kind == kinds.CARRIED]
        assert len(carried) == 1
        reads = _traced(m, statements)
        said.context(m, m.fetch_context(session_id="B"))  # the same lesson shown again
        reads()
        assert not [s for s in statements if "interventions" in s or "json_each" in s], statements
        with m.reading() as tx:
            assert len([i for i in tx.interventions("local", "p", session="B") if i.kind == kinds.CARRIED]) == 1


def _traced(memory: Memory, into: list[str]):  # noqa: ANN202 - a stop function
    """Trace the statements of the memory's store (both connections) into `into` until the returned stop()."""
    store = memory.store
    store.set_trace_callback(into.append)
    return lambda: store.set_trace_callback(None)
