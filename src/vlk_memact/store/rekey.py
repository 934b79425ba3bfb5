"""Re-keying stored fingerprints after the fingerprint algorithm changed, alike in both stores.

Why: lessons and fixes are found by their fingerprint keys (recall, fix memory). When the keys change
(``fingerprint.FINGERPRINT_VERSION``), the rows written before must be keyed again or a new error
would never meet the lesson or fix learned for it. The store cannot fingerprint (it knows no
fingerprint/): it hands out what is stale with the texts the keys are made from, and writes back the
keys the engine made (``engine/rekey.py``). The version the stored keys are of is kept in
``fingerprint_keys_version`` (schema migration 10 for SQLite, 9 for PostgreSQL: written as 3, the
version every earlier release wrote).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from .dialect import SqlDialect


@dataclass
class StaleFingerprints:
    """What was keyed by an older fingerprint version, with the texts its new keys are made from."""

    records: list[tuple[int, str, tuple[str, ...]]] = field(default_factory=list)  # slot id, raw log, old keys
    lessons: list[tuple[int, tuple[str, ...], tuple[str, ...]]] = field(default_factory=list)  # id, old keys,
    # the raw logs of the recorded slots it was learned from, oldest first
    fixes: list[tuple[int, str, tuple[str, ...], tuple[str, ...]]] = field(default_factory=list)  # id, tenant,
    # old keys, the raw logs of the failures it resolved

    def __bool__(self) -> bool:
        return bool(self.records or self.lessons or self.fixes)


Rekeyed = tuple[int, str | None, tuple[str, ...]]  # row id, its new primary key, its new keys


class Rekey(SqlDialect):
    """The Transaction protocol's re-keying operations (see the module docstring)."""

    # update_fingerprints and _index_fix_keys are the transaction's own (sqlite_tx.py, postgres_tx.py)

    def keys_version(self) -> int:
        """The fingerprint version the stored keys are of."""
        rows = self._rows("SELECT version FROM fingerprint_keys_version")
        return int(rows[0][0]) if rows else 0

    def stale_fingerprints(self, version: int) -> StaleFingerprints:
        """Every row keyed by a version below ``version``, with the texts to key it again from."""
        stale = StaleFingerprints()
        for sid, raw, keys in self._rows(
            "SELECT t.id, c.raw_log, t.fingerprint_keys FROM agent_timeline t "
            "JOIN memory_contents c ON c.id = t.content_id WHERE t.origin = 'record' AND c.raw_log IS NOT NULL "
            "AND (t.fingerprint_version IS NULL OR t.fingerprint_version < ?) ORDER BY t.id",
            (version,),
        ):
            stale.records.append((sid, raw, tuple(json.loads(keys or "[]"))))
        sources: dict[int, list[str]] = {}
        for cid, raw in self._rows(
            "SELECT l.constraint_id, c.raw_log FROM constraint_links l JOIN agent_timeline s ON s.id = l.source_id "
            "JOIN memory_contents c ON c.id = s.content_id WHERE s.origin = 'record' AND c.raw_log IS NOT NULL "
            "ORDER BY l.constraint_id, s.sequence_order, s.id"
        ):
            sources.setdefault(cid, []).append(raw)
        for cid, keys in self._rows(
            "SELECT id, fingerprint_keys FROM agent_timeline WHERE origin <> 'record' AND fingerprint_keys IS NOT NULL "
            "AND (fingerprint_version IS NULL OR fingerprint_version < ?) ORDER BY id",
            (version,),
        ):
            stale.lessons.append((cid, tuple(json.loads(keys or "[]")), tuple(sources.get(cid, ()))))
        fixes = self._rows(
            "SELECT id, tenant, fingerprint_keys, slot_uids FROM fixes "
            "WHERE fingerprint_version IS NULL OR fingerprint_version < ? ORDER BY id",
            (version,),
        )
        uids = sorted({uid for _, _, _, slot_uids in fixes for uid in json.loads(slot_uids or "[]")})
        logs: dict[str, str] = {}
        if uids:
            among, listed = self._in_texts(uids)
            logs = dict(self._rows(
                "SELECT t.uid, c.raw_log FROM agent_timeline t JOIN memory_contents c ON c.id = t.content_id "
                f"WHERE c.raw_log IS NOT NULL AND t.uid{among}",
                (listed,),
            ))
        for fid, tenant, keys, slot_uids in fixes:
            raws = tuple(logs[u] for u in json.loads(slot_uids or "[]") if u in logs)
            stale.fixes.append((fid, tenant, tuple(json.loads(keys or "[]")), raws))
        return stale

    def rekey(self, records: Sequence[Rekeyed], lessons: Sequence[Rekeyed],
              fixes: Sequence[tuple[int, str, str | None, tuple[str, ...]]], version: int) -> None:
        """Write the new keys (slots, lessons and their key index, fixes and theirs) and the version they are of."""
        updates = [(sid, fp or "", keys, version) for sid, fp, keys in records]
        self.update_fingerprints(updates)  # type: ignore[attr-defined]
        for cid, fp, keys in lessons:
            self._exec(
                "UPDATE agent_timeline SET fingerprint = ?, fingerprint_keys = ?, fingerprint_version = ? WHERE id = ?",
                (fp, json.dumps(list(keys), ensure_ascii=False), version, cid),
            )
            self._exec("DELETE FROM constraint_keys WHERE constraint_id = ?", (cid,))
            self._index_keys(cid, keys)
        for fid, tenant, fp, keys in fixes:
            self._exec(
                "UPDATE fixes SET fingerprint = ?, fingerprint_keys = ?, fingerprint_version = ? WHERE id = ?",
                (fp, json.dumps(list(keys), ensure_ascii=False), version, fid),
            )
            self._exec("DELETE FROM fix_keys WHERE fix_id = ?", (fid,))
            self._index_fix_keys(tenant, fid, keys)  # type: ignore[attr-defined]
        self._exec("UPDATE fingerprint_keys_version SET version = ?", (version,))
