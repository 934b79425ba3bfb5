"""`vlk-memact ui` through Starlette's test client, on SQLite and PostgreSQL: recorded text comes out inert,
and the guard (token, cookie, Host, Origin, CSRF, read-only by default) lets nothing else in; nothing of the
configuration, the database password or an unredacted secret is shown."""

from __future__ import annotations

import html
from typing import Any
from urllib.parse import urlencode

import pytest
from starlette.testclient import TestClient
from viewer_seed import HOSTILE_SESSION, MAIN, SHOP, seed
from viewer_site import BASE, MAIN_QUERY, PORT, Site, elements, open_site

from vlk_memact import Memory
from vlk_memact.viewer import build_app
from vlk_memact.viewer.app import describe_database

PAGES = ["/", f"/session?{MAIN_QUERY}", f"/lessons?{MAIN_QUERY}", f"/context?{MAIN_QUERY}",
         "/search?q=pwned", f"/search?q=npm&{MAIN_QUERY}",
         "/session?" + urlencode({"project": SHOP, "session": HOSTILE_SESSION}), f"/?project={SHOP}"]


# ---- escaping: recorded text is data ----


@pytest.mark.parametrize("path", PAGES)
def test_recorded_markup_script_links_and_quotes_come_out_inert(site: Site, path: str) -> None:
    response = site.client.get(path)
    assert response.status_code == 200, response.text[:500]
    page = response.text
    tags = elements(page)
    scripts = [attrs for tag, attrs in tags if tag == "script"]
    assert scripts == [{"src": "/static/viewer.js", "defer": None}]
    assert not [tag for tag, _ in tags if tag in ("img", "b", "iframe", "object", "embed")]
    for tag, attrs in tags:
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
        assert "style" not in attrs, (tag, attrs)
        for name in ("href", "src", "action"):
            value = (attrs.get(name) or "").strip().lower()
            assert not value.startswith(("javascript:", "data:", "//", "http")), (tag, attrs)
    assert "<script>window" not in page and 'onerror="' not in page


def test_the_hostile_text_is_shown_escaped_not_dropped(site: Site) -> None:
    page = site.client.get(f"/session?{MAIN_QUERY}").text
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=&#34;window.__pwned=2&#34;&gt;" in page
    home = site.client.get("/").text
    assert html.escape(HOSTILE_SESSION, quote=True).replace("&quot;", "&#34;") in home


# ---- the guard ----

EVERY_ROUTE = ["/", f"/session?{MAIN_QUERY}", f"/lessons?{MAIN_QUERY}", f"/context?{MAIN_QUERY}", "/search?q=x",
               "/events", "/static/viewer.js", "/static/viewer.css", "/favicon.ico", "/nowhere"]


@pytest.mark.parametrize("path", EVERY_ROUTE)
def test_every_route_needs_the_launch_token_or_its_cookie(site: Site, path: str) -> None:
    stranger = TestClient(site.client.app, base_url=BASE)
    response = stranger.get(path, follow_redirects=False)
    assert response.status_code == 401
    assert "vlk-memact ui" in response.text and "pwned" not in response.text
    forged = stranger.get(path, follow_redirects=False, headers={"cookie": f"vlk_ui_{PORT}=guess"})
    assert forged.status_code == 401
    wrong = stranger.get(path + ("&" if "?" in path else "?") + "token=not-the-token", follow_redirects=False)
    assert wrong.status_code == 401


def test_the_token_becomes_an_httponly_strict_cookie_and_leaves_the_url(site: Site) -> None:
    stranger = TestClient(site.client.app, base_url=BASE)
    response = stranger.get(f"/session?{MAIN_QUERY}&token={site.token}", follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == f"/session?{MAIN_QUERY}"
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"vlk_ui_{PORT}=") and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert site.token not in cookie
    assert stranger.get(f"/session?{MAIN_QUERY}").status_code == 200
    sneaky = stranger.get(f"//evil.example/?token={site.token}", follow_redirects=False)
    assert sneaky.headers["location"].startswith("/") and not sneaky.headers["location"].startswith("//")


@pytest.mark.parametrize("host", ["evil.example", f"evil.example:{PORT}", f"127.0.0.1:{PORT + 1}", "127.0.0.1"])
def test_a_foreign_host_header_is_refused_even_with_the_cookie(site: Site, host: str) -> None:
    response = site.client.get("/", headers={"host": host})
    assert response.status_code == 421
    assert site.client.get("/", headers={"host": f"localhost:{PORT}"}).status_code == 200


def test_cross_origin_requests_are_refused(writable: Site) -> None:
    target = writable.seeded.conflict_ids[0]
    form = {"csrf": writable.csrf, "project": SHOP, "session": MAIN, "timeline_id": str(target)}
    refused = [
        ({"origin": "http://evil.example"}, "came from http://evil.example"),
        ({"origin": f"http://127.0.0.1:{PORT + 1}"}, f"came from http://127.0.0.1:{PORT + 1}"),
        ({"origin": f"https://127.0.0.1:{PORT}"}, "Cross-origin"),
        ({}, "carried no Origin"),
        # A sandboxed frame or a data: page of another site: Origin null, the browser says cross-site.
        ({"origin": "null", "sec-fetch-site": "cross-site"}, "Origin: null"),
        ({"origin": "null"}, "Origin: null"),
        ({"origin": "null", "sec-fetch-site": "same-origin"}, "Origin: null"),
        # A right-looking Origin the browser itself calls foreign (another port of this host is same-site).
        ({"origin": BASE, "sec-fetch-site": "same-site"}, "same-site page"),
        ({"origin": BASE, "sec-fetch-site": "cross-site"}, "cross-site page"),
    ]
    for headers, why in refused:
        for accept in ("text/html", "application/json"):
            response = writable.client.post("/revoke", data=form, headers={**headers, "accept": accept},
                                            follow_redirects=False)
            assert response.status_code == 403, headers
            assert why in response.text, (headers, response.text)
    assert writable.client.get("/", headers={"origin": "http://evil.example"}).status_code == 403
    wrong_host = writable.client.post("/revoke", data=form, headers={"origin": BASE, "host": f"evil.example:{PORT}"})
    assert wrong_host.status_code == 421
    rebound = writable.client.post("/revoke", data=form, headers={"origin": f"http://evil.example:{PORT}",
                                                                  "host": f"evil.example:{PORT}"})
    assert rebound.status_code == 421
    assert target in _active(writable)


def test_a_same_origin_post_as_each_browser_sends_it_is_accepted(writable: Site) -> None:
    """Chromium, Firefox and Safari send Origin (same-origin referrer policy) and, all three today,
    Sec-Fetch-Site: same-origin; an older browser sends Origin alone. Each revokes, with the CSRF token."""
    first, second = writable.seeded.conflict_ids
    lesson = writable.seeded.lesson_id
    shapes = [({"origin": BASE, "sec-fetch-site": "same-origin", "sec-fetch-mode": "navigate"}, first),
              ({"origin": f"http://localhost:{PORT}", "host": f"localhost:{PORT}", "sec-fetch-site": "same-origin",
                "sec-fetch-mode": "cors"}, second),
              ({"origin": BASE}, lesson)]
    for headers, target in shapes:
        form = {"csrf": writable.csrf, "project": SHOP, "session": MAIN, "timeline_id": str(target)}
        response = writable.client.post("/revoke", data=form, headers=headers, follow_redirects=False)
        assert response.status_code == 303, (headers, response.text)
        assert target not in _active(writable)


def _active(site: Site) -> list[int]:
    from vlk_memact.core.model import SessionKey

    with site.memory.store.read() as tx:
        return [c.id for c in tx.visible_constraints(SessionKey("local", SHOP, MAIN))]


def test_revoke_is_refused_by_a_read_only_viewer(site: Site) -> None:
    target = site.seeded.conflict_ids[0]
    form = {"csrf": site.csrf, "project": SHOP, "session": MAIN, "timeline_id": str(target)}
    response = site.client.post("/revoke", data=form, headers={"origin": BASE}, follow_redirects=False)
    assert response.status_code == 403 and "read-only" in response.text
    assert target in _active(site)


def test_revoke_with_allow_write_needs_the_csrf_token_and_uses_the_engine(writable: Site) -> None:
    target = writable.seeded.conflict_ids[0]
    page = writable.client.get(f"/lessons?{MAIN_QUERY}").text
    assert f'name="csrf" value="{writable.csrf}"' in page and 'action="/revoke"' in page
    form = {"project": SHOP, "session": MAIN, "timeline_id": str(target)}
    for csrf in (None, "", "wrong"):
        data = form if csrf is None else {**form, "csrf": csrf}
        response = writable.client.post("/revoke", data=data, headers={"origin": BASE}, follow_redirects=False)
        assert response.status_code == 403
    assert target in _active(writable)
    done = writable.client.post("/revoke", data={**form, "csrf": writable.csrf}, headers={"origin": BASE},
                                follow_redirects=False)
    assert done.status_code == 303
    assert target not in _active(writable)
    history = writable.memory.for_project(SHOP).get_history(session_id=MAIN, limit=500).slots
    assert next(s for s in history if s.id == target).retired_reason == "revoked"
    after = writable.client.get(done.headers["location"]).text
    assert f"Constraint #{target} was revoked" in after
    again = writable.client.post("/revoke", data={**form, "csrf": writable.csrf}, headers={"origin": BASE})
    assert again.status_code == 404 and f"#{target}" in again.text


def test_the_script_s_write_gets_json_saying_what_happened_or_why_not(writable: Site) -> None:
    target = writable.seeded.conflict_ids[1]
    form = {"project": SHOP, "session": MAIN, "timeline_id": str(target)}
    asks_json = {"origin": BASE, "accept": "application/json", "sec-fetch-site": "same-origin"}
    forged = writable.client.post("/revoke", data={**form, "csrf": "forged"}, headers=asks_json)
    assert forged.status_code == 403 and forged.json()["ok"] is False
    assert "CSRF token is missing or wrong" in forged.json()["message"]
    missing = writable.client.post("/revoke", data=form, headers=asks_json)
    assert missing.status_code == 403 and "CSRF" in missing.json()["message"]
    assert target in _active(writable)
    done = writable.client.post("/revoke", data={**form, "csrf": writable.csrf}, headers=asks_json)
    assert done.status_code == 200
    assert done.json() == {"ok": True, "constraint_id": target,
                           "message": f"Constraint #{target} was revoked (moved to PAST); the model no longer sees it."}
    assert target not in _active(writable)
    again = writable.client.post("/revoke", data={**form, "csrf": writable.csrf}, headers=asks_json)
    assert again.status_code == 404 and again.json()["ok"] is False and f"#{target}" in again.json()["message"]
    bad = writable.client.post("/revoke", data={**form, "timeline_id": "x", "csrf": writable.csrf}, headers=asks_json)
    assert bad.status_code == 400 and "timeline_id" in bad.json()["message"]
    page = writable.client.get(f"/lessons?{MAIN_QUERY}").text
    assert 'class="revoke write"' in page and 'id="write-status"' in page


def test_a_read_only_viewer_refuses_the_script_s_write_too(site: Site) -> None:
    target = site.seeded.conflict_ids[0]
    form = {"csrf": site.csrf, "project": SHOP, "session": MAIN, "timeline_id": str(target)}
    response = site.client.post("/revoke", data=form, headers={"origin": BASE, "accept": "application/json"})
    assert response.status_code == 403 and "read-only" in response.json()["message"]
    assert target in _active(site)


@pytest.mark.parametrize("path", ["/", f"/session?{MAIN_QUERY}", "/static/viewer.js", "/nowhere"])
def test_every_response_carries_a_strict_content_security_policy(site: Site, path: str) -> None:
    stranger = TestClient(site.client.app, base_url=BASE)
    for response in (site.client.get(path), stranger.get(path), site.client.get(path, headers={"host": "x"})):
        policy = response.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "style-src 'self'" in policy and "unsafe" not in policy
        assert "frame-ancestors 'none'" in policy and "default-src 'none'" in policy
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["cache-control"] == "no-store"
        # same-origin: a browser sends this viewer's origin on its own POSTs (no-referrer made it "null")
        # and sends nothing to any other site.
        assert response.headers["referrer-policy"] == "same-origin"
        assert "access-control-allow-origin" not in response.headers


def test_no_configuration_and_no_password_is_shown(memory: Memory) -> None:
    site = open_site(memory, allow_write=True)
    for path in PAGES:
        page = site.client.get(path).text
        assert site.token not in page
        assert "DATABASE_URL" not in page and "VLK_" not in page
    assert describe_database("postgresql://admin:s3cret-pw@db.internal:5432/vlk?sslmode=require") == (
        "PostgreSQL postgresql://admin:***@db.internal:5432/vlk?sslmode=require")
    assert "s3cret" not in describe_database("postgresql://db/vlk?user=a&password=s3cret")


def test_the_database_password_is_masked_on_postgres(postgres_url: str) -> None:
    with_password = postgres_url.replace("postgresql://postgres@", "postgresql://postgres:hunter2-secret@")
    with Memory(with_password, project="p") as memory:
        site = open_site(memory, allow_write=False)
        page = site.client.get("/").text
        assert "hunter2" not in page and "PostgreSQL postgresql://postgres:***@" in page


def test_secrets_stored_without_redaction_are_masked_on_display(memory: Memory) -> None:
    from dataclasses import replace

    raw = Memory(settings=replace(memory.settings, redact_secrets=False), store=memory.store, project=SHOP)
    raw.record_state(raw_log="export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD", session_id="leak")
    site = open_site(memory, allow_write=False)
    page = site.client.get("/session?" + urlencode({"project": SHOP, "session": "leak"})).text
    assert "abcdefghijklmnopqrstuvwxyz0123456789" not in page and "REDACTED" in page


def test_the_cli_refuses_a_non_loopback_bind_without_the_flag(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from vlk_memact.cli import main

    code = main(["--database-url", f"sqlite:///{tmp_path / 'v.db'}", "ui", "--host", "0.0.0.0"])
    assert code == 1
    err = capsys.readouterr().err
    assert "refusing to serve the viewer on 0.0.0.0" in err and "--allow-remote" in err


def test_a_remote_bind_still_needs_the_token_and_answers_only_to_the_names_given(memory: Memory) -> None:
    seed(memory)
    viewer = build_app(memory, host="0.0.0.0", port=PORT, extra_hosts=("viewer.lan",))
    assert viewer.url.startswith(f"http://127.0.0.1:{PORT}/?token=")
    lan = TestClient(viewer.app, base_url=f"http://viewer.lan:{PORT}")
    assert lan.get("/").status_code == 401
    assert lan.get("/?token=" + viewer.secrets.token).status_code == 200
    assert lan.get("/", headers={"host": f"elsewhere.lan:{PORT}"}).status_code == 421
