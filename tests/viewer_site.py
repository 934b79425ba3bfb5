"""The viewer through Starlette's test client, on a seeded memory (tests/viewer_seed.py): what the viewer
tests share. The `site` and `writable` fixtures (tests/conftest.py) open it read-only and with
--allow-write."""

from __future__ import annotations

from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import urlencode

from starlette.testclient import TestClient
from viewer_seed import MAIN, SHOP, Seeded, seed

from vlk_memact import Memory
from vlk_memact.viewer import build_app

PORT = 48213  # never bound: the test client talks to the app in-process
BASE = f"http://127.0.0.1:{PORT}"
MAIN_QUERY = urlencode({"project": SHOP, "session": MAIN})


@dataclass
class Site:
    client: TestClient
    seeded: Seeded
    memory: Memory
    csrf: str
    token: str


def open_site(memory: Memory, allow_write: bool) -> Site:
    """The viewer as `vlk-memact ui` builds it, on the seeded memory, its token traded for the cookie."""
    seeded = seed(memory)
    viewer = build_app(memory, port=PORT, allow_write=allow_write)
    client = TestClient(viewer.app, base_url=BASE)
    assert client.get("/?token=" + viewer.secrets.token).status_code == 200
    return Site(client, seeded, memory, viewer.secrets.csrf, viewer.secrets.token)


class Elements(HTMLParser):
    """Every start tag with its attributes, as a browser's tokenizer would see them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def elements(page: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = Elements()
    parser.feed(page)
    return parser.tags
