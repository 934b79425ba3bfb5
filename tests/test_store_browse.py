"""The store's browsing reads (the viewer's queries), on SQLite and PostgreSQL alike."""

from __future__ import annotations

from vlk_memact import Memory
from vlk_memact.core.model import SessionKey

LOOPING = "TypeError: cannot read properties of undefined (reading 'id') at handler (/srv/app.js:{line}:7)"


def _seed(memory: Memory) -> dict[str, int]:
    other = memory.for_project("other-project")
    ids = [memory.record_state(raw_log=LOOPING.format(line=10 + i), session_id="looping").timeline_id
           for i in range(3)]
    anchor = memory.fetch_context(session_id="looping").loops[0].anchor_id
    quiet = memory.record_state(raw_log="warning: Needle in the Haystack", session_id="quiet").timeline_id
    lesson = memory.time_travel(target_timeline_ids=[quiet], learning="Pin the needle.", raw_log_excerpt="needle",
                                session_id="quiet").constraint_id
    other.record_state(raw_log="needle elsewhere", session_id="far")
    memory.for_tenant("someone-else").record_state(raw_log="needle of another tenant", session_id="hidden")
    return {"first": ids[0], "anchor": anchor, "quiet": quiet, "lesson": lesson}


def test_sessions_count_every_state_newest_first_and_stay_in_the_tenant(memory: Memory) -> None:
    seeded = _seed(memory)
    with memory.store.read() as tx:
        sessions = tx.sessions("local", None, 100)
        first_two = tx.sessions("local", None, 2)
        one_project = tx.sessions("local", "test-project", 100)
        projects = tx.projects("local")
    assert first_two == sessions[:2]
    assert one_project == sessions[1:]
    assert projects == [("other-project", 1), ("test-project", 2)]
    assert [(s.project, s.session_id) for s in sessions] == [
        ("other-project", "far"), ("test-project", "quiet"), ("test-project", "looping")]
    looping = sessions[2]
    assert (looping.present, looping.past, looping.future, looping.loops) == (0, 3, 1, 1)
    chars = sum(len(LOOPING.format(line=10 + i)) for i in range(3))
    assert looping.archived_chars == chars
    assert looping.first_at <= looping.last_at
    quiet = sessions[1]
    assert (quiet.present, quiet.past, quiet.future, quiet.loops) == (0, 1, 1, 0)
    with memory.store.read() as tx:
        savings = tx.savings("local", None, None, 100)
        only_quiet = tx.savings("local", "test-project", "quiet", 100)
        newest = tx.savings("local", None, None, 1)
    assert [(s.constraint_id, s.origin, s.archived, s.archived_chars) for s in savings] == [
        (seeded["anchor"], "anchor", 3, chars), (seeded["lesson"], "lesson", 1, len("warning: Needle in the Haystack"))]
    assert [s.constraint_id for s in only_quiet] == [seeded["lesson"]]
    assert newest == savings[1:]


def test_pages_links_and_slots_by_id_across_sessions(memory: Memory) -> None:
    seeded = _seed(memory)
    key = SessionKey("local", "test-project", "looping")
    with memory.store.read() as tx:
        newest = tx.page(key, None, 2)
        older = tx.page(key, newest[-1].sequence_order, 10)
        links = tx.links([seeded["anchor"], seeded["lesson"]])
        found = tx.tenant_slots("local", [seeded["first"], seeded["quiet"], 10**9])
        foreign = tx.tenant_slots("someone-else", [seeded["first"]])
    assert [s.sequence_order for s in newest] == [4, 3]
    assert [s.sequence_order for s in older] == [2, 1]
    assert (seeded["anchor"], seeded["first"], "archived") in links
    assert (seeded["lesson"], seeded["quiet"], "archived") in links
    assert [s.id for s in found] == [seeded["first"], seeded["quiet"]]
    assert {s.session_id for s in found} == {"looping", "quiet"}
    assert foreign == []


def test_tenant_search_is_literal_case_insensitive_and_confined(memory: Memory) -> None:
    _seed(memory)
    with memory.store.read() as tx:
        everywhere = tx.search_tenant("local", None, "NEEDLE", 50)
        one_project = tx.search_tenant("local", "test-project", "needle", 50)
        wildcard = tx.search_tenant("local", None, "%", 50)
    assert {(s.project, s.session_id) for s in everywhere} == {("other-project", "far"), ("test-project", "quiet")}
    assert all(s.project == "test-project" for s in one_project) and one_project
    assert wildcard == []


def test_the_change_marker_moves_on_every_write_and_on_revoke(memory: Memory) -> None:
    seeded = _seed(memory)
    with memory.store.read() as tx:
        first = tx.change_marker("local")
    memory.revoke_future(timeline_id=seeded["lesson"], session_id="quiet")
    with memory.store.read() as tx:
        after_revoke = tx.change_marker("local")
    memory.record_state(raw_log="new", session_id="quiet")
    with memory.store.read() as tx:
        after_record = tx.change_marker("local")
        other_tenant = tx.change_marker("nobody")
    assert first != after_revoke != after_record
    assert other_tenant == (0, 0)


def test_resolving_calls_name_the_success_that_retired_a_captured_failure(memory: Memory) -> None:
    from vlk_memact.hosts.shared.capture import ToolCall, on_failure, on_success
    from vlk_memact.core.model import Retired

    def call(tool: str, tool_input: dict[str, str], use: str, session: str = "s") -> ToolCall:
        return ToolCall(session, "/work/p", tool, tool_input, use)

    build = {"command": "cargo build"}
    on_failure(memory, call("Bash", build, "t1"), "error[E0425]: cannot find value `x` in this scope")
    on_success(memory, call("Edit", {"file_path": "src/main.rs", "old_string": "x", "new_string": "y"}, "t2"))
    on_failure(memory, call("Bash", {"command": "npm test"}, "t3"), "npm ERR! Test failed.")
    on_success(memory, call("Write", {"file_path": "src/lib.rs", "content": "fn y() {}"}, "t4"))
    on_success(memory, call("Read", {"file_path": "src/lib.rs"}, "t5"))  # no change: not counted
    on_success(memory, call("Bash", build, "t6"))
    on_failure(memory, call("Bash", build, "t7", session="other"), "error[E0425]: cannot find value `x`")
    slots = {s.raw_log.split(":")[0]: s for s in memory.get_history(session_id="s").slots}
    fixed, failing = slots["error[E0425]"], slots["npm ERR! Test failed."]
    assert fixed.retired_reason == Retired.RESOLVED and failing.retired_reason is None
    other = memory.get_history(session_id="other").slots[0].id
    key = SessionKey("local", "test-project", "s")
    with memory.store.read() as tx:
        found = tx.resolving_calls(key, [fixed.id, failing.id, other], 10)
        last_one = tx.resolving_calls(key, [fixed.id], 1)
        counted_only = tx.resolving_calls(key, [fixed.id], 0)
        assert tx.resolving_calls(key, [], 10) == []
        assert tx.resolving_calls(SessionKey("local", "test-project", "other"), [fixed.id, other], 10) == []
    assert len(found) == 1
    slot_id, success, changes, steps = found[0]
    assert (slot_id, success.tool_use_id, success.outcome, success.changes_state) == (fixed.id, "t6", "success", True)
    assert success.tool == "Bash" and success.summary and "cargo build" in success.summary
    assert changes == 2  # the Edit and the Write; not the Read, nor the failed npm test
    assert [(c.tool_use_id, c.tool, c.target) for c in steps] == [("t2", "Edit", "src/main.rs"),
                                                                  ("t4", "Write", "src/lib.rs")]
    assert all(c.summary for c in steps)
    assert success.created_at >= fixed.created_at
    assert [(s, c.tool_use_id, n, [x.tool_use_id for x in b]) for s, c, n, b in last_one] == [(fixed.id, "t6", 2, ["t4"])]
    assert [(n, b) for _, _, n, b in counted_only] == [(2, [])]


def test_fixes_resolving_finds_the_fixes_of_given_failures_in_their_session(memory: Memory) -> None:
    from vlk_memact.hosts.shared.capture import ToolCall, on_failure, on_success

    def call(tool: str, tool_input: dict[str, str], use: str, session: str = "s") -> ToolCall:
        return ToolCall(session, "/work/p", tool, tool_input, use)

    build, check = {"command": "cargo build"}, {"command": "cargo clippy"}
    on_failure(memory, call("Bash", build, "t1"), "error[E0425]: cannot find value `x` in this scope")
    on_success(memory, call("Edit", {"file_path": "src/main.rs", "old_string": "x", "new_string": "y"}, "t2"))
    on_success(memory, call("Bash", build, "t3"))  # fix 1: the edit
    on_failure(memory, call("Bash", check, "t4"), "error: this loop never actually loops")
    on_success(memory, call("Bash", check, "t5"))  # fix 2: a retry
    on_failure(memory, call("Bash", build, "t6", session="other"), "error[E0425]: cannot find value `z`")
    slots = {s.raw_log.split(":")[0]: s for s in memory.get_history(session_id="s").slots}
    key = SessionKey("local", "test-project", "s")
    with memory.store.read() as tx:
        by_id = {s.id: s for s in tx.tenant_slots("local", [s.id for s in slots.values()])}
        built, checked = (by_id[slots[name].id].uid for name in ("error[E0425]", "error"))
        both = tx.fixes_resolving(key, [checked, built, "no-such-uid"])
        one = tx.fixes_resolving(key, [built])
        assert tx.fixes_resolving(key, []) == []
        assert tx.fixes_resolving(SessionKey("local", "test-project", "other"), [built, checked]) == []
        assert tx.fixes_resolving(SessionKey("someone-else", "test-project", "s"), [built]) == []
    assert [(f.kind, f.slot_uids) for f in both] == [("retry", (checked,)), ("fix", (built,))]  # newest first
    assert [f.id for f in one] == [both[1].id]
    assert [(s.tool_use_id, s.tool) for s in one[0].steps] == [("t2", "Edit")] and one[0].passed == "cargo build"
