"""The savings chart is pure: buckets, totals and escaping, without a database."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from vlk_memact.core.browsing import Saving
from vlk_memact.viewer.chart import MAX_BUCKETS, MIN_BUCKETS, savings_chart
from vlk_memact.viewer.readmodel import tokens


def _saving(i: int, at: datetime, origin: str = "anchor", chars: int = 380) -> Saving:
    return Saving(i, "p", "s", origin, at.strftime("%Y-%m-%d %H:%M:%S"), 3, chars)


def test_no_savings_draws_no_chart() -> None:
    assert "No loop intercepted" in savings_chart([], "t")


def test_three_days_of_loops_fit_in_round_buckets_with_the_right_totals() -> None:
    start = datetime(2026, 11, 28, 0, 0)
    savings = [_saving(i, start + timedelta(hours=7 * i), chars=380 * (i + 1)) for i in range(10)]
    savings.append(_saving(99, start + timedelta(hours=8), origin="lesson", chars=38))
    svg = str(savings_chart(savings, "t"))
    bars = re.findall(r'<rect class="bar"[^>]*><title>([^<]*)</title>', svg)
    assert 0 < len(bars) <= MAX_BUCKETS
    assert "one bar per 6 hours" in svg
    saved = sum(int(re.search(r": ([\d,]+) tokens saved", t).group(1).replace(",", "")) for t in bars)  # type: ignore[union-attr]
    assert saved == sum(tokens(s.archived_chars) for s in savings)
    dots = re.findall(r'<circle class="dot"[^>]*><title>(\d+) loop', svg)
    assert dots[-1] == "10"  # lessons save tokens but are not loops


def test_a_short_history_still_spans_the_minimum_number_of_buckets() -> None:
    svg = str(savings_chart([_saving(1, datetime(2026, 12, 1, 12, 0))], "t"))
    assert svg.count("<polyline") == 1
    points = re.search(r'points="([^"]*)"', svg).group(1).split()  # type: ignore[union-attr]
    assert len(points) == MIN_BUCKETS


def test_text_in_the_chart_is_escaped() -> None:
    svg = str(savings_chart([_saving(1, datetime(2026, 12, 1))], 'session <script>alert(1)</script> "x'))
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "&#34;x" in svg
