"""build_server(memory): the seven vlk tools over MCP, thin wrappers around Memory.

Each tool validates through the engine, renders the prototype's text (spec §4) and returns the
typed result as structuredContent, complete on its own: hosts such as Claude Code show the model only
the structured form, so it carries every text the block carries (the context, the record's notice).
Expected failures (VlkError) become isError results whose message says what to fix; an unknown tool
name is a JSON-RPC invalid-params error.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import re
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any, TypeVar

import anyio.to_thread
from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from ..core import render, results
from ..core.errors import InvalidInput, VlkError
from ..core.model import (
    ContextView,
    HistoryResult,
    RecordResult,
    RecordView,
    RevokeResult,
    SearchResult,
    SummaryResult,
    TimeTravelResult,
)
from ..engine import Memory
from ..hosts.shared.failures import non_failure
from ..store import WouldWait
from . import said
from . import sdk_private
from .schemas import light_output_schema

SERVER_NAME = "Vlk MemAct"

INSTRUCTIONS = """\
Vlk MemAct is your working memory across steps and sessions: it records errors and failures, detects
when you repeat the same failure (a loop), and keeps the lessons learned. Follow this protocol:
1. After every failed command, error, test failure or important observation, call vlk_record_state with
   the raw log. Its result warns when the same error repeats and recalls a lesson learned before.
2. Before every step, call vlk_fetch_context and obey its FUTURE constraints
   ([PREVENTIVE FUTURE CONSTRAINT], [PROSPECTIVE CONSTRAINT], [SYSTEM ANCHOR]) before anything else.
   Repeated errors (3 or more) are archived automatically and replaced by a [SYSTEM ANCHOR]: change approach.
3. When you are stuck in a loop or the context is cluttered, call vlk_time_travel with the ids of the
   PRESENT slots to archive, the lesson learned, and a raw_log_excerpt as evidence.
4. If constraints conflict, revoke the wrong one with vlk_revoke_future.
Ids are the [id:N] tags in vlk_fetch_context and the ids of vlk_get_history.
If your host lists these tools as deferred (names only), load them first by their full names, e.g. in
Claude Code: ToolSearch "select:" with the names ending in vlk_record_state, vlk_fetch_context and
vlk_time_travel (a keyword search for "memory error loop lesson" finds them too)."""

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
APPEND = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
ARCHIVES = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False)
# fetch_context writes (it archives loops and merges constraints) but a second call changes nothing.
PIPELINE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

SessionId = Annotated[
    str | None,
    Field(description="Optional. Defaults to 'default'. One session per agent task; blank means 'default'."),
]

T = TypeVar("T")


def _package_version() -> str:
    try:
        return version("vlk-memact")
    except PackageNotFoundError:  # running from a source tree
        return "0.0.0"


def _result(text: str, data: Any) -> CallToolResult:
    structured = data if isinstance(data, dict) else dataclasses.asdict(data)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


_PYDANTIC_ERROR = re.compile(r"^(?P<field>[^\s][^\n]*)\n  (?P<message>[^\n]+?)(?: \[type=[^\n]*)?$", re.MULTILINE)


_FIELD_HINTS = {
    "raw_log_excerpt": "give 1-2 sentences of the raw error/log that grounds the lesson in evidence",
    "target_timeline_ids": "a list of PRESENT slot ids, the [id:N] tags of vlk_fetch_context",
}


def argument_errors(tool: str, report: str) -> str:
    """pydantic's validation report as one sentence per field, without internal names or links."""
    problems = []
    for m in _PYDANTIC_ERROR.finditer(report):
        hint = _FIELD_HINTS.get(m["field"].split(".")[0])
        problems.append(f"'{m['field']}': {m['message'].rstrip('.')}" + (f" ({hint})" if hint else ""))
    if not problems:
        return report
    return (f"Invalid arguments for {tool}: " + "; ".join(problems) +
            ". Fix these fields (see the tool's inputSchema) and call again.")


def _call(action: Callable[[], T]) -> T:
    """Run an engine call; expected failures reach the model as isError text."""
    try:
        return action()
    except VlkError as exc:
        raise ToolError(str(exc)) from exc


def build_server(root: Memory, *, inline: bool = False) -> MCPServer:
    """An MCPServer exposing the seven tools over one Memory.

    Over authenticated HTTP each request acts as the tenant its bearer token maps to. inline (stdio, one
    client): the tools run on the event loop instead of the SDK's worker thread unless they would wait for a
    lock (run_in_place).
    """

    class _Current:
        """Resolves the Memory of the caller's tenant at each call."""

        def resolved(self) -> Memory:
            token = get_access_token()
            return root if token is None else root.for_tenant(token.client_id)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.resolved(), name)

    memory: Any = _Current()

    server = MCPServer(
        SERVER_NAME,
        version=_package_version(),
        instructions=INSTRUCTIONS,
        subscriptions=False,
        log_level=root.settings.logging_level(server=True),  # type: ignore[arg-type]
    )
    tools = ToolRegistrar(server, root.write_attempt if inline else None)
    add_time_travel(tools, memory)  # the order of tools/list: time travel first, as the spec lists them
    add_reading_tools(tools, memory)
    add_revoke_and_record(tools, memory)
    guard_calls(server, frozenset(tools.names))
    return server


class ToolRegistrar:
    """Registers each tool through the SDK's public decorator (`server.tool`); with `attempt` (stdio), a sync
    tool is registered as the coroutine run_in_place makes of it."""

    def __init__(self, server: MCPServer, attempt: Callable[[], Any] | None = None) -> None:
        self.server, self.attempt = server, attempt
        self.names: list[str] = []

    def tool(self, **options: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            in_place = self.attempt is not None and not inspect.iscoroutinefunction(fn)
            self.server.tool(**options)(run_in_place(fn, self.attempt) if in_place else fn)
            self.names.append(fn.__name__)
            return fn

        return register


def add_time_travel(tools: ToolRegistrar, memory: Any) -> None:
    """vlk_time_travel: archive a loop and learn its lesson."""

    @tools.tool(title="Time travel: archive looping errors and learn a lesson", annotations=ARCHIVES)
    def vlk_time_travel(
        target_timeline_ids: Annotated[
            list[int], Field(description="PRESENT slot ids to move to PAST ([id:N] tags of vlk_fetch_context).")
        ],
        learning: Annotated[str, Field(description="The lesson, injected as a FUTURE constraint.")],
        raw_log_excerpt: Annotated[
            str,
            Field(description="REQUIRED. 1-2 sentences of the original error/log that grounds the lesson."),
        ],
        constraint_type: Annotated[
            str | None,
            Field(
                description="DERIVED (default): scar tissue from failure. "
                "PROSPECTIVE: foresight such as deadlines or maintenance windows.",
                json_schema_extra={"enum": ["DERIVED", "PROSPECTIVE"]},
            ),
        ] = None,
        session_id: SessionId = None,
        scope: Annotated[
            str | None,
            Field(
                description="Who sees the lesson: 'session', 'project' (every session of this project; the "
                "default for DERIVED) or 'global' (every project). PROSPECTIVE defaults to 'session'.",
                json_schema_extra={"enum": ["session", "project", "global"]},
            ),
        ] = None,
    ) -> Annotated[CallToolResult, TimeTravelResult]:
        """Escape a failure loop: archive the PRESENT error slots named by their [id:N] to PAST and store the
        lesson learned as a FUTURE constraint, with raw_log_excerpt as its evidence. Later sessions recall
        the lesson when the same error comes back."""
        result = _call(
            lambda: memory.time_travel(
                target_timeline_ids=target_timeline_ids,
                learning=learning,
                raw_log_excerpt=raw_log_excerpt,
                constraint_type=constraint_type,
                session_id=session_id,
                scope=scope,
            )
        )
        return _result(results.time_travel_text(result), result)


def add_reading_tools(tools: ToolRegistrar, memory: Any) -> None:
    """vlk_get_history, vlk_search_memory, vlk_summarize_session and vlk_fetch_context."""

    @tools.tool(title="Memory history: every error and lesson", annotations=READ_ONLY)
    def vlk_get_history(
        limit: Annotated[int, Field(description="Max records to return (1-500).")] = 50,
        session_id: SessionId = None,
    ) -> Annotated[CallToolResult, HistoryResult]:
        """The session's whole memory timeline, newest first, with ids: errors, lessons, anchors and archived
        slots. Use it to audit or to find ids."""
        result = _call(lambda: memory.get_history(limit=limit, session_id=session_id))
        return _result(results.slots_json(result.slots), result)

    @tools.tool(title="Search memory for past errors and lessons", annotations=READ_ONLY)
    def vlk_search_memory(
        query: Annotated[str, Field(description="Keyword or phrase to search for (literal, case-insensitive).")],
        limit: Annotated[int, Field(description="Max records to return (1-500).")] = 20,
        session_id: SessionId = None,
    ) -> Annotated[CallToolResult, SearchResult]:
        """Search the session's memory: error logs, failures, file context, lessons and their evidence,
        archived ones included."""
        result = _call(lambda: memory.search_memory(query=query, limit=limit, session_id=session_id))
        return _result(results.slots_json(result.slots), result)

    @tools.tool(title="Summarize the session's memory", annotations=READ_ONLY)
    def vlk_summarize_session(session_id: SessionId = None) -> Annotated[CallToolResult, SummaryResult]:
        """Counts of the session's memory: live errors (PRESENT), archived slots (PAST), lessons and
        constraints (FUTURE), and their token weight."""
        result = _call(lambda: memory.summarize_session(session_id=session_id))
        return _result(results.summary_text(result), result)

    @tools.tool(title="Fetch the memory context: lessons, loop anchors, live errors", annotations=PIPELINE)
    def vlk_fetch_context(
        session_id: SessionId = None,
        max_tokens: Annotated[
            int | None,
            Field(description="Token budget of the context (default 4000, at least 200); what does not fit is "
                  "counted at the end."),
        ] = None,
    ) -> Annotated[CallToolResult, ContextView]:
        """Fetch the clean memory context before every step: each lesson or constraint learned from a
        failure comes first, then each live error, all tagged [id:N]. It detects a loop (the same error
        3+ times is archived behind a [SYSTEM ANCHOR]), merges constraints above 5 and flags conflicts."""
        result = _call(lambda: memory.fetch_context(session_id=session_id, max_tokens=max_tokens))
        said.context(memory, result)  # kept as interventions (issue 33)
        return _result(result.text, render.context_view(result))


def add_revoke_and_record(tools: ToolRegistrar, memory: Any) -> None:
    """vlk_revoke_future and vlk_record_state."""

    @tools.tool(title="Revoke a lesson or constraint", annotations=ARCHIVES)
    def vlk_revoke_future(
        timeline_id: Annotated[int, Field(description="The timeline id of the FUTURE constraint to revoke.")],
        session_id: SessionId = None,
    ) -> Annotated[CallToolResult, RevokeResult]:
        """Revoke a lesson or constraint (a FUTURE slot, moved to PAST) from memory when it was learned
        wrongly, no longer applies or conflicts with another."""
        result = _call(lambda: memory.revoke_future(timeline_id=timeline_id, session_id=session_id))
        return _result(results.revoke_text(result), result)

    @tools.tool(title="Record an error or failure in memory", annotations=APPEND)
    def vlk_record_state(
        raw_log: Annotated[str, Field(description="REQUIRED. The error message, log line, or observation.")],
        file_context: Annotated[str | None, Field(description="Optional file path or module.")] = None,
        tool_payload: Annotated[
            str | dict[str, Any] | None,
            Field(description="Optional JSON payload of the tool call (a string or a JSON object)."),
        ] = None,
        session_id: SessionId = None,
    ) -> Annotated[CallToolResult, RecordView]:
        """Record an error, failed command, test failure or observation in memory as a PRESENT slot. Call it
        after every failure, before vlk_fetch_context. The result gives the timeline id the other tools
        take, warns when the same error repeats (a loop) and recalls the lesson if it was seen before."""
        def record() -> tuple[RecordResult, str]:
            kind = non_failure(raw_log) if isinstance(raw_log, str) else None
            if kind is not None:  # one classifier for every path (hosts/shared/failures.py)
                raise InvalidInput(f"raw_log is a {kind} of the host, not a failure of the task: not recorded "
                                   "(it would become a loop or a lesson about nothing the agent did)")
            caller = memory.resolved()  # the caller's tenant's Memory, looked up once for the call
            # The record and what it told (interventions, issue 33) in one durable commit: one fsync, not two.
            with caller.one_transaction():
                recorded = caller.record_state(
                    raw_log=raw_log, file_context=file_context, tool_payload=tool_payload, session_id=session_id
                )
                notice = results.record_notice(recorded)
                said.record(caller, recorded, notice)
            return recorded, notice

        result, notice = _call(record)
        return _result(results.record_text(result, notice), results.record_view(result, notice))


def run_in_place(fn: Callable[..., Any], attempt: Callable[[], Any]) -> Callable[..., Any]:
    """The tool run on the event loop rather than in a worker thread, unless it would wait for a lock.

    The SDK runs a sync tool through anyio's thread pool: two thread hand-offs per call (0.1-0.2 ms, a
    tenth of a record). Over stdio the server has one client, so the engine is called in place, under the
    store's attempt(): a write that would wait for another writer's lock gives up before doing anything
    and the call runs again in a worker thread, so the loop keeps answering reads while it waits. HTTP
    keeps the threads, and so does a store without attempt() (PostgreSQL waits happen on its server).
    The coroutine carries the tool's signature and docstring (functools.wraps: the SDK reads the
    arguments through inspect.signature, which follows __wrapped__).
    """

    @functools.wraps(fn)
    async def in_place(*args: Any, **kwargs: Any) -> Any:
        try:
            with attempt():
                return fn(*args, **kwargs)
        except WouldWait:
            return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))

    return in_place


def guard_calls(server: MCPServer, tool_names: frozenset[str]) -> None:
    """Lighten the output schemas of the registered tools, and answer an unknown tool or bad arguments
    as the protocol asks (the middleware below)."""
    sdk_private.replace_output_schemas(server, light_output_schema)

    async def guard_tool_calls(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """An unknown tool is a protocol error (-32602, as the spec asks), not an isError result; argument
        type errors reach the model as one sentence per field instead of pydantic's report."""
        if ctx.method != "tools/call" or not isinstance(ctx.params, dict):
            return await call_next(ctx)
        name = ctx.params.get("name")
        if not isinstance(name, str) or name not in tool_names:
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {str(name)[:100]}. Available: {', '.join(sorted(tool_names))}")
        result = await call_next(ctx)
        if isinstance(result, dict) and result.get("isError") and result.get("content"):
            first = result["content"][0]
            if first.get("type") == "text" and "validation error" in first.get("text", ""):
                first["text"] = argument_errors(name, first["text"])
        return result

    server.middleware.append(guard_tool_calls)
