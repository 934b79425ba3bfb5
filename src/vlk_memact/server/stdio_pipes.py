"""Stdio without worker threads: the SDK's stdio transport over the event loop's own pipe streams.

The SDK reads stdin and writes stdout through anyio's wrapped files: a worker-thread hand-off per line read,
per write and per flush, three per tool call, which made a no-op call over stdio cost 0.4 ms more than the
same call served by the event loop (bench/results/goals.md). The SDK's stdio_server takes the two streams as
arguments; these are such streams (lines of text in, text out and flushed), read and written by asyncio's
pipe transports from the same poll that wakes the loop for everything else.

As the SDK does when it opens the streams itself, while serving the process's fd 0 reads the null device and
fd 1 writes to stderr, so that a stray print or a child process cannot corrupt the protocol; both are put
back on exit. Where stdin or stdout is not a pipe, socket or terminal (a regular file), or off POSIX, nothing
is claimed here and the SDK's own streams serve.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import anyio

from . import sdk_private

log = logging.getLogger(__name__)

LINE_LIMIT = 1 << 30  # one message is one line; the SDK's own reader sets no limit either


def serve_stdio(server: Any) -> None:
    """MCP over stdin and stdout until the client closes stdin: the SDK's stdio transport, its two streams
    served by the event loop, or by the SDK's own threads where the loop cannot serve them."""

    async def serve() -> None:
        with claimed() as streams:
            await sdk_private.serve_stdio(server, *(streams or (None, None)))

    anyio.run(serve)


def servable(fd: int) -> bool:
    """Whether asyncio's pipe transports can serve this descriptor (a pipe, a socket or a character device)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


class LinesIn:
    """The client's messages: one line of UTF-8 each (undecodable bytes replaced, as the SDK reads them)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=LINE_LIMIT)
        pipe = os.fdopen(self._fd, "rb", buffering=0, closefd=False)
        transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
        try:
            while line := await reader.readline():
                yield line.decode("utf-8", errors="replace")
        finally:
            transport.close()


class TextOut:
    """The server's messages, written without blocking the loop; flush() waits while the client lags behind."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._writer: asyncio.StreamWriter | None = None

    async def write(self, text: str) -> None:
        if self._writer is None:
            loop = asyncio.get_running_loop()
            pipe = os.fdopen(self._fd, "wb", buffering=0, closefd=False)
            transport, protocol = await loop.connect_write_pipe(
                lambda: asyncio.streams.FlowControlMixin(loop=loop), pipe)
            self._writer = asyncio.StreamWriter(transport, protocol, None, loop)
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        if self._writer is not None:
            await self._writer.drain()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


@contextmanager
def claimed() -> Iterator[tuple[LinesIn, TextOut] | None]:
    """The wire's streams, while fd 0 reads the null device and fd 1 writes to stderr (the null device if
    there is no stderr); None, with nothing claimed, where the pipe transports cannot serve the wire."""
    if os.name != "posix" or not (servable(0) and servable(1)):
        yield None
        return
    saved = {0: os.dup(0), 1: os.dup(1)}  # the wire: served from here, put back at 0 and 1 on exit
    null = os.open(os.devnull, os.O_RDWR)
    try:
        os.dup2(null, 0)
        try:
            os.dup2(2, 1)
        except OSError:  # no stderr: stray output goes nowhere rather than onto the wire
            os.dup2(null, 1)
        out = TextOut(saved[1])
        yield LinesIn(saved[0]), out
        out.close()
    finally:
        for fd, original in saved.items():
            try:
                os.set_blocking(original, True)  # the pipe transports made the wire non-blocking
                os.dup2(original, fd)
            except OSError as exc:  # pragma: no cover - a descriptor lost meanwhile
                log.warning("could not give fd %d back after serving stdio: %s", fd, exc)
        for fd in (*saved.values(), null):
            try:
                os.close(fd)
            except OSError:
                pass
