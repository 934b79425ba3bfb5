"""Memory: the temporal engine. One method per tool, one store transaction per method.

Decisions come from the pure core (loops, consolidate, conflicts, render); the engine only validates
input, applies decisions inside a transaction and returns typed results. Each responsibility is a part
of its own: recording.py, history.py, context.py, lessons.py (with fix_memory.py), admin.py,
hook_events.py (the public API hooks and read-model edges use), over base.py.
"""

from __future__ import annotations

import logging
from typing import Any

from .admin import Administration
from .base import DEFAULT_TENANT
from .context import Context
from .history import History
from .hook_events import HookEvents
from .impact import Impact
from .impact_record import InterventionRecorder
from .lessons import Lessons
from .recording import Recording
from .rekey import rekey_if_stale

__all__ = ["DEFAULT_TENANT", "Memory"]


log = logging.getLogger(__name__)


class Memory(Recording, History, Context, Lessons, Administration, Impact, InterventionRecorder, HookEvents):
    """The library API: `with Memory() as m: m.record_state(raw_log=...)`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        opens_store = kwargs.get("store") is None
        super().__init__(*args, **kwargs)
        if opens_store:  # the store it opened may hold keys of an older fingerprint version (engine/rekey.py)
            try:
                rekey_if_stale(self.store)
            except Exception as exc:  # a busy or read-only store: serve anyway, the next open tries again
                log.warning("Could not re-key stored fingerprints yet: %s", exc)
