"""The last fetch_context result of each session, kept while the database has not changed.

Why: a model calls vlk_fetch_context before every step, and between two steps often nothing was written;
the pipeline and the rendering then compute the same result again (most of the call). A result is kept
only when its own pipeline wrote nothing (no loop, merge or re-fingerprint: repeating it would report
none), under the store's change stamp read in the same write transaction: any commit since, by this
connection or any other, changes the stamp, and the next call computes afresh. A store without a stamp
(PostgreSQL) keeps nothing.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from ..core.model import ContextResult

MAX_KEPT = 64  # sessions x budgets; one result is at most a budget's worth of text


class ContextCache:
    def __init__(self) -> None:
        self._kept: OrderedDict[Any, tuple[Any, ContextResult]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any, stamp: Any) -> ContextResult | None:
        """The result kept for key under this very stamp, else None."""
        if stamp is None:
            return None
        with self._lock:
            kept = self._kept.get(key)
            return kept[1] if kept is not None and kept[0] == stamp else None

    def put(self, key: Any, stamp: Any, result: ContextResult) -> None:
        if stamp is None:
            return
        with self._lock:
            self._kept[key] = (stamp, result)
            self._kept.move_to_end(key)
            while len(self._kept) > MAX_KEPT:
                self._kept.popitem(last=False)
