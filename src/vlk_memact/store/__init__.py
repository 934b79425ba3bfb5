"""The storage contract the engine is written against, and open_store(url) to pick a backend.

A store hands out transactions; a transaction offers the few operations the engine needs. The
engine never sees SQL or a driver type, so a new backend needs no engine change.
May import core/ and config only; the one package that imports sqlite3 and psycopg.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from ..core.errors import ConfigError, WouldWait
from .batch import Batch
from .learned import LearnedSource
from ..core.browsing import Saving, SessionOverview
from ..core.interventions import Intervention, NewIntervention
from ..core.model import (
    Fix,
    NewFix,
    HostCall,
    NewHostCall,
    NewSlot,
    Retired,
    SessionKey,
    Slot,
    TemporalState,
)
from .rekey import Rekeyed, StaleFingerprints


class Transaction(Protocol):
    """Operations inside one transaction; all of them see the same snapshot.

    Every read is confined to one tenant; session reads to one (tenant, project, session) key.
    """

    def add_content(self, tenant: str, raw_log: str, file_context: str | None, tool_payload: str | None) -> int:
        """Store content once per tenant: identical content returns the existing id."""

    def insert_slot(self, slot: NewSlot, content: tuple[str | None, str | None, str | None] | None = None) -> Slot:
        """Insert at the session's next sequence number (unique per session); index a constraint's keys. content:
        the (raw_log, file_context, tool_payload) of slot.content_id as just stored, so the slot is returned without
        reading the row back; None reads it."""

    def slots(self, key: SessionKey, state: TemporalState) -> list[Slot]:
        """Slots of a session in one state, oldest first."""

    def slot_versions(self, key: SessionKey, state: TemporalState) -> list[tuple[Any, ...]]:
        """SLOT_VERSION_COLUMNS of a session's slots in one state, oldest first (equal tuples, equal rows)."""

    def slots_by_id(self, key: SessionKey, ids: Sequence[int]) -> list[Slot]:
        """The slots of this session among ids (others are silently absent), oldest first."""

    def visible_constraints(self, key: SessionKey) -> list[Slot]:
        """Active FUTURE constraints the session sees: its own session-scoped ones, its project's, global ones."""

    def constraints_matching(self, key: SessionKey, fingerprint_keys: Sequence[str]) -> list[Slot]:
        """Visible active constraints learned from an error sharing any of these fingerprint keys (indexed)."""

    def fire(self, constraint_ids: Sequence[int]) -> None:
        """Count one more firing of these constraints, now."""

    def count_fingerprint(self, key: SessionKey, fingerprint: str) -> list[int]:
        """Ids of the session's PRESENT slots with this primary fingerprint, oldest first (indexed)."""

    def retire(
        self, tenant: str, ids: Sequence[int], from_state: TemporalState, reason: Retired, by: int | None
    ) -> list[int]:
        """Move slots of this tenant still in from_state to PAST; return the ids that moved.

        The engine decides which ids a session may retire; the tenant filter is the store's guarantee.
        """

    def update_fingerprints(self, updates: Sequence[tuple[int, str, tuple[str, ...], int]]) -> None:
        """Store (slot id, fingerprint, keys, version) for slots fingerprinted by an older algorithm."""

    def link(self, constraint_id: int, source_ids: Sequence[int], relation: str) -> None:
        """Record that a constraint was learned from ('archived') or merged from ('merged') slots."""

    def sources(self, constraint_id: int, relation: str) -> list[int]:
        """Ids a constraint was learned ('archived') or merged ('merged') from, ascending."""

    def history(self, key: SessionKey, limit: int) -> list[Slot]:
        """All slots of a session, newest first."""

    def search(self, key: SessionKey, query: str, limit: int) -> list[Slot]:
        """Slots whose log, file context, lesson or evidence contains query (case-insensitive, literal)."""

    def counts(self, key: SessionKey) -> dict[TemporalState, tuple[int, int]]:
        """Per state: (number of slots, characters of raw_log)."""

    def dump(self, tenant: str | None, project: str | None, session: str | None) -> Iterator[dict[str, Any]]:
        """Every row matching the filters (None: any) as export records, in load order: contents, slots,
        retired_by edges, links, keys. Rows are named by uid and content hash, never by local id."""

    def load(self, record: dict[str, Any]) -> bool:
        """Insert one export record unless it is already there (by uid or hash); True if inserted."""

    def prune(self, key: SessionKey | None, keep_past: int, max_age_days: int) -> tuple[int, int]:
        """Delete PAST slots beyond the newest keep_past per session or older than max_age_days, with their
        links, and the content no slot references any more; key=None does every session. Returns
        (slots deleted, contents deleted)."""

    # ---- host hooks (hosts/): the calls a hook saw and what it injected; per session ----

    def add_host_call(self, key: SessionKey, call: NewHostCall, slot_id: int | None) -> int | None:
        """Remember one tool call; None (nothing stored) when the session already has this tool_use_id."""

    def host_call_by_use_id(self, key: SessionKey, tool_use_id: str) -> HostCall | None:
        """The call the session recorded under this tool_use_id, if any."""

    def host_calls(
        self,
        key: SessionKey,
        *,
        call_key: str | None = None,
        outcome: str | None = None,
        target: str | None = None,
        after_id: int = 0,
        within_seconds: int | None = None,
        unclaimed: bool = False,
        slot_ids: Sequence[int] = (),
        newest_first: bool = False,
        limit: int = 100,
    ) -> list[HostCall]:
        """The session's recorded calls after after_id matching the filters (indexed), oldest first by default;
        slot_ids: only the calls that captured one of these slots."""

    def claim_host_call(self, call_id: int) -> bool:
        """Mark a capture as the one a model's record of the same error was folded into; False if already so."""

    def injected(self, key: SessionKey) -> list[str]:
        """What the hooks already put in the session's context (item keys), as last stored."""

    def set_injected(self, key: SessionKey, items: Sequence[str], host: str | None = None) -> None:
        """Replace the session's injected item keys; host (when given) names the host whose hooks run it."""

    # ---- fix memory (hosts/shared/fixes.py); implemented in store/fixes.py ----

    def add_fix(self, fix: NewFix) -> int:
        """Keep one fix (its steps, the failures it resolved) and index it by its fingerprint keys."""

    def has_fixes(self, tenant: str) -> bool:
        """Whether the tenant has any fix: one indexed probe that spares a lookup per error or lesson."""

    def fixes_matching(self, key: SessionKey, fingerprint_keys: Sequence[str], limit: int,
                       include_own: bool = False) -> list[Fix]:
        """Fixes of an error sharing any of these keys, learned in another session of the project (or this one
        too with include_own), or global ones of the tenant; newest first (indexed)."""

    def fixes(self, tenant: str, project: str | None, session: str | None, limit: int) -> list[Fix]:
        """The newest limit fixes of the tenant (and project, and session), newest first."""

    def fixes_resolving(self, key: SessionKey, slot_uids: Sequence[str]) -> list[Fix]:
        """The fixes recorded in this session that resolved any of these failures (by slot uid), newest first;
        for the viewer (a fix is recorded in the session its failures are in: the session index)."""

    def demote_fix(self, fix_id: int) -> None:
        """Count one more time this fix was recalled, applied, and its error came back anyway."""

    # ---- what the memory said to agents (issue 33); implemented in store/interventions.py ----

    def add_intervention(self, new: NewIntervention) -> None:
        """Keep one intervention (a denial, a fix told, a fact carried, ...), stamped now."""

    def interventions(self, tenant: str, project: str | None, since: str | None = None,
                      session: str | None = None, limit: int = 100_000) -> list[Intervention]:
        """The tenant's interventions (of a project, a session, since a 'YYYY-MM-DD' time), oldest first."""

    def session_intervened(self, key: SessionKey, kind: str, subject: str) -> bool:
        """Whether the session already holds an intervention of this kind naming this subject."""

    # ---- what `vlk-memact learn` read (learn/); implemented in store/learned.py ----

    def learned_source(self, tenant: str, source: str) -> LearnedSource | None:
        """How a source looked when learn last read it in full, or None if it never did."""

    def save_learned_source(self, tenant: str, learned: LearnedSource) -> None:
        """Keep (or replace) what learn knows of a source."""

    def learned_events(self, tenant: str, project: str, event_ids: Sequence[str]) -> set[str]:
        """Those of event_ids learn already fed to the hooks' handlers for this project."""

    def add_learned_events(self, tenant: str, project: str, event_ids: Sequence[str]) -> None:
        """Remember that these events were fed (in the transaction holding what they changed)."""

    def stored_calls(self, key: SessionKey, tool_use_ids: Sequence[str], outcome: str) -> set[str]:
        """Those of tool_use_ids the session holds a host call of this outcome for (a hook or learn stored it)."""

    def session_tally(self, key: SessionKey) -> tuple[int, int]:
        """(loop anchors, fixes) the session holds: what learn reports as learned, before and after."""

    # ---- a checkout's path key merged into its repository's key; implemented in store/projects.py ----

    def project_merged(self, path: str) -> str | None:
        """The key the path key was merged into, or None when it never was."""

    def project_merges(self) -> list[tuple[str, str, int, str]]:
        """Every merge: (path, key, rows moved, when), newest first."""

    def merge_project(self, path: str, key: str) -> int:
        """Move every row of project `path` (all tenants) to project `key` and record it; rows moved."""

    # ---- reads for browsing the memory (the viewer); implemented in store/browse.py and *_browse.py ----

    def projects(self, tenant: str) -> list[tuple[str, int]]:
        """(project, number of sessions) of the tenant, the most recently written to first (index only)."""

    def sessions(self, tenant: str, project: str | None, limit: int) -> list[SessionOverview]:
        """The limit most recently written-to sessions of the tenant (and project), with their counts and host."""

    def session_host(self, key: SessionKey) -> str | None:
        """The host whose hooks wrote the session (its start, else its newest recorded call); None if none did."""

    def totals(self, tenant: str, project: str | None) -> tuple[dict[str, int], int, int]:
        """Slots per temporal state, sessions and projects of the tenant (and project)."""

    def recent(self, tenant: str, project: str | None, limit: int) -> list[Slot]:
        """The newest limit slots of any session of the tenant (and project), newest first."""

    def page(self, key: SessionKey, before: int | None, limit: int) -> list[Slot]:
        """Up to limit slots of a session with sequence_order below `before` (None: any), newest first."""

    def tenant_slots(self, tenant: str, ids: Sequence[int]) -> list[Slot]:
        """The slots of the tenant among ids, whatever their session, by id."""

    def project_failures(self, key: SessionKey, fingerprint: str, limit: int, content: bool = True) -> list[Slot]:
        """The newest `limit` recorded failures with this fingerprint in any session of key's project (any state),
        newest first: has an error failed in another session before? content=False leaves raw_log, file_context
        and tool_payload None (a hook's hot path that needs only where and when)."""

    def links(self, constraint_ids: Sequence[int]) -> list[tuple[int, int, str]]:
        """(constraint id, source id, relation) of these constraints' provenance links."""

    def resolving_calls(
        self, key: SessionKey, slot_ids: Sequence[int], steps: int
    ) -> list[tuple[int, HostCall, int, list[HostCall]]]:
        """(slot id, the success of the same call that resolved it, how many state-changing calls came in
        between, the last `steps` of them oldest first) for the failures among slot_ids that a host hook
        captured and saw succeed later (host_calls, while kept)."""

    def search_tenant(self, tenant: str, project: str | None, query: str, limit: int) -> list[Slot]:
        """Slots of any session of the tenant (and project) containing query, as search() matches, newest first."""

    def savings(self, tenant: str, project: str | None, session: str | None, limit: int) -> list[Saving]:
        """The newest limit loop anchors and time-travel lessons that archived slots, with what they
        archived, oldest first."""

    def change_marker(self, tenant: str) -> tuple[int, int]:
        """Changes whenever the tenant's memory does: (highest slot id, number of FUTURE slots); indexed."""


class Store(Protocol):
    """A database holding the timeline; safe to share between threads."""

    url: str

    def write(self) -> AbstractContextManager[Transaction]:
        """A write transaction that holds the write lock from its first statement (BEGIN IMMEDIATE)."""

    def read(self) -> AbstractContextManager[Transaction]:
        """A read-only transaction over one consistent snapshot."""

    def dry_run(self) -> AbstractContextManager[Transaction]:
        """A write transaction that is always rolled back and leaves no trace, the ids it used included."""

    def batch(self, durable: bool = True) -> AbstractContextManager[Batch]:
        """One long write transaction that this thread's write(), read() and dry_run() join, each write as a
        savepoint; Batch.commit() commits what it holds and goes on in a new one (store/batch.py). durable=False:
        a commit may return before it is on disk (safe from a process crash); sync() then makes it durable."""

    def sync(self) -> None:
        """Make durable what batch(durable=False) committed; returns once it is on disk."""

    def optimize(self, vacuum: bool) -> None:
        """Give freed space back: checkpoint and, with vacuum, rebuild the file (outside any transaction)."""

    def close(self) -> None:
        """Release connections; the store cannot be used afterwards."""


def open_store(url: str | None, busy_timeout_ms: int = 5000, lock_wait_ms: int | None = None) -> Store:
    """Open the store a DATABASE_URL names; None means the SQLite file in the user's data directory.

    lock_wait_ms bounds how long a call waits for another writer's lock in all (None: 30 s).
    """
    from .sqlite import SqliteStore, sqlite_target

    if url is None or url.startswith("sqlite:"):
        return SqliteStore(sqlite_target(url), busy_timeout_ms=busy_timeout_ms, lock_wait_ms=lock_wait_ms)
    # --- PostgreSQL (store/postgres.py); psycopg is imported only here, ConfigError if missing ---
    if url.startswith(("postgresql://", "postgres://")):
        from .postgres import PostgresStore

        return PostgresStore(url, busy_timeout_ms=busy_timeout_ms, lock_wait_ms=lock_wait_ms)
    # --- end PostgreSQL ---
    scheme = url.split(":", 1)[0] if ":" in url else url
    raise ConfigError(
        f"DATABASE_URL scheme {scheme!r} is not supported; use sqlite:PATH, sqlite:///ABS/PATH, sqlite::memory: "
        "or postgresql://USER@HOST/DB."
    )


def open_read_only(url: str | None, busy_timeout_ms: int = 5000) -> Store | None:
    """The store a DATABASE_URL names, to read what it holds without writing anything (not even a migration, for
    SQLite): None when there is nothing to read yet (no database file, or an in-memory one)."""
    from pathlib import Path

    from .sqlite import SqliteStore, sqlite_target
    from .sqlite_errors import path_of

    if url is None or url.startswith("sqlite:"):
        path = path_of(sqlite_target(url, create_dirs=False))
        if path is None or not Path(path).is_file():
            return None
        from urllib.parse import quote

        return SqliteStore("file:" + quote(path) + "?mode=ro", busy_timeout_ms=busy_timeout_ms)
    return open_store(url, busy_timeout_ms=busy_timeout_ms)


__all__ = ["Batch", "LearnedSource", "Rekeyed", "StaleFingerprints", "Store", "Transaction", "WouldWait",
           "open_read_only", "open_store"]
