"""Start the HTTP server as a real process on a free loopback port, for the HTTP and conformance tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
