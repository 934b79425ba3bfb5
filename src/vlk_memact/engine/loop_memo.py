"""Loop detection over a session's PRESENT slots, regrouping only what a new slot can change.

Why: every fetch after a record grouped all PRESENT slots again (``fingerprint.group``), although the
slots are the last grouping's plus the one recorded. ``group`` joins records in two stages: stage 1 by a
shared key (the stripped text, or any fingerprint key), stage 2 by learned parameter positions, but only
among records of a varying kind (``fallback``: no family recognised them), each token count on its own.
A new slot of another kind leaves every stage-2 bucket as it was, so the new partition is the last one
with the new slot joined to the parts it shares a stage-1 key with: computed here without ``group``.
Any other change (a new slot of a varying kind, slots archived, rewritten or reordered) groups afresh.
Slots are compared by identity: the slot cache hands out the same objects while their rows are unchanged.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from ..core.loops import LoopGroup, loops_of, partition, recorded_slots, stored_fingerprint
from ..core.model import SessionKey, Slot
from ..fingerprint.grouping import _VARYING_KINDS  # the kinds stage 2 looks at: only they can regroup others
from .slot_cache import slot_chars

MAX_SESSIONS = 16
MAX_CHARS = 16_000_000  # in all: a grouping holds its slots (shared with the slot cache while both keep them)


_Weighed = tuple[Slot, tuple[str, ...], int]  # a slot, its join keys, its characters


def join_keys(slot: Slot) -> tuple[str, ...]:
    """The keys stage 1 of ``fingerprint.group`` joins a record by (its _join_by_keys)."""
    return ("exact:" + (slot.raw_log or "").strip(), *stored_fingerprint(slot).keys)


class _Grouping:
    """One session's last partition: its input, parts by number, which part holds each key, and each slot's
    keys and weight (kept for the next grouping: the same slot object needs neither computed again)."""

    __slots__ = ("slots", "parts", "owner", "known", "chars")

    def __init__(self, slots: list[Slot], parts: dict[int, list[Slot]], known: dict[int, _Weighed]) -> None:
        self.slots = slots
        self.parts = parts
        self.known = known  # slot id -> (slot, its join keys, its characters)
        self.owner = {k: number for number, members in parts.items() for slot in members
                      for k in known[slot.id][1]}
        self.chars = sum(known[s.id][2] for s in slots)

    @classmethod
    def of(cls, recorded: list[Slot], earlier: dict[int, _Weighed]) -> _Grouping:
        known = {}
        for slot in recorded:
            seen = earlier.get(slot.id)
            known[slot.id] = seen if seen is not None and seen[0] is slot else _weigh(slot)
        return cls(recorded, dict(enumerate(partition(recorded))), known)

    def extends(self, recorded: list[Slot]) -> bool:
        """recorded is this grouping's input plus one slot of a kind stage 2 ignores."""
        if len(recorded) != len(self.slots) + 1 or stored_fingerprint(recorded[-1]).kind in _VARYING_KINDS:
            return False
        return all(a is b for a, b in zip(self.slots, recorded))

    def add(self, slot: Slot) -> None:
        """Join slot to every part sharing one of its keys (stage 1), merged into the oldest of them."""
        self.known[slot.id] = weighed = _weigh(slot)
        keys = weighed[1]
        joined = sorted({self.owner[k] for k in keys if k in self.owner})
        target = joined[0] if joined else max(self.parts, default=-1) + 1
        members = self.parts.setdefault(target, [])
        for number in joined[1:]:
            for moved in self.parts.pop(number):
                members.append(moved)
                for k in self.known[moved.id][1]:
                    self.owner[k] = target
        members.append(slot)
        members.sort(key=lambda s: s.sequence_order)
        for k in keys:
            self.owner[k] = target
        self.slots.append(slot)
        self.chars += weighed[2]


def _weigh(slot: Slot) -> _Weighed:
    return slot, join_keys(slot), slot_chars(slot)


class LoopMemo:
    def __init__(self) -> None:
        self._kept: OrderedDict[SessionKey, _Grouping] = OrderedDict()
        self._lock = threading.Lock()

    def detect(self, key: SessionKey, slots: Sequence[Slot], threshold: int) -> list[LoopGroup]:
        """core.loops.detect_loops(slots, threshold), regrouping only what changed since the last call."""
        recorded = recorded_slots(slots)
        if len(recorded) < threshold:
            return []
        with self._lock:
            last = self._kept.pop(key, None)
            if last is not None and last.extends(recorded):
                last.add(recorded[-1])
            else:
                last = _Grouping.of(recorded, last.known if last is not None else {})
            self._kept[key] = last
            while len(self._kept) > 1 and (
                    len(self._kept) > MAX_SESSIONS or sum(g.chars for g in self._kept.values()) > MAX_CHARS):
                self._kept.popitem(last=False)
            return loops_of(last.parts.values(), threshold)
