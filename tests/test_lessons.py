"""Issue 4: scopes, recall on record, a new session starting informed, ranking, the token budget, lifecycle."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from vlk_memact import InvalidInput, Memory, Settings
from vlk_memact.config import detect_project
from vlk_memact.core.render import estimate_tokens

def word(i: int) -> str:
    """A distinct alphabetic word per i (digits would be masked by fingerprints)."""
    return "".join(chr(97 + (i // 26**k) % 26) for k in range(3)) + "zork"


PANIC = "thread 'main' ({tid}) panicked at src/parser.rs:{line}:9:\ncalled `Option::unwrap()` on a `None` value"


@pytest.fixture
def url(database_url: str) -> str:
    return database_url


@pytest.fixture
def project_a(url: str) -> Iterator[Memory]:
    with Memory(url, project="repo-a") as m:
        yield m


@pytest.fixture
def project_b(url: str) -> Iterator[Memory]:
    with Memory(url, project="repo-b") as m:
        yield m


def learn(m: Memory, raw: str, lesson: str, sid: str, scope: str | None = None, kind: str | None = None) -> int:
    slot = m.record_state(raw_log=raw, session_id=sid).timeline_id
    return m.time_travel(target_timeline_ids=[slot], learning=lesson, raw_log_excerpt=raw[:80], session_id=sid,
                         scope=scope, constraint_type=kind).constraint_id


# ---- scopes ----

def test_a_session_scoped_lesson_never_leaks_to_another_session(project_a: Memory) -> None:
    cid = learn(project_a, "boom", "Only for this task", "s1", scope="session")
    assert cid in project_a.fetch_context(session_id="s1").constraint_ids
    other = project_a.fetch_context(session_id="s2")
    assert cid not in other.constraint_ids and "Only for this task" not in other.text
    assert project_a.record_state(raw_log="boom", session_id="s2").recalled == []


def test_a_project_lesson_reaches_every_session_of_the_project_and_no_other_project(
    project_a: Memory, project_b: Memory
) -> None:
    cid = learn(project_a, "error[E0277]: the trait bound `Foo: Bar` is not satisfied", "Derive Bar for Foo", "s1")
    assert cid in project_a.fetch_context(session_id="s2").constraint_ids
    leaked = project_b.fetch_context(session_id="s1")
    assert cid not in leaked.constraint_ids and "Derive Bar" not in leaked.text
    assert project_b.record_state(raw_log="error[E0277]: the trait bound `Foo: Bar` is not satisfied",
                                  session_id="s1").recalled == []
    with pytest.raises(Exception, match=f"#{cid}"):
        project_b.revoke_future(timeline_id=cid, session_id="s1")


def test_a_global_lesson_reaches_every_project(project_a: Memory, project_b: Memory) -> None:
    cid = learn(project_a, "npm ERR! code EACCES", "Never run npm with sudo", "s1", scope="global")
    assert cid in project_b.fetch_context(session_id="anything").constraint_ids


def test_default_scopes(project_a: Memory) -> None:
    slot = project_a.record_state(raw_log="x", session_id="s").timeline_id
    derived = project_a.time_travel(target_timeline_ids=[slot], learning="L", raw_log_excerpt="x", session_id="s")
    slot = project_a.record_state(raw_log="y", session_id="s").timeline_id
    prospective = project_a.time_travel(target_timeline_ids=[slot], learning="Freeze Friday", raw_log_excerpt="y",
                                        session_id="s", constraint_type="PROSPECTIVE")
    assert (derived.scope, prospective.scope) == ("project", "session")
    for _ in range(3):
        project_a.record_state(raw_log="loop", session_id="s")
    anchor = project_a.fetch_context(session_id="s").loops[0].anchor_id
    assert [s.scope for s in project_a.get_history(session_id="s").slots if s.id == anchor] == ["project"]


def test_bad_scope_is_a_clear_error(project_a: Memory) -> None:
    project_a.record_state(raw_log="x")
    with pytest.raises(InvalidInput, match="scope"):
        project_a.time_travel(target_timeline_ids=[1], learning="L", raw_log_excerpt="x", scope="team")


def test_a_revoke_works_from_any_session_that_sees_the_constraint(project_a: Memory) -> None:
    cid = learn(project_a, "boom", "Shared lesson", "s1")
    project_a.revoke_future(timeline_id=cid, session_id="s2")
    assert cid not in project_a.fetch_context(session_id="s1").constraint_ids


# ---- recall on record ----

def test_recording_a_known_error_recalls_the_lesson_with_its_evidence(project_a: Memory) -> None:
    cid = learn(project_a, PANIC.format(tid=1, line=10), "Check the header before unwrapping", "monday")
    result = project_a.record_state(raw_log=PANIC.format(tid=2, line=14), session_id="tuesday")
    [recall] = result.recalled
    assert (recall.constraint_id, recall.learned_in_session, recall.fire_count) == (cid, "monday", 1)
    assert recall.evidence and "panicked" in recall.evidence
    from vlk_memact.core.results import record_text

    text = record_text(result)
    assert f"⚡ Seen before in session 'monday': [id:{cid}] Check the header before unwrapping" in text
    history = {s.id: s for s in project_a.get_history(session_id="monday").slots}
    assert history[cid].fire_count == 1 and history[cid].last_fired_at


def test_recall_matches_by_fingerprint_not_by_keywords(project_a: Memory) -> None:
    learn(project_a, "ModuleNotFoundError: No module named 'requests'", "pip install requests first", "s1")
    unrelated = project_a.record_state(raw_log="KeyError: 'requests'", session_id="s2")
    assert unrelated.recalled == []


def test_an_anchor_is_recalled_when_the_loop_comes_back(project_a: Memory) -> None:
    for line in (1, 2, 3):
        project_a.record_state(raw_log=PANIC.format(tid=line, line=line), session_id="s")
    anchor = project_a.fetch_context(session_id="s").loops[0].anchor_id
    again = project_a.record_state(raw_log=PANIC.format(tid=9, line=99), session_id="s")
    assert [r.constraint_id for r in again.recalled] == [anchor]


def test_recall_survives_consolidation(project_a: Memory) -> None:
    learn(project_a, PANIC.format(tid=1, line=1), "Check the header", "s")
    for i in range(6):
        learn(project_a, f"distinct failure in module {word(i)}", f"Rule {i}", "s")
    merges = project_a.fetch_context(session_id="s").merges
    assert merges
    recalled = project_a.record_state(raw_log=PANIC.format(tid=5, line=77), session_id="s2").recalled
    assert [r.constraint_id for r in recalled] == [merges[0].consolidated_id]


# ---- a new session starts informed; ranking ----

def test_a_new_session_sees_the_project_lessons_before_recording_anything(project_a: Memory) -> None:
    learn(project_a, "boom", "Run migrations before tests", "yesterday")
    context = project_a.fetch_context(session_id="today")
    assert "Run migrations before tests" in context.text
    assert "Learned in session 'yesterday' (project scope)" in context.text
    assert project_a.summarize_session(session_id="today").visible_constraints == 1


def test_constraints_about_a_live_error_rank_first_then_fired_then_recent(project_a: Memory) -> None:
    old = learn(project_a, PANIC.format(tid=1, line=1), "About the panic", "s")
    fired = learn(project_a, "npm ERR! code ERESOLVE", "Use --legacy-peer-deps", "s")
    recent = learn(project_a, "HTTP/1.1 502 Bad Gateway", "The proxy is flaky", "s")
    project_a.record_state(raw_log="npm ERR! code ERESOLVE", session_id="s")  # fires `fired`, stays PRESENT
    order = project_a.fetch_context(session_id="s").constraint_ids
    assert order == [fired, recent, old]  # `fired` is live and fired; then recency
    project_a.record_state(raw_log=PANIC.format(tid=7, line=3), session_id="s")  # fires `old`, now live too
    assert project_a.fetch_context(session_id="s").constraint_ids == [old, fired, recent]


# ---- token budget ----

def test_the_context_never_exceeds_its_budget(project_a: Memory) -> None:
    for i in range(40):
        project_a.record_state(raw_log=f"{word(i)} failed: " + f"{word(i + 100)} " * 60, session_id="s")
    for budget in (200, 350, 1000, 4000):
        context = project_a.fetch_context(session_id="s", max_tokens=budget)
        assert estimate_tokens(context.text) <= budget and context.tokens <= budget
    small = project_a.fetch_context(session_id="s", max_tokens=1000)
    assert small.omitted_present_ids and "[VLK BUDGET] Left out to stay within 1000 tokens" in small.text
    assert max(small.present_ids) == 40  # newest first


def test_one_huge_slot_is_truncated_with_a_marker_not_dropped(project_a: Memory) -> None:
    project_a.record_state(raw_log="START " + "x" * 50_000 + " END", session_id="s")
    context = project_a.fetch_context(session_id="s", max_tokens=500)
    assert context.present_ids == [1] and context.tokens <= 500
    assert "START" in context.text and "END" in context.text
    assert "characters left out to fit the token budget" in context.text


def test_only_constraints_within_a_tiny_budget(project_a: Memory) -> None:
    for i in range(5):
        learn(project_a, f"failure {word(i)}", f"Lesson {word(i)} " + "because " * 30, "s", scope="session")
    context = project_a.fetch_context(session_id="s", max_tokens=200)
    assert context.tokens <= 200
    assert context.omitted_constraint_ids and len(context.constraint_ids) + len(context.omitted_constraint_ids) == 5
    assert "(No active PRESENT or FUTURE entries" not in context.text


def test_conflicts_are_kept_when_space_runs_out(project_a: Memory) -> None:
    learn(project_a, "e1", "Use cache for API responses", "s")
    learn(project_a, "e2", "Do not cache API responses", "s")
    for i in range(20):
        project_a.record_state(raw_log=f"noise {word(i)} " + "z" * 400, session_id="s")
    context = project_a.fetch_context(session_id="s", max_tokens=300)
    assert "CONFLICTING FUTURE CONSTRAINTS" in context.text and context.tokens <= 300


@pytest.mark.parametrize("budget", [0, 50, 199, -5, "big"])
def test_budgets_below_the_minimum_are_rejected(project_a: Memory, budget: object) -> None:
    with pytest.raises(InvalidInput, match="max_tokens"):
        project_a.fetch_context(max_tokens=budget)


def test_the_default_budget_comes_from_settings(url: str) -> None:
    with Memory(url, project="p", settings=Settings(context_max_tokens=300)) as m:
        assert m.fetch_context().max_tokens == 300


# ---- lifecycle ----

def test_lifecycle_active_consolidated_revoked(project_a: Memory) -> None:
    ids = [learn(project_a, f"failure {word(i)}", f"Rule {i}", "s") for i in range(6)]
    merged = project_a.fetch_context(session_id="s").merges[0].consolidated_id
    history = {s.id: s for s in project_a.get_history(limit=100, session_id="s").slots}
    assert all(history[i].temporal_state == "PAST" and history[i].retired_reason == "consolidated" for i in ids)
    assert history[merged].temporal_state == "FUTURE" and history[merged].scope == "project"
    project_a.revoke_future(timeline_id=merged, session_id="s")
    history = {s.id: s for s in project_a.get_history(limit=100, session_id="s").slots}
    assert history[merged].retired_reason == "revoked"


# ---- project detection ----

def test_the_project_is_the_git_root_and_worktrees_share_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git" / "worktrees" / "feature").mkdir(parents=True)
    (repo / "src" / "deep").mkdir(parents=True)
    assert detect_project(repo / "src" / "deep") == str(repo)
    worktree = tmp_path / "feature-wt"
    worktree.mkdir()
    (worktree / ".git").write_text(f"gitdir: {repo}/.git/worktrees/feature\n")
    (repo / ".git" / "worktrees" / "feature" / "commondir").write_text("../..\n")
    assert detect_project(worktree) == str(repo)
    assert detect_project(tmp_path) in ("default", str(Path("/").resolve()))


def test_vlk_project_overrides_detection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLK_PROJECT", "my-app")
    with Memory("sqlite::memory:") as m:
        assert m.summarize_session().project == "my-app"


def test_a_loop_that_comes_back_replaces_its_anchor_with_the_full_count(project_a: Memory) -> None:
    for round_ in range(2):
        for line in range(3):
            project_a.record_state(raw_log=PANIC.format(tid=round_ * 10 + line, line=line), session_id="s")
        result = project_a.fetch_context(session_id="s")
    [loop] = result.loops
    assert loop.superseded_ids and "appeared 6 times" in result.text
    assert sum("[SYSTEM ANCHOR]" in line for line in result.text.splitlines()) == 1


@pytest.mark.slow
def test_the_replay_benchmark_runs(tmp_path: Path) -> None:
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, str(root / "bench" / "replay.py"), "--quick"], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "| swe-agent |" in done.stdout and (root / "bench" / "results" / "replay-quick.json").exists()


def test_a_repeated_error_below_the_threshold_is_shown_once(project_a: Memory) -> None:
    first = project_a.record_state(raw_log=PANIC.format(tid=1, line=10), session_id="s").timeline_id
    second = project_a.record_state(raw_log=PANIC.format(tid=2, line=12), session_id="s").timeline_id
    context = project_a.fetch_context(session_id="s")
    assert context.text.count("[ACTIVE PRESENT STATE]") == 1
    assert f"[id:{second}] [ACTIVE PRESENT STATE] (the same error also as #{first})" in context.text
    assert context.present_ids == [first, second] and not context.loops
