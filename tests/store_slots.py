"""Slots written straight through the Store API, below the engine: what the store tests share."""

from __future__ import annotations

import re

from vlk_memact.core.model import ConstraintType, NewSlot, Origin, Scope, SessionKey, TemporalState
from vlk_memact.store import Store

A = SessionKey("local", "proj", "s1")
SECONDS = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")
MILLIS = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}$")


def word(i: int) -> str:
    """A distinct alphabetic word per i (digits would be masked by fingerprints)."""
    return "".join(chr(97 + (i // 26**k) % 26) for k in range(3)) + "zork"


def record(s: Store, key: SessionKey, text: str, fp: str | None = None, keys: tuple[str, ...] = ()) -> int:
    with s.write() as tx:
        content = tx.add_content(key.tenant, text, None, None)
        slot = tx.insert_slot(
            NewSlot(
                key,
                TemporalState.PRESENT,
                Origin.RECORD,
                content_id=content,
                fingerprint=fp,
                fingerprint_keys=keys,
                fingerprint_version=1,
            )
        )
    return slot.id


def lesson(s: Store, key: SessionKey, text: str, scope: Scope | None, keys: tuple[str, ...] = ()) -> int:
    with s.write() as tx:
        slot = tx.insert_slot(
            NewSlot(
                key,
                TemporalState.FUTURE,
                Origin.LESSON,
                scope=scope,
                learning_summary=text,
                constraint_type=ConstraintType.DERIVED,
                evidence="evidence of " + text,
                fingerprint_keys=keys,
            )
        )
    return slot.id
