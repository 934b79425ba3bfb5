"""`vlk-memact ui` through Starlette's test client, on SQLite and PostgreSQL: every page, its escaping,
and the guard (token, cookie, Host, Origin, CSRF, read-only by default)."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urlencode

import pytest
from starlette.testclient import TestClient
from viewer_seed import HOSTILE_SESSION, IMG, INFRA, MAIN, PG_ERROR, QUOTES, SCRIPT, SHOP, Seeded, seed

from vlk_memact import Memory
from vlk_memact.core.model import SessionKey
from vlk_memact.viewer import build_app, readmodel
from vlk_memact.viewer.app import describe_database

PORT = 48213  # never bound: the test client talks to the app in-process
BASE = f"http://127.0.0.1:{PORT}"
MAIN_QUERY = urlencode({"project": SHOP, "session": MAIN})
QUOTE_FILE = f"src/{QUOTES}.js"


@dataclass
class Site:
    client: TestClient
    seeded: Seeded
    memory: Memory
    csrf: str
    token: str


def _site(memory: Memory, allow_write: bool) -> Site:
    seeded = seed(memory)
    viewer = build_app(memory, port=PORT, allow_write=allow_write)
    client = TestClient(viewer.app, base_url=BASE)
    assert client.get("/?token=" + viewer.secrets.token).status_code == 200
    return Site(client, seeded, memory, viewer.secrets.csrf, viewer.secrets.token)


@pytest.fixture
def site(memory: Memory) -> Iterator[Site]:
    yield _site(memory, allow_write=False)


@pytest.fixture
def writable(memory: Memory) -> Iterator[Site]:
    yield _site(memory, allow_write=True)


class Elements(HTMLParser):
    """Every start tag with its attributes, as a browser's tokenizer would see them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def elements(page: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = Elements()
    parser.feed(page)
    return parser.tags


def pre_text(page: str, element_id: str) -> str:
    match = re.search(rf'<pre[^>]*id="{element_id}"[^>]*>(.*?)</pre>', page, re.S)
    assert match, element_id
    return html.unescape(match.group(1))


PAGES = ["/", f"/session?{MAIN_QUERY}", f"/lessons?{MAIN_QUERY}", f"/context?{MAIN_QUERY}",
         "/search?q=pwned", f"/search?q=npm&{MAIN_QUERY}",
         "/session?" + urlencode({"project": SHOP, "session": HOSTILE_SESSION}), f"/?project={SHOP}"]


# ---- the pages ----


def test_sessions_are_listed_newest_first_with_their_counts_and_filter_by_project(site: Site) -> None:
    page = site.client.get("/").text
    order = [page.index(html.escape(name)) for name in ("plan-vpc", "add-payment-webhook", MAIN)]
    assert order == sorted(order)
    row = re.search(r"fix-checkout-total</a></td>(.*?)</tr>", page, re.S)
    assert row
    numbers = re.findall(r'class="num[^"]*">(?:<span class="badge loop">)?([\d,]+)', row.group(1))
    overview = next(s for s in readmodel.overview(site.memory, None, 50).sessions if s.session_id == MAIN)
    assert numbers == [str(overview.present), str(overview.past), str(overview.future), "1",
                       f"{readmodel.tokens(overview.archived_chars):,}"]
    assert overview.loops == 1 and overview.past >= 3
    assert '<svg class="chart"' in page and 'class="bar"' in page
    only_infra = site.client.get("/?" + urlencode({"project": INFRA})).text
    assert "plan-vpc" in only_infra and MAIN not in only_infra


def test_the_timeline_puts_each_slot_in_its_lane_in_sequence_order(site: Site) -> None:
    page = site.client.get(f"/session?{MAIN_QUERY}").text
    rows = re.findall(r'<li class="row" id="slot-(\d+)">\s*<span class="seq"[^>]*>(\d+)</span>\s*'
                      r'<div class="lane lane-(\w+)">', page)
    history = {s.id: s for s in site.memory.for_project(SHOP).get_history(session_id=MAIN, limit=500).slots}
    assert [int(seq) for _, seq, _ in rows] == sorted(s.sequence_order for s in history.values())
    for slot_id, _, lane in rows:
        assert lane == history[int(slot_id)].temporal_state.lower()


def test_a_loop_is_one_card_with_its_anchor_evidence_and_archived_slots(site: Site) -> None:
    page = site.client.get(f"/session?{MAIN_QUERY}").text
    anchor = site.seeded.anchor_id
    card = page[page.index(f'id="card-{anchor}"'):]
    card = card[: card.index("</details>\n</div>") if "</details>\n</div>" in card else len(card)]
    assert "Loop anchor" in card and "[SYSTEM ANCHOR] Loop detected" in card
    assert '<pre class="evidence">' in card and "unsupported operand type(s)" in card
    archived = [s for s in site.memory.for_project(SHOP).get_history(session_id=MAIN, limit=500).slots
                if s.retired_by == anchor]
    assert len(archived) == 3
    for slot in archived:
        assert f'href="#slot-{slot.id}"' in card
        assert f'archived by loop\ninto <a href="#slot-{anchor}">#{anchor}</a>' in re.sub(r"\n\s+", "\n", page)
    assert "slot(s) archived" in card and "tokens saved" in card


def test_revocations_and_consolidations_are_shown_as_what_they_are(memory: Memory) -> None:
    site = _site(memory, allow_write=False)
    shop = memory.for_project(SHOP)
    for i in range(6):
        slot = shop.record_state(raw_log=f"E{i}: build step {i} failed", session_id="merging")
        shop.time_travel(target_timeline_ids=[slot.timeline_id], learning=f"Run step {i} with --clean.",
                         raw_log_excerpt=f"E{i}", session_id="merging", scope="session")
    merged = shop.fetch_context(session_id="merging").merges
    assert merged
    page = site.client.get("/session?" + urlencode({"project": SHOP, "session": "merging"})).text
    flat = re.sub(r"\s+", " ", page)
    target = merged[0].consolidated_id
    assert f'id="card-{target}"' in page and "Consolidated" in page
    for retired in merged[0].merged_ids:
        assert f'<a href="#slot-{retired}">#{retired}</a>' in flat  # listed in the consolidated card
    assert f'consolidated into <a href="#slot-{target}">#{target}</a>' in flat
    main = re.sub(r"\s+", " ", site.client.get(f"/session?{MAIN_QUERY}").text)
    freeze = main[main.index(f'id="card-{site.seeded.revoked_id}"'):][:1500]
    assert "revoked" in freeze and "active" not in freeze.split("</summary>")[0]


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
    from vlk_memact.hosts.capture import ToolCall, on_failure, on_success

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
        ("step", "", "Edit src/index.ts: -'cfg' +'config'", "e1"), ("step", "Bash", "npm run build", "b9"),
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
    from vlk_memact.hosts.capture import ToolCall, on_failure, on_success

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
    from vlk_memact.hosts.capture import ToolCall, on_failure, on_success

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
    from vlk_memact.hosts.capture import ToolCall, on_failure, on_success

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
    from vlk_memact.hosts.capture import ToolCall, on_failure, on_success

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


def test_lessons_show_scope_type_fires_and_conflicts_and_no_revoke_when_read_only(site: Site) -> None:
    page = site.client.get(f"/lessons?{MAIN_QUERY}").text
    first, second = site.seeded.conflict_ids
    assert f'id="lesson-{first}"' in page and f'id="lesson-{second}"' in page
    assert f"Conflicts with #{second}" in page and f"Conflicts with #{first}" in page
    assert 'class="badge scope project"' in page and 'class="badge scope session"' in page
    assert "DERIVED" in page and "fired 0×" in page
    assert f'id="lesson-{site.seeded.revoked_id}"' not in page  # revoked: no longer active
    assert 'action="/revoke"' not in page and ">Revoke</button>" not in page
    assert "--allow-write" in page


def test_recall_shows_fire_counts_on_the_lessons_page(site: Site) -> None:
    shop = site.memory.for_project(SHOP)
    recorded = shop.record_state(raw_log=PG_ERROR.format(port=5433), session_id="another")
    assert [r.constraint_id for r in recorded.recalled] == [site.seeded.lesson_id]
    page = site.client.get("/lessons?" + urlencode({"project": SHOP, "session": "another"})).text
    item = page[page.index(f'id="lesson-{site.seeded.lesson_id}"'):][:1500]
    assert "fired 1×, last 20" in item
    assert f"in <a href=\"/session?{html.escape(MAIN_QUERY)}\">{MAIN}</a>" in item


def test_the_context_page_is_the_next_fetch_and_changes_nothing(site: Site) -> None:
    shop = site.memory.for_project(SHOP)
    for line in (1, 2, 3):  # a new loop: the dry run must show it intercepted, without archiving it
        shop.record_state(raw_log=f"ERROR: relation \"orders\" does not exist at character {line}", session_id=MAIN)
    with site.memory.store.read() as tx:
        before = list(tx.dump(None, None, None))
    page = site.client.get(f"/context?{MAIN_QUERY}&max_tokens=3000").text
    with site.memory.store.read() as tx:
        assert list(tx.dump(None, None, None)) == before
    shown = pre_text(page, "context-text")
    assert "intercepted a loop of 3" in shown and "The next real fetch will also change the memory" in page
    real = shop.fetch_context(session_id=MAIN, max_tokens=3000)
    assert shown == real.text
    assert f"<strong>{real.tokens:,}</strong> of 3,000 tokens used" in page


def test_search_finds_archived_slots_and_links_into_the_timeline(site: Site) -> None:
    page = site.client.get("/search?q=DECIMAL").text
    history = site.memory.for_project(SHOP).get_history(session_id=MAIN, limit=500).slots
    archived = [s for s in history if s.retired_reason == "loop"]
    for slot in archived:  # the page of the timeline that holds the slot, scrolled to it
        link = re.search(rf'href="(/session\?{re.escape(html.escape(MAIN_QUERY))}&amp;before=\d+)#slot-{slot.id}"',
                         page)
        assert link, slot.id
        assert f'id="slot-{slot.id}"' in site.client.get(html.unescape(link.group(1))).text
    scoped = site.client.get(f"/search?q=plan&{MAIN_QUERY}").text
    assert "plan-vpc" not in scoped
    nothing = site.client.get("/search?q=%25").text
    assert "Nothing matches" in nothing


def test_bad_parameters_get_a_clear_error_page(site: Site) -> None:
    missing = site.client.get("/session")
    assert missing.status_code == 400 and "needs a project and a session" in missing.text
    assert site.client.get(f"/session?{MAIN_QUERY}&before=abc").status_code == 400
    small = site.client.get(f"/context?{MAIN_QUERY}&max_tokens=5")
    assert small.status_code == 400 and "max_tokens" in small.text
    assert site.client.get("/nowhere").status_code == 404


def test_timeline_pages_go_back_to_older_slots(site: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(readmodel, "TIMELINE_PAGE", 4)
    page = site.client.get(f"/session?{MAIN_QUERY}").text
    older = re.search(r'href="(/session\?[^"]*before=(\d+))"', page)
    assert older
    previous = site.client.get(html.unescape(older.group(1))).text
    seqs = [int(n) for n in re.findall(r'<span class="seq"[^>]*>(\d+)</span>', previous)]
    assert seqs and max(seqs) < int(older.group(2))
    assert f'href="/session?{html.escape(MAIN_QUERY)}">newest slots' in previous
    # A search result deep in the session links to the page that holds it.
    first_loop = min(s.id for s in site.memory.for_project(SHOP).get_history(session_id=MAIN, limit=500).slots
                     if s.retired_reason == "loop")
    found = site.client.get("/search?q=Decimal").text
    link = re.search(rf'href="([^"#]*)#slot-{first_loop}"', found)
    assert link and f'id="slot-{first_loop}"' not in page
    assert f'id="slot-{first_loop}"' in site.client.get(html.unescape(link.group(1))).text


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
    site = _site(memory, allow_write=True)
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
        site = _site(memory, allow_write=False)
        page = site.client.get("/").text
        assert "hunter2" not in page and "PostgreSQL postgresql://postgres:***@" in page


def test_secrets_stored_without_redaction_are_masked_on_display(memory: Memory) -> None:
    from dataclasses import replace

    raw = Memory(settings=replace(memory.settings, redact_secrets=False), store=memory.store, project=SHOP)
    raw.record_state(raw_log="export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD", session_id="leak")
    site = _site(memory, allow_write=False)
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
