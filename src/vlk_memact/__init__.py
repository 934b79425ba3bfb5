"""vlk-memact: stateful temporal memory for AI coding agents, over MCP.

    from vlk_memact import Memory
    with Memory("sqlite:vlk.db") as memory:
        memory.record_state(raw_log="error[E0277]: ...", session_id="task-1")
        print(memory.fetch_context(session_id="task-1").text)
"""

import sys

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs a hook process several ms
# (nor __future__: the annotations naming Any are quoted)
if TYPE_CHECKING:
    from typing import Any

    from .config import Settings
    from .core.errors import ConfigError, InvalidInput, NotFound, StoreError, VlkError
    from .core.model import (
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
    from .engine import Memory
    from .fingerprint import Fingerprint

# Names are imported on first use (PEP 562): a hook process that needs only the store and the guard
# does not pay for the fingerprint and redaction tables at start-up. `vlk_memact.fingerprint` is the
# subpackage, as Python's import system makes it (`from vlk_memact.fingerprint import fingerprint` is the
# function); no name here shadows a subpackage.
_HOME = {
    "Settings": "config",
    "Memory": "engine",
    "Fingerprint": "fingerprint",
    **dict.fromkeys(("ConfigError", "InvalidInput", "NotFound", "StoreError", "VlkError"), "core.errors"),
    **dict.fromkeys(("ConflictView", "ConstraintType", "ContextResult", "HistoryResult", "LoopReport", "MergeReport",
                     "RecordResult", "RevokeResult", "SearchResult", "SlotView", "SummaryResult", "TemporalState",
                     "TimeTravelResult"), "core.model"),
}


def __getattr__(name: str) -> "Any":
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'vlk_memact' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


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
]
