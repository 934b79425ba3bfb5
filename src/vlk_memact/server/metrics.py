"""GET /metrics on the HTTP server: the impact totals (engine/impact.py) in Prometheus text format, per tenant.

Behind the same bearer token as /mcp (the middleware order in transports.http_app): a scrape sees the totals
of the tenant its token maps to, labelled with it; without tokens (loopback only) the default tenant's.
The figures are counts computed from the stored interventions, so a restart never resets them (retention
does lower them: Prometheus reads a drop as a counter reset).
"""

from __future__ import annotations

import time
from typing import Any

import anyio.to_thread
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from starlette.types import ASGIApp, Receive, Scope, Send

METRICS_PATH = "/metrics"


class _Report:
    """A one-shot collector of one tenant's report."""

    def __init__(self, tenant: str, report: dict[str, Any]) -> None:
        self.tenant, self.report = tenant, report

    def collect(self) -> Any:
        r, t = self.report, [self.tenant]
        said = CounterMetricFamily("vlk_memact_interventions", "What the memory said to agents, by kind "
                                   "(fix_withheld: held back by VLK_HOLDOUT)", labels=["tenant", "kind"])
        for kind, count in r["interventions"].items():
            said.add_metric([*t, kind], count)
        yield said
        chars = CounterMetricFamily("vlk_memact_chars_injected", "Characters put in front of agents",
                                    labels=["tenant"])
        chars.add_metric(t, r["chars_injected"])
        yield chars
        for name, part, text in (
                ("fixes", "fixes_told", "Fixes told, and of them applied (steps ran again) and resolved"),
                ("denials", "denials", "Calls denied by the guard, and what the agent did next"),
                ("carried_facts", "carried_facts", "Facts carried at session start, and met again in it"),
                ("lessons_recalled", "lessons_recalled", "Lessons recalled when their error came back")):
            family = CounterMetricFamily(f"vlk_memact_{name}", text, labels=["tenant", "outcome"])
            for outcome, count in r[part].items():
                family.add_metric([*t, outcome], count)
            yield family
        saved = CounterMetricFamily("vlk_memact_steps_saved", "Steps saved by applied and resolved fixes against "
                                    "the sessions that found them", labels=["tenant"])
        saved.add_metric(t, r["steps_saved"])
        yield saved
        sessions = GaugeMetricFamily("vlk_memact_sessions_intervened", "Sessions the memory said something in",
                                     labels=["tenant"])
        sessions.add_metric(t, r["sessions"])
        yield sessions


def exposition(memory: Any) -> bytes:
    """The Prometheus text page of this memory's tenant (every project)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Report(memory.tenant, memory.impact(every_project=True)))  # type: ignore[arg-type]
    return generate_latest(registry)


class Metrics:
    """ASGI: answers GET /metrics, passes everything else to the MCP app. A tenant's page is kept CACHE_SECONDS,
    so that several scrapers (or replicas' scrapes) cost one report."""

    CACHE_SECONDS = 5.0

    def __init__(self, app: ASGIApp, memory: Any) -> None:
        self.app, self.memory = app, memory
        self._pages: dict[str, tuple[float, bytes]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") != METRICS_PATH:
            await self.app(scope, receive, send)
            return
        if scope.get("method") not in ("GET", "HEAD"):
            await _answer(send, 405, b"only GET\n", b"text/plain; charset=utf-8")
            return
        user = scope.get("user")
        token = getattr(user, "access_token", None)
        memory = self.memory if token is None else self.memory.for_tenant(token.client_id)
        kept = self._pages.get(memory.tenant)
        if kept is not None and time.monotonic() - kept[0] < self.CACHE_SECONDS:
            body = kept[1]
        else:
            body = await anyio.to_thread.run_sync(exposition, memory)
            self._pages[memory.tenant] = (time.monotonic(), body)
        await _answer(send, 200, body if scope["method"] == "GET" else b"", CONTENT_TYPE_LATEST.encode())


async def _answer(send: Send, status: int, body: bytes, content_type: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", content_type)]})
    await send({"type": "http.response.body", "body": body})
