"""Live updates: a server-sent event stream that says "changed" when the tenant's memory changes.

The store is polled, not notified: writers are other processes (agents' servers, hooks, the CLI) on
SQLite or PostgreSQL, and the change marker (highest slot id, number of FUTURE slots) is two indexed
lookups. At most MAX_CLIENTS streams are open at once (a further one gets 503), each ends when its
page goes away, and a comment line every HEARTBEAT_SECONDS lets a dead connection be noticed.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import AsyncIterator, Callable

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse

from ..engine import Memory

log = logging.getLogger(__name__)

MAX_CLIENTS = 8
POLL_SECONDS = 1.0
HEARTBEAT_SECONDS = 15.0


class ChangeStream:
    """The /events endpoint: one bounded set of clients per viewer."""

    def __init__(self, memory: Memory, max_clients: int = MAX_CLIENTS, poll_seconds: float = POLL_SECONDS) -> None:
        self.memory = memory
        self.max_clients = max_clients
        self.poll_seconds = poll_seconds
        self.clients = 0

    def _marker(self) -> tuple[int, int]:
        with self.memory.reading() as tx:
            return tx.change_marker(self.memory.tenant)

    async def endpoint(self, request: Request) -> Response:
        if self.clients >= self.max_clients:
            return PlainTextResponse(f"At most {self.max_clients} live pages at once; reload later.", status_code=503)
        self.clients += 1
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                self.clients -= 1

        events = self._events(request, release)
        # A stream whose client left before its first event never runs its `finally`: release on collection.
        weakref.finalize(events, release)
        return StreamingResponse(events, media_type="text/event-stream", headers={"x-accel-buffering": "no"})

    async def _events(self, request: Request, release: Callable[[], None]) -> AsyncIterator[str]:
        try:
            last = await anyio.to_thread.run_sync(self._marker)
            yield f"retry: 3000\nevent: hello\ndata: {last[0]}\n\n"
            quiet = 0.0
            while not await request.is_disconnected():
                await asyncio.sleep(self.poll_seconds)
                now = await anyio.to_thread.run_sync(self._marker)
                if now != last:
                    last = now
                    quiet = 0.0
                    yield f"event: change\ndata: {now[0]}\n\n"
                else:
                    quiet += self.poll_seconds
                    if quiet >= HEARTBEAT_SECONDS:
                        quiet = 0.0
                        yield ": still here\n\n"
        finally:
            release()
