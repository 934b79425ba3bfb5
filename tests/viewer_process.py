"""Run the real `vlk-memact ui` as a subprocess and talk to it over loopback (stdlib HTTP only)."""

from __future__ import annotations

import http.client
import os
import selectors
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import urlsplit

START_SECONDS = 30.0


@dataclass(frozen=True)
class RunningViewer:
    url: str  # as printed, with the token
    host: str
    port: int
    process: subprocess.Popen[str]

    def connection(self, timeout: float = 10.0) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def cookie(self) -> str:
        """Exchange the printed token for the session cookie, as a browser does; 'name=value'."""
        conn = self.connection()
        parts = urlsplit(self.url)
        conn.request("GET", f"{parts.path}?{parts.query}")
        response = conn.getresponse()
        response.read()
        conn.close()
        assert response.status == 303, response.status
        return response.getheader("set-cookie", "").split(";")[0]


@contextmanager
def running_viewer(database_url: str, *args: str) -> Iterator[RunningViewer]:
    """Start the viewer, wait for the URL it prints on stdout, stop it (SIGTERM, then SIGKILL) at the end."""
    env = {**os.environ, "VLK_LOG_LEVEL": "WARNING"}
    process = subprocess.Popen(
        [sys.executable, "-m", "vlk_memact", "--database-url", database_url, "ui", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    try:
        url = _first_line(process)
        parts = urlsplit(url)
        assert parts.hostname and parts.port, url
        yield RunningViewer(url, parts.hostname, parts.port, process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _first_line(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if selector.select(timeout=0.2):
            line = process.stdout.readline()
            if line:
                return line.strip()
        if process.poll() is not None:
            err = process.stderr.read() if process.stderr else ""
            raise AssertionError(f"vlk-memact ui exited with {process.returncode}: {err}")
    raise AssertionError("vlk-memact ui printed no URL in time")
