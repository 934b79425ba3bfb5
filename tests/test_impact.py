"""Interventions and their outcomes, on both stores (issue 33): what the hooks said is recorded where it was
said, the report computes what followed, export and import carry the records, retention and tenants bound
them, VLK_IMPACT=0 records nothing, and the VLK_HOLDOUT experiment withholds and compares."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest
from impact_scenario import ENV_ERROR, run_session_a, run_session_b

from vlk_memact import Memory
from vlk_memact.config import Settings
from vlk_memact.core import interventions as kinds
from vlk_memact.core.errors import ConfigError
from vlk_memact.core.interventions import Intervention
from vlk_memact.engine import impact_record
from vlk_memact.engine.impact import holdout
from vlk_memact.engine.impact_outcomes import Outcome

PROJECT = "/work/project"


def _memory(url: str, **settings: object) -> Memory:
    return Memory(url, settings=replace(Settings(), **settings), project=PROJECT)  # type: ignore[arg-type]


def test_the_report_is_what_happened_in_the_scenario(database_url: str) -> None:
    with _memory(database_url) as memory:
        run_session_a(memory)
        said = run_session_b(memory)
        report, in_b = memory.impact(), memory.impact(session="B")
        with memory.store.read() as tx:
            rows = tx.interventions(memory.tenant, memory.project)
    assert report["fixes_told"] == {"total": 3, "applied": 3, "resolved": 3, "not_observable": 0}
    assert report["denials"] == {"total": 1, "then_changed": 1, "overridden": 0, "then_succeeded": 1}
    assert report["carried_facts"] == {"told": 1, "met_again": 1}
    # Session A: the env fix took a wrong attempt (touch), the argument a second failure; B went straight.
    assert report["steps_saved"] == 2 and report["sessions"] == 2
    assert [f["steps_saved"] for f in report["fixes"]] == [1, 0, 1]
    # What the model saw, to the character (a failure's two notes are joined by one newline not counted).
    texts = [t for t in said.values() if t]
    joined = sum(1 for t in texts if "\nvlk-memact: fixed" in t)
    assert sum(len(t) for t in texts) - joined == in_b["chars_injected"]
    told = [r for r in rows if r.kind == kinds.FIX_TOLD]
    assert {r.tool_use_id for r in told} == {r.tool_use_id for r in told if r.tool_use_id}
    assert all(r.session_id == "B" and r.host == "claude-code" and r.data["fix_session"] == "A" for r in told)
    denied = next(r for r in rows if r.kind == kinds.DENY)
    assert denied.chars == len(said["denied"]) and denied.detail == "Bash `sh deploy.sh`"


def test_export_and_import_carry_the_interventions_and_what_followed(database_url: str, tmp_path) -> None:
    from io import StringIO

    from vlk_memact.ops.transfer import export_memory, import_memory

    with _memory(database_url) as memory:
        run_session_a(memory)
        run_session_b(memory)
        before = memory.impact()
        out = StringIO()
        export_memory(memory, out)
    records = [json.loads(line) for line in out.getvalue().splitlines()[1:]]
    exported = [r for r in records if r["type"] == "intervention"]
    assert len(exported) == sum(before["interventions"].values())
    assert all(set(r["outcome"]) >= {"applied", "resolved", "changed", "met_again"} for r in exported)
    with _memory(f"sqlite:///{tmp_path / 'copy.db'}") as copy:
        first = import_memory(copy, out.getvalue().splitlines())
        again = import_memory(copy, out.getvalue().splitlines())
        assert first.inserted == len(records) and again.inserted == 0  # idempotent by uid
        after = copy.impact()
    # Hook call records stay behind (they are the hooks' scratch), so the copy reports what the export computed.
    assert {k: v for k, v in after.items() if k != "recent"} == {k: v for k, v in before.items() if k != "recent"}


def test_retention_drops_old_interventions_and_tenants_never_see_each_other(database_url: str) -> None:
    with _memory(database_url) as memory:
        with memory.at(datetime.now(timezone.utc) - timedelta(days=40)):
            memory.record_intervention("old", kinds.WARN, "an old warning")
        memory.record_intervention("new", kinds.WARN, "a new warning")
        other = memory.for_tenant("other")
        other.record_intervention("new", kinds.DENY, "another tenant's denial")
        assert memory.impact()["interventions"]["warn"] == 2
        assert other.impact()["interventions"] == {**{k: 0 for k in kinds.KINDS}, "deny": 1}
        with memory.store.write() as tx:
            tx.prune(None, 500, 30)
        assert memory.impact()["interventions"]["warn"] == 1
        assert memory.impact(since="2999-01-01")["interventions"]["warn"] == 0
        with memory.store.read() as tx:
            assert [r.session_id for r in tx.interventions("local", None)] == ["new"]


def test_vlk_impact_0_records_nothing_and_a_failed_record_never_breaks_the_hook(database_url: str) -> None:
    with _memory(database_url, impact=False) as memory:
        run_session_a(memory)
        said = run_session_b(memory)
        assert "cp .env.example .env" in said["env"]  # the hooks still speak
        assert sum(memory.impact()["interventions"].values()) == 0
    with _memory(database_url) as memory:
        with pytest.raises(ValueError):
            memory.record_intervention("s", "praise", "unknown kind")
        memory.store.close()  # a write now fails: logged, never raised
        memory.record_intervention("s", kinds.WARN, "lost")


def test_the_holdout_withholds_recorded_fixes_and_says_nothing(database_url: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(impact_record, "_draw", random.Random(4))
    with _memory(database_url, holdout=0.5) as memory:
        run_session_a(memory)
        said = [run_session_b(memory, f"B{n}") for n in range(6)]
        report = memory.impact()
        with memory.store.read() as tx:
            rows = tx.interventions(memory.tenant, None)
    withheld = [r for r in rows if r.kind == kinds.FIX_WITHHELD]
    experiment = report["holdout"]
    assert withheld and report["fixes_told"]["total"] and all(r.chars == 0 for r in withheld)
    assert experiment["withheld"]["cases"] == len(withheld)
    recalls: dict[tuple[str, str | None], set[str]] = {}
    for r in rows:
        if r.kind in (kinds.FIX_TOLD, kinds.FIX_WITHHELD):
            recalls.setdefault((r.session_id, r.tool_use_id), set()).add(r.kind)
    # Three recalls in each of six sessions, and from the second on a fourth: B0's changed deploy call became a
    # fix of the deploy error. A recall names one or two fixes.
    assert len(recalls) == 6 * 3 + 5
    assert all(len(found) == 1 for found in recalls.values())  # a recall is withheld whole or told whole
    for r in withheld:  # nothing was said after that failure
        session = said[int(r.session_id[1:])]
        name = {"sh check_env.sh": "env", "python3 app.py": "key"}.get(r.detail.split("(then ")[-1][:-8], "arg")
        assert "fixed in an earlier session" not in session[name], (r.detail, session[name])
    assert experiment["verdict"].startswith(("not enough cases", "significant", "not significant yet"))
    assert experiment["withheld"]["resolved"] == len(withheld)  # withheld, the agent found the fix itself here


def _outcomes(steps: list[int]) -> list[Outcome]:
    iv = Intervention(0, "u", "local", "p", "s", kinds.FIX_TOLD, 0, None, None, None, None, None, None, {}, None, "")
    return [Outcome(iv, applied=True, resolved=True, steps_here=n) for n in steps]


def test_the_holdout_comparison_needs_cases_and_gives_a_confidence_interval() -> None:
    few = holdout(_outcomes([2, 2]), _outcomes([5]))
    assert few["ci95"] is None and few["verdict"].startswith("not enough cases: 2 told and 1 withheld")
    clear = holdout(_outcomes([2, 2, 3, 2, 1, 2]), _outcomes([6, 7, 5, 8, 6, 7]))
    low, high = clear["ci95"]
    assert clear["difference"] == pytest.approx(4.5, abs=0.01) and 0 < low < 4.5 < high
    assert clear["verdict"].startswith("significant")
    noise = holdout(_outcomes([2, 6, 3, 5, 1, 7]), _outcomes([3, 5, 2, 6, 4, 4]))
    assert noise["ci95"][0] < 0 < noise["ci95"][1] and noise["verdict"].startswith("not significant yet")


def test_vlk_holdout_is_a_share_between_0_and_half() -> None:
    assert Settings.from_env({"VLK_HOLDOUT": "0.1"}).holdout == 0.1 and Settings().holdout == 0
    for bad in ("0.9", "-1", "ten"):
        with pytest.raises(ConfigError, match="VLK_HOLDOUT"):
            Settings.from_env({"VLK_HOLDOUT": bad})


def test_the_mcp_tools_count_a_carried_lesson_once_per_session(database_url: str) -> None:
    from vlk_memact.server import said as mcp_said

    with _memory(database_url) as memory:
        first = memory.record_state(raw_log=ENV_ERROR, session_id="a")
        memory.time_travel(target_timeline_ids=[first.timeline_id], learning="copy .env.example to .env",
                           raw_log_excerpt="error: .env is missing", session_id="a", scope="project")
        for _ in range(3):
            mcp_said.context(memory, memory.fetch_context(session_id="b"))
        report = memory.impact()
    assert report["carried_facts"] == {"told": 1, "met_again": 0}


def test_the_warm_server_writes_what_was_said_after_answering(file_memory: Memory) -> None:
    """impact_record.deferred(): held in the thread until flush(), stamped when said, not when written."""
    with impact_record.deferred() as held:
        file_memory.record_intervention("s", kinds.WARN, "said first")
        assert file_memory.impact()["interventions"]["warn"] == 0 and len(held) == 1
    stamped = held[0][1][0].at
    impact_record.flush(held)
    with file_memory.store.read() as tx:
        [row] = tx.interventions(file_memory.tenant, None)
    assert row.created_at == stamped and row.chars == len("said first") and held == []


def test_the_impact_page_renders_empty_and_filtered_by_project(site) -> None:  # type: ignore[no-untyped-def]
    """The page before anything was said, and for one project (the viewer's seeded memory: no interventions)."""
    empty = site.client.get("/impact")
    assert empty.status_code == 200 and "Nothing was said to an agent yet." in empty.text
    run_session_a(site.memory.for_project(PROJECT))
    page = site.client.get("/impact?project=" + PROJECT)
    assert page.status_code == 200 and 'class="chart impact-chart"' in page.text and "loop" in page.text
    other = site.client.get("/impact?project=elsewhere").text
    assert "Nothing was said to an agent yet." in other


def test_learn_keeps_no_intervention_for_past_sessions(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The handlers speak to a past session as learn replays it; nothing of it reached a model then."""
    from learn_transcripts import sessions
    from test_learn import CWD, learn_folder

    sessions(tmp_path / "projects", CWD, 3)
    with Memory(f"sqlite:///{tmp_path / 'learned.db'}", project=CWD) as memory:
        report = learn_folder(memory, tmp_path / "projects")
        assert report.total("loops") == 3  # the handlers ran, and announced loops
        assert sum(memory.impact(every_project=True)["interventions"].values()) == 0


def test_retention_keeps_the_newest_interventions_of_a_session(database_url: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from vlk_memact.store import interventions as stored

    monkeypatch.setattr(stored, "HOST_CALLS_PER_SESSION", 3)
    with _memory(database_url) as memory:
        for n in range(5):
            memory.record_intervention("long", kinds.REPEAT, f"said {n}")
        memory.record_intervention("short", kinds.REPEAT, "said once")
        with memory.store.write() as tx:
            tx.prune(memory._key("long"), 500, 30)  # noqa: SLF001
        with memory.store.read() as tx:
            kept = [(r.session_id, r.chars) for r in tx.interventions(memory.tenant, None)]
    assert kept == [("long", 6), ("long", 6), ("long", 6), ("short", 9)]
