"""The viewer's Starlette application: one handler per page, each reading one snapshot and rendering it.

Pages are rendered on the server by Jinja2 with autoescaping on: recorded text (logs, lessons,
evidence, session ids) is data and is only ever shown as escaped text, never as markup, attribute
or URL. The one write, revoke, exists only with allow_write and goes through Memory.revoke_future,
the call behind vlk_revoke_future.

A write answers in the form the page asked for: the viewer's script posts with `Accept:
application/json` and gets {ok, message} (then shows the message and the new state in place); a plain
form post (no script) gets a 303 back to the page with the outcome, or an error page saying why.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any
from urllib.parse import unquote, urlencode

import anyio.to_thread
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..config import mask_password
from ..core import inputs
from ..core.errors import InvalidInput, NotFound, VlkError
from ..core.loops import error_excerpt
from ..core.model import SessionKey, Slot
from ..core.redact import redact
from ..core.render import LOOP_KINDS, estimate_tokens
from ..engine import Memory
from . import impact_page, readmodel
from .chart import savings_chart
from .live import MAX_CLIENTS, ChangeStream
from .security import Guard, Secrets, allowed_hosts

log = logging.getLogger(__name__)

SESSIONS_PER_PAGE = 200
MASK_CACHE_ENTRIES = 4096
MASK_CACHE_MAX_CHARS = 4096  # so the cache holds at most 16 M characters
MAX_BEFORE = 2**62


@dataclass(frozen=True)
class Viewer:
    """The ASGI app and what the launcher prints."""

    app: Any
    url: str  # with the launch token
    secrets: Secrets


def build_app(memory: Memory, *, host: str = "127.0.0.1", port: int, allow_write: bool = False,
              extra_hosts: tuple[str, ...] = (), keys: Secrets | None = None,
              max_live_clients: int = MAX_CLIENTS) -> Viewer:
    """The viewer over this Memory (its store and tenant), answering to host:port."""
    keys = keys or Secrets()
    pages = _Pages(memory, keys, allow_write)
    stream = ChangeStream(memory, max_clients=max_live_clients)
    routes = [
        Route("/", pages.sessions),
        Route("/session", pages.timeline),
        Route("/lessons", pages.lessons),
        Route("/context", pages.context),
        Route("/search", pages.search),
        Route("/impact", partial(impact_page.page, pages)),
        Route("/revoke", pages.revoke, methods=["POST"]),
        Route("/events", stream.endpoint),
        Route("/favicon.ico", lambda request: RedirectResponse("/static/favicon.svg", status_code=301)),
        Mount("/static", app=StaticFiles(packages=[("vlk_memact.viewer", "static")]), name="static"),
    ]
    app = Starlette(routes=routes, exception_handlers={VlkError: pages.error})
    shown_host = f"[{host}]" if ":" in host else host
    if host in ("0.0.0.0", "::"):
        shown_host = "127.0.0.1"
    url = f"http://{shown_host}:{port}/?token={keys.token}"
    guarded = Guard(app, keys, allowed_hosts(host, port, extra_hosts), cookie_name=f"vlk_ui_{port}")
    return Viewer(guarded, url, keys)


def _link(path: str, **params: Any) -> str:
    """A URL of this viewer; values are percent-encoded (the template escapes the result again)."""
    kept = {k: v for k, v in params.items() if v is not None and v != ""}
    return path + ("?" + urlencode(kept) if kept else "")


def _environment(memory: Memory) -> Environment:
    env = Environment(
        loader=PackageLoader("vlk_memact.viewer", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    mask = memory.settings.redact_secrets

    @lru_cache(maxsize=MASK_CACHE_ENTRIES)
    def _masked(text: str) -> str:
        return redact(text).text

    def masked(text: str | None) -> str:
        """Stored text with secrets masked again: rows imported or written with redaction off may hold some.

        Live pages render the same texts again and again: short ones are remembered (bounded memory)."""
        if not text or not mask:
            return text or ""
        return _masked(text) if len(text) <= MASK_CACHE_MAX_CHARS else redact(text).text

    def first_line(text: str | None, width: int = 160) -> str:
        line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
        return line if len(line) <= width else line[: width - 1] + "…"

    def error_line(text: str | None, width: int = 160) -> str:
        """A failure's summary: the lines that carry its error (a host's leading `Exit code 1` is no summary)."""
        return first_line(error_excerpt(text or "", width + 1), width)

    def slot_url(slot: Slot) -> str:
        """The timeline page holding this slot (centred on it), scrolled to it."""
        before = slot.sequence_order + readmodel.TIMELINE_PAGE // 2
        return _link("/session", project=slot.project, session=slot.session_id, before=before) + f"#slot-{slot.id}"

    env.filters["masked"] = masked
    env.filters["first_line"] = first_line
    env.filters["error_line"] = error_line
    env.globals["loop_kinds"] = LOOP_KINDS
    env.filters["tokens"] = estimate_tokens
    env.globals["link"] = _link
    env.globals["slot_url"] = slot_url
    return env


class _Pages:
    """Route handlers. Store reads run in a worker thread: the stores are synchronous."""

    def __init__(self, memory: Memory, keys: Secrets, allow_write: bool) -> None:
        self.memory = memory
        self.keys = keys
        self.allow_write = allow_write
        self.env = _environment(memory)
        self.database = describe_database(memory.database_url)

    def _page(self, request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = self.env.get_template(template).render(
            request_path=request.url.path, allow_write=self.allow_write, csrf=self.keys.csrf,
            database=self.database, tenant=self.memory.tenant, **context)
        return HTMLResponse(html, status_code=status)

    def _session_of(self, request: Request) -> SessionKey:
        project = request.query_params.get("project")
        session = request.query_params.get("session")
        if project is None or session is None:
            raise InvalidInput("This page needs a project and a session; pick one on the sessions page.")
        return SessionKey(self.memory.tenant, inputs.project(project), inputs.session_id(session))

    def _refuse(self, request: Request, status: int, message: str) -> Response:
        """A refused or failed request, saying why: JSON to the viewer's script, an error page otherwise."""
        if _wants_json(request):
            return JSONResponse({"ok": False, "message": message}, status_code=status)
        return self._page(request, "error.html", status=status, message=message, key=None)

    async def error(self, request: Request, exc: Exception) -> Response:
        status = 404 if isinstance(exc, NotFound) else 400
        return self._refuse(request, status, str(exc))

    async def sessions(self, request: Request) -> Response:
        project = request.query_params.get("project") or None
        if project is not None:
            project = inputs.project(project)
        data = await anyio.to_thread.run_sync(readmodel.overview, self.memory, project, SESSIONS_PER_PAGE)
        chart = savings_chart(data.savings, "Tokens saved and loops intercepted over time")
        return self._page(request, "sessions.html", data=data, project=project, chart=chart, key=None,
                          tokens=readmodel.tokens)

    async def timeline(self, request: Request) -> Response:
        key = self._session_of(request)
        before = _int(request.query_params.get("before"), "before", 1, MAX_BEFORE)
        data = await anyio.to_thread.run_sync(readmodel.timeline, self.memory, key, before)
        chart = savings_chart(data.savings, f"Tokens saved and loops intercepted in session {key.session}")
        return self._page(request, "timeline.html", data=data, key=key, chart=chart, before=before)

    async def lessons(self, request: Request) -> Response:
        key = self._session_of(request)
        data = await anyio.to_thread.run_sync(readmodel.lessons, self.memory, key)
        revoked = _int(request.query_params.get("revoked"), "revoked", 1, MAX_BEFORE)
        return self._page(request, "lessons.html", data=data, key=key,
                          revoked=revoked_message(revoked) if revoked else None)

    async def context(self, request: Request) -> Response:
        key = self._session_of(request)
        budget = _int(request.query_params.get("max_tokens"), "max_tokens", 1, inputs.MAX_CONTEXT_TOKENS)
        scoped = self.memory.for_project(key.project)
        result = await anyio.to_thread.run_sync(
            lambda: scoped.preview_context(session_id=key.session, max_tokens=budget))
        return self._page(request, "context.html", result=result, key=key,
                          masked_differs=self.env.filters["masked"](result.text) != result.text)

    async def search(self, request: Request) -> Response:
        query = request.query_params.get("q", "")
        project = request.query_params.get("project") or None
        session = request.query_params.get("session") or None
        results = None
        if query.strip():
            results = await anyio.to_thread.run_sync(readmodel.search, self.memory, query, project, session)
        key = SessionKey(self.memory.tenant, project, session) if project and session else None
        return self._page(request, "search.html", query=query, results=results, project=project,
                          session=session, key=key, limit=readmodel.SEARCH_LIMIT)

    async def revoke(self, request: Request) -> Response:
        if not self.allow_write:
            return self._refuse(request, 403, "This viewer is read-only. Restart it with --allow-write to revoke "
                                "constraints.")
        form = await request.form()
        if not self.keys.csrf_ok(_field(form.get("csrf"))):
            return self._refuse(request, 403, "The form is stale or did not come from this viewer (its CSRF token "
                                "is missing or wrong); reload the page.")
        project, session = _field(form.get("project")), _field(form.get("session"))
        constraint = _int(_field(form.get("timeline_id")), "timeline_id", 1, MAX_BEFORE)
        if project is None or session is None or constraint is None:
            raise InvalidInput("The revoke form needs project, session and timeline_id.")
        scoped = self.memory.for_project(inputs.project(project))
        done = await anyio.to_thread.run_sync(
            lambda: scoped.revoke_future(timeline_id=constraint, session_id=session))
        log.info("Viewer revoked constraint #%d for session %r", done.constraint_id, done.session_id)
        if _wants_json(request):
            return JSONResponse({"ok": True, "constraint_id": done.constraint_id, "message": revoked_message(
                done.constraint_id)})
        return RedirectResponse(_link("/lessons", project=project, session=done.session_id,
                                      revoked=done.constraint_id), status_code=303)


def revoked_message(constraint_id: int) -> str:
    return f"Constraint #{constraint_id} was revoked (moved to PAST); the model no longer sees it."


def _wants_json(request: Request) -> bool:
    return "application/json" in request.headers.get("accept", "")


def _field(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(text: str | None, name: str, low: int, high: int) -> int | None:
    if text is None or text == "":
        return None
    try:
        number = int(text)
    except ValueError:
        raise InvalidInput(f"'{name}' must be a whole number, got {text[:40]!r}.") from None
    if not low <= number <= high:
        raise InvalidInput(f"'{name}' must be between {low} and {high}, got {number}.")
    return number


def describe_database(url: str) -> str:
    """Which database, never with a password (the PostgreSQL store masks it already; again, to be sure)."""
    if url == ":memory:":
        return "SQLite (in memory)"
    if url.startswith("file:"):
        return "SQLite " + unquote(url[len("file:"):].partition("?")[0])
    return "PostgreSQL " + mask_password(url)
