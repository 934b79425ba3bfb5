"""Pure loop detection: which PRESENT slots repeat often enough to be archived (spec §6).

Fixes defect 11: every group that reached the threshold is mitigated, in a deterministic order.
Which slots are the same error is decided by ``fingerprint.group`` alone (exact text, shared
keys, then positions the batch shows to be parameters), the function ``bench/grouping.py`` measures.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from ..fingerprint import Fingerprint, group
from .model import Slot
from .quoting import neutralize, one_line
from .render import ANCHOR_ORDER, LOOP_KINDS

SIGNATURE_CHARS = 80
MAX_KEYS = 32
EVIDENCE_CHARS = 300

ANCHOR_TEMPLATE = (
    "[SYSTEM ANCHOR] Loop detected ({method}): the same error pattern appeared {count} times ({kind}). "
    'Last signature: "{signature}...". ' + ANCHOR_ORDER
)

_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class LoopGroup:
    """A set of PRESENT slots that are the same error, and the anchor that replaces them."""

    slot_ids: tuple[int, ...]  # oldest first
    method: str  # "exact" when every log is the same text, else "fingerprint"
    signature: str
    evidence: str
    fingerprint: str
    fingerprint_keys: tuple[str, ...]  # every key of every slot in the group

    def anchor_text(self, count: int | None = None) -> str:
        """The prototype's anchor; count includes earlier occurrences an older anchor already absorbed."""
        total = len(self.slot_ids) if count is None else count
        return ANCHOR_TEMPLATE.format(method=self.method, count=total, kind=LOOP_KINDS[self.method],
                                      signature=self.signature)


_STRONG_ERROR = re.compile(
    r"(?i)error|exception|panick|fatal|traceback|denied|refused|no such|not found|timed? ?out|abort|assert"
)
_WEAK_ERROR = re.compile(r"(?i)fail|warn|invalid|cannot|unable")


def error_excerpt(text: str, limit: int) -> str:
    """The lines of a log that carry the error (a line ending in ':' brings the next), on one line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for pattern in (_STRONG_ERROR, _WEAK_ERROR):
        picked: list[str] = []
        for index, line in enumerate(lines):
            if pattern.search(line):
                picked.append(line)
                if line.endswith(":") and index + 1 < len(lines):
                    picked.append(lines[index + 1])
        if picked:
            return one_line(" | ".join(dict.fromkeys(picked)), limit)
    return one_line(lines[-1] if lines else "", limit)


def detect_loops(slots: Sequence[Slot], threshold: int) -> list[LoopGroup]:
    """Group PRESENT slots with ``fingerprint.group`` (the measured grouping); keep groups >= threshold."""
    recorded = recorded_slots(slots)
    if len(recorded) < threshold:
        return []
    return loops_of(partition(recorded), threshold)


def recorded_slots(slots: Sequence[Slot]) -> list[Slot]:
    """The slots grouping looks at: those with a log."""
    return [s for s in slots if s.raw_log is not None]


def partition(recorded: Sequence[Slot]) -> list[list[Slot]]:
    """``fingerprint.group`` of the recorded slots as lists of slots, each in input order."""
    texts = [s.raw_log or "" for s in recorded]
    labels = group(texts, fingerprints=[stored_fingerprint(s) for s in recorded])
    members: dict[int, list[Slot]] = {}
    for label, slot in zip(labels, recorded, strict=True):
        members.setdefault(label, []).append(slot)
    return list(members.values())


def loops_of(parts: Iterable[list[Slot]], threshold: int) -> list[LoopGroup]:
    """The loop groups of a partition: the parts of at least threshold slots, oldest first."""
    groups = [sorted(g, key=lambda s: s.sequence_order) for g in parts if len(g) >= threshold]
    groups.sort(key=lambda g: g[0].sequence_order)
    return [_describe(found) for found in groups]


def stored_fingerprint(slot: Slot) -> Fingerprint:
    """The slot's stored fingerprint (the engine refreshes older versions before grouping)."""
    return _stored_fingerprint(slot.fingerprint or "", slot.fingerprint_keys)


@lru_cache(maxsize=4096)  # every fetch groups the same PRESENT slots again; a Fingerprint is immutable
def _stored_fingerprint(key: str, fingerprint_keys: tuple[str, ...]) -> Fingerprint:
    keys = fingerprint_keys or ((key,) if key else ())
    return Fingerprint(key.split(":", 1)[0] if ":" in key else "", key, tuple(keys))


def _describe(group: list[Slot]) -> LoopGroup:
    newest = group[-1]
    texts = {(s.raw_log or "").strip() for s in group}
    exact = len(texts) == 1
    # The error line of the log (not a host's leading "Exit code 1"), or the fingerprint the group shares.
    key = error_excerpt(newest.raw_log or "", SIGNATURE_CHARS) if exact else (newest.fingerprint or newest.raw_log or "")
    return LoopGroup(
        slot_ids=tuple(s.id for s in group),
        method="exact" if exact else "fingerprint",
        signature=neutralize(_WHITESPACE.sub(" ", key).strip()[:SIGNATURE_CHARS]),
        evidence=error_excerpt(newest.raw_log or "", EVIDENCE_CHARS),
        fingerprint=newest.fingerprint or "",
        fingerprint_keys=tuple(dict.fromkeys(k for s in reversed(group) for k in s.fingerprint_keys))[:MAX_KEYS],
    )
