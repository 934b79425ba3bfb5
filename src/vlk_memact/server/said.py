"""What the MCP tools said, kept as interventions (issue 33): the edge for hosts without hooks.

vlk_record_state tells fixes (fix memory), recalls lessons and warns of a repeat; vlk_fetch_context announces a
loop and carries the lessons of earlier sessions (a lesson counts once per session, when first shown). Each is
recorded with the slot it was about, so that `vlk-memact impact` can tell whether the agent then archived it.
"""

from __future__ import annotations

import weakref
from typing import Any

from ..core import interventions as kinds
from ..core.model import ContextResult, RecordResult, SessionKey
from ..hosts.shared.said import error_keys

HOST = "mcp"


def record(memory: Any, result: RecordResult, notice: str) -> None:
    """After vlk_record_state: its fixes told, lessons recalled and repeat warning (notice: the text shown)."""
    if result.already_recorded_by or not notice or not memory.settings.impact:
        return
    lines = notice.split("\n")

    def cost(start: str) -> int:
        return sum(len(line) + 1 for line in lines if line.startswith(start))

    news = []
    data = {"slot": result.timeline_id}
    for fixed in result.fixed_before[:2]:
        news.append(memory.new_intervention(result.session_id, kinds.FIX_TOLD, chars=cost("🔧") // max(
            1, len(result.fixed_before[:2])), detail=fixed, data=data, host=HOST))
    for recall in result.recalled:
        news.append(memory.new_intervention(result.session_id, kinds.RECALL, chars=cost("⚡") // len(result.recalled),
                                            subject=str(recall.constraint_id), detail=recall.lesson, data=data,
                                            host=HOST))
    if result.repeats >= 2:
        news.append(memory.new_intervention(result.session_id, kinds.REPEAT, chars=cost("⚠"), data=data, host=HOST))
    memory.keep_interventions(news)


def context(memory: Any, result: ContextResult) -> None:
    """After vlk_fetch_context: the loops it announced, and the earlier sessions' lessons shown for the first time
    in this session (carried facts, with the error keys a later record is matched against). A model fetches the
    context at every step: lessons this server already found recorded or of the session itself are not read again
    (the fetch's cost stays that of the context, bench/goals.py mcp)."""
    if not memory.settings.impact or not (result.loops or result.constraint_ids):
        return
    key = memory.session_key(result.session_id)
    known = _settled(memory)
    fresh = [i for i in result.constraint_ids if (key, i) not in known]
    news = [memory.new_intervention(key.session, kinds.LOOP, chars=len(result.text) // max(1, len(result.loops)),
                                    subject=str(loop.anchor_id), detail=f"loop anchor [id:{loop.anchor_id}]",
                                    host=HOST) for loop in result.loops]
    if fresh:
        with memory.reading() as tx:
            shown = [c for c in tx.tenant_slots(key.tenant, fresh) if c.session_id != key.session]
            told = {i.subject for i in tx.interventions(key.tenant, key.project, session=key.session)
                    if i.kind == kinds.CARRIED} if shown else set()
            shown = [c for c in shown if c.uid not in told]
            keys = {c.id: error_keys(tx, key.tenant, c) for c in shown}
        for constraint in shown:
            marker = f"[id:{constraint.id}]"
            line = next((line for line in result.text.split("\n") if marker in line), marker)
            news.append(memory.new_intervention(key.session, kinds.CARRIED, chars=len(line) + 1,
                                                subject=constraint.uid, detail=line.strip(),
                                                data={"keys": keys[constraint.id]}, host=HOST))
    memory.keep_interventions(news)
    if len(known) > SETTLED_KEPT:
        known.clear()
    known.update((key, i) for i in fresh)  # carried now, carried before, or the session's own: nothing more to do


SETTLED_KEPT = 100_000  # (session, constraint) pairs remembered per memory
_settled_by_memory: weakref.WeakKeyDictionary[Any, set[tuple[SessionKey, int]]] = weakref.WeakKeyDictionary()


def _settled(memory: Any) -> set[tuple[SessionKey, int]]:
    """The (session, constraint id) pairs this process has recorded as carried or found needing no record."""
    return _settled_by_memory.setdefault(memory, set())
