"""What a hook said, kept as an intervention at the point its text is emitted (issue 33); host-neutral.

capture.py and carryover.py call one function here where a text leaves for the model: the guard's denial
or warning, a fix told (or withheld by the VLK_HOLDOUT experiment), a loop, a recalled lesson, a repeat,
the facts a session starts with. Each records what the model saw and what it named, so that `vlk-memact
impact` can later compute what followed from the session's recorded calls.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...core import interventions as kinds

if TYPE_CHECKING:
    from ...core.model import Fix, SessionKey, Slot

ToolCall = Any  # capture.ToolCall (capture imports this module: named here by what is read of it)

_FACT_ID = re.compile(r"^- \[id:(\d+)\]")
MAX_FACTS = 40  # facts of one session start recorded one by one (a start carries a dozen or so)


def _call(call: ToolCall) -> dict[str, Any]:
    return {"tool_use_id": call.tool_use_id, "call_key": call.key, "tool": call.tool_name, "target": call.target,
            "host": call.host}


def guard(memory: Any, call: ToolCall, action: str, text: str | None, anchor_id: int | None) -> None:
    """The guard denied this call, or let it through with a warning (text: the reason or the warning)."""
    kind = kinds.DENY if action == "deny" else kinds.WARN
    memory.record_intervention(call.session_id, kind, text, subject=None if anchor_id is None else str(anchor_id),
                               detail=call.described, **_call(call))


def fix_data(fix: Fix) -> dict[str, Any]:
    """What the outcome of a told fix is computed from: the fix's session, the failures it resolved, its steps."""
    return {"fix": fix.uid, "fix_session": fix.session_id, "fix_project": fix.project,
            "slot_uids": list(fix.slot_uids), "passed": fix.passed, "failed": fix.failed,
            "steps": [[s.call_key, s.summary] for s in fix.steps]}


def fixes(memory: Any, call: ToolCall, key: SessionKey, shown: Sequence[Fix], text: str | None) -> str | None:
    """Fixes about to be told after this call's failure: recorded as told (one per fix, with the characters of
    its line), or, under VLK_HOLDOUT, withheld (recorded, and "" returned: nothing is said, and the caller knows
    a fix was there, so that it says nothing in its stead)."""
    if not shown or not text:
        return text
    withheld = memory.withhold()
    from ...engine.fix_memory import fix_line

    said = text.split("\n")
    kind = kinds.FIX_WITHHELD if withheld else kinds.FIX_TOLD
    news = []
    for i, fix in enumerate(shown):
        cost = 0 if withheld or i >= len(said) else len(said[i]) + (1 if i else 0)
        news.append(memory.new_intervention(key.session, kind, chars=cost, subject=fix.uid, detail=fix_line(fix),
                                            data=fix_data(fix), **_call(call)))
    memory.keep_interventions(news)
    return "" if withheld else text


def announced(memory: Any, call: ToolCall, kind: str, text: str | None, subject: int | None = None) -> str | None:
    """A loop, a recalled lesson or a repeat said after this call's failure; returns the text."""
    if text:
        memory.record_intervention(call.session_id, kind, text, subject=None if subject is None else str(subject),
                                   detail=call.described, **_call(call))
    return text


def error_keys(tx: Any, tenant: str, constraint: Slot) -> list[str]:
    """The keys of the error a carried constraint is about: its own, else those of the slots it was learned or
    merged from (a loop anchor, a lesson, a consolidation)."""
    keys = list(constraint.error_keys)
    if not keys:
        sources = tx.tenant_slots(tenant, tx.sources(constraint.id, "archived") + tx.sources(constraint.id, "merged"))
        keys = list(dict.fromkeys(k for source in sources for k in source.error_keys))
    return keys[:16]


def carried(memory: Any, key: SessionKey, text: str | None, host: str | None) -> str | None:
    """The facts a session starts with, one intervention per fact (its line's characters; the heading's go to
    the first), with the error keys a later failure of the session is matched against. Returns the text."""
    if not text or not memory.settings.impact:
        return text
    lines = text.split("\n")
    facts = [(line, int(m.group(1))) for line in lines if (m := _FACT_ID.match(line))][:MAX_FACTS]
    if not facts:
        memory.record_intervention(key.session, kinds.CARRIED, text, host=host)
        return text
    with memory.reading() as tx:
        slots = {s.id: s for s in tx.tenant_slots(key.tenant, [i for _, i in facts])}
        keys_of = {slot_id: error_keys(tx, key.tenant, slot) for slot_id, slot in slots.items()}
    rest = len(text) - sum(len(line) + 1 for line, _ in facts)
    news = []
    for n, (line, slot_id) in enumerate(facts):
        slot = slots.get(slot_id)
        data = {"keys": keys_of[slot_id][:16] if slot_id in keys_of else []}
        news.append(memory.new_intervention(
            key.session, kinds.CARRIED, chars=len(line) + 1 + (max(rest, 0) if n == 0 else 0),
            subject=slot.uid if slot is not None else str(slot_id), detail=line[2:], data=data, host=host))
    memory.keep_interventions(news)
    return text
