"""Loops intercepted and tokens saved over time, as an inline SVG drawn on the server; pure.

Bars are the tokens saved per time bucket (loop anchors and time-travel lessons), the line the
running count of loops intercepted. The bucket width is the smallest of a few round widths that
keeps the chart under MAX_BUCKETS bars. Styling comes from classes (the page's CSP allows no
inline style); every text is escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from markupsafe import Markup, escape

from ..core.browsing import Saving
from .readmodel import tokens

WIDTH, HEIGHT = 760, 200
LEFT, RIGHT, TOP, BOTTOM = 64, 56, 18, 42
MAX_BUCKETS = 40
MIN_BUCKETS = 12  # a short history still reads as "over time": it ends at the right edge
MAX_BAR = 36.0
WIDTHS = [timedelta(minutes=m) for m in (1, 5, 15, 60, 360, 1440, 10080)]


def _parse(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp[:19])


def _floor(moment: datetime, width: timedelta) -> datetime:
    epoch = datetime(2000, 1, 1)
    return epoch + ((moment - epoch) // width) * width


def _label(moment: datetime, width: timedelta) -> str:
    return moment.strftime("%Y-%m-%d" if width >= timedelta(days=1) else "%m-%d %H:%M")


def savings_chart(savings: Sequence[Saving], title: str) -> Markup:
    """The SVG element (safe markup: every piece of text in it is escaped here)."""
    if not savings:
        return Markup('<p class="empty">No loop intercepted and no slot archived yet.</p>')
    moments = [_parse(s.created_at) for s in savings]
    start, end = min(moments), max(moments)
    width = next((w for w in WIDTHS if (end - start) / w < MAX_BUCKETS), WIDTHS[-1])
    last = _floor(end, width)
    first = min(_floor(start, width), last - (MIN_BUCKETS - 1) * width)
    count = int((last - first) / width) + 1
    saved = [0] * count
    loops = [0] * count
    for saving, moment in zip(savings, moments, strict=True):
        index = int((_floor(moment, width) - first) / width)
        saved[index] += tokens(saving.archived_chars)
        loops[index] += saving.origin == "anchor"
    running = []
    total = 0
    for n in loops:
        total += n
        running.append(total)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    top_saved = max(max(saved), 1)
    top_loops = max(total, 1)
    step = plot_w / count
    bar_w = min(max(step * 0.7, 1.0), MAX_BAR)
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-labelledby="chart-title" '
        'xmlns="http://www.w3.org/2000/svg">',
        f'<title id="chart-title">{escape(title)}</title>',
        f'<line class="axis" x1="{LEFT}" y1="{TOP + plot_h}" x2="{LEFT + plot_w}" y2="{TOP + plot_h}"/>',
        f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}"/>',
        f'<line class="grid" x1="{LEFT}" y1="{TOP}" x2="{LEFT + plot_w}" y2="{TOP}"/>',
        f'<text class="tick" x="{LEFT - 6}" y="{TOP + 4}" text-anchor="end">{top_saved:,}</text>',
        f'<text class="tick" x="{LEFT - 6}" y="{TOP + plot_h + 4}" text-anchor="end">0</text>',
        f'<text class="tick loops" x="{LEFT + plot_w + 6}" y="{TOP + 4}">{top_loops}</text>',
        f'<text class="tick loops" x="{LEFT + plot_w + 6}" y="{TOP + plot_h + 4}">0</text>',
        f'<text class="axis-title" x="{LEFT - 50}" y="{TOP + plot_h / 2}" '
        f'transform="rotate(-90 {LEFT - 50} {TOP + plot_h / 2})" text-anchor="middle">tokens saved</text>',
        f'<text class="axis-title loops" x="{LEFT + plot_w + 44}" y="{TOP + plot_h / 2}" '
        f'transform="rotate(90 {LEFT + plot_w + 44} {TOP + plot_h / 2})" text-anchor="middle">loops (total)</text>',
    ]
    points = []
    for i in range(count):
        x = LEFT + i * step + (step - bar_w) / 2
        h = plot_h * saved[i] / top_saved
        moment = first + i * width
        tip = f"{_label(moment, width)}: {saved[i]:,} tokens saved, {loops[i]} loop(s), {running[i]} in total"
        if saved[i]:
            parts.append(f'<rect class="bar" x="{x:.1f}" y="{TOP + plot_h - h:.1f}" width="{bar_w:.1f}" '
                         f'height="{h:.1f}"><title>{escape(tip)}</title></rect>')
        cx = LEFT + i * step + step / 2
        cy = TOP + plot_h - plot_h * running[i] / top_loops
        points.append(f"{cx:.1f},{cy:.1f}")
    parts.append(f'<polyline class="line" points="{" ".join(points)}"/>')
    for i, point in enumerate(points):
        if loops[i]:
            dot_x, dot_y = point.split(",")
            parts.append(f'<circle class="dot" cx="{dot_x}" cy="{dot_y}" r="3.5"><title>{running[i]} loop(s) '
                         f'intercepted by {escape(_label(first + i * width, width))}</title></circle>')
    for i in sorted({0, count // 2, count - 1}):
        x = LEFT + i * step + step / 2
        parts.append(f'<text class="tick" x="{x:.1f}" y="{TOP + plot_h + 18}" text-anchor="middle">'
                     f"{escape(_label(first + i * width, width))}</text>")
    parts.append(f'<text class="tick" x="{LEFT + plot_w}" y="{HEIGHT - 4}" text-anchor="end">'
                 f"one bar per {escape(_width_name(width))} (UTC)</text>")
    parts.append("</svg>")
    return Markup("".join(parts))


def _width_name(width: timedelta) -> str:
    minutes = int(width.total_seconds() // 60)
    if minutes % 10080 == 0:
        return "week"
    if minutes % 1440 == 0:
        return "day"
    if minutes % 60 == 0:
        return f"{minutes // 60} hours" if minutes > 60 else "hour"
    return f"{minutes} minutes" if minutes > 1 else "minute"
