"""Helpers for the fault tests: a stdio server child with a hook run before exec, tool calls that may fail,
and the two ways root makes a fault real (a size-limited tmpfs; file permissions without root's override).

Root bypasses file permissions through the CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH capabilities, not
through its uid: `without_permission_override` drops both from the child's bounding set before exec (the
kernel then grants an exec'd root process only what is left), so chmod applies to the server while it
keeps uid 0 and can still read the interpreter under /root. A non-root run needs nothing: permissions
apply to it already.
"""

from __future__ import annotations

import ctypes
import os
import queue
import subprocess
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import pytest
from mcp_clients import SERVER_ARGS, SERVER_COMMAND
from stdio_harness import ServerPipe

PR_CAPBSET_DROP = 24
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 1, 2


def without_permission_override() -> None:
    """preexec_fn: the child (and what it execs) obeys file permissions even as root."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"prctl(PR_CAPBSET_DROP, {capability}): {os.strerror(errno)}")


def fail_or_skip(reason: str) -> None:
    """Skip locally; fail when CI is set, so CI can never pass by skipping a fault test."""
    if os.environ.get("CI"):
        pytest.fail(reason + " (CI is set, so this fails instead of skipping)")
    pytest.skip(reason)


@contextmanager
def small_filesystem(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` mounted at `where` (needs root with CAP_SYS_ADMIN), unmounted afterwards."""
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        fail_or_skip(f"cannot mount a size-limited tmpfs (needs root with CAP_SYS_ADMIN): {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill_up(folder: Path) -> Path:
    """Write a filler file until the file system holding folder reports ENOSPC; return it."""
    filler = folder / "filler.bin"
    chunk = b"\0" * 65536
    with filler.open("wb", buffering=0) as out:
        try:
            while True:
                out.write(chunk)
        except OSError as exc:
            assert exc.errno == 28, exc  # ENOSPC
    with filler.open("ab", buffering=0) as out:  # the last partial chunk
        try:
            while True:
                out.write(b"\0" * 512)
        except OSError:
            pass
    return filler


class FaultServer(ServerPipe):
    """ServerPipe with a preexec hook (permissions, limits) for the child."""

    def __init__(self, env: Mapping[str, str], stderr: IO[bytes],
                 preexec: Callable[[], None] | None = None) -> None:
        self.process = subprocess.Popen(
            [SERVER_COMMAND, *SERVER_ARGS],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=dict(env),
            preexec_fn=preexec,
        )
        self.responses: dict[str, dict[str, Any]] = {}
        self.lines_read = 0
        self.error_codes: Counter[int] = Counter()
        self._queue: queue.Queue[bytes | None] = queue.Queue()
        self._next_id = 0
        self._reader = threading.Thread(target=self._read_stdout, name="fault-server-stdout", daemon=True)
        self._reader.start()

    def tool(self, name: str, timeout: float = 60.0, **arguments: Any) -> tuple[bool, str, dict[str, Any]]:
        """(isError, text, structuredContent) of one tool call; a JSON-RPC error fails the test."""
        (response,) = self.wait_for(self.tool_request(name, arguments), timeout=timeout)
        assert "error" not in response, f"JSON-RPC error instead of a tool result: {response['error']}"
        result = response["result"]
        text = result["content"][0]["text"]
        if result.get("isError"):  # the SDK's prefix, then our message
            prefix = f"Error executing tool {name}: "
            assert text.startswith(prefix), text
            text = text[len(prefix):]
        return bool(result.get("isError")), text, result.get("structuredContent") or {}

    def ok(self, name: str, **arguments: Any) -> dict[str, Any]:
        is_error, text, data = self.tool(name, **arguments)
        assert not is_error, text
        return data

    def alive(self) -> bool:
        return self.process.poll() is None


def history_ids(server: FaultServer, session: str = "default") -> dict[int, dict[str, Any]]:
    """Every slot of a session as the server itself reports it, by id."""
    data = server.ok("vlk_get_history", limit=500, session_id=session)
    return {slot["id"]: slot for slot in data["slots"]}
