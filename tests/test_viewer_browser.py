"""The viewer in a real browser: Debian's headless Chromium driven by Selenium (chromedriver given
explicitly, so Selenium Manager never downloads anything).

`vlk-memact ui` runs as a subprocess on a seeded database; the test opens the URL it printed, follows
a session into its timeline, opens a loop card, reads the anchor's evidence, sees a new slot arrive
live, and checks that no console error was logged and that no recorded script ran. Screenshots go to
the test's folder, and to $VLK_UI_SCREENSHOTS when set (docs/ui-timeline.png comes from there).
Without Chromium the test is skipped on a dev machine and fails under CI.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from viewer_process import running_viewer
from viewer_seed import MAIN, SHOP, seed, seed_history, spread_over_days

from vlk_memact import Memory

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
INSTALL = "apt-get update && apt-get install -y chromium chromium-driver"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1400,1000", "--force-device-scale-factor=1"]


def _require_browser() -> None:
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("selenium (pip install -e '.[test]')")
    if missing:
        reason = f"missing {', '.join(missing)}; install with: {INSTALL}"
        if os.environ.get("CI"):
            pytest.fail(reason + " (CI is set, so this fails instead of skipping)")
        pytest.skip(reason)


@pytest.fixture
def browser() -> Iterator[Any]:
    _require_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    profile = tempfile.mkdtemp(prefix="vlk-chromium-")
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _screenshot(driver: Any, folder: Path, name: str) -> Path:
    path = folder / name
    driver.save_screenshot(str(path))
    extra = os.environ.get("VLK_UI_SCREENSHOTS")
    if extra:
        Path(extra).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, Path(extra) / name)
    return path


def _console_errors(driver: Any) -> list[dict[str, Any]]:
    return [entry for entry in driver.get_log("browser") if entry.get("level") == "SEVERE"]


def test_a_person_follows_a_session_into_its_timeline_and_opens_a_loop(
    browser: Any, db_path: Path, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    url = f"sqlite:///{db_path}"
    with Memory(url, project="x") as memory:
        seed_history(memory)
        seeded = seed(memory)
    spread_over_days(str(db_path))

    with running_viewer(url, "--allow-write") as viewer:
        browser.get(viewer.url)
        assert "token=" not in browser.current_url  # exchanged for the cookie, dropped from the address bar
        assert browser.execute_script("return document.cookie") == ""  # HttpOnly: invisible to scripts
        assert browser.find_element(By.CSS_SELECTOR, "svg.chart rect.bar")
        _screenshot(browser, tmp_path, "ui-sessions.png")

        browser.find_element(By.LINK_TEXT, MAIN).click()
        WebDriverWait(browser, 10).until(lambda d: "/session" in d.current_url)
        assert browser.find_elements(By.CSS_SELECTOR, ".lanes-head .lane-present")

        card = browser.find_element(By.ID, f"card-{seeded.anchor_id}")
        evidence = card.find_element(By.CSS_SELECTOR, "pre.evidence")
        assert not evidence.is_displayed()  # collapsed until the person opens it
        card.find_element(By.TAG_NAME, "summary").click()
        WebDriverWait(browser, 5).until(lambda d: evidence.is_displayed())
        assert "unsupported operand type(s) for +: 'Decimal' and 'float'" in evidence.text
        linked = card.find_elements(By.CSS_SELECTOR, "ul.linked a")
        assert len(linked) == 3

        # The injected tool output is on this page, as text; none of it ran or became an element.
        assert "<script>window.__pwned=1</script>" in browser.find_element(By.TAG_NAME, "main").text
        assert browser.execute_script("return window.__pwned === undefined")
        assert not browser.find_elements(By.ID, "injected")
        assert not browser.find_elements(By.CSS_SELECTOR, "main img")
        browser.execute_script("window.scrollTo(0, 0)")
        _screenshot(browser, tmp_path, "ui-timeline.png")

        # Live: a slot recorded by an agent elsewhere appears without a reload; the open card stays open.
        WebDriverWait(browser, 10).until(
            lambda d: "live" in d.find_element(By.ID, "live-status").get_attribute("class").split())
        with Memory(url, project=SHOP) as agent:
            new = agent.record_state(raw_log="error: the page should show me without a reload", session_id=MAIN)
        WebDriverWait(browser, 15).until(lambda d: d.find_elements(By.ID, f"slot-{new.timeline_id}"))
        assert browser.find_element(By.ID, f"card-{seeded.anchor_id}").get_attribute("open") is not None

        browser.find_element(By.LINK_TEXT, "Lessons").click()
        WebDriverWait(browser, 10).until(lambda d: "/lessons" in d.current_url)
        assert browser.find_elements(By.CSS_SELECTOR, ".lesson-item.conflicted")
        _screenshot(browser, tmp_path, "ui-lessons.png")

        browser.find_element(By.LINK_TEXT, "What the model sees").click()
        WebDriverWait(browser, 10).until(lambda d: "/context" in d.current_url)
        with Memory(url, project=SHOP) as agent:
            expected = agent.preview_context(session_id=MAIN).text
        shown = browser.find_element(By.ID, "context-text").text
        assert shown.split() == expected.split()  # the same text (the browser folds the trailing newline)
        _screenshot(browser, tmp_path, "ui-context.png")

        assert browser.execute_script("return window.__pwned === undefined")
        assert _console_errors(browser) == []
