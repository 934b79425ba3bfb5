"""vlk-memact: stateful temporal memory for AI coding agents, over MCP.

    from vlk_memact import Memory
    with Memory("sqlite:vlk.db") as memory:
        memory.record_state(raw_log="error[E0277]: ...", session_id="task-1")
        print(memory.fetch_context(session_id="task-1").text)
"""

from __future__ import annotations

from .config import Settings
from .engine import Memory
from .errors import ConfigError, InvalidInput, NotFound, StoreError, VlkError
from .fingerprint import Fingerprint, fingerprint
from .model import (
    ConflictView,
    ConstraintType,
    ContextResult,
    HistoryResult,
    LoopReport,
    MergeReport,
    RecordResult,
    RevokeResult,
    SearchResult,
    SlotView,
    SummaryResult,
    TemporalState,
    TimeTravelResult,
)

__all__ = [
    "ConfigError",
    "ConflictView",
    "ConstraintType",
    "ContextResult",
    "Fingerprint",
    "HistoryResult",
    "InvalidInput",
    "LoopReport",
    "Memory",
    "MergeReport",
    "NotFound",
    "RecordResult",
    "RevokeResult",
    "SearchResult",
    "Settings",
    "SlotView",
    "StoreError",
    "SummaryResult",
    "TemporalState",
    "TimeTravelResult",
    "VlkError",
    "fingerprint",
]
