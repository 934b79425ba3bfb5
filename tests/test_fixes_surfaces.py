"""Fix memory wherever the memory is read: vlk_record_state and vlk_fetch_context (MCP), the CLI, export and
import; on both stores."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hook_events import bash
from mcp import Client
from test_fixes import ENV_ERROR, fixes_of, ran, session_a

from vlk_memact import Memory
from vlk_memact.cli import main
from vlk_memact.server import build_server
from vlk_memact.ops.transfer import export_memory, import_memory

pytestmark = pytest.mark.anyio
FIX_LINE = "cp .env.example .env (then sh check_env.sh passed)"


def test_record_state_of_a_recurring_error_says_its_fix(memory: Memory) -> None:
    session_a(memory)
    result = memory.record_state(raw_log=ENV_ERROR, session_id="mcp-only")
    assert result.fixed_before == [FIX_LINE]
    assert memory.record_state(raw_log="Exit code 9\nsomething never seen", session_id="mcp-only").fixed_before == []
    assert memory.for_project("elsewhere").record_state(raw_log=ENV_ERROR, session_id="x").fixed_before == []


async def test_the_mcp_tools_carry_the_fix(memory: Memory) -> None:
    session_a(memory)
    ran(memory, "Bash", bash("sh check_env.sh"), "A2", ENV_ERROR)  # a second failing session, then a loop:
    for _ in range(3):
        memory.record_state(raw_log=ENV_ERROR, session_id="C")
    async with Client(build_server(memory)) as client:
        recorded = await client.call_tool("vlk_record_state", {"raw_log": ENV_ERROR, "session_id": "D"})
        assert f"🔧 Fixed in an earlier session of this project by: {FIX_LINE}" in recorded.content[0].text
        assert recorded.structured_content["fixed_before"] == [FIX_LINE]
        context = await client.call_tool("vlk_fetch_context", {"session_id": "C"})
    text = context.content[0].text
    assert "[SYSTEM ANCHOR]" in text and f"    Fixed by: {FIX_LINE}" in text


def test_a_lesson_without_a_fix_carries_none(memory: Memory) -> None:
    for _ in range(3):
        memory.record_state(raw_log="Exit code 3\nfatal: nothing fixed this (ERR_42)", session_id="C")
    assert "Fixed by" not in memory.fetch_context(session_id="C").text


def test_fixes_round_trip_through_export_and_import_idempotently(memory: Memory, tmp_path: Path) -> None:
    session_a(memory)
    out = io.StringIO()
    export_memory(memory, out)
    records = [json.loads(line) for line in out.getvalue().splitlines()[1:]]
    assert sum(r["type"] == "fix" for r in records) == 3
    with Memory(f"sqlite:///{tmp_path / 'copy.db'}", project=memory.project) as copy:
        first = import_memory(copy, out.getvalue().splitlines())
        again = import_memory(copy, out.getvalue().splitlines())
        assert first.inserted == first.records and again.inserted == 0
        assert [(f.uid, f.steps, f.fingerprint_keys, f.slot_uids) for f in fixes_of(copy)] == [
            (f.uid, f.steps, f.fingerprint_keys, f.slot_uids) for f in fixes_of(memory)]
        assert ran(copy, "Bash", bash("sh check_env.sh"), "B", ENV_ERROR) == (
            f"vlk-memact: fixed in an earlier session by: {FIX_LINE}")


def test_a_malformed_fix_record_is_refused(memory: Memory) -> None:
    lines = [json.dumps({"type": "vlk-memact-export", "version": 1}), json.dumps({"type": "fix", "uid": "u1"})]
    with pytest.raises(Exception, match="line 2: fix record 'u1' is malformed"):
        import_memory(memory, lines)


def test_the_cli_lists_fixes_and_history_shows_them(file_memory: Memory, db_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    session_a(file_memory)
    url = f"sqlite:///{db_path}"
    assert main(["--database-url", url, "--project", file_memory.project, "fixes"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and lines[-1].endswith(f"fixed by: {FIX_LINE}") and "session 'A'" in lines[-1]
    assert main(["--database-url", url, "--project", file_memory.project, "fixes", "--json", "--limit", "1"]) == 0
    [latest] = json.loads(capsys.readouterr().out)
    assert latest["steps"][0]["summary"] == "python tool.py --mode quick" and latest["kind"] == "fix"
    assert main(["--database-url", url, "--project", file_memory.project, "history", "--session", "A",
                 "--fixes"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert len(shown["fixes"]) == 3 and shown["slots"]
    assert main(["--database-url", url, "--project", "elsewhere", "fixes"]) == 0
    assert capsys.readouterr().out == "No fixes recorded.\n"
    assert main(["--database-url", url, "fixes", "--limit", "0"]) == 1


def test_the_carry_over_view_names_a_lessons_fix_and_whether_it_was_met_since(memory: Memory) -> None:
    from vlk_memact.engine.fix_memory import carryover_view

    for _ in range(3):
        ran(memory, "Bash", bash("sh check_env.sh"), "A", ENV_ERROR)
    memory.fetch_context(session_id="A")  # the loop becomes an anchor
    ran(memory, "Bash", bash("cp .env.example .env"), "A")
    ran(memory, "Bash", bash("sh check_env.sh"), "A")

    def view(session: str) -> tuple[dict[int, str], set[int]]:
        key = memory._key(session)  # noqa: SLF001
        with memory.store.read() as tx:
            return carryover_view(tx, key, tx.visible_constraints(key))

    lines, gone = view("B")
    assert list(lines.values()) == [FIX_LINE] and gone == set(lines)  # fixed, and not met since
    ran(memory, "Bash", bash("sh check_env.sh"), "B", ENV_ERROR)  # met again in a later session
    lines, gone = view("C")
    assert list(lines.values()) == [FIX_LINE] and gone == set()
