"""Start the HTTP server as a real process on a free loopback port, for the HTTP and conformance tests."""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import time
from pathlib import Path

from worker_isolation import worker_index


# Ports below the kernel's ephemeral range (32768-60999 on Linux), so that no outgoing connection takes
# one between the pick and the server's bind; each xdist worker its own slice, so that two workers never
# pick the same port, nor one worker's wait_for_port find another's server.
_PORTS_FROM, _PORTS_TO, _SLICE = 20000, 32000, 600
_next_port: list[int] = []


def free_port() -> int:
    """A loopback port nobody listens on, from this worker's slice (its first pick at random, then in turn)."""
    first = _PORTS_FROM + (worker_index() * _SLICE) % (_PORTS_TO - _PORTS_FROM)
    if not _next_port:
        _next_port.append(random.randrange(_SLICE))
    for _ in range(_SLICE):
        port = first + _next_port[0] % _SLICE
        _next_port[0] += 1
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue  # taken (another run on this machine, or a server still closing)
            return port
    raise RuntimeError(f"no free loopback port in {first}-{first + _SLICE - 1}")


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError("server did not listen")


def start_server(database_url: str, tokens: str | None, port: int, log: Path, *extra: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "DATABASE_URL": database_url, "VLK_PROJECT": "http-project", "VLK_LOG_LEVEL": "WARNING"}
    env.pop("VLK_AUTH_TOKENS", None)
    if tokens:
        env["VLK_AUTH_TOKENS"] = tokens
    return subprocess.Popen(
        [sys.executable, "-m", "vlk_memact", "serve", "--transport", "streamable-http", "--port", str(port), *extra],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log.open("wb"),
    )
