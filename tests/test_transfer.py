"""Export and import as JSON Lines: lossless, idempotent, filtered, and all-or-nothing."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from vlk_memact import InvalidInput, Memory
from vlk_memact.cli import main
from vlk_memact.ops.transfer import export_memory, import_memory


def populate(m: Memory) -> None:
    """Every kind of row: records, loops and anchors, lessons, a consolidation, links, keys, two sessions."""
    for session in ("s1", "s2"):
        for _ in range(3):
            m.record_state(raw_log=f"Error 503: upstream timed out in {session}", session_id=session,
                           tool_payload={"cmd": "curl"})
        m.fetch_context(session_id=session)
    for i in range(6):
        slot = m.record_state(raw_log=f"failure {chr(97 + i) * 3} happened", file_context=f"f{i}.py",
                              session_id="s1").timeline_id
        m.time_travel(target_timeline_ids=[slot], learning=f"Rule {chr(97 + i)}", raw_log_excerpt="failure",
                      session_id="s1", scope="session")
    m.fetch_context(session_id="s1")
    m.record_state(raw_log="Error 503: upstream timed out in s1", session_id="s1")  # fires a recall
    m.record_state(raw_log="ünïcödé ✓ 🎉 still live", session_id="s2")


def dump(m: Memory, **filters: str) -> list[dict]:
    out = io.StringIO()
    export_memory(m, out, **filters)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_a_round_trip_is_lossless_and_idempotent(db_path: Path, tmp_path: Path) -> None:
    with Memory(f"sqlite:///{db_path}", project="p") as source:
        populate(source)
        exported = dump(source)
    kinds = {r["type"] for r in exported}
    assert kinds == {"vlk-memact-export", "content", "slot", "retired_by", "link", "key"}
    with Memory(f"sqlite:///{tmp_path}/copy.db", project="p") as copy:
        text = "".join(json.dumps(r) + "\n" for r in exported)
        first = import_memory(copy, io.StringIO(text))
        assert first.inserted == first.records == len(exported) - 1
        assert import_memory(copy, io.StringIO(text)).inserted == 0
        assert dump(copy) == exported
        # The copy behaves like the original: same context, same recall.
        assert copy.fetch_context(session_id="s1").constraint_ids
        assert copy.record_state(raw_log="Error 503: upstream timed out in s1", session_id="s1").recalled


def test_an_export_can_be_limited_to_one_session(memory: Memory) -> None:
    populate(memory)
    records = dump(memory, session="s2")
    assert {r["session_id"] for r in records if r["type"] == "slot"} == {"s2"}
    assert all(r["type"] != "link" or r["constraint"] for r in records)


def test_importing_into_a_busy_session_renumbers_instead_of_colliding(memory: Memory, tmp_path: Path) -> None:
    populate(memory)
    exported = "".join(json.dumps(r) + "\n" for r in dump(memory, session="s2"))
    with Memory(f"sqlite:///{tmp_path}/other.db", project="test-project") as other:
        other.record_state(raw_log="already here", session_id="s2")
        import_memory(other, io.StringIO(exported))
        orders = [s.sequence_order for s in other.get_history(session_id="s2").slots]
        assert sorted(orders) == list(range(1, len(orders) + 1))


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([], "empty"),
        (['{"type": "something-else"}'], "not a vlk-memact-export header"),
        (['{"type": "vlk-memact-export", "version": 99}'], "upgrade vlk-memact"),
        (['{"type": "vlk-memact-export", "version": 1}', "not json"], "line 3 is not JSON"),
        (['{"type": "vlk-memact-export", "version": 1}', '{"type": "content", "tenant": "local", "hash": "x", '
          '"raw_log": "y"}'], "line 3: content hash mismatch"),
        (['{"type": "vlk-memact-export", "version": 1}', '{"type": "bogus"}'], "unknown export record type"),
    ],
)
def test_a_bad_file_is_rejected_and_nothing_is_imported(memory: Memory, lines: list[str], message: str) -> None:
    good = '{"type": "content", "tenant": "local", "hash": "%s", "raw_log": "ok"}'
    from vlk_memact.store.sqlite_schema import content_hash

    body = lines[:1] + ([good % content_hash("local", "ok", None, None)] if lines else []) + lines[1:]
    with pytest.raises(InvalidInput, match=message):
        import_memory(memory, io.StringIO("\n".join(body)))
    assert memory.summarize_session().total == 0
    assert dump(memory)[1:] == []


def test_the_cli_exports_and_imports_with_progress(db_path: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    with Memory(f"sqlite:///{db_path}", project="p") as m:
        for i in range(1200):
            m.record_state(raw_log=f"line {i}", session_id="big")
    target = tmp_path / "out.jsonl"
    assert main(["--database-url", f"sqlite:///{db_path}", "export", "-o", str(target)]) == 0
    out, err = capsys.readouterr()
    assert "exported 1000 records..." in err and out.startswith("Exported 2400 records to")
    assert main(["--database-url", f"sqlite:///{tmp_path}/b.db", "import", str(target)]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("Imported 2400 new records (0 already present) of 2400.") and "read 1000 records" in err
    assert main(["--database-url", f"sqlite:///{tmp_path}/b.db", "import", str(tmp_path / "missing")]) == 1
    assert "cannot read" in capsys.readouterr().err


def test_sqlite_to_postgres_to_sqlite_is_lossless(db_path: Path, tmp_path: Path, postgres_url: str) -> None:
    with Memory(f"sqlite:///{db_path}", project="p") as source:
        populate(source)
        original = dump(source)
    text = "".join(json.dumps(r) + "\n" for r in original)
    with Memory(postgres_url, project="p") as middle:
        assert import_memory(middle, io.StringIO(text)).inserted == len(original) - 1
        assert import_memory(middle, io.StringIO(text)).inserted == 0  # idempotent
        through_postgres = dump(middle)
    assert through_postgres == original  # every row, every column, in every table
    back = "".join(json.dumps(r) + "\n" for r in through_postgres)
    with Memory(f"sqlite:///{tmp_path}/back.db", project="p") as final:
        import_memory(final, io.StringIO(back))
        assert dump(final) == original
