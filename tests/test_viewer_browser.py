"""The viewer in a real browser: Debian's headless Chromium driven by Selenium (chromedriver given
explicitly, so Selenium Manager never downloads anything).

`vlk-memact ui` runs as a subprocess on a seeded database; the first test opens the URL it printed,
follows a session into its timeline, opens a loop card, reads the anchor's evidence, sees a new slot
arrive live, and checks that no console error was logged and that no recorded script ran. The write
tests click every write control (Revoke) and read the result back from the database: with the script
(fetch, the page updates in place) and as a plain form post; a refused write must say why on the page;
a read-only viewer offers no control; another site's form post (its own origin, or `null` from a
sandboxed frame) is refused although the browser sends the cookie (another port of 127.0.0.1 is the same
site). Screenshots go to the test's folder, and to $VLK_UI_SCREENSHOTS when set (docs/ui-*.png come from
there). Without Chromium the tests are skipped on a dev machine and fail under CI.
"""

from __future__ import annotations

import html
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from viewer_process import RunningViewer, running_viewer
from viewer_seed import MAIN, SHOP, seed, seed_history, spread_over_days

from vlk_memact import Memory
from vlk_memact.core.model import Retired, SessionKey, TemporalState

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

        # The failure a host hook saw resolved: marked, with the fix the hooks recorded for it (fix memory).
        with Memory(url, project=SHOP) as reader, reader.store.read() as tx:
            recorded = {f.passed: f for f in tx.fixes("local", SHOP, MAIN, 50)}
        refunds, alembic = recorded["pytest -q tests/test_refunds.py"], recorded["alembic upgrade head"]
        resolved = browser.find_element(By.ID, f"slot-{seeded.resolved_id}")
        assert "✓ resolved" in resolved.find_element(By.CSS_SELECTOR, ".badge.retired.resolved").text
        shown = resolved.find_element(By.CSS_SELECTOR, ".fix")
        assert shown.get_attribute("data-fix-id") == str(refunds.id)
        assert shown.get_attribute("data-fix-kind") == "fix" and shown.get_attribute("data-fix-demoted") == "0"
        assert shown.find_element(By.CSS_SELECTOR, ".resolution").text.startswith(
            f"Resolved: fixed by the step(s) below (fix #{refunds.id}, recorded ")
        steps = [li.text for li in shown.find_elements(By.CSS_SELECTOR, "ol.fix-steps li")]
        assert len(steps) == 2 and steps[0].startswith("Edit shop/refunds.py: -'amount.quantize(CENTS)' +")
        assert steps[0].endswith("toolu_02refundsedit")
        assert steps[1].startswith("passed pytest -q tests/test_refunds.py toolu_03refundspass ")
        evidence = shown.find_element(By.CSS_SELECTOR, ".fix-evidence")
        assert f"it resolved #{seeded.resolved_id}: FAILED tests/test_refunds.py" in evidence.text
        # ... and the lesson learned from a captured failure that was fixed later: its card shows the fix.
        fixed = browser.find_element(By.ID, f"card-{seeded.fixed_lesson_id}")
        assert "✓ resolved" in fixed.find_element(By.CSS_SELECTOR, "summary").text
        fixed.find_element(By.TAG_NAME, "summary").click()
        note = fixed.find_element(By.CSS_SELECTOR, ".fix")
        WebDriverWait(browser, 5).until(lambda d: note.is_displayed())
        assert note.get_attribute("data-fix-id") == str(alembic.id)
        assert "was later resolved: fixed by the step(s) below" in note.text
        assert "alembic merge heads -m 'merge refunds' toolu_05alembicmerge" in note.text
        assert "passed alembic upgrade head toolu_06alembicpass" in note.text
        browser.execute_script("arguments[0].scrollIntoView({block: 'start'})", resolved)
        browser.execute_script("window.scrollBy(0, -70)")  # below the sticky header
        _screenshot(browser, tmp_path, "ui-timeline-resolved.png")
        browser.execute_script("window.scrollTo(0, 0)")

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


# ---- writes ----

LESSONS = "/lessons?" + urlencode({"project": SHOP, "session": MAIN})


def _active(url: str) -> list[int]:
    with Memory(url, project=SHOP) as memory, memory.store.read() as tx:
        return [c.id for c in tx.visible_constraints(SessionKey("local", SHOP, MAIN))]


def _slot(url: str, slot_id: int) -> Any:
    with Memory(url, project=SHOP) as memory:
        return next(s for s in memory.get_history(session_id=MAIN, limit=500).slots if s.id == slot_id)


def _base(viewer: RunningViewer) -> str:
    return f"http://{viewer.host}:{viewer.port}"


def _sign_in(browser: Any, viewer: RunningViewer, path: str) -> None:
    browser.get(viewer.url)  # the token becomes the cookie
    browser.get(_base(viewer) + path)


def _flash(browser: Any) -> Any:
    from selenium.webdriver.common.by import By

    return browser.find_element(By.ID, "write-status")


def test_revoke_by_clicking_updates_the_page_and_the_database(browser: Any, db_path: Path, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    url = f"sqlite:///{db_path}"
    with Memory(url, project="x") as memory:
        seeded = seed(memory)
    spread_over_days(str(db_path))
    first, second = seeded.conflict_ids
    with running_viewer(url, "--allow-write") as viewer:
        _sign_in(browser, viewer, LESSONS)
        assert not _flash(browser).is_displayed()
        fixed = browser.find_element(By.CSS_SELECTOR, f"#lesson-{seeded.fixed_lesson_id} .fix").text
        assert "was later resolved: fixed by the step(s) below" in fixed and "toolu_05alembicmerge" in fixed
        assert "passed alembic upgrade head toolu_06alembicpass" in fixed
        browser.execute_script("window.__samePage = 1")  # gone if anything below reloads the page
        browser.execute_script("window.__updates = 0; document.addEventListener('vlk:updated', "
                               "function () { window.__updates += 1; })")

        # Cancelling the confirmation sends nothing.
        browser.find_element(By.CSS_SELECTOR, f"#lesson-{first} form.revoke button").click()
        WebDriverWait(browser, 5).until(expected_conditions.alert_is_present())
        assert f"Revoke constraint #{first}?" in browser.switch_to.alert.text
        browser.switch_to.alert.dismiss()
        assert first in _active(url) and not _flash(browser).is_displayed()

        # Confirmed: revoked in the database, said on the page, the lesson gone from the list, no reload.
        browser.find_element(By.CSS_SELECTOR, f"#lesson-{first} form.revoke button").click()
        WebDriverWait(browser, 5).until(expected_conditions.alert_is_present())
        browser.switch_to.alert.accept()
        WebDriverWait(browser, 10).until(lambda d: not d.find_elements(By.ID, f"lesson-{first}"))
        assert _flash(browser).text == f"Constraint #{first} was revoked (moved to PAST); the model no longer sees it."
        assert "ok" in _flash(browser).get_attribute("class").split()
        assert browser.execute_script("return window.__samePage") == 1
        assert first not in _active(url)
        # The page fetched itself after the write, and again when the live stream saw the change: wait for
        # both, so that the steps below act on the page as it stays.
        WebDriverWait(browser, 10).until(lambda d: d.execute_script("return window.__updates") >= 2)
        revoked = _slot(url, first)
        assert revoked.temporal_state == TemporalState.PAST and revoked.retired_reason == Retired.REVOKED
        # The conflict it was part of is gone with it.
        assert not browser.find_elements(By.CSS_SELECTOR, ".lesson-item.conflicted")
        browser.execute_script("window.scrollTo(0, 0)")
        _screenshot(browser, tmp_path, "ui-lessons-revoked.png")

        # A refused write says why on the page (here: a form whose CSRF token is not this launch's, as after
        # a restart), and nothing changes.
        lesson = seeded.lesson_id
        browser.execute_script(
            "document.querySelector(arguments[0]).value = 'from-an-earlier-launch'",
            f"#lesson-{lesson} form.revoke input[name=csrf]")
        browser.find_element(By.CSS_SELECTOR, f"#lesson-{lesson} form.revoke button").click()
        WebDriverWait(browser, 5).until(expected_conditions.alert_is_present())
        browser.switch_to.alert.accept()
        WebDriverWait(browser, 10).until(lambda d: "error" in _flash(d).get_attribute("class").split())
        assert _flash(browser).text.startswith("Refused (HTTP 403): The form is stale or did not come from this viewer")
        assert "CSRF" in _flash(browser).text
        assert browser.find_elements(By.ID, f"lesson-{lesson}") and lesson in _active(url)
        assert browser.find_element(By.CSS_SELECTOR, f"#lesson-{lesson} form.revoke button").is_enabled()
        browser.execute_script("window.scrollTo(0, 0)")
        _screenshot(browser, tmp_path, "ui-write-refused.png")

        # The same form without the script (form.submit() skips the submit handler): the browser's own
        # form POST, the one no-referrer broke, is accepted and lands back on the page saying what was done.
        browser.execute_script("document.querySelector(arguments[0]).submit()", f"#lesson-{second} form.revoke")
        WebDriverWait(browser, 10).until(lambda d: "revoked=" in d.current_url)
        assert browser.execute_script("return window.__samePage") is None  # a real navigation this time
        assert f"Constraint #{second} was revoked" in browser.find_element(By.ID, "write-done").text
        assert not browser.find_elements(By.ID, f"lesson-{second}")
        assert second not in _active(url)

        errors = _console_errors(browser)
        # The refused POST above is logged by Chromium itself as a failed resource load; nothing else.
        assert all("/revoke" in e["message"] and "403" in e["message"] for e in errors), errors
        assert len(errors) == 1, errors


def test_a_read_only_viewer_offers_no_write_and_refuses_one(browser: Any, db_path: Path) -> None:
    from selenium.webdriver.common.by import By

    url = f"sqlite:///{db_path}"
    with Memory(url, project="x") as memory:
        seeded = seed(memory)
    target = seeded.conflict_ids[0]
    with running_viewer(url) as viewer:
        _sign_in(browser, viewer, LESSONS)
        assert browser.find_elements(By.ID, f"lesson-{target}")
        assert not browser.find_elements(By.CSS_SELECTOR, "form.revoke, form[method=post], button.danger")
        assert "--allow-write" in browser.find_element(By.TAG_NAME, "main").text
        assert "read-only" in browser.find_element(By.TAG_NAME, "footer").text
        # Posting anyway, from the viewer's own page (same origin): refused, and it says why.
        answer = browser.execute_async_script("""
            var done = arguments[arguments.length - 1];
            var body = new URLSearchParams({csrf: "x", project: arguments[0], session: arguments[1],
                                            timeline_id: String(arguments[2])});
            fetch("/revoke", {method: "POST", body: body, headers: {"Accept": "application/json"}})
              .then(function (r) { return r.json().then(function (j) { done([r.status, j.message]); }); })
              .catch(function (e) { done([0, String(e)]); });
        """, SHOP, MAIN, target)
        assert answer[0] == 403 and "read-only" in answer[1], answer
        assert target in _active(url)


ATTACKER_FORM = """<!doctype html><title>innocent page</title>
<form method="post" action="{action}">{fields}</form>
<script>document.forms[0].submit()</script>"""

# A sandboxed frame has an opaque origin: its form post carries Origin: null. allow-top-navigation lets
# its response replace the page, so the test can read what the viewer answered.
ATTACKER_SANDBOX = """<!doctype html><title>innocent page</title>
<iframe sandbox="allow-forms allow-scripts allow-top-navigation" srcdoc="{frame}"></iframe>"""


@contextmanager
def _attacker(pages: dict[str, str]) -> Iterator[str]:
    """Another site on this machine: 127.0.0.1 on another port (the same *site* for cookies, another origin)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            body = pages.get(self.path, "not here").encode()
            self.send_response(200 if self.path in pages else 404)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_another_site_s_form_post_is_refused_even_with_the_right_csrf_token(browser: Any, db_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    url = f"sqlite:///{db_path}"
    with Memory(url, project="x") as memory:
        seeded = seed(memory)
    target = seeded.conflict_ids[0]
    with running_viewer(url, "--allow-write") as viewer:
        _sign_in(browser, viewer, LESSONS)
        # The worst case: the other site even knows this launch's CSRF token; the origin check alone stops it.
        csrf = browser.find_element(By.CSS_SELECTOR, f"#lesson-{target} input[name=csrf]").get_attribute("value")
        fields = "".join(f'<input type="hidden" name="{k}" value="{html.escape(str(v))}">' for k, v in
                         {"csrf": csrf, "project": SHOP, "session": MAIN, "timeline_id": target}.items())
        action = _base(viewer) + "/revoke"
        frame = ATTACKER_FORM.format(action=action, fields=fields).replace(
            "<form ", '<form target="_top" ')
        pages = {"/form": ATTACKER_FORM.format(action=action, fields=fields),
                 "/sandboxed": ATTACKER_SANDBOX.format(frame=html.escape(frame, quote=True))}
        with _attacker(pages) as other:
            browser.get(other + "/form")
            WebDriverWait(browser, 10).until(lambda d: d.current_url.startswith(action))
            text = browser.find_element(By.TAG_NAME, "body").text
            assert f"Cross-origin request refused (it came from {other}, not from this viewer)." == text
            assert target in _active(url)

            browser.get(other + "/sandboxed")
            WebDriverWait(browser, 10).until(lambda d: d.current_url.startswith(action))
            text = browser.find_element(By.TAG_NAME, "body").text
            assert text.startswith("Cross-origin request refused (Origin: null"), text
            assert target in _active(url)

        # The viewer itself still works afterwards.
        browser.get(_base(viewer) + LESSONS)
        assert browser.find_elements(By.CSS_SELECTOR, f"#lesson-{target} form.revoke")
