"""Fix memory at the hooks, in process through vlk_memact.hosts.claude_code.adapter.handle, on both stores: what a
success resolves, what is kept as the fix, and what a later session is told when the error comes back."""

from __future__ import annotations

import pytest
from hook_events import bash, failure, pre, success, use_id

from vlk_memact import Memory
from vlk_memact.hosts.shared import fixes
from vlk_memact.hosts.claude_code.adapter import handle
from vlk_memact.core.model import FixStep, HostCall, NewHostCall

ENV_ERROR = "Exit code 1\nerror: .env is missing (copy .env.example)"
KEY_ERROR = "Exit code 1\nconfig error: required key 'timeout' missing in settings.toml"
ARG_ERROR = "Exit code 2\nusage: tool.py [-h] --mode {fast,quick}\ntool.py: error: argument --mode: invalid choice: 'slow'"
NEVER_FIXED = "Exit code 3\nfatal: remote origin does not answer (ERR_UPSTREAM_4711)"


def context_of(answer: dict | None) -> str | None:
    return None if answer is None else answer["hookSpecificOutput"].get("additionalContext")


def ran(memory: Memory, tool: str, tool_input: dict, session: str, error: str | None = None) -> str | None:
    """PreToolUse, then the outcome; the text injected after it."""
    tid = use_id()
    handle(pre(tool, tool_input, session, tid), memory)
    if error is None:
        handle(success(tool, tool_input, session=session, tool_use_id=tid), memory)
        return None
    return context_of(handle(failure(tool, tool_input, error, session, tid), memory))


def fixes_of(memory: Memory, session: str | None = None) -> list:
    with memory.store.read() as tx:
        return tx.fixes(memory.tenant, memory.project, session, 50)


def session_a(memory: Memory, session: str = "A") -> None:
    """A missing file fixed by a command, a missing key by an edit, a bad argument by a changed call."""
    ran(memory, "Bash", bash("ls"), session)  # a read before anything failed
    ran(memory, "Bash", bash("sh check_env.sh"), session, ENV_ERROR)
    ran(memory, "Read", {"file_path": "/work/project/.env.example"}, session)
    ran(memory, "Bash", bash("cp .env.example .env"), session)
    ran(memory, "Bash", bash("sh check_env.sh"), session)
    ran(memory, "Bash", bash("python app.py"), session, KEY_ERROR)
    ran(memory, "Edit", {"file_path": "/work/project/settings.toml", "old_string": "[app]",
                         "new_string": "[app]\ntimeout = 30"}, session)
    ran(memory, "Bash", bash("python app.py"), session)
    ran(memory, "Bash", bash("python tool.py --mode slow"), session, ARG_ERROR)
    ran(memory, "Bash", bash("python tool.py --mode quick"), session)
    ran(memory, "Bash", bash("git push origin main"), session, NEVER_FIXED)


def test_a_success_after_a_command_stores_that_command_as_the_fix(memory: Memory) -> None:
    session_a(memory)
    found = {f.passed: f for f in fixes_of(memory, "A")}
    env = found["sh check_env.sh"]
    assert env.kind == "fix" and [s.summary for s in env.steps] == ["cp .env.example .env"]
    assert env.error.startswith("Exit code 1") and env.failed == "sh check_env.sh" and env.left_out == 0
    assert env.steps[0].tool == "Bash" and env.steps[0].tool_use_id
    key = found["python app.py"]
    assert [s.summary for s in key.steps] == ["Edit /work/project/settings.toml: +'timeout = 30'"]
    arg = found["python tool.py --mode quick"]
    assert [s.summary for s in arg.steps] == ["python tool.py --mode quick"]
    assert "git push origin main" not in {f.failed for f in fixes_of(memory)}
    assert all(f.slot_uids and f.fingerprint_keys for f in found.values())


def test_a_later_session_hitting_each_error_is_told_its_fix(memory: Memory) -> None:
    session_a(memory)
    env = ran(memory, "Bash", bash("sh check_env.sh"), "B", ENV_ERROR)
    assert env == ("vlk-memact: fixed in an earlier session by: cp .env.example .env "
                   "(then sh check_env.sh passed)")
    key = ran(memory, "Bash", bash("python app.py"), "B", KEY_ERROR)
    assert key is not None and "settings.toml: +'timeout = 30'" in key and "(then python app.py passed)" in key
    arg = ran(memory, "Bash", bash("python tool.py --mode slow"), "B", ARG_ERROR)
    assert arg == "vlk-memact: fixed in an earlier session by: the changed call python tool.py --mode quick (it passed)"
    # Nothing invented: no fix, only where it failed the same way before and that it was not resolved there;
    # said once, at its first failure in the session.
    never = ran(memory, "Bash", bash("git push origin main"), "B", NEVER_FIXED)
    assert never is not None and never.startswith("vlk-memact: Bash `git push origin main` failed the same way in "
                                                  "session 'A' on 20") and never.endswith("; not resolved there.")
    assert "fixed" not in never
    again = ran(memory, "Bash", bash("git push origin main --force-with-lease"), "B", NEVER_FIXED) or ""
    assert "failed the same way" not in again


def test_reads_and_steps_before_the_failure_are_never_named(memory: Memory) -> None:
    session_a(memory)
    text = ran(memory, "Bash", bash("sh check_env.sh"), "B", ENV_ERROR) or ""
    assert ".env.example" not in text.replace("cp .env.example .env", "") and "ls" not in text.split("by:")[1]


def test_the_same_call_passing_on_retry_is_not_a_fix(memory: Memory) -> None:
    ran(memory, "Bash", bash("npm test"), "A", "Exit code 1\nflaky: socket hang up ECONNRESET")
    ran(memory, "Bash", bash("npm test"), "A")
    [retry] = fixes_of(memory)
    assert retry.kind == "retry" and retry.steps == ()
    # Passed on retry is said as such, never as a fix.
    assert ran(memory, "Bash", bash("npm test"), "B", "Exit code 1\nflaky: socket hang up ECONNRESET") == (
        "vlk-memact: Bash `npm test` failed the same way in session 'A' on "
        f"{fixes_of(memory)[0].created_at[:10]}; a later run of the same call passed there.")


def test_the_same_session_and_another_project_are_not_told(memory: Memory) -> None:
    session_a(memory)
    assert ran(memory, "Bash", bash("sh check_env.sh"), "A", ENV_ERROR) is None
    other = memory.for_project("elsewhere")
    assert ran(other, "Bash", bash("sh check_env.sh"), "B", ENV_ERROR) is None


def test_a_fix_is_told_once_per_session(memory: Memory) -> None:
    session_a(memory)
    assert "fixed in an earlier session" in (ran(memory, "Bash", bash("sh check_env.sh"), "B", ENV_ERROR) or "")
    again = ran(memory, "Bash", bash("sh check_env.sh"), "B", ENV_ERROR) or ""
    assert "same error as before" in again and "fixed" not in again


def test_a_fix_applied_after_recall_that_did_not_hold_is_not_offered_again(memory: Memory) -> None:
    session_a(memory)
    assert ran(memory, "Bash", bash("sh check_env.sh"), "B", ENV_ERROR)
    ran(memory, "Bash", bash("cp .env.example .env"), "B")  # applied what was told
    ran(memory, "Bash", bash("sh check_env.sh"), "B", ENV_ERROR)  # and the error came back anyway
    demoted = [f for f in fixes_of(memory, "A") if f.passed == "sh check_env.sh"]
    assert demoted[0].demoted == 1
    told = ran(memory, "Bash", bash("sh check_env.sh"), "C", ENV_ERROR) or ""
    assert "fixed" not in told and told.endswith("failed the same way in session 'B' on "
                                                 f"{demoted[0].created_at[:10]} (2 times there); not resolved there.")


def test_the_latest_working_fix_comes_first(memory: Memory) -> None:
    session_a(memory)
    ran(memory, "Bash", bash("sh check_env.sh"), "B", ENV_ERROR)
    ran(memory, "Write", {"file_path": "/work/project/.env", "content": "A=1\n"}, "B")
    ran(memory, "Bash", bash("sh check_env.sh"), "B")
    text = ran(memory, "Bash", bash("sh check_env.sh"), "C", ENV_ERROR) or ""
    first, second = text.split("\n")
    assert first == ("vlk-memact: fixed in an earlier session by: Write /work/project/.env (1 lines) "
                     "(then sh check_env.sh passed)")
    assert second == "vlk-memact: before that, fixed by: cp .env.example .env (then sh check_env.sh passed)"


def test_a_success_delivered_twice_or_without_tool_use_id_is_harmless(memory: Memory) -> None:
    tid = use_id()
    handle(failure("Bash", bash("make"), ENV_ERROR, "A", tid), memory)
    fix = success("Bash", bash("touch .env"), session="A")
    fix.pop("tool_use_id")
    handle(fix, memory)
    done = success("Bash", bash("make"), session="A")
    handle(done, memory)
    handle(done, memory)
    [found] = fixes_of(memory)
    assert [(s.tool_use_id, s.summary) for s in found.steps] == [(None, "touch .env")]


def test_a_success_reported_before_its_failure_makes_no_fix(memory: Memory) -> None:
    handle(success("Bash", bash("make"), session="A"), memory)
    handle(failure("Bash", bash("make"), ENV_ERROR, "A"), memory)
    assert fixes_of(memory) == []


def test_huge_and_binary_steps_are_kept_short(memory: Memory) -> None:
    ran(memory, "Bash", bash("make"), "A", ENV_ERROR)
    ran(memory, "Write", {"file_path": "/work/project/blob.bin", "content": "\x00\xff" * 500_000}, "A")
    ran(memory, "Bash", bash("echo " + "x" * 200_000 + " > big.txt"), "A")
    ran(memory, "Bash", bash("make"), "A")
    [found] = fixes_of(memory)
    assert all(len(s.summary) <= 240 for s in found.steps)
    text = ran(memory, "Bash", bash("make"), "B", ENV_ERROR) or ""
    assert 0 < len(text) < 600


def test_a_success_with_nothing_failed_writes_nothing(memory: Memory) -> None:
    ran(memory, "Bash", bash("npm install"), "A")
    ran(memory, "Edit", {"file_path": "/work/project/a.py", "old_string": "a", "new_string": "b"}, "A")
    with memory.store.read() as tx:
        assert tx.host_calls(memory._key("A")) == []  # noqa: SLF001


# ---- pure ----


def call(id_: int, key: str, outcome: str, changes: bool, summary: str) -> HostCall:
    return HostCall(id_, "s", f"t{id_}", key, outcome, changes, None, False, "", "Bash", None, summary)


def test_plan_keeps_the_steps_closest_to_the_success_and_counts_the_rest() -> None:
    between = [call(i, f"k{i}", "success", True, f"step {i}") for i in range(1, 7)]
    between.append(call(7, "read", "success", False, "cat x"))
    between.append(call(8, "bad", "failure", True, "rm -rf y"))
    planned = fixes.plan_fix("f", NewHostCall("t9", "f", "success", True, "Bash", "make", "make"), between)
    assert planned.kind == "fix" and planned.left_out == 3
    assert [s.summary for s in planned.steps] == ["step 4", "step 5", "step 6"]


def test_plan_of_a_changed_call_ends_with_it_and_of_a_retry_is_empty() -> None:
    changed = fixes.plan_fix("f", NewHostCall("t2", "g", "success", True, "Bash", "python t.py", "python t.py -x"), [])
    assert changed.steps == (FixStep("t2", "Bash", "python t.py -x", "g"),)
    assert fixes.plan_fix("f", NewHostCall("t2", "f", "success", True, "Bash", "make", "make"), []).kind == "retry"


def step(id_: int, summary: str, target: str | None, tool: str = "Bash") -> HostCall:
    return HostCall(id_, "s", f"t{id_}", f"k{id_}", "success", True, None, False, "", tool, target, summary)


def test_plan_names_no_rerun_of_the_failing_script_nor_a_check_only_what_could_have_fixed_it() -> None:
    failed = HostCall(1, "s", "t1", "f", "failure", False, 5, False, "", "Bash", "python reproduce.py",
                      "python3 reproduce.py")
    between = [
        step(2, "python reproduce.py --verbose", "python reproduce.py"),  # the failing script again (python3 = python)
        step(3, "cat <<'EOF' > reproduce_issue.py …", "cat"),  # writing a reproduction script
        step(4, "Write /r/tests/test_bug.py (9 lines)", "/r/tests/test_bug.py", "Write"),
        step(5, "python -m pytest tests/test_x.py -q", "python -m pytest"),  # a test run
        step(6, "npm test", "npm test"),
        step(7, "Edit /r/src/pkg/core.py: -'x = 1' +'x = 2'", "/r/src/pkg/core.py", "Edit"),
    ]
    success_ = NewHostCall("t9", "f", "success", True, "Bash", "python reproduce.py", "python3 reproduce.py")
    planned = fixes.plan_fix("f", success_, between, failed, "Traceback ...\nValueError: bad x")
    assert [s.summary for s in planned.steps] == ["Edit /r/src/pkg/core.py: -'x = 1' +'x = 2'"]
    # A project that lives under a folder named like a test is no test script: its files are fixes as any.
    setup = step(8, "Write /tmp/test_learn0/project/config.ok (1 lines)", "/tmp/test_learn0/project/config.ok", "Write")
    assert [s.summary for s in fixes.plan_fix("f", success_, [setup], failed, "Exit code 1").steps] == [setup.summary]
    # A changed call that is itself a test run is no fix: with nothing else, it passed on retry.
    rerun = NewHostCall("t9", "g", "success", True, "Bash", "python -m pytest", "python -m pytest tests -x")
    assert fixes.plan_fix("f", rerun, between[:5], failed, "E   assert 1 == 2").kind == "retry"


def test_plan_prefers_the_steps_that_act_on_what_the_error_names() -> None:
    between = [step(2, "pip install -e .", "pip install"),
               step(3, "Edit /r/README.md: +'notes'", "/r/README.md", "Edit"),
               step(4, "pip install numpy", "pip install"),
               step(5, "git stash", "git stash")]
    success_ = NewHostCall("t9", "f", "success", True, "Bash", "python app.py", "python app.py")
    planned = fixes.plan_fix("f", success_, between, None, "ModuleNotFoundError: No module named 'numpy.linalg'")
    assert [s.summary for s in planned.steps] == ["pip install numpy"]
    config = fixes.plan_fix("f", success_, [*between, step(6, "Edit /r/settings.toml: +'a = 1'", "/r/settings.toml",
                                                            "Edit")], None, "KeyError in /r/settings.toml: 'a'")
    assert [s.summary for s in config.steps] == ["Edit /r/settings.toml: +'a = 1'"]
    # Nothing named by the error: every state-changing step between stays a candidate (closest three kept).
    vague = fixes.plan_fix("f", success_, between, None, "Exit code 1")
    assert [s.summary for s in vague.steps] == ["Edit /r/README.md: +'notes'", "pip install numpy", "git stash"]


@pytest.mark.parametrize("tool,target,changes,counts", [
    ("Bash", "cat", False, False), ("Bash", "python run.py", True, True), ("Bash", "git status", False, True),
    ("Read", "/a.py", False, True), ("Bash", None, True, False)])
def test_which_changed_versions_resolve(tool: str, target: str | None, changes: bool, counts: bool) -> None:
    success_ = NewHostCall("t", "k", "success", changes, tool, target, "x")
    assert fixes._changed_version_counts(success_, {"Bash"}) is counts  # noqa: SLF001


def test_a_secret_in_a_fix_step_is_never_stored_nor_said(memory: Memory) -> None:
    token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    ran(memory, "Bash", bash("sh fetch.sh"), "A", "Exit code 1\nerror: 401 Unauthorized from api.example.test")
    ran(memory, "Bash", bash(f"echo 'TOKEN={token}' > .netrc-vlk"), "A")
    ran(memory, "Bash", bash("sh fetch.sh"), "A")
    [found] = fixes_of(memory)
    assert token not in found.steps[0].summary and "REDACTED" in found.steps[0].summary
    text = ran(memory, "Bash", bash("sh fetch.sh"), "B", "Exit code 1\nerror: 401 Unauthorized from api.example.test")
    assert text and token not in text and "REDACTED" in text


def test_a_fixed_loop_is_not_carried_to_a_new_session_its_fix_is_told_at_the_failure(memory: Memory) -> None:
    from hook_events import session_start

    for _ in range(3):
        ran(memory, "Bash", bash("sh check_env.sh"), "A", ENV_ERROR)
    ran(memory, "Bash", bash("cp .env.example .env"), "A")
    ran(memory, "Bash", bash("sh check_env.sh"), "A")
    assert handle(session_start(session="B"), memory) is None  # fixed, and not met since: nothing at the start
    told = ran(memory, "Bash", bash("sh check_env.sh"), "B", ENV_ERROR) or ""
    assert "fixed in an earlier session by: cp .env.example .env (then sh check_env.sh passed)" in told, told


def test_a_denial_of_a_call_that_kept_failing_says_what_fixed_its_error_before(memory: Memory) -> None:
    session_a(memory)
    for _ in range(3):  # session B repeats the call without the fix: a loop of this very call
        ran(memory, "Bash", bash("sh check_env.sh"), "B", ENV_ERROR)
    answer = handle(pre("Bash", bash("sh check_env.sh"), "B", use_id()), memory)
    assert answer is not None
    out = answer["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    first, second = out["permissionDecisionReason"].split("\n")
    assert first.startswith("vlk-memact: not run.")
    assert second.startswith("Instead: what fixed this error before: cp .env.example .env "
                              "(then sh check_env.sh passed)") and "VLK_HOOK_GUARD=warn" in second
    # An error nothing fixed keeps the general advice.
    for _ in range(3):
        ran(memory, "Bash", bash("git push origin main"), "B", NEVER_FIXED)
    plain = handle(pre("Bash", bash("git push origin main"), "B", use_id()), memory)
    assert plain is not None
    assert "Instead: change the cause first" in plain["hookSpecificOutput"]["permissionDecisionReason"]


def test_telling_a_fix_is_one_write_transaction_so_concurrent_hooks_of_a_session_tell_it_once(
        file_memory: Memory, db_path) -> None:
    """Memory.tell_fixes (engine/hook_events.py): the lookup, the demotion and the bookkeeping of what was told in
    ONE write transaction; four hooks of one session asking at once for the same failure tell the fix once."""
    import threading

    from vlk_memact import Settings

    memory = file_memory
    session_a(memory)
    slot_id = memory.record_state(raw_log=ENV_ERROR, session_id="B").timeline_id
    key = memory.session_key("B")
    with memory.reading() as tx:
        [failure] = tx.slots_by_id(key, [slot_id])
    statements: list[str] = []
    memory.store.set_trace_callback(statements.append)
    try:
        assert memory.tell_fixes(key, failure, 0) == []  # nothing told: nothing recorded as told
    finally:
        memory.store.set_trace_callback(None)
    transactions = [s.split()[0].upper() + (" " + s.split()[1].upper() if len(s.split()) > 1 else "")
                    for s in statements if s.split()[0].upper() in ("BEGIN", "COMMIT", "ROLLBACK")]
    assert transactions == ["BEGIN IMMEDIATE", "COMMIT"], transactions
    told: list[list[int]] = []
    barrier = threading.Barrier(4)

    def hook() -> None:
        with Memory(settings=Settings.from_env({"DATABASE_URL": f"sqlite:///{db_path}"}), project=memory.project) as m:
            barrier.wait()
            told.append([f.id for f in m.tell_fixes(m.session_key("B"), failure, 3)])

    threads = [threading.Thread(target=hook) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(len(t) for t in told) == [0, 0, 0, 1], told
    assert memory.told(key) == [f"f:{i}" for t in told for i in t]
