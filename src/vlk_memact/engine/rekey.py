"""Keying stored lessons, fixes and slots again when the fingerprint algorithm changed.

Why: recall and fix memory find a lesson or a fix by a shared fingerprint key. Keys made by an older
``FINGERPRINT_VERSION`` would never be shared with the keys of a new error, so everything learned
before an upgrade would go silent. Run once per store when the engine opens it (a cheap probe of the
version the stored keys are of, then nothing until the next change): a slot is keyed from its raw
log; a lesson from the recorded slots it was learned from (as ``lessons._lesson_fingerprint``
does), else its old keys mapped through the slots' old -> new keys; a fix from the failures it
resolved, else the same mapping. A key nothing maps stays as it was.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from ..fingerprint import FINGERPRINT_VERSION, Fingerprint, fingerprint
from ..store import Rekeyed, Store
from .fix_memory import match_keys
from .lessons import MAX_LESSON_KEYS

log = logging.getLogger(__name__)
MAX_FIX_KEYS = 16  # hosts/shared/fixes.py keeps a fix under match_keys of the error's first 16 keys


def rekey_if_stale(store: Store) -> int:
    """Re-key what was keyed by an older fingerprint version; how many rows changed (0 when up to date)."""
    with store.read() as tx:
        if tx.keys_version() >= FINGERPRINT_VERSION:
            return 0
    with store.write() as tx:
        if tx.keys_version() >= FINGERPRINT_VERSION:  # another process did it meanwhile
            return 0
        stale = tx.stale_fingerprints(FINGERPRINT_VERSION)
        made: dict[str, Fingerprint] = {}

        def of(raw: str) -> Fingerprint:
            found = made.get(raw)
            if found is None:
                found = made[raw] = fingerprint(raw)
            return found

        mapping: dict[str, dict[str, None]] = {}  # an old key -> the new keys of the slots that had it
        records: list[Rekeyed] = []
        for sid, raw, old in stale.records:
            fp = of(raw)
            records.append((sid, fp.key, fp.keys))
            for key in old:
                mapping.setdefault(key, {}).update(dict.fromkeys(fp.keys))

        def mapped(old: Iterable[str]) -> tuple[str, ...]:
            keys: dict[str, None] = {}
            for key in old:
                keys.update(mapping.get(key) or {key: None})
            return tuple(keys)

        lessons: list[Rekeyed] = []
        for cid, old, raws in stale.lessons:
            if raws:
                prints = [of(raw) for raw in raws]
                keys = tuple(dict.fromkeys(k for fp in reversed(prints) for k in fp.keys))[:MAX_LESSON_KEYS]
                lessons.append((cid, prints[-1].key, keys))
            else:
                keys = mapped(old)[:MAX_LESSON_KEYS]
                lessons.append((cid, keys[0] if keys else None, keys))
        fixes = []
        for fid, tenant, old, raws in stale.fixes:
            if raws:  # the failures it resolved, newest first (hosts/shared/fixes.py)
                prints = [of(raw) for raw in raws]
                keys = tuple(dict.fromkeys(k for fp in prints for k in fp.keys))
                fixes.append((fid, tenant, prints[0].key, match_keys(keys[:MAX_FIX_KEYS])))
            else:
                keys = mapped(k for k in old if not k.endswith("@"))
                fixes.append((fid, tenant, keys[0] if keys else None, match_keys(keys[:MAX_FIX_KEYS])))
        tx.rekey(records, lessons, fixes, FINGERPRINT_VERSION)
    changed = len(records) + len(lessons) + len(fixes)
    if changed:
        log.info("Re-keyed %d slots, %d lessons and %d fixes to fingerprint version %d",
                 len(records), len(lessons), len(fixes), FINGERPRINT_VERSION)
    return changed
