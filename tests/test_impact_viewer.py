"""The viewer's Impact page in a real browser (Debian's headless Chromium, as tests/test_viewer_browser.py runs
it): after session A fixed three errors and session B was told them, denied once and carried a fact (the
in-process Claude Code scenario of tests/impact_scenario.py), a person opens the viewer, clicks Impact, reads
the figures `vlk-memact impact` reports, clicks the day's bars in the chart and follows the day's session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from impact_scenario import run_session_a, run_session_b
from test_viewer_browser import _console_errors, _screenshot, browser  # noqa: F401 - the fixture
from viewer_process import running_viewer

from vlk_memact import Memory

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]
PROJECT = "/work/project"


def test_the_impact_page_shows_the_figures_and_links_each_day_to_its_sessions(
        browser: Any, tmp_path: Path) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    url = f"sqlite:///{tmp_path / 'vlk.db'}"
    with Memory(url, project=PROJECT) as memory:
        run_session_a(memory)
        run_session_b(memory)
        report = memory.impact()
    with running_viewer(url) as viewer:
        browser.get(viewer.url)
        browser.find_element(By.LINK_TEXT, "Impact").click()
        WebDriverWait(browser, 10).until(lambda d: "/impact" in d.current_url)
        told = report["fixes_told"]
        assert browser.find_element(By.ID, "fixes-told").text.startswith(
            f"{told['total']}: applied {told['applied']}, resolved {told['resolved']}")
        assert told["total"] == told["applied"] == told["resolved"] == 3
        assert browser.find_element(By.ID, "steps-saved").text == str(report["steps_saved"])
        assert browser.find_element(By.ID, "denials").text.startswith("1: then changed 1")
        assert browser.find_element(By.ID, "carried").text == (
            f"{report['carried_facts']['told']}: met again {report['carried_facts']['met_again']}")
        assert browser.find_element(By.ID, "chars").text.startswith(f"{report['chars_injected']:,} ")
        fixes = [li.text for li in browser.find_elements(By.CSS_SELECTOR, ".impact-fix")]
        assert any("cp .env.example .env" in f for f in fixes) and any("timeout = 30" in f for f in fixes)
        assert any("python3 tool.py --mode quick" in f for f in fixes)
        bars = browser.find_elements(By.CSS_SELECTOR, "svg.impact-chart a.day-link rect.bar")
        assert len(bars) == 2 * len(report["days"])  # said and good outcomes, per day
        _screenshot(browser, tmp_path, "ui-impact.png")

        day = report["days"][-1]["day"]
        browser.find_element(By.CSS_SELECTOR, f'svg.impact-chart a.day-link[data-day="{day}"] rect.outcome').click()
        WebDriverWait(browser, 5).until(lambda d: d.current_url.endswith(f"#day-{day}"))
        row = browser.find_element(By.ID, f"day-{day}")
        links = row.find_elements(By.CSS_SELECTOR, "a.session-link")
        assert sorted(a.text for a in links) == ["A", "B"]
        session_b = next(a for a in links if a.text == "B")
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", session_b)  # off the sticky header
        session_b.click()
        WebDriverWait(browser, 10).until(lambda d: "/session" in d.current_url and "session=B" in d.current_url)
        assert browser.find_elements(By.CSS_SELECTOR, ".lanes-head .lane-present")

        browser.back()
        browser.back()
        WebDriverWait(browser, 10).until(lambda d: "/impact" in d.current_url)
        denied = browser.find_element(By.CSS_SELECTOR, "tr.intervention.deny")
        assert "changed the call to sh deploy.sh --dry-run, then it worked" in denied.text
        assert _console_errors(browser) == []
