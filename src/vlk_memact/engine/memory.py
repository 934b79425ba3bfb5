"""Memory: the temporal engine. One method per tool, one store transaction per method.

Decisions come from the pure core (loops, consolidate, conflicts, render); the engine only validates
input, applies decisions inside a transaction and returns typed results. Each responsibility is a part
of its own: recording.py, history.py, context.py, lessons.py (with fix_memory.py), admin.py, over base.py.
"""

from __future__ import annotations

from .admin import Administration
from .base import DEFAULT_TENANT
from .context import Context
from .history import History
from .lessons import Lessons
from .recording import Recording

__all__ = ["DEFAULT_TENANT", "Memory"]


class Memory(Recording, History, Context, Lessons, Administration):
    """The library API: `with Memory() as m: m.record_state(raw_log=...)`."""
