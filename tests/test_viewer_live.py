"""The real `vlk-memact ui` process: the URL it prints, live updates over server-sent events, and the
bounded number of live clients. Everything over loopback on a port the viewer chose itself."""

from __future__ import annotations

import http.client
import re
import time
from pathlib import Path

import pytest
from viewer_process import RunningViewer, running_viewer
from viewer_seed import MAIN, SHOP, seed

from vlk_memact import Memory
from vlk_memact.viewer.live import MAX_CLIENTS

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


@pytest.fixture
def seeded_file(db_path: Path) -> str:
    url = f"sqlite:///{db_path}"
    with Memory(url, project="x") as memory:
        seed(memory)
    return url


def _open_stream(viewer: RunningViewer, cookie: str) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    conn = viewer.connection(timeout=10)
    conn.request("GET", "/events", headers={"cookie": cookie, "accept": "text/event-stream"})
    return conn, conn.getresponse()


def _next_event(response: http.client.HTTPResponse) -> str:
    """The name of the next event (comments and retry lines skipped)."""
    while True:
        line = response.fp.readline().decode()
        if not line:
            raise AssertionError("the event stream ended")
        if line.startswith("event: "):
            return line[len("event: "):].strip()


def test_the_printed_url_names_the_port_actually_bound_on_loopback(seeded_file: str) -> None:
    with running_viewer(seeded_file) as viewer:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/\?token=[A-Za-z0-9_-]{40,}", viewer.url)
        assert viewer.port != 0
        cookie = viewer.cookie()
        conn = viewer.connection()
        conn.request("GET", "/", headers={"cookie": cookie})
        page = conn.getresponse().read().decode()
        assert MAIN in page


def _listening_addresses(port: int) -> list[str]:
    """Local addresses (hex, as the kernel lists them) of sockets listening on port (Linux /proc)."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, _, hex_port = local.partition(":")
            if state == "0A" and int(hex_port, 16) == port:
                found.append(address)
    return found


def test_the_viewer_listens_on_loopback_only(seeded_file: str) -> None:
    with running_viewer(seeded_file) as viewer:
        assert _listening_addresses(viewer.port) == ["0100007F"]  # 127.0.0.1, nothing else


def test_an_open_page_hears_about_new_slots(seeded_file: str) -> None:
    with running_viewer(seeded_file) as viewer:
        conn, response = _open_stream(viewer, viewer.cookie())
        assert response.status == 200 and response.getheader("content-type", "").startswith("text/event-stream")
        assert _next_event(response) == "hello"
        with Memory(seeded_file, project=SHOP) as writer:
            writer.record_state(raw_log="error: a new failure while the page is open", session_id=MAIN)
        started = time.monotonic()
        assert _next_event(response) == "change"
        assert time.monotonic() - started < 5
        conn.close()


def test_live_clients_are_bounded_and_released_when_pages_close(seeded_file: str) -> None:
    with running_viewer(seeded_file) as viewer:
        cookie = viewer.cookie()
        streams = []
        for _ in range(MAX_CLIENTS):
            conn, response = _open_stream(viewer, cookie)
            assert response.status == 200
            assert _next_event(response) == "hello"
            streams.append(conn)
        conn, refused = _open_stream(viewer, cookie)
        assert refused.status == 503
        refused.read()
        conn.close()
        streams.pop().close()
        deadline = time.monotonic() + 10
        while True:  # the server notices the closed page within a poll interval
            conn, response = _open_stream(viewer, cookie)
            if response.status == 200:
                break
            response.read()
            conn.close()
            assert time.monotonic() < deadline, "a closed page kept its live slot"
            time.sleep(0.3)
        conn.close()
        for stream in streams:
            stream.close()

