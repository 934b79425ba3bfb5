"""The warm server's open Memory objects: one per (settings, project), lent to the requests that use it.

Why a lease and not a plain cache: the server answers events on several threads, and a full cache evicts
its oldest Memory. Closing it there would close a store another request is in the middle of using (its
write lost or failed, issue 37). So each request holds a lease; an evicted Memory leaves the cache at
once (a new request opens a fresh one) but is closed only when its last lease is returned.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

MAX_OPEN = 16


class _Entry:
    __slots__ = ("memory", "users", "evicted")

    def __init__(self, memory: Any) -> None:
        self.memory = memory
        self.users = 0
        self.evicted = False


class Lease:
    """`with pool.lease(key) as memory:` - the Memory stays open until the block ends."""

    def __init__(self, pool: MemoryPool, entry: _Entry) -> None:
        self._pool, self._entry = pool, entry

    @property
    def memory(self) -> Any:
        """The leased Memory (still to be synced after the lease ends: warm_server.durable)."""
        return self._entry.memory

    def __enter__(self) -> Any:
        return self._entry.memory

    def __exit__(self, *exc: object) -> None:
        self._pool._release(self._entry)


class MemoryPool:
    """At most `size` Memory objects kept open (least recently used evicted first), each closed only when
    no request uses it any more."""

    def __init__(self, open_memory: Callable[[Hashable], Any], size: int = MAX_OPEN) -> None:
        self._open = open_memory
        self._size = size
        self._entries: OrderedDict[Hashable, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def lease(self, key: Hashable) -> Lease:
        to_close: list[_Entry] = []
        with self._lock:  # opening under the lock: two requests for one key never open two Memory objects
            entry = self._entries.get(key)
            if entry is None:
                while len(self._entries) >= self._size:
                    _, old = self._entries.popitem(last=False)
                    old.evicted = True
                    if old.users == 0:
                        to_close.append(old)
                entry = self._entries[key] = _Entry(self._open(key))
            else:
                self._entries.move_to_end(key)
            entry.users += 1
        for old in to_close:
            old.memory.close()
        return Lease(self, entry)

    def _release(self, entry: _Entry) -> None:
        with self._lock:
            entry.users -= 1
            close = entry.evicted and entry.users == 0
        if close:
            entry.memory.close()

    def close(self) -> None:
        """Close every Memory nobody uses now; one in use is closed when its request ends."""
        with self._lock:
            entries = list(self._entries.values())
            self._entries.clear()
            for entry in entries:
                entry.evicted = True
            idle = [e for e in entries if e.users == 0]
        for entry in idle:
            entry.memory.close()

    def __len__(self) -> int:
        return len(self._entries)
