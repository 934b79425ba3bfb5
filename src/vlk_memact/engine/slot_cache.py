"""The PRESENT slots of recent sessions, kept between calls and re-read only where a row changed.

Why: every fetch_context (and every failure event of a hook) reads all PRESENT slots of its session, each
with its full log, although between two calls usually one slot was added. A slot is immutable except for
the columns store/rows.py lists in SLOT_VERSION_COLUMNS; the cache reads only those columns of every
PRESENT slot, in the same transaction, and the full rows of the slots it does not hold at that very
version. The slots it returns are therefore equal to what tx.slots would return, whoever wrote in between
(this connection, another process, a restored file: an id with another uid is another slot).

It skips even that read when the store's change stamp (context_cache.py) is the one the slots were read
or advanced at: nothing was committed since. A record advances its session's slots by the slot it added,
from the stamp its transaction began at to the stamp it ended at, when it wrote nothing else to PRESENT
slots (no pruning): the model's usual step, a record then a fetch, reads only the stamp.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from ..core.model import SessionKey, Slot, TemporalState
from ..store import Transaction

MAX_SESSIONS = 16  # each keeps only the slots its last read returned
MAX_CHARS = 16_000_000  # of logs, contexts and payloads kept in all: a slot can hold 64K characters
UNKNOWN = None  # the version of a slot added by a record: re-read it the next time versions are compared


def slot_chars(slot: Slot) -> int:
    """What a kept slot weighs: the characters of its texts."""
    return len(slot.raw_log or "") + len(slot.file_context or "") + len(slot.tool_payload or "")


def change_stamp(tx: Transaction) -> Any:
    """The store's change stamp, or None when the store has none (PostgreSQL): then every read validates."""
    return tx.change_stamp() if hasattr(tx, "change_stamp") else None


class _Kept:
    __slots__ = ("stamp", "slots", "chars")

    def __init__(self, stamp: Any, slots: dict[int, tuple[Any, Slot]]) -> None:
        self.stamp = stamp
        self.slots = slots  # id -> (version, slot), oldest first
        self.chars = sum(slot_chars(entry[1]) for entry in slots.values())


class SlotCache:
    def __init__(self) -> None:
        self._kept: OrderedDict[tuple[SessionKey, TemporalState], _Kept] = OrderedDict()
        self._lock = threading.Lock()

    def slots(self, tx: Transaction, key: SessionKey, state: TemporalState) -> list[Slot]:
        """tx.slots(key, state), reading in full only the rows not kept at their current version.

        Call it before the transaction writes anything: a stamp taken after a write that is then rolled
        back would name a state the database never committed."""
        stamp = change_stamp(tx)
        with self._lock:
            kept = self._kept.get((key, state))
            if kept is not None and stamp is not None and kept.stamp == stamp:
                self._kept.move_to_end((key, state))
                return [entry[1] for entry in kept.slots.values()]
        held = kept.slots if kept is not None else {}
        versions = tx.slot_versions(key, state)
        missing = [v[0] for v in versions if (k := held.get(v[0])) is None or k[0] != v]
        fresh = {s.id: s for s in tx.slots_by_id(key, missing)} if missing else {}
        if len(fresh) != len(missing):  # not seen in one transaction; never trust a guess
            return tx.slots(key, state)
        now = {v[0]: (v, fresh[v[0]] if v[0] in fresh else held[v[0]][1]) for v in versions}
        self._keep(key, state, _Kept(stamp, now))
        return [entry[1] for entry in now.values()]

    def advance(self, key: SessionKey, before: Any, after: Any, added: Slot) -> None:
        """A transaction that began at stamp `before` added `added` (the session's newest slot, PRESENT) and
        changed no other PRESENT slot of the session; it ended at `after`. Keep the slots current."""
        with self._lock:
            kept = self._kept.get((key, TemporalState.PRESENT))
            if kept is None or before is None or kept.stamp != before:
                return
            kept.slots[added.id] = (UNKNOWN, added)
            kept.chars += slot_chars(added)
            kept.stamp = after

    def _keep(self, key: SessionKey, state: TemporalState, kept: _Kept) -> None:
        with self._lock:
            self._kept[(key, state)] = kept
            self._kept.move_to_end((key, state))
            while len(self._kept) > 1 and (
                    len(self._kept) > MAX_SESSIONS or sum(k.chars for k in self._kept.values()) > MAX_CHARS):
                self._kept.popitem(last=False)  # the least recently read session goes first
