"""The structured results are complete on their own: a host that shows the model only structuredContent
(Claude Code does) loses nothing the text block says, pays for no text twice, and stays within budget."""

from __future__ import annotations

import json
import random
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client

from vlk_memact import Memory
from vlk_memact.core.model import Conflict, ConstraintType, Origin, Scope, Slot, TemporalState
from vlk_memact.core.render import (
    CONTEXT_HEADER,
    estimate_tokens,
    json_tokens,
    render_context,
    structured_json,
)
from vlk_memact.server import INSTRUCTIONS, build_server

pytestmark = pytest.mark.anyio

TYPE_ERROR = "TypeError: Cannot read properties of undefined (reading 'map')\n    at render (src/App.jsx:41:17)"
LESSON = "Guard the list: render items only after the fetch resolved (items ?? [])."
EXCERPT = "TypeError: Cannot read properties of undefined (reading 'map')"


@pytest.fixture(params=["legacy", "auto"])
async def client(request: pytest.FixtureRequest, memory: Memory) -> AsyncIterator[Client]:
    async with Client(build_server(memory), mode=request.param) as c:
        yield c


async def call(client: Client, tool: str, **args: Any) -> tuple[str, dict[str, Any]]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.content[0].text, result.structured_content


def header_of(text: str) -> str:
    return text.split("\n", 1)[0]


async def test_the_context_is_the_first_structured_field_and_equals_the_text(client: Client) -> None:
    for _ in range(3):
        await call(client, "vlk_record_state", raw_log=TYPE_ERROR, file_context="src/App.jsx")
    text, data = await call(client, "vlk_fetch_context")
    assert list(data)[0] == "context" and data["context"] == text
    assert text.startswith(CONTEXT_HEADER) and "[SYSTEM ANCHOR]" in data["context"]
    anchor = data["loops"][0]["anchor_id"]
    assert f"[id:{anchor}] [PREVENTIVE FUTURE CONSTRAINT]: [SYSTEM ANCHOR]" in data["context"]
    assert "Evidence: " in data["context"] and "reading 'map'" in data["context"]
    assert data["constraint_ids"] == [anchor] and data["present_ids"] == []


async def test_no_text_is_repeated_in_the_structured_context(client: Client) -> None:
    for _ in range(3):
        await call(client, "vlk_record_state", raw_log=TYPE_ERROR)
    await call(client, "vlk_record_state", raw_log="x", session_id="c")
    for lesson in ("Use cache for API responses", "Do not cache API responses"):
        _, rec = await call(client, "vlk_record_state", raw_log=lesson + " failed", session_id="c")
        await call(client, "vlk_time_travel", target_timeline_ids=[rec["timeline_id"]], learning=lesson,
                   raw_log_excerpt="evidence " + lesson, session_id="c", scope="session")
    _, looped = await call(client, "vlk_fetch_context")
    _, conflicted = await call(client, "vlk_fetch_context", session_id="c")
    assert looped["loops"] and "signature" not in looped["loops"][0]
    assert conflicted["conflicts"] and set(conflicted["conflicts"][0]) == {"first_id", "second_id"}
    assert "CONFLICTING FUTURE CONSTRAINTS" in conflicted["context"]
    for data in (looped, conflicted):
        others = json.dumps({k: v for k, v in data.items() if k != "context"})
        assert "reading" not in others and "cache" not in others, "texts travel once, inside `context`"
        needle = "Cannot read properties"
        assert structured_json(data).count(needle) == data["context"].count(needle)


async def test_the_record_notice_carries_the_repeat_warning(client: Client) -> None:
    text, first = await call(client, "vlk_record_state", raw_log=TYPE_ERROR)
    assert list(first)[0] == "notice" and first["notice"] == "" and "\n" not in text  # quiet when nothing to say
    text, second = await call(client, "vlk_record_state", raw_log=TYPE_ERROR)
    assert re.match(r"⚠ The same error \(\w+\) is now active 2 times \(#1, #2\)\.", second["notice"])
    assert "Repeating the same action will not fix it" in second["notice"]
    assert text == header_of(text) + "\n" + second["notice"], "the notice is the text block after its header"


async def test_the_record_notice_recalls_the_lesson_with_its_evidence(client: Client) -> None:
    _, rec = await call(client, "vlk_record_state", raw_log=TYPE_ERROR, session_id="monday")
    _, travel = await call(client, "vlk_time_travel", target_timeline_ids=[rec["timeline_id"]], learning=LESSON,
                           raw_log_excerpt=EXCERPT, session_id="monday")
    text, data = await call(client, "vlk_record_state", raw_log=TYPE_ERROR, session_id="tuesday")
    cid = travel["constraint_id"]
    assert f"⚡ Seen before in session 'monday': [id:{cid}] {LESSON}" in data["notice"]
    assert f"Evidence: {EXCERPT}" in data["notice"]
    assert text.endswith("\n" + data["notice"])
    recalled = data["recalled"][0]
    assert recalled == {"constraint_id": cid, "learned_in_session": "monday", "scope": "project",
                        "constraint_type": "DERIVED", "fire_count": 1}  # the lesson is not repeated
    assert structured_json(data).count(LESSON) == 1


async def test_the_record_notice_names_redaction_and_truncation(client: Client) -> None:
    secret = "AKIA" + "Q" * 16
    _, data = await call(client, "vlk_record_state", raw_log=f"deploy failed with key {secret}")
    assert "Secrets were replaced by placeholders before storing: " in data["notice"] and data["redacted"]
    assert secret not in structured_json(data)
    _, data = await call(client, "vlk_record_state", raw_log="E" + "x" * 70_000 + " tail")
    assert data["truncated"] is True
    assert "its head and tail were kept around a truncation marker" in data["notice"]


async def test_the_output_schemas_describe_the_readable_fields(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    context = tools["vlk_fetch_context"].output_schema
    record = tools["vlk_record_state"].output_schema
    assert list(context["properties"])[0] == "context" and "context" in context["required"]
    assert "[SYSTEM ANCHOR]" in context["properties"]["context"]["description"]
    assert "within max_tokens" in context["properties"]["tokens"]["description"]
    assert list(record["properties"])[0] == "notice" and "notice" in record["required"]
    assert "lesson recalled with its evidence" in record["properties"]["notice"]["description"]


async def test_the_output_schemas_keep_every_field_typed_and_check_no_list_item_by_item(client: Client) -> None:
    """Clients validate structuredContent on every call: the schemas lose no field (each one a typed property,
    required as its type requires) and type no list element one by one (bench/results/profile.md)."""
    from dataclasses import MISSING, fields

    from vlk_memact.core.model import (
        ContextView,
        HistoryResult,
        RecordView,
        RevokeResult,
        SearchResult,
        SummaryResult,
        TimeTravelResult,
    )

    tools = {t.name: t for t in (await client.list_tools()).tools}
    kinds = {"vlk_fetch_context": ContextView, "vlk_record_state": RecordView, "vlk_get_history": HistoryResult,
             "vlk_search_memory": SearchResult, "vlk_summarize_session": SummaryResult,
             "vlk_time_travel": TimeTravelResult, "vlk_revoke_future": RevokeResult}
    assert set(kinds) == set(tools)
    for name, kind in kinds.items():
        schema = tools[name].output_schema
        assert list(schema["properties"]) == [f.name for f in fields(kind)], name
        assert set(schema["required"]) == {f.name for f in fields(kind)
                                           if f.default is MISSING and f.default_factory is MISSING}, name
        for field_name, prop in schema["properties"].items():
            assert prop.get("type"), (name, field_name)
            assert not {"items", "$ref", "properties", "anyOf"} & set(prop), (name, field_name)
            if prop["type"] == "array":
                assert prop.get("description"), (name, field_name)  # what the elements are, in words
        assert "$defs" not in schema, name


@pytest.mark.parametrize("budget", [200, 260, 400, 900, 4000])
async def test_the_structured_context_stays_within_max_tokens(client: Client, budget: int) -> None:
    rng = random.Random(budget)
    quote_heavy = 'File "/srv/app/main.py", line 7\n  raise ValueError("bad \\"quote\\"")\n\t\x01\x02'
    for i in range(25):
        log = f"Error {i}: " + "".join(rng.choice([quote_heavy, "ünïcødé ✓ ", "x" * 30, "\n"]) for _ in range(40))
        await call(client, "vlk_record_state", raw_log=log, session_id="crowded")
    for i in range(6):
        _, rec = await call(client, "vlk_record_state", raw_log=f"failure {i} " + '"q"\n' * 20, session_id="crowded")
        await call(client, "vlk_time_travel", target_timeline_ids=[rec["timeline_id"]],
                   learning=f"Lesson {i}: " + 'use "quotes"\n' * 10, raw_log_excerpt='"x"\n' * 30,
                   session_id="crowded", scope="session")
    text, data = await call(client, "vlk_fetch_context", session_id="crowded", max_tokens=budget)
    assert estimate_tokens(structured_json(data)) <= budget, "what Claude Code shows the model"
    assert estimate_tokens(text) <= budget and data["tokens"] == estimate_tokens(text)
    assert data["context"] == text and data["max_tokens"] == budget
    if budget >= 900:
        assert data["present_ids"], "a large budget shows PRESENT slots"


def slot(i: int, state: TemporalState, log: str, **kw: Any) -> Slot:
    return Slot(id=i, session_id="s", sequence_order=i, temporal_state=state, origin=kw.pop("origin", Origin.RECORD),
                created_at="2026-01-01T00:00:00Z", raw_log=log, fingerprint=f"fp{i}", **kw)


@pytest.mark.parametrize("seed", range(12))
def test_render_never_exceeds_the_budget_in_json_whatever_the_characters(seed: int) -> None:
    """Control characters cost six characters each in JSON: the renderer prices every part escaped."""
    rng = random.Random(seed)
    alphabet = ["\x01", "\"", "\\", "\n", "é", "✓", "a", " ", "\t", "😀"]
    present = [slot(i, TemporalState.PRESENT, "".join(rng.choice(alphabet) for _ in range(rng.randint(10, 3000))))
               for i in range(1, 15)]
    constraints = [
        slot(100 + i, TemporalState.FUTURE, "", origin=Origin.LESSON, constraint_type=ConstraintType.DERIVED,
             learning_summary="".join(rng.choice(alphabet) for _ in range(rng.randint(10, 400))),
             evidence="".join(rng.choice(alphabet) for _ in range(50)), scope=Scope.SESSION)
        for i in range(5)
    ]
    conflicts = [Conflict(100, 101, "always vs. never", "always", "never")]
    for budget in (200, 300, 700, 2000):
        rendered = render_context("s", constraints, present, conflicts, [], [], budget, "a-project")
        skeleton = {"context": rendered.text, "session_id": "s", "project": "a-project",
                    "tokens": estimate_tokens(rendered.text), "max_tokens": budget,
                    "constraint_ids": rendered.constraint_ids, "present_ids": rendered.present_ids,
                    "omitted_constraint_ids": rendered.omitted_constraint_ids,
                    "omitted_present_ids": rendered.omitted_present_ids, "loops": [], "merges": [],
                    "conflicts": [{"first_id": 100, "second_id": 101}], "tokens_saved": 0}
        assert estimate_tokens(structured_json(skeleton)) <= budget
        assert json_tokens(rendered.text) <= budget


def test_a_log_of_control_characters_is_cut_not_dropped() -> None:
    present = [slot(1, TemporalState.PRESENT, "START" + "\x01" * 20_000 + "END")]
    rendered = render_context("s", [], present, [], [], [], 600)
    assert rendered.present_ids == [1] and "START" in rendered.text and "END" in rendered.text
    assert json_tokens(rendered.text) <= 600


async def test_instructions_and_descriptions_use_the_words_a_model_searches_for(client: Client) -> None:
    for word in ("error", "failure", "loop", "memory", "context", "lesson", "deferred", "ToolSearch"):
        assert word in INSTRUCTIONS, word
    tools = {t.name: f"{t.title} {t.description}".lower() for t in (await client.list_tools()).tools}
    expected = {
        "vlk_record_state": ("error", "failure", "memory", "loop", "lesson"),
        "vlk_fetch_context": ("context", "memory", "lesson", "loop", "error"),
        "vlk_time_travel": ("loop", "lesson", "error"),
        "vlk_revoke_future": ("lesson", "memory"),
        "vlk_get_history": ("memory", "error", "lesson"),
        "vlk_search_memory": ("memory", "error", "lesson"),
        "vlk_summarize_session": ("memory", "error"),
    }
    for name, words in expected.items():
        for word in words:
            assert word in tools[name], f"{name} does not mention {word!r}"


@pytest.mark.parametrize("lines", [200, 600, 3000])
def test_a_long_log_alone_in_the_context_is_cut_to_fit_never_dropped(lines: int) -> None:
    """The error sits at the end of long output: a single slot over the budget is shown cut, its tail kept.

    The renderer before issue 15 dropped such a slot whenever the cut's estimate came out one token over
    the space left, so the model saw an empty context (found by bench/replay.py on real trajectories).
    """
    rng = random.Random(lines)
    body = "\n".join(f"line {i}: " + "".join(rng.choice("abc def\"'\\\t") for _ in range(70)) for i in range(lines))
    present = [slot(1, TemporalState.PRESENT, body + "\nValueError: boom")]
    for budget in (300, 1000, 4000):
        rendered = render_context("s", [], present, [], [], [], budget)
        assert rendered.present_ids == [1] and rendered.omitted_present_ids == []
        assert "ValueError: boom" in rendered.text and json_tokens(rendered.text) <= budget
