"""The guard replay benchmark (bench/guard.py): its judging definitions, its Claude Code events, and the
whole pipeline end to end through `vlk_memact.hosts.claude_code.adapter.handle` on real trajectories.

The figures themselves are the benchmark's business (bench/results/guard.md); these tests check that
the replay measures what it says it measures.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import claude_events  # noqa: E402
import guard_truth  # noqa: E402
from guard_truth import changes_nothing, error_key, judge_denial, loop_repeats  # noqa: E402
from trajectories import DATA, Step, Trajectory, load  # noqa: E402

# The trajectories are development data beside the repository (../shared/data, or $VLK_SHARED_DIR/data), not
# part of it: a clone elsewhere runs every test of this file that does not read them.
needs_trajectories = pytest.mark.skipif(
    not ((DATA / "swe-agent").is_dir() and (DATA / "mini-swe-agent").is_dir()),
    reason=f"the development trajectories are not at {DATA} (set VLK_SHARED_DIR to the shared folder)",
)


def step(action: str | None, observation: str, failed: bool, code: int | None = None) -> Step:
    return Step(
        action,
        observation,
        failed,
        code if code is not None else (1 if failed else 0),
        "ran" if action else "format_error",
        "/repo",
    )


def trajectory(*steps: Step) -> Trajectory:
    return Trajectory("owner__repo-1", "owner__repo", "mini-swe-agent", list(steps), "fix the bug")


FAIL = "Traceback (most recent call last):\n  File \"x.py\", line 3\nNameError: name 'y' is not defined"


# ---- identical error ----


def test_identical_error_masks_only_volatile_values() -> None:
    assert error_key("E at 0x7f3a2b1c9d10\nran in 0.52s  \r\n") == error_key(
        "E at 0x7f00aa11bb22\nran in 1.03s"
    )
    assert error_key("at 12:01:59 on 2024-03-01") == error_key("at 23:11:02 on 2025-12-31")
    assert error_key("/tmp/tmpab12cd_x/f.py") == error_key("/tmp/tmpzz99yy_q/f.py")
    # a line number, a value or one more line is a different error
    assert error_key("line 3: NameError") != error_key("line 4: NameError")
    assert error_key("expected 1, got 2") != error_key("expected 1, got 3")
    assert error_key("E\n") != error_key("E\nF")


# ---- changes nothing ----


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "grep -rn foo src 2>/dev/null | head -5",
        "nl -ba a.py | sed -n '10,20p'",
        "git diff",
        "cat a.py",
        "find . -name '*.py' | xargs grep -l Foo",
        "goto 120",
        'search_dir "a > b"',
        "pwd",
        "ls &>/dev/null",
        "X=1 grep a b || echo none",
    ],
)
def test_read_only_commands_change_nothing(command: str) -> None:
    assert changes_nothing(command)


@pytest.mark.parametrize(
    "command",
    [
        "sed -i 's/a/b/' f.py",
        "cat <<'EOF' > f.py\nx = 1\nEOF",
        "echo x >> f",
        "python fix.py",
        "cd src && ls",
        "git checkout f.py",
        "find . -name x -delete",
        "pip install pytest",
        "open f.py",
        "create t.py",
        "edit 1:1\nx\nend_of_edit",
        "ls\nrm x",
        "echo $(rm x)",
        "cat 'unbalanced",
        "find . | xargs rm",
    ],
)
def test_writing_or_unknown_commands_change_something(command: str) -> None:
    assert not changes_nothing(command)


# ---- the recall denominator and the verdict ----


def test_loop_repeats_need_a_loop_the_same_error_and_nothing_changed() -> None:
    run = "python reproduce.py"
    t = trajectory(
        step(run, FAIL, True),
        step(run, FAIL, True),
        step("ls", "a b", False),
        step(run, FAIL, True),
        step(run, FAIL, True),
        step("sed -i s/y/z/ x.py", "", False),
        step(run, FAIL, True),
    )
    # steps 0-2 are before the loop (fewer than 3 earlier failures); 4 follows 3 with nothing between;
    # 6 follows a sed -i that succeeded, so something changed.
    assert loop_repeats(t) == {4}
    assert loop_repeats(t, require_nothing_changed=False) == {4, 6}


def test_loop_repeats_are_identical_commands_and_errors() -> None:
    edit = "edit 12:12\n        url = x\nend_of_edit"
    t = trajectory(
        *[step(edit, FAIL, True)] * 3,
        step(edit.replace("        ", "    "), FAIL, True),
        step(edit, FAIL.replace("line 3", "line 4"), True),
        step(edit + "  \n", FAIL.replace("line 3", "line 4"), True),
    )
    # 3: indentation differs, not the same command; 4: a different error; 5: same as 4 (trailing space aside)
    # but that error has occurred only once before.
    assert loop_repeats(t) == set()


def test_a_denial_is_judged_by_what_really_happened() -> None:
    run = "python  reproduce.py"
    steps = [
        step(run, FAIL, True),
        step("ls", "", False),
        step("python reproduce.py", FAIL, True),
        step(run, FAIL.replace("'y'", "'z'"), True),
        step(run, "ok", False),
    ]
    assert judge_denial(steps, 2) == "identical"  # the same call, whitespace aside
    assert judge_denial(steps, 3) == "different"
    assert judge_denial(steps, 4) == "succeeded"


# ---- Claude Code events ----


def test_events_are_shaped_like_claude_codes() -> None:
    t = trajectory(
        step("python x.py", FAIL, True, 2), step(None, "format error", True), step("ls", "a.py", False)
    )
    start, prompt = claude_events.session_start(t), claude_events.user_prompt(t)
    assert (
        start["hook_event_name"] == "SessionStart"
        and start["source"] == "startup"
        and "permission_mode" not in start
    )
    assert prompt["prompt"] == "fix the bug"
    events = list(claude_events.step_events(t))
    assert [e.index for e in events] == [0, 2]  # the format error ran no tool
    failure, success = events
    for e in (failure.pre, failure.post, success.pre, success.post):
        assert (
            e["session_id"] == start["session_id"]
            and e["cwd"] == "/repo"
            and e["permission_mode"] == "default"
        )
        assert e["transcript_path"] == f"/root/.claude/projects/-repo/{start['session_id']}.jsonl"
        assert (
            e["tool_name"] == "Bash"
            and e["tool_use_id"].startswith("toolu_01")
            and len(e["tool_use_id"]) == 30
        )
    assert failure.pre["hook_event_name"] == "PreToolUse" and failure.pre["tool_input"] == {
        "command": "python x.py"
    }
    assert failure.post["hook_event_name"] == "PostToolUseFailure"
    assert failure.post["error"] == "Exit code 2\n" + FAIL and failure.post["is_interrupt"] is False
    assert failure.pre["tool_use_id"] == failure.post["tool_use_id"] != success.pre["tool_use_id"]
    assert success.post["hook_event_name"] == "PostToolUse"
    assert success.post["tool_response"] == {
        "stdout": "a.py",
        "stderr": "",
        "interrupted": False,
        "isImage": False,
        "noOutputExpected": False,
    }


def test_events_have_the_keys_of_payloads_recorded_from_the_real_cli() -> None:
    recorded = ROOT / "tests" / "data" / "claude-code-hooks"
    t = trajectory(step("python x.py", FAIL, True), step("echo ok", "ok", False))
    failure, success = claude_events.step_events(t)
    ours = {
        "SessionStart-startup": claude_events.session_start(t),
        "UserPromptSubmit": claude_events.user_prompt(t),
        "PreToolUse-bash_fail": failure.pre,
        "PostToolUseFailure-bash_fail": failure.post,
        "PreToolUse-bash_ok": success.pre,
        "PostToolUse-bash_ok": success.post,
    }
    for name, event in ours.items():
        real = json.loads((recorded / f"{name}.json").read_text())
        assert set(event) == set(real) - {"duration_ms"}, name  # the trajectories have no timings
        if "tool_input" in real:
            assert set(event["tool_input"]) == set(real["tool_input"]) - {
                "description"
            }  # optional, none recorded
        if "tool_response" in real:
            assert set(event["tool_response"]) == set(real["tool_response"])
        for key in set(event) & set(real):
            assert type(event[key]) is type(real[key]), (name, key)


@needs_trajectories
def test_both_formats_parse_into_actions_and_outcomes() -> None:
    both = load(1)
    assert {t.source for t in both} == {"swe-agent", "mini-swe-agent"}
    for t in both:
        assert t.task and t.steps
        assert all(s.action or s.kind == "format_error" for s in t.steps)
        assert any(not s.failed for s in t.steps)
    assert any(s.failed for s in both[0].steps)  # clique-26: failing edits
    mini = next(t for t in both if t.source == "mini-swe-agent")
    assert mini.steps[-1].kind == "submitted" and not mini.steps[-1].failed  # the diff is not an error


# ---- end to end through handle() ----


@needs_trajectories
def test_replay_runs_end_to_end_through_the_hook_handler(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two SWE-agent runs with loops and one mini-swe-agent run, through the real handler (in process)."""
    import guard

    names = ["4degrees__clique-26", "DataBiosphere__newt-transformer-36", "django__django-13344"]
    argv = [
        "guard.py",
        "--out",
        str(tmp_path),
        "--stress-threshold",
        "0",
        "--rule",
        "any looped call",
        "--rule",
        "shipped",
        *[f"--only={n}" for n in names],
    ]
    monkeypatch.setattr(sys, "argv", argv)
    shipped_predicates = (guard.guard.changes_state, guard.guard._normalise)
    assert guard.main() == 0  # 1 when any hook output was malformed
    assert (guard.guard.changes_state, guard.guard._normalise) == shipped_predicates  # the rule is put back
    result = json.loads((tmp_path / "guard-quick.json").read_text())
    assert (tmp_path / "guard-quick.md").read_text().startswith("# The guard on real agent runs")
    replayed = result["trajectories"]
    assert {r["name"] for r in replayed if r["rule"] == "shipped"} == set(names)
    assert {r["rule"] for r in replayed} == {"any looped call", "shipped"}
    for r in replayed:
        assert r["malformed_outputs"] == []
        assert r["tool_calls"] == sum(1 for s in load(names={r["name"]})[0].steps if s.command)
        for d in r["denials"]:
            assert d["verdict"] in ("identical", "different", "succeeded") and d["reason_chars"] > 0
    shipped = [r for r in replayed if r["rule"] == "shipped"]
    # clique-26 cycles through failing edits with nothing in between: the guard must have spoken.
    assert sum(len(r["denials"]) for r in shipped) > 0
    assert sum(r["post_injections"] for r in shipped) > 0  # loops were announced after a failure
    total = result["figures"]["shipped"]["all"]["all"]
    assert total["trajectories"] == 3 and total["denials"] == sum(len(r["denials"]) for r in shipped)


def test_the_judge_uses_the_product_loop_threshold() -> None:
    assert guard_truth.LOOP_THRESHOLD == 3


def test_loop_repeats_are_calls_that_themselves_kept_failing_not_calls_sharing_an_error() -> None:
    shared = "File does not exist."
    t = trajectory(
        step("cat a.py", shared, True),
        step("cat b.py", shared, True),
        step("cat c.py", shared, True),
        step("cat a.py", shared, True),  # the error looped, but this call failed only once before
        step("cat a.py", shared, True),  # twice before
        step("cat a.py", shared, True),  # now it failed 3 times itself: a loop repeat
        step("cat a.py", shared, True),
    )
    assert loop_repeats(t) == {5, 6}


def test_a_format_error_is_a_failed_call_of_its_first_action() -> None:
    refusal = "Please always provide EXACTLY ONE action in triple backticks, found 2 actions."
    t = trajectory(Step(None, refusal, True, None, "format_error", "/testbed", "ls -la"))
    events = list(claude_events.step_events(t))
    assert len(events) == 1 and events[0].pre["tool_input"] == {"command": "ls -la"}
    assert events[0].post["hook_event_name"] == "PostToolUseFailure" and refusal in events[0].post["error"]
    assert list(claude_events.step_events(trajectory(Step(None, refusal, True, None, "format_error", "/testbed")))) == []
