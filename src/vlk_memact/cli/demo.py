"""`vlk-memact demo`: a scripted agent session through a real MCP client over stdio.

It starts `python -m vlk_memact` on a temporary database, plays an agent that hits the same
cargo test panic three times, and prints what the agent would see at each step.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from ..core.render import estimate_tokens

SESSION = "demo-task"
NEXT_SESSION = "demo-task-tomorrow"

PANIC = (
    "running 3 tests\ntest parser::tests::parses_header ... FAILED\n\nfailures:\n\n"
    "---- parser::tests::parses_header stdout ----\n"
    "thread 'parser::tests::parses_header' ({tid}) panicked at src/parser.rs:{line}:9:\n"
    "called `Option::unwrap()` on a `None` value\n"
    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\n"
    "test result: FAILED. 2 passed; 1 failed; 0 ignored; finished in {secs}s"
)
REFUSED = "Error: connect ECONNREFUSED 127.0.0.1:5432\n    at TCPConnectWrapper.afterConnect [as oncomplete] (node:net:1555:16)"


def _say(title: str, body: str = "") -> None:
    print(f"\n\033[1m== {title}\033[0m" if sys.stdout.isatty() else f"\n== {title}")
    if body:
        print(body.rstrip())


async def _call(client: Client, tool: str, **arguments: Any) -> tuple[str, dict[str, Any]]:
    result = await client.call_tool(tool, arguments)
    text = "".join(getattr(block, "text", "") for block in result.content)
    if result.is_error:
        raise RuntimeError(f"{tool} failed: {text}")
    return text, result.structured_content or {}


async def _scenario(database: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "vlk_memact"],
        env={**os.environ, "DATABASE_URL": f"sqlite:///{database}", "VLK_LOG_LEVEL": "WARNING",
             "VLK_PROJECT": "demo-project"},
    )
    async with Client(params) as client:
        tools = await client.list_tools()
        _say("Connected over stdio", f"{len(tools.tools)} tools: " + ", ".join(t.name for t in tools.tools))

        baseline = 0
        for attempt, (tid, line) in enumerate([(48213, 42), (48391, 44), (48577, 47)], start=1):
            log = PANIC.format(tid=tid, line=line, secs=f"0.0{attempt}")
            baseline += estimate_tokens(log)
            text, data = await _call(client, "vlk_record_state", raw_log=log, file_context="src/parser.rs",
                                     session_id=SESSION)
            _say(f"Attempt {attempt}: cargo test fails; the agent records it", text)
            if attempt == 2:
                context, _ = await _call(client, "vlk_fetch_context", session_id=SESSION)
                _say("Context before the loop (what the model reads)", context)

        context, data = await _call(client, "vlk_fetch_context", session_id=SESSION)
        _say("Third failure: the next fetch intercepts the loop", context)
        _say(
            "Tokens",
            f"Without vlk-memact the three failures stay in the model's context: ~{baseline} tokens of logs.\n"
            f"With it, the loop's logs (~{data['tokens_saved']} tokens) moved to PAST, one anchor took their place,\n"
            f"and the whole context above, headers included, is ~{data['tokens']} tokens.",
        )

        text, data = await _call(client, "vlk_record_state", raw_log=REFUSED, file_context="db/client.js",
                                 session_id=SESSION)
        text, travel = await _call(
            client,
            "vlk_time_travel",
            target_timeline_ids=[data["timeline_id"]],
            learning="Always retry on connection errors with exponential backoff.",
            raw_log_excerpt="Error: connect ECONNREFUSED 127.0.0.1:5432",
            session_id=SESSION,
        )
        _say("The agent learns a lesson from a refused connection (vlk_time_travel)", text)
        text, data = await _call(client, "vlk_record_state", raw_log="psql: error: FATAL: database \"app\" does not exist",
                                 session_id=SESSION)
        text, _ = await _call(
            client,
            "vlk_time_travel",
            target_timeline_ids=[data["timeline_id"]],
            learning="Never retry the migration blindly; create the database first.",
            raw_log_excerpt='FATAL: database "app" does not exist',
            session_id=SESSION,
        )
        _say("A second lesson that contradicts the first", text)

        context, data = await _call(client, "vlk_fetch_context", session_id=SESSION)
        _say("Context after: constraints first, the conflict flagged", context)
        summary, _ = await _call(client, "vlk_summarize_session", session_id=SESSION)
        _say("Summary", summary)

        context, _ = await _call(client, "vlk_fetch_context", session_id=NEXT_SESSION)
        _say(f"Tomorrow, a new session ('{NEXT_SESSION}') of the same project starts informed", context)
        text, _ = await _call(client, "vlk_record_state", raw_log=PANIC.format(tid=51007, line=52, secs="0.01"),
                              session_id=NEXT_SESSION)
        _say("It hits the same panic: the lesson is recalled at once", text)


def run_demo() -> int:
    """Run the scripted session on a throwaway database and print every step."""
    with tempfile.TemporaryDirectory(prefix="vlk-demo-") as tmp:
        database = Path(tmp) / "demo.db"
        _say("vlk-memact demo", f"temporary database: {database}")
        anyio.run(_scenario, database)
    return 0
