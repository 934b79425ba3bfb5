"""Helpers shared by the subprocess tests: how to start the server, and a raw JSON-RPC pipe to it.

The server is always started as a child process (`python -m vlk_memact`) on its own database file,
the way an MCP host starts it, so these tests see exactly what a host sees on stdin/stdout.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

SERVER_COMMAND = sys.executable
SERVER_ARGS = ["-m", "vlk_memact"]

LEGACY_PROTOCOL_VERSION = "2025-11-25"  # what the SDK negotiates in legacy mode
MODERN_PROTOCOL_VERSION = "2026-07-28"

TOOL_NAMES = frozenset(
    {
        "vlk_time_travel",
        "vlk_get_history",
        "vlk_search_memory",
        "vlk_summarize_session",
        "vlk_fetch_context",
        "vlk_revoke_future",
        "vlk_record_state",
    }
)

RECORD_PREFIX = "📝 [VLK RECORD] PRESENT state recorded as timeline_id="
CONTEXT_HEADER = "=== VLK CHRONESTHESIA LAYER ==="
SYSTEM_ANCHOR = "[SYSTEM ANCHOR]"


def database_url(path: Path) -> str:
    """DATABASE_URL for an absolute file path (sqlite:////tmp/x.db)."""
    return f"sqlite:///{path.resolve()}"


def server_env(db_file: Path, **extra: str) -> dict[str, str]:
    """The complete environment of a server child: the SDK's stdio client passes only an allow-list."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", str(db_file.parent)),
        "DATABASE_URL": database_url(db_file),
        "VLK_LOG_LEVEL": "WARNING",
        "PYTHONUNBUFFERED": "1",
    }
    env.update(extra)
    return env


class JsonRpcWriter:
    """Line-delimited JSON-RPC written to a server process's stdin (shared by the raw-pipe harnesses)."""

    process: subprocess.Popen[bytes]
    _next_id: int = 0

    def send_line(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data.rstrip(b"\n") + b"\n")
        self.process.stdin.flush()

    def send(self, message: Any) -> None:
        self.send_line(json.dumps(message).encode("ascii"))  # escapes keep lone surrogates sendable

    def fresh_id(self, prefix: str = "req") -> str:
        self._next_id += 1
        return f"{prefix}-{self._next_id}"

    def request(self, method: str, params: Any = None, *, request_id: Any = None) -> Any:
        """Send a request and return its id (a fresh one unless given)."""
        rid = self.fresh_id() if request_id is None else request_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return rid

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)


class RawServer(JsonRpcWriter):
    """The server as a child process driven line by line over raw stdin/stdout pipes.

    A reader thread puts every stdout line (bytes) on a queue, so a read never blocks the test for
    longer than its timeout. Every line ever read is kept in `lines`, every response by id in
    `responses`, so a test can assert on the whole stream at the end.
    """

    def __init__(self, env: Mapping[str, str], stderr: IO[bytes]) -> None:
        self.process = subprocess.Popen(
            [SERVER_COMMAND, *SERVER_ARGS],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=dict(env),
        )
        self.lines: list[bytes] = []
        self.responses: dict[Any, dict[str, Any]] = {}
        self._queue: queue.Queue[bytes | None] = queue.Queue()
        self._next_id = 0
        threading.Thread(target=self._read_stdout, name="raw-server-stdout", daemon=True).start()

    def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._queue.put(line)
        self._queue.put(None)  # EOF

    # ---- writing ----

    # ---- reading ----

    def wait_for(self, *ids: Any, timeout: float = 15.0) -> list[dict[str, Any]]:
        """Read stdout until a response has arrived for every id; return them in the order asked.

        Responses may arrive out of order (the SDK serves requests concurrently): whatever else is
        read meanwhile is kept in `responses` for later assertions.
        """
        deadline = time.monotonic() + timeout
        while not all(i in self.responses for i in ids):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                missing = [i for i in ids if i not in self.responses]
                raise TimeoutError(f"no response for {missing} within {timeout}s; got {list(self.responses)}")
            try:
                line = self._queue.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                missing = [i for i in ids if i not in self.responses]
                code = self.process.poll()
                raise EOFError(f"server closed stdout before answering {missing} (exit code {code})")
            self.lines.append(line)
            message = json.loads(line)  # stdout pollution fails here, showing the offending line
            if isinstance(message, dict) and "id" in message:
                self.responses.setdefault(message["id"], message)
        return [self.responses[i] for i in ids]

    def call(self, method: str, params: Any = None, timeout: float = 15.0) -> dict[str, Any]:
        """A request and its response."""
        (response,) = self.wait_for(self.request(method, params), timeout=timeout)
        return response

    def close_stdin_and_wait(self, timeout: float) -> int:
        """Close stdin (what a host does on shutdown), drain stdout, and return the exit code."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        code = self.process.wait(timeout=timeout)
        while (line := self._queue.get(timeout=timeout)) is not None:
            self.lines.append(line)
        return code

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


def initialize_params(protocol_version: str = "2025-06-18") -> dict[str, Any]:
    return {
        "protocolVersion": protocol_version,
        "capabilities": {},
        "clientInfo": {"name": "vlk-memact-raw-pipe-test", "version": "1.0"},
    }


def is_jsonrpc_notification(message: Any) -> bool:
    """A JSON-RPC 2.0 notification: an object with jsonrpc "2.0", a method and no id."""
    return (
        isinstance(message, dict)
        and message.get("jsonrpc") == "2.0"
        and isinstance(message.get("method"), str)
        and "id" not in message
    )


def is_jsonrpc_response(message: Any) -> bool:
    """A JSON-RPC 2.0 response: an object with jsonrpc "2.0", an id, and exactly one of result/error."""
    return (
        isinstance(message, dict)
        and message.get("jsonrpc") == "2.0"
        and "id" in message
        and (("result" in message) != ("error" in message))
    )
