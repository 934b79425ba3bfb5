"""`vlk-memact ui` through Starlette's test client, on SQLite and PostgreSQL: how failures and their fixes
are shown. The fix or the host calls that resolved a failure, anchors and lessons whose failures were
resolved, retries and demoted fixes, a fix from another session, its steps as escaped text, and fixes
read once per session."""

from __future__ import annotations

import html
import re
from typing import Any
from urllib.parse import urlencode

import pytest
from viewer_seed import IMG, MAIN, QUOTES, SCRIPT, SHOP
from viewer_site import MAIN_QUERY, Site, elements

from vlk_memact.core.model import SessionKey
from vlk_memact.viewer import readmodel

QUOTE_FILE = f"src/{QUOTES}.js"


def _fixes_of(site: Site, session: str) -> list[Any]:
    with site.memory.store.read() as tx:
        return tx.fixes("local", SHOP, session, 50)


def test_a_failure_a_host_hook_saw_resolved_is_marked_with_the_fix_that_resolved_it(site: Site) -> None:
    page = site.client.get(f"/session?{MAIN_QUERY}").text
    resolved = site.seeded.resolved_id
    row = page[page.index(f'id="slot-{resolved}"'):]
    row = re.sub(r"\s+", " ", row[: row.index('<li class="row"')])
    assert 'class="lane lane-past"' in row and 'class="slot resolved"' in row
    assert '<span class="badge retired resolved"> ✓ resolved </span>' in row
    history = {s.id: s for s in site.memory.for_project(SHOP).get_history(session_id=MAIN, limit=500).slots}
    assert history[resolved].retired_reason == "resolved"
    with site.memory.store.read() as tx:
        success = tx.host_call_by_use_id(SessionKey("local", SHOP, MAIN), "toolu_03refundspass")
    assert success is not None
    # The fix the hooks recorded (fix memory) for that failure: the slot shows that record, its steps with their
    # tool_use_ids, what then passed, and the failure it resolved as its evidence.
    with site.memory.store.read() as tx:
        uid = tx.tenant_slots("local", [resolved])[0].uid
    fix = next(f for f in _fixes_of(site, MAIN) if uid in f.slot_uids)
    assert fix.kind == "fix" and [s.tool_use_id for s in fix.steps] == ["toolu_02refundsedit"]
    assert f'data-fix-id="{fix.id}" data-fix-kind="fix" data-fix-demoted="0"' in row
    assert (f"Resolved: <strong>fixed</strong> by the step(s) below (fix #{fix.id}, recorded "
            f"<time>{fix.created_at[:19]}</time>).") in row
    assert "in session" not in row  # recorded in this very session
    # What changed in between, then the call that passed, by the summaries the hooks stored.
    steps = re.findall(r'<li[^>]*>(?:<span class="badge tool">(\w+)</span> )?<code>(.*?)</code>'
                       r'(?: <code class="use-id">(.*?)</code>)?', row)
    assert [(tool, html.unescape(text), use) for tool, text, use in steps] == [
        ("", "Edit shop/refunds.py: -'amount.quantize(CENTS)' +'amount.quantize(CENTS, rounding=ROUND_HALF_UP)'",
         "toolu_02refundsedit"),
        ("passed", "pytest -q tests/test_refunds.py", "toolu_03refundspass")]
    assert f"<time>{success.created_at[:19]}</time></li>" in row
    assert (f'<span>Evidence</span> it resolved <a href="#slot-{resolved}">#{resolved}</a>: <code>FAILED '
            "tests/test_refunds.py::test_partial_refund_rounds_half_up") in row
    assert "(the call that failed: <code>pytest -q tests/test_refunds.py</code>)" in row
    # Only that slot is retired as resolved; the lesson learned from the other captured failure (archived
    # into it before its command passed) shows on its card the fix of the error it was learned from.
    assert page.count('class="slot resolved"') == 1 and page.count("✓ resolved") == 2
    fixed = site.seeded.fixed_lesson_id
    card = re.sub(r"\s+", " ", page[page.index(f'id="card-{fixed}"'):])
    card = card[: card.index("</details>")]
    assert '<span class="badge retired resolved">✓ resolved</span>' in card
    source = next(s for s in history.values() if s.retired_by == fixed)
    assert (f"✓ The error it was learned from (#{source.id}) was later resolved: <strong>fixed</strong> by the "
            "step(s) below") in card
    assert ("<code>alembic merge heads -m &#39;merge refunds&#39;</code> <code class=\"use-id\">toolu_05alembicmerge"
            "</code>") in card
    assert "<code>alembic upgrade head</code> <code class=\"use-id\">toolu_06alembicpass</code>" in card
    assert f'it resolved <a href="#slot-{source.id}">#{source.id}</a>: <code>alembic.util.exc.CommandError' in card
    # The lessons page shows the same fix with the lesson.
    lessons = re.sub(r"\s+", " ", site.client.get(f"/lessons?{MAIN_QUERY}").text)
    item = lessons[lessons.index(f'id="lesson-{fixed}"'):]
    item = item[: item.index("</li> <li") if "</li> <li" in item else len(item)]
    assert "was later resolved: <strong>fixed</strong>" in item and "toolu_05alembicmerge" in item


def test_without_a_fix_record_the_host_calls_tell_what_resolved_a_failure(site: Site) -> None:
    with site.memory.store.write() as tx:  # fixes recorded before fix memory existed: none kept
        tx._conn.execute("DELETE FROM fix_keys")  # type: ignore[attr-defined]  # noqa: SLF001
        tx._conn.execute("DELETE FROM fixes")  # type: ignore[attr-defined]  # noqa: SLF001
    page = site.client.get(f"/session?{MAIN_QUERY}").text
    assert 'class="fix"' not in page
    row = page[page.index(f'id="slot-{site.seeded.resolved_id}"'):]
    row = re.sub(r"\s+", " ", row[: row.index('<li class="row"')])
    with site.memory.store.read() as tx:
        success = tx.host_call_by_use_id(SessionKey("local", SHOP, MAIN), "toolu_03refundspass")
    assert success is not None
    assert (f"Resolved: the same call succeeded at <time>{success.created_at[:19]}</time> "
            "(<code>toolu_03refundspass</code>), after 1 change (an edit or a command) in between.") in row
    steps = re.findall(r'<li[^>]*>(?:<span class="badge tool">(\w+)</span> )?<code>(.*?)</code>', row)
    assert [(tool, html.unescape(text)) for tool, text in steps] == [
        ("", "Edit shop/refunds.py: -'amount.quantize(CENTS)' +'amount.quantize(CENTS, rounding=ROUND_HALF_UP)'"),
        ("passed", "pytest -q tests/test_refunds.py")]
    card = re.sub(r"\s+", " ", page[page.index(f'id="card-{site.seeded.fixed_lesson_id}"'):])
    card = card[: card.index("</details>")]
    assert "was resolved later: the same call succeeded at" in card and "<code>toolu_06alembicpass</code>" in card
    assert "after 1 change (an edit or a command) in between." in card  # the alembic merge


def test_a_fix_outlives_the_host_calls_and_without_either_the_failure_still_says_resolved(site: Site) -> None:
    with site.memory.store.write() as tx:  # as retention does after a while (both stores' connections)
        tx._conn.execute("DELETE FROM host_calls")  # type: ignore[attr-defined]  # noqa: SLF001
    page = re.sub(r"\s+", " ", site.client.get(f"/session?{MAIN_QUERY}").text)
    row = page[page.index(f'id="slot-{site.seeded.resolved_id}"'):]
    row = row[: row.index('<li class="row"')]
    assert "✓ resolved" in row and "Resolved: <strong>fixed</strong>" in row
    assert "<code>pytest -q tests/test_refunds.py</code> <time>" in row and "toolu_02refundsedit" in row
    assert "toolu_03refundspass" not in row  # only the host call knew the passing call's id
    with site.memory.store.write() as tx:
        tx._conn.execute("DELETE FROM fix_keys")  # type: ignore[attr-defined]  # noqa: SLF001
        tx._conn.execute("DELETE FROM fixes")  # type: ignore[attr-defined]  # noqa: SLF001
    page = re.sub(r"\s+", " ", site.client.get(f"/session?{MAIN_QUERY}").text)
    row = page[page.index(f'id="slot-{site.seeded.resolved_id}"'):]
    row = row[: row.index('<li class="row"')]
    assert "✓ resolved" in row and "the details of that call are no longer kept" in row


def test_an_anchor_and_a_lesson_whose_failures_were_later_resolved_say_so(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vlk_memact.hosts.shared.capture import ToolCall, on_failure, on_success

    shop = site.memory.for_project(SHOP)

    def call(tool: str, tool_input: dict[str, str], use: str) -> ToolCall:
        return ToolCall("hooked", SHOP, tool, tool_input, use)

    build = {"command": "npm run build"}
    for n in range(3):  # a loop the hooks captured: the anchor archives the three failures
        on_failure(shop, call("Bash", build, f"b{n}"), "ERROR in ./src/index.ts 12:4 TS2304: Cannot find name 'cfg'.")
    check = {"command": "mypy shop"}
    on_failure(shop, call("Bash", check, "m1"), 'shop/cart.py:44: error: Unsupported operand types for + ("Decimal")')
    history = shop.get_history(session_id="hooked", limit=500).slots
    anchor = next(s for s in history if s.origin == "anchor")
    typed = next(s for s in history if (s.raw_log or "").startswith("shop/cart.py:44"))
    lesson = shop.time_travel(target_timeline_ids=[typed.id], learning="Money is Decimal: never add a float to it.",
                              raw_log_excerpt="Unsupported operand types", session_id="hooked").constraint_id
    on_success(shop, call("Edit", {"file_path": "src/index.ts", "old_string": "cfg", "new_string": "config"}, "e1"))
    on_success(shop, call("Bash", build, "b9"))  # the loop's call passes after one edit
    on_success(shop, call("Edit", {"file_path": "shop/cart.py", "old_string": "0.1", "new_string": "D('0.1')"}, "e2"))
    on_success(shop, call("Bash", check, "m9"))  # the lesson's failure passes, after two edits and a command
    hooked = urlencode({"project": SHOP, "session": "hooked"})
    timeline = re.sub(r"\s+", " ", site.client.get(f"/session?{hooked}").text)
    card = timeline[timeline.index(f'id="card-{anchor.id}"'):]
    card = card[: card.index("</details>")]
    assert '<span class="badge retired resolved">✓ resolved</span>' in card
    looped = sorted(s.id for s in history if s.retired_by == anchor.id)
    assert len(looped) == 3
    # The hooks recorded a fix for each: the loop's three failures resolved by one edit, the lesson's failure
    # by what ran after it; each card shows that fix, its steps with their tool_use_ids and its evidence.
    fixes = {f.passed: f for f in _fixes_of(site, "hooked")}
    assert set(fixes) == {"npm run build", "mypy shop"} and len(fixes["npm run build"].slot_uids) == 3
    build_fix, mypy_fix = fixes["npm run build"], fixes["mypy shop"]
    assert (f"✓ The error it was learned from (#{looped[0]}) was later resolved: <strong>fixed</strong> by the step(s) "
            f"below (fix #{build_fix.id}, recorded <time>{build_fix.created_at[:19]}</time>).") in card
    steps = r'<li class="(\w+)">(?:<span class="badge tool">(\w+)</span> )?<code>(.*?)</code> <code class="use-id">(.*?)</code>'
    assert [(k, t, html.unescape(x), u) for k, t, x, u in re.findall(steps, card)] == [
        ("step", "", "Edit src/index.ts: -'cfg' +'config'", "e1"), ("passed", "passed", "npm run build", "b9")]
    assert ("<span>Evidence</span> it resolved " + ", ".join(f'<a href="#slot-{i}">#{i}</a>' for i in looped)
            + ": <code>ERROR in ./src/index.ts 12:4 TS2304") in card
    lesson_card = timeline[timeline.index(f'id="card-{lesson}"'):]
    lesson_card = lesson_card[: lesson_card.index("</details>")]
    assert f"✓ The error it was learned from (#{typed.id}) was later resolved" in lesson_card
    assert f"(fix #{mypy_fix.id}, recorded" in lesson_card
    assert [(k, t, html.unescape(x), u) for k, t, x, u in re.findall(steps, lesson_card)] == [
        # issue 34: of the steps since the failure, only those on what the error names (shop/cart.py) are the fix
        ("step", "", "Edit shop/cart.py: -'0.1' +\"D('0.1')\"", "e2"), ("passed", "passed", "mypy shop", "m9")]
    # Archived by the loop or the lesson, those slots keep their reason: only the card says "resolved".
    assert timeline.count("✓ resolved") == 2
    lessons = re.sub(r"\s+", " ", site.client.get(f"/lessons?{hooked}").text)
    for constraint, fix in ((anchor.id, build_fix), (lesson, mypy_fix)):
        item = lessons[lessons.index(f'id="lesson-{constraint}"'):]
        item = item[: item.index("</li> <li") if "</li> <li" in item else len(item)]
        assert f'data-fix-id="{fix.id}"' in item and "was later resolved: <strong>fixed</strong>" in item
    # Both are project-wide, so another session of the project sees them too, linked to the failure's own
    # timeline and the fix's session; of the seeded lessons, only the one learned from a captured failure has one.
    main = re.sub(r"\s+", " ", site.client.get(f"/lessons?{MAIN_QUERY}").text)
    assert main.count("was later resolved") == 3 and main.count('class="fix"') == 3
    assert "<code class=\"use-id\">toolu_06alembicpass</code>" in main
    assert f'session=hooked&amp;before={typed.sequence_order + readmodel.TIMELINE_PAGE // 2}#slot-{typed.id}"' in main
    assert ' in session <a href="/session?project=%2Fhome%2Fdev%2Fshop-api&amp;session=hooked">hooked</a>' in main

    # Without the fix records (kept before fix memory existed), the host calls tell the same story.
    with site.memory.store.write() as tx:
        tx._conn.execute("DELETE FROM fix_keys")  # type: ignore[attr-defined]  # noqa: SLF001
        tx._conn.execute("DELETE FROM fixes")  # type: ignore[attr-defined]  # noqa: SLF001
    timeline = re.sub(r"\s+", " ", site.client.get(f"/session?{hooked}").text)
    card = timeline[timeline.index(f'id="card-{anchor.id}"'):]
    card = card[: card.index("</details>")]
    assert (f'A failure it was learned from (<a href="#slot-{looped[-1]}">#{looped[-1]}</a>) was resolved later: '
            "the same call succeeded at") in card
    assert "(<code>b9</code>), after 1 change (an edit or a command) in between." in card
    lesson_card = timeline[timeline.index(f'id="card-{lesson}"'):]
    lesson_card = lesson_card[: lesson_card.index("</details>")]
    assert f'(<a href="#slot-{typed.id}">#{typed.id}</a>) was resolved later' in lesson_card
    assert "(<code>m9</code>), after 3 changes (edits or commands) in between." in lesson_card  # e1, b9, e2
    steps = re.findall(r'<li[^>]*>(?:<span class="badge tool">(\w+)</span> )?<code>(.*?)</code>', lesson_card)
    assert [(tool, html.unescape(text)) for tool, text in steps] == [
        ("", "Edit src/index.ts: -'cfg' +'config'"), ("Bash", "npm run build"),
        ("", "Edit shop/cart.py: -'0.1' +\"D('0.1')\""), ("passed", "mypy shop")]
    monkeypatch.setattr(readmodel, "STEPS_SHOWN", 1)  # a long fix: the last changes, and how many came before
    short = re.sub(r"\s+", " ", site.client.get(f"/session?{hooked}").text)
    short = short[short.index(f'id="card-{lesson}"'):]
    short = short[: short.index("</details>")]
    assert "… 2 earlier change(s)" in short and "Edit src/index.ts" not in short and "Edit shop/cart.py" in short
    monkeypatch.undo()
    main = re.sub(r"\s+", " ", site.client.get(f"/lessons?{MAIN_QUERY}").text)
    assert main.count("was resolved later") == 3 and 'class="fix"' not in main


def test_a_retry_and_a_demoted_fix_are_shown_as_what_they_are(site: Site) -> None:
    from vlk_memact.hosts.shared.capture import ToolCall, on_failure, on_success

    shop = site.memory.for_project(SHOP)
    flaky = {"command": "pytest -q tests/test_webhooks.py"}
    on_failure(shop, ToolCall("flaky", SHOP, "Bash", flaky, "r1"), "ConnectionResetError: [Errno 104] Connection "
               "reset by peer (tests/test_webhooks.py::test_retry_delivery)")
    on_success(shop, ToolCall("flaky", SHOP, "Bash", flaky, "r2"))  # nothing in between: a plain retry
    page = re.sub(r"\s+", " ", site.client.get("/session?" + urlencode({"project": SHOP, "session": "flaky"})).text)
    (retry,) = _fixes_of(site, "flaky")
    assert retry.kind == "retry" and retry.steps == ()
    assert (f'data-fix-id="{retry.id}" data-fix-kind="retry" data-fix-demoted="0"> <p class="resolution">Resolved: '
            f"<strong>passed on retry</strong> (the same call, with no change recorded in between) (fix #{retry.id},") in page
    assert '<li class="step">' not in page and "<code>pytest -q tests/test_webhooks.py</code> <code class=\"use-id\">r2" in page

    # A fix recalled in a later session, applied there, and the error came back: the hooks demote it.
    build = {"command": "npm run build"}
    error = "ERROR in ./src/api.ts 3:1 TS2304: Cannot find name 'fetcher'."
    edit = {"file_path": "src/api.ts", "old_string": "fetcher", "new_string": "fetchJson"}
    on_failure(shop, ToolCall("first", SHOP, "Bash", build, "d1"), error)
    on_success(shop, ToolCall("first", SHOP, "Edit", edit, "d2"))
    on_success(shop, ToolCall("first", SHOP, "Bash", build, "d3"))
    on_failure(shop, ToolCall("again", SHOP, "Bash", build, "d4"), error)  # told the fix
    on_success(shop, ToolCall("again", SHOP, "Edit", edit, "d5"))  # applied it
    on_failure(shop, ToolCall("again", SHOP, "Bash", build, "d6"), error)  # and the error came back
    (fix,) = _fixes_of(site, "first")
    assert fix.demoted == 1
    page = re.sub(r"\s+", " ", site.client.get("/session?" + urlencode({"project": SHOP, "session": "first"})).text)
    assert f'data-fix-id="{fix.id}" data-fix-kind="fix" data-fix-demoted="1"' in page
    assert "demoted: came back 1× after it was applied</span>" in page


def test_a_lesson_whose_error_was_fixed_in_another_session_shows_that_fix(site: Site) -> None:
    from vlk_memact.hosts.shared.capture import ToolCall, on_failure, on_success

    shop = site.memory.for_project(SHOP)
    migrate = {"command": "python manage.py migrate"}
    error = "django.db.utils.OperationalError: no such table: shop_refund"
    on_failure(shop, ToolCall("learned", SHOP, "Bash", migrate, "k1"), error)  # never fixed in this session
    failed = next(s.id for s in shop.get_history(session_id="learned").slots if s.raw_log == error)
    lesson = shop.time_travel(target_timeline_ids=[failed], learning="Register the app before migrating.",
                              raw_log_excerpt="no such table", session_id="learned").constraint_id
    on_failure(shop, ToolCall("later", SHOP, "Bash", migrate, "k2"), error)  # the same error, another session
    on_success(shop, ToolCall("later", SHOP, "Edit", {"file_path": "shop/settings.py", "old_string": "APPS = []",
                                                      "new_string": "APPS = ['shop']"}, "k3"))
    on_success(shop, ToolCall("later", SHOP, "Bash", migrate, "k4"))
    (fix,) = _fixes_of(site, "later")
    learned = urlencode({"project": SHOP, "session": "learned"})
    elsewhere = (f'(fix #{fix.id}, recorded <time>{fix.created_at[:19]}</time> in session <a href="/session?'
                 f'project=%2Fhome%2Fdev%2Fshop-api&amp;session=later">later</a>)')
    for path, anchor in ((f"/session?{learned}", f'id="card-{lesson}"'), (f"/lessons?{learned}", f'id="lesson-{lesson}"')):
        page = re.sub(r"\s+", " ", site.client.get(path).text)
        item = page[page.index(anchor):]
        end = "</details>" if "card-" in anchor else '<li class="lesson-item'
        item = item[: item.index(end, 1) if end in item[1:] else len(item)]
        assert f'data-fix-id="{fix.id}"' in item, path
        assert "✓ The error it was learned from was later resolved: <strong>fixed</strong>" in item and elsewhere in item
        assert "<code>Edit shop/settings.py: -&#39;APPS = []&#39; +&#34;APPS = [&#39;shop&#39;]&#34;</code> <code class=\"use-id\">k3</code>" in item
        assert "it resolved 1 other failure(s): <code>django.db.utils.OperationalError: no such table" in item
    # A retry is no fix to tell: a lesson whose error only passed on retry elsewhere shows none.
    flaky = {"command": "pytest -q tests/test_mail.py"}
    mail_error = "smtplib.SMTPServerDisconnected: Connection unexpectedly closed (tests/test_mail.py)"
    on_failure(shop, ToolCall("mail", SHOP, "Bash", flaky, "q1"), mail_error)
    mail = next(s.id for s in shop.get_history(session_id="mail").slots if s.raw_log == mail_error)
    mail_lesson = shop.time_travel(target_timeline_ids=[mail], learning="The mail server drops idle connections.",
                                   raw_log_excerpt="SMTPServerDisconnected", session_id="mail").constraint_id
    on_failure(shop, ToolCall("mail2", SHOP, "Bash", flaky, "q2"), mail_error)
    on_success(shop, ToolCall("mail2", SHOP, "Bash", flaky, "q3"))
    assert [f.kind for f in _fixes_of(site, "mail2")] == ["retry"]
    page = re.sub(r"\s+", " ", site.client.get("/lessons?" + urlencode({"project": SHOP, "session": "mail"})).text)
    item = page[page.index(f'id="lesson-{mail_lesson}"'):]
    item = item[: item.index("</li> <li") if "</li> <li" in item else len(item)]
    assert 'class="fix"' not in item


def test_fixes_are_read_once_per_session_not_once_per_slot(site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    from vlk_memact.hosts.shared.capture import ToolCall, on_failure, on_success

    shop = site.memory.for_project(SHOP)
    for n in range(12):  # twelve failures, each resolved by its own edit: twelve fixes on one page
        run = {"command": f"pytest -q tests/test_case_{n}.py"}
        on_failure(shop, ToolCall("many", SHOP, "Bash", run, f"f{n}"), f"AssertionError: case {n} expected {n}")
        on_success(shop, ToolCall("many", SHOP, "Edit", {"file_path": f"case_{n}.py", "old_string": "a",
                                                         "new_string": "b"}, f"e{n}"))
        on_success(shop, ToolCall("many", SHOP, "Bash", run, f"p{n}"))
    with site.memory.store.read() as tx:
        store_type = type(tx)
    calls: list[int] = []
    original = store_type.fixes_resolving

    def counted(self: Any, key: SessionKey, uids: Any) -> Any:
        calls.append(len(uids))
        return original(self, key, uids)

    matched: list[int] = []
    by_key = store_type.fixes_matching

    def counted_keys(self: Any, key: SessionKey, keys: Any, limit: int, include_own: bool = False) -> Any:
        matched.append(len(keys))
        return by_key(self, key, keys, limit, include_own)

    monkeypatch.setattr(store_type, "fixes_resolving", counted)
    monkeypatch.setattr(store_type, "fixes_matching", counted_keys)
    page = site.client.get("/session?" + urlencode({"project": SHOP, "session": "many"})).text
    assert page.count('class="fix"') == 12 and calls == [12] and matched == []  # no lesson on this page
    calls.clear()
    page = site.client.get(f"/lessons?{MAIN_QUERY}").text  # every lesson's error matched in one query
    assert len(calls) == 1 and len(matched) == 1 and matched[0] >= 4


def test_the_steps_of_a_resolution_are_shown_as_escaped_text(site: Site) -> None:
    from vlk_memact.hosts.shared.capture import ToolCall, on_failure, on_success

    shop = site.memory.for_project(SHOP)
    run = {"command": "node build.js"}
    on_failure(shop, ToolCall("steps", SHOP, "Bash", run, "h1"), f"ReferenceError: render is not defined {QUOTES}")
    on_success(shop, ToolCall("steps", SHOP, "Edit", {"file_path": f"{QUOTE_FILE}", "old_string": "x",
                                                      "new_string": f"{SCRIPT} {IMG}"}, "h2"))
    on_success(shop, ToolCall("steps", SHOP, "Bash", run, "h3"))
    page = site.client.get("/session?" + urlencode({"project": SHOP, "session": "steps"})).text
    assert page.count('class="fix"') == 1  # shown in the recorded fix: its steps and its evidence (the error)
    assert "render is not defined &#34;&gt;&lt;b id=&#34;injected&#34;&gt;" in page
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in page and "&lt;img src=x onerror=" in page
    assert "<script>window" not in page and not [t for t, _ in elements(page) if t in ("img", "b")]
    assert html.escape(QUOTE_FILE, quote=True).replace("&quot;", "&#34;").replace("&#x27;", "&#39;") in page
