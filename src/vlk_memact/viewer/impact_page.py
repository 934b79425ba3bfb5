"""The Impact page: what the memory said to agents and what followed, per day, each day and each
intervention linking to the session it happened in. One report (Memory.impact, engine/impact.py) read in a
worker thread; the chart is an inline SVG drawn here (the page's CSP allows no inline style or script)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio.to_thread
from markupsafe import Markup, escape
from starlette.requests import Request
from starlette.responses import Response

from ..core import inputs

WIDTH, HEIGHT = 760, 220
LEFT, RIGHT, TOP, BOTTOM = 56, 64, 18, 46
MAX_DAYS = 60  # the newest days charted; the table lists them all


def impact_chart(days: Sequence[dict[str, Any]]) -> Markup:
    """Per day: a bar of interventions said and, beside it, a bar of good outcomes (fixes applied and resolved,
    denied calls changed, carried facts met again); a line of the characters injected. Each day's bars link to
    its row of the table below (which links to its sessions)."""
    days = list(days)[-MAX_DAYS:]
    if not days:
        return Markup('<p class="empty">Nothing was said to an agent yet.</p>')
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    good = [d["fixes_resolved"] + d["then_changed"] + d["met_again"] for d in days]
    top = max(max(d["interventions"] for d in days), max(good), 1)
    top_chars = max(max(d["chars"] for d in days), 1)
    step = plot_w / len(days)
    bar = min(max(step * 0.35, 2.0), 24.0)
    parts = [
        f'<svg class="chart impact-chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-labelledby="impact-title" '
        'xmlns="http://www.w3.org/2000/svg">',
        '<title id="impact-title">Interventions and outcomes per day, characters injected</title>',
        f'<line class="axis" x1="{LEFT}" y1="{TOP + plot_h}" x2="{LEFT + plot_w}" y2="{TOP + plot_h}"/>',
        f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}"/>',
        f'<text class="tick" x="{LEFT - 6}" y="{TOP + 4}" text-anchor="end">{top}</text>',
        f'<text class="tick" x="{LEFT - 6}" y="{TOP + plot_h + 4}" text-anchor="end">0</text>',
        f'<text class="tick loops" x="{LEFT + plot_w + 6}" y="{TOP + 4}">{top_chars:,}</text>',
        f'<text class="axis-title loops" x="{LEFT + plot_w + 50}" y="{TOP + plot_h / 2}" '
        f'transform="rotate(90 {LEFT + plot_w + 50} {TOP + plot_h / 2})" text-anchor="middle">characters</text>',
    ]
    points = []
    for i, (day, ok) in enumerate(zip(days, good, strict=True)):
        x = LEFT + i * step + step / 2
        said_h, ok_h = plot_h * day["interventions"] / top, plot_h * ok / top
        tip = (f"{day['day']}: {day['interventions']} said, {day['fixes_resolved']} fixes resolved, "
               f"{day['then_changed']} denied calls changed, {day['met_again']} facts met again, "
               f"{day['chars']:,} characters, {len(day['sessions'])} session(s)")
        parts.append(f'<a class="day-link" href="#day-{escape(day["day"])}" data-day="{escape(day["day"])}">'
                     f'<title>{escape(tip)}</title>'
                     f'<rect class="bar said" x="{x - bar:.1f}" y="{TOP + plot_h - said_h:.1f}" width="{bar:.1f}" '
                     f'height="{said_h:.1f}"/>'
                     f'<rect class="bar outcome" x="{x:.1f}" y="{TOP + plot_h - ok_h:.1f}" width="{bar:.1f}" '
                     f'height="{ok_h:.1f}"/></a>')
        points.append(f"{x:.1f},{TOP + plot_h - plot_h * day['chars'] / top_chars:.1f}")
    parts.append(f'<polyline class="line" points="{" ".join(points)}"/>')
    for point, day in zip(points, days, strict=True):
        cx, cy = point.split(",")
        parts.append(f'<circle class="dot" cx="{cx}" cy="{cy}" r="3.5"><title>{escape(day["day"])}: '
                     f'{day["chars"]:,} characters injected</title></circle>')
    for i in sorted({0, len(days) // 2, len(days) - 1}):
        parts.append(f'<text class="tick" x="{LEFT + i * step + step / 2:.1f}" y="{TOP + plot_h + 18}" '
                     f'text-anchor="middle">{escape(days[i]["day"])}</text>')
    parts.append(f'<text class="tick" x="{LEFT}" y="{HEIGHT - 4}">blue: said; green: good outcomes; '
                 'line: characters injected (one group per day, UTC)</text></svg>')
    return Markup("".join(parts))


async def page(pages: Any, request: Request) -> Response:
    """GET /impact[?project=KEY]: the tenant's report (every project unless one is named)."""
    project = request.query_params.get("project") or None
    if project is not None:
        project = inputs.project(project)
    memory = pages.memory if project is None else pages.memory.for_project(project)
    report = await anyio.to_thread.run_sync(lambda: memory.impact(every_project=project is None))
    projects = await anyio.to_thread.run_sync(lambda: _projects(pages.memory))
    return pages._page(request, "impact.html", report=report, project=project, projects=projects, key=None,  # noqa: SLF001
                       chart=impact_chart(report["days"]))


def _projects(memory: Any) -> list[tuple[str, int]]:
    with memory.reading() as tx:
        return tx.projects(memory.tenant)
