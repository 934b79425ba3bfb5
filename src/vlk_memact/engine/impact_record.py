"""Recording what the memory said to an agent: the one way every edge (hooks, MCP tools) keeps an intervention.

A mixin of Memory, and of the hooks' store-only memory (engine/store_only.StoreOnly: the guard's PreToolUse loads
no engine), so it imports nothing heavy. Recording never breaks the caller: a failed write is logged and
forgotten, since what was said has been said. VLK_IMPACT=0 records nothing.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..core.interventions import KINDS, NewIntervention

if TYPE_CHECKING:
    from ..config import Settings
    from ..core.model import SessionKey
    from ..store import Store

log = logging.getLogger(__name__)
_draw = random.SystemRandom()
_local = threading.local()  # .pending: interventions held back until the answer has left (deferred())


def _now() -> str:
    """Now as the stores write created_at (UTC, milliseconds): an intervention is stamped when it is said."""
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:23]


@contextmanager
def deferred() -> Iterator[list[tuple[InterventionRecorder, list[NewIntervention]]]]:
    """Within it, this thread's interventions are held, not written: the warm hook server answers the host first
    and then writes them (flush()), so that recording adds nothing to what the host waits for."""
    held: list[tuple[InterventionRecorder, list[NewIntervention]]] = []
    _local.pending = held
    try:
        yield held
    finally:
        _local.pending = None


def flush(held: list[tuple[InterventionRecorder, list[NewIntervention]]]) -> None:
    """Write what deferred() held (each to the memory that said it)."""
    for recorder, news in held:
        recorder._write(news)  # noqa: SLF001 - the one writer
    held.clear()


class InterventionRecorder:
    """record_intervention() and the holdout draw, over self.settings, self.store and self._key."""

    settings: Settings
    store: Store

    def _key(self, session_id: Any) -> SessionKey:  # supplied by the class this is mixed into
        raise NotImplementedError

    def new_intervention(self, session_id: Any, kind: str, text: str | None = None, *, chars: int | None = None,
                         tool_use_id: str | None = None, call_key: str | None = None, tool: str | None = None,
                         target: str | None = None, subject: str | None = None, detail: str | None = None,
                         data: dict[str, Any] | None = None, host: str | None = None) -> NewIntervention:
        """That `kind` was said in the session (text: what the model saw; its length is what it cost)."""
        if kind not in KINDS:
            raise ValueError(f"unknown intervention kind {kind!r}; one of {', '.join(KINDS)}")
        cost = chars if chars is not None else len(text or "")
        from ..store import clock  # the moment learn/ or a test stamps writes with, else now

        at = clock.current() or _now()
        return NewIntervention(self._key(session_id), kind, cost, tool_use_id, call_key, tool, target, subject,
                               detail, data or {}, host, at)

    def keep_interventions(self, news: Sequence[NewIntervention]) -> None:
        """Keep these interventions in one write; never raises (logged instead)."""
        if not news or not self.settings.impact:
            return
        held = getattr(_local, "pending", None)
        if held is not None:
            held.append((self, list(news)))
            return
        self._write(news)

    def _write(self, news: Sequence[NewIntervention]) -> None:
        try:
            with self.store.write() as tx:
                for new in news:
                    tx.add_intervention(new)
        except Exception as exc:  # noqa: BLE001 - what was said stays said; the record is best effort
            log.warning("could not record %d intervention(s): %s", len(news), exc)

    def record_intervention(self, session_id: Any, kind: str, text: str | None = None, **fields: Any) -> None:
        """new_intervention() kept at once (VLK_IMPACT=0: nothing is kept)."""
        if self.settings.impact:
            self.keep_interventions([self.new_intervention(session_id, kind, text, **fields)])

    def withhold(self) -> bool:
        """The VLK_HOLDOUT draw for one just-in-time fix recall: True to withhold it (an experiment's control)."""
        share = self.settings.holdout
        return share > 0 and _draw.random() < share
