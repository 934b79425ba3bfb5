"""Reading the timeline: history, literal search and the session's counts (vlk_get_history, vlk_search_memory,
vlk_summarize_session)."""

from __future__ import annotations

from typing import Any

from ..core import inputs
from ..core.browsing import SessionOverview
from ..core.model import (
    HistoryResult,
    SearchResult,
    Slot,
    SlotView,
    SummaryResult,
    TemporalState,
)
from ..core.render import chars_tokens
from .base import MemoryBase

HISTORY_DEFAULT_LIMIT = 50
SEARCH_DEFAULT_LIMIT = 20


class History(MemoryBase):
    """Read-only listings of the session's slots, kept under the listing size."""

    def get_history(self, limit: Any = None, session_id: Any = inputs.DEFAULT_SESSION) -> HistoryResult:
        """Every slot of the session in every state, newest first."""
        key = self._key(session_id)
        n = inputs.limit(limit, HISTORY_DEFAULT_LIMIT, self.settings.max_list_limit)
        with self.store.read() as tx:
            slots = tx.history(key, n)
        kept = self._within_listing_size(slots)
        return HistoryResult(key.session, n, [view(s) for s in kept], complete=len(kept) == len(slots))

    def search_memory(
        self, query: Any, limit: Any = None, session_id: Any = inputs.DEFAULT_SESSION
    ) -> SearchResult:
        """Literal, case-insensitive search over logs, file context, lessons and evidence."""
        text = inputs.query(query)
        key = self._key(session_id)
        n = inputs.limit(limit, SEARCH_DEFAULT_LIMIT, self.settings.max_list_limit)
        with self.store.read() as tx:
            slots = tx.search(key, text, n)
        kept = self._within_listing_size(slots)
        return SearchResult(key.session, text, n, [view(s) for s in kept], complete=len(kept) == len(slots))

    def list_sessions(self, limit: Any = None, every_project: bool = False) -> list[SessionOverview]:
        """The project's sessions (every project's with every_project), the most recently written to first,
        with their counts and the host whose hooks wrote them."""
        n = inputs.limit(limit, SEARCH_DEFAULT_LIMIT, self.settings.max_list_limit)
        with self.store.read() as tx:
            return tx.sessions(self.tenant, None if every_project else self.project, n)

    def latest_session(self) -> SessionOverview | None:
        """The project's most recently written-to session: what the command line reads when none is named."""
        found = self.list_sessions(limit=1)
        return found[0] if found else None

    def search_sessions(self, query: Any, limit: Any = None, every_project: bool = False) -> SearchResult:
        """search_memory over every session of the project (of every project with every_project), newest first."""
        text = inputs.query(query)
        n = inputs.limit(limit, SEARCH_DEFAULT_LIMIT, self.settings.max_list_limit)
        with self.store.read() as tx:
            slots = tx.search_tenant(self.tenant, None if every_project else self.project, text, n)
        kept = self._within_listing_size(slots)
        return SearchResult("*", text, n, [view(s) for s in kept], complete=len(kept) == len(slots))

    def recent_history(self, limit: Any = None, every_project: bool = False) -> HistoryResult:
        """get_history over every session of the project (of every project with every_project), newest first."""
        n = inputs.limit(limit, HISTORY_DEFAULT_LIMIT, self.settings.max_list_limit)
        with self.store.read() as tx:
            slots = tx.recent(self.tenant, None if every_project else self.project, n)
        kept = self._within_listing_size(slots)
        return HistoryResult("*", n, [view(s) for s in kept], complete=len(kept) == len(slots))

    def totals(self, every_project: bool = False) -> tuple[dict[str, int], int, int]:
        """(slots per temporal state, sessions, projects) of the project, or of every project."""
        with self.store.read() as tx:
            return tx.totals(self.tenant, None if every_project else self.project)

    def _within_listing_size(self, slots: list[Slot]) -> list[Slot]:
        """The newest slots whose text fits VLK_MAX_LISTING_CHARS (at least one), so a listing stays well
        under the 10 MiB message cap of common MCP clients."""
        kept: list[Slot] = []
        used = 0
        for slot in slots:
            used += sum(len(t or "") for t in (slot.raw_log, slot.file_context, slot.tool_payload,
                                               slot.learning_summary, slot.evidence))
            if kept and used > self.settings.max_listing_chars:
                break
            kept.append(slot)
        return kept

    def summarize_session(self, session_id: Any = inputs.DEFAULT_SESSION) -> SummaryResult:
        """Counts per state; tokens of live logs and of archived ones, apart (fixes defect 12)."""
        key = self._key(session_id)
        with self.store.read() as tx:
            counts = tx.counts(key)
            visible = len(tx.visible_constraints(key))
        present, present_chars = counts.get(TemporalState.PRESENT, (0, 0))
        past, past_chars = counts.get(TemporalState.PAST, (0, 0))
        future, _ = counts.get(TemporalState.FUTURE, (0, 0))
        return SummaryResult(
            session_id=key.session,
            project=key.project,
            total=present + past + future,
            present=present,
            past=past,
            future=future,
            active_tokens=chars_tokens(present_chars),
            archived_tokens=chars_tokens(past_chars),
            visible_constraints=visible,
        )


def view(slot: Slot) -> SlotView:
    """A slot as listing tools return it."""
    return SlotView(
        id=slot.id,
        content_id=slot.content_id,
        session_id=slot.session_id,
        sequence_order=slot.sequence_order,
        temporal_state=slot.temporal_state.value,
        learning_summary=slot.learning_summary,
        created_at=slot.created_at,
        constraint_type=slot.constraint_type.value if slot.constraint_type else None,
        raw_log=slot.raw_log,
        file_context=slot.file_context,
        tool_payload=slot.tool_payload,
        evidence=slot.evidence,
        origin=slot.origin.value,
        fingerprint=slot.fingerprint,
        retired_reason=slot.retired_reason.value if slot.retired_reason else None,
        retired_by=slot.retired_by,
        project=slot.project,
        scope=slot.scope.value if slot.scope else None,
        fire_count=slot.fire_count,
        last_fired_at=slot.last_fired_at,
    )
