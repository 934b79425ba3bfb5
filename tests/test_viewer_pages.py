"""`vlk-memact ui` through Starlette's test client, on SQLite and PostgreSQL: what each page shows: sessions,
the timeline, loops, revocations and consolidations, lessons, the context, search, paging and bad parameters.
How fixes are shown is tests/test_viewer_fixes.py; escaping and the guard, tests/test_viewer_security.py."""

from __future__ import annotations

import html
import re
from urllib.parse import urlencode

import pytest
from viewer_seed import INFRA, MAIN, PG_ERROR, SHOP
from viewer_site import MAIN_QUERY, Site, open_site

from vlk_memact import Memory
from vlk_memact.viewer import readmodel


def pre_text(page: str, element_id: str) -> str:
    match = re.search(rf'<pre[^>]*id="{element_id}"[^>]*>(.*?)</pre>', page, re.S)
    assert match, element_id
    return html.unescape(match.group(1))


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
    site = open_site(memory, allow_write=False)
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
