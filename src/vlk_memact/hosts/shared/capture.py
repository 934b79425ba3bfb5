"""Tool events, host-neutral: capture a failure, resolve on success, gather the guard's facts.

A host adapter turns its event into a ToolCall and calls one of these with a Memory; each returns
the text to inject (or a GuardResult), None when there is nothing worth the model's attention.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ...core.model import NewHostCall, Origin, RecordResult, SessionKey, Slot
from . import failures as failure_kinds
from ...core import interventions as said_kinds
from . import fixes, guard, inject, read_only, said, steps

if TYPE_CHECKING:
    from ...engine import Memory

FILE_FIELDS = steps.FILE_FIELDS
PAYLOAD_STRING_CHARS = 600  # per string of an oversized tool input kept in tool_payload


@dataclass(frozen=True)
class ToolCall:
    """One tool call as every host reports it. What is derived from it (its key, target, summary, ...) is computed
    once: an event asks for them several times."""

    session_id: str
    cwd: str | None
    tool_name: str
    tool_input: Any
    tool_use_id: str | None
    edit_tools: Collection[str] = guard.EDIT_TOOLS
    shell_tools: Collection[str] = guard.SHELL_TOOLS
    read_tools: Collection[str] = guard.READ_TOOLS
    ignored_fields: Mapping[str, Collection[str]] = field(default_factory=lambda: guard.IGNORED_FIELDS)
    host: str | None = None  # the adapter's HOST: stored with the call, so `vlk-memact sessions` names it

    @cached_property
    def key(self) -> str:
        return guard.call_key(self.tool_name, self.tool_input, self.ignored_fields)

    @cached_property
    def changes_state(self) -> bool:
        return guard.changes_state(self.tool_name, self.edit_tools, self.shell_tools, self.tool_input,
                                   self.read_tools)

    @cached_property
    def changes_before_failing(self) -> bool:
        """A failed shell command line whose earlier commands wrote (`sed -i f && pytest`): the guard counts it
        as a change, since the write happened whatever failed after it."""
        if self.tool_name not in self.shell_tools:
            return False
        command = steps.command_of(self.tool_input)
        return command is not None and read_only.may_change_before_failing(command)

    @cached_property
    def described(self) -> str:
        return inject.describe_call(self.tool_name, self.tool_input)

    @cached_property
    def target(self) -> str | None:
        return steps.target_of(self.tool_name, self.tool_input, self.shell_tools)

    @cached_property
    def summary(self) -> str:
        return steps.summary_of(self.tool_name, self.tool_input, self.shell_tools, self.edit_tools)

    def host_call(self, outcome: str, changes_state: bool = False) -> NewHostCall:
        """The row a hook stores for this call: its identity, outcome, tool, target and summary."""
        return NewHostCall(self.tool_use_id, self.key, outcome, changes_state, self.tool_name, self.target,
                           self.summary, self.host)


@dataclass(frozen=True)
class GuardResult:
    """What the guard decided for a call, and the text that goes with it."""

    action: str  # guard.DENY, guard.WARN or guard.NONE
    text: str | None = None
    anchor_id: int | None = None


def is_own_tool(tool_name: str) -> bool:
    """vlk-memact's own MCP tools (mcp__<server>__vlk_*): their errors are the model's business, not a failure
    of the task, and recording them would record the recorder."""
    if not tool_name.startswith("mcp__"):
        return False
    return tool_name.rsplit("__", 1)[-1].startswith("vlk_")


def file_context(tool_input: Any, cwd: str | None) -> str | None:
    """The file the call was about (Edit, Write, Read, ...), else the working directory of the command."""
    return steps.file_of(tool_input) or cwd or None


def tool_payload(call: ToolCall, max_chars: int) -> dict[str, Any]:
    """Tool name, input and tool_use_id; an input too large for the field keeps the head of each string."""
    payload: dict[str, Any] = {"tool": call.tool_name, "input": call.tool_input, "tool_use_id": call.tool_use_id}
    if len(json.dumps(payload, ensure_ascii=False, default=str)) <= max_chars:
        return payload

    def shorten(value: Any) -> Any:
        if isinstance(value, str) and len(value) > PAYLOAD_STRING_CHARS:
            return value[:PAYLOAD_STRING_CHARS] + f"[... {len(value) - PAYLOAD_STRING_CHARS} characters not kept]"
        if isinstance(value, Mapping):
            return {k: shorten(v) for k, v in value.items()}
        if isinstance(value, list):
            return [shorten(v) for v in value]
        return value

    payload["input"] = shorten(call.tool_input)
    if len(json.dumps(payload, ensure_ascii=False, default=str)) > max_chars:
        payload["input"] = "[input too large to keep]"
    return payload


def _session(memory: Memory, session_id: str) -> SessionKey:
    return memory.session_key(session_id)  # the engine's session rule


def _remember_injected(memory: Memory, key: SessionKey, items: Collection[str]) -> None:
    """So that a later UserPromptSubmit does not say it again."""
    memory.remember_told(key, items)


def on_failure(memory: Memory, call: ToolCall, error: str) -> str | None:
    """Record the failure (once per tool_use_id), run the pipeline, and say what the model should know:
    a loop intercepted now, a lesson recalled, or the same error live again. Otherwise nothing."""
    if failure_kinds.non_failure(error):
        return None  # a host refusal (input check, permission, sibling, interrupt): not the agent's failure
    text = (error or "").strip() or f"{call.tool_name} failed without an error message"
    record = memory.record_state(
        raw_log=text,
        file_context=file_context(call.tool_input, call.cwd),
        tool_payload=tool_payload(call, memory.settings.max_field_chars),
        session_id=call.session_id,
        host_call=call.host_call("failure", call.changes_before_failing),
    )
    if record.already_recorded_by == "call":
        return None  # the host delivered the same event twice: it was announced the first time
    key = _session(memory, call.session_id)
    with memory.reading() as tx:  # the failure as stored (redacted, relative paths): read once for the notes below
        found = tx.slots_by_id(key, [record.timeline_id])
    failure = found[0] if found else None
    fix = _fix_note(memory, call, failure) if failure is not None else None  # "" when the VLK_HOLDOUT experiment withheld it
    texts = [_announce(memory, call, record, failure, fix is not None, failure_kinds.is_generic(text),
                       failure_kinds.says_nothing(text)), fix]
    if not any(texts) and fix is None:  # nothing else said: whether (and how) the error ended in an earlier session
        texts.append(said.announced(memory, call, said_kinds.RECALL, _earlier_note(memory, call, failure)))
    return "\n".join(t for t in texts if t) or None


def _earlier_note(memory: Memory, call: ToolCall, failure: Slot | None) -> str | None:
    """Where this error failed the same way in an earlier session, and whether it was resolved there."""
    if failure is None:
        return None
    key = _session(memory, call.session_id)
    with memory.reading() as tx:
        return fixes.earlier_text(tx, key, failure, call.described)


def _fix_note(memory: Memory, call: ToolCall, failure: Slot) -> str | None:
    """What fixed this error in an earlier session (fix memory), said once per fix and session: the lookup, the
    demotion of a fix that did not hold and the bookkeeping are one engine call (Memory.tell_fixes)."""
    key = _session(memory, call.session_id)
    shown = memory.tell_fixes(key, failure, fixes.FIXES_TOLD)
    if not shown:
        return None
    return said.fixes(memory, call, key, shown, fixes.recall_text(shown, key.session))


def _announce(memory: Memory, call: ToolCall, record: RecordResult, failure: Slot | None, fix_told: bool = False,
              generic: bool = False, nameless: bool = False) -> str | None:
    """A loop intercepted now, a lesson recalled, or the same error live again; otherwise None. A recalled loop
    of an earlier session is said as one line (where it failed, how it ended), or not at all beside its fix;
    a recalled loop of an error that names nothing ("Error", "File does not exist.") is not said, nor is a loop
    or a repeat from different calls of an error that says nothing at all (a bare "Error": nothing joins them)."""
    loops = memory.intercept_loops(session_id=call.session_id)
    key = _session(memory, call.session_id)
    mode = memory.settings.hook_guard
    mine = [loop for loop in loops if record.timeline_id in loop.archived_ids]
    if mine:
        loop = mine[0]
        with memory.reading() as tx:
            anchors = tx.slots_by_id(key, [loop.anchor_id])
            calls = _calls_of(tx.slots_by_id(key, loop.archived_ids), call.ignored_fields)
        if nameless and len({k for k, _ in calls}) > 1:
            return None  # an error that says nothing, from different calls: nothing says it is one error
        _remember_injected(memory, key, [f"c:{loop.anchor_id}"])
        return said.announced(memory, call, said_kinds.LOOP, inject.loop_text(
            call.described, loop, anchors[0] if anchors else None, mode, [d for _, d in calls],
            sum(k == call.key for k, _ in calls), memory.settings.loop_threshold), loop.anchor_id)
    if record.recalled:
        wanted = [r.constraint_id for r in record.recalled]
        with memory.reading() as tx:
            found = {c.id: c for c in tx.visible_constraints(key) if c.id in wanted}
        recalled = [found[i] for i in wanted if i in found]
        if recalled:
            _remember_injected(memory, key, [f"c:{c.id}" for c in recalled])
            # Only loops of earlier sessions: one line on where it failed and how it ended says it shorter.
            if all(c.origin is Origin.ANCHOR for c in recalled):
                if fix_told:
                    return None
                note = _earlier_note(memory, call, failure)
                if note or generic:
                    return said.announced(memory, call, said_kinds.RECALL, note, recalled[0].id)
            return said.announced(memory, call, said_kinds.RECALL,
                                  inject.recall_text(call.described, recalled, record.session_id), recalled[0].id)
    if record.repeats >= 2:
        if nameless:  # an error that says nothing is "the same error" only when the same call failed again
            with memory.reading() as tx:
                calls = _calls_of(tx.slots_by_id(key, record.repeat_ids), call.ignored_fields)
            if len({k for k, _ in calls}) > 1:
                return None
        return said.announced(memory, call, said_kinds.REPEAT,
                              inject.repeat_text(call.described, record.repeat_ids, memory.settings.loop_threshold))
    return None


def on_success(memory: Memory, call: ToolCall) -> None:
    """Remember a state-changing success (the guard's "something changed"), and resolve the failures of the
    same call or of a changed version of it: their fix is kept (hosts/shared/fixes.py), the stale errors leave the
    context."""
    key = _session(memory, call.session_id)
    changes = call.changes_state
    if not memory.worth_resolving(key, call.key, call.target, changes):
        return
    # The failures this success resolves, and their fixes (fix memory), kept as evidence: one write transaction.
    memory.resolve_success(key, call.host_call("success", changes),
                           lambda tx, k, success, success_id: fixes.resolve(tx, k, success, success_id,
                                                                            call.shell_tools))


def _calls_of(slots: list[Slot], ignored: Mapping[str, Collection[str]]) -> list[tuple[str | None, str]]:
    """(call key, description) of the call each looped failure came from, as its tool_payload recorded it
    (None and "a recorded error" for a failure the model recorded itself)."""
    found: list[tuple[str | None, str]] = []
    for slot in slots:
        try:
            payload = json.loads(slot.tool_payload) if slot.tool_payload else None
        except ValueError:
            payload = None
        tool = payload.get("tool") if isinstance(payload, dict) else None
        if isinstance(tool, str) and tool:
            tool_input = payload.get("input")
            found.append((guard.call_key(tool, tool_input, ignored), inject.describe_call(tool, tool_input)))
        else:
            found.append((None, "a recorded error"))
    return found


def before_call(memory: Memory, call: ToolCall, fix: str | None = None, say_warning: bool = True) -> GuardResult:
    """The guard: deny an unchanged repeat of a call that itself kept failing with one error; warn (once)
    when something changed since, or when only its error is looped.

    fix: what fixed this error before, when fix memory knows it (a line the denial offers as "instead").
    say_warning: False when the host cannot show a warning at this point (Gemini CLI's BeforeTool): a WARN is
    then returned without counting as said, so the event that can carry it still gets it.
    """
    mode = memory.settings.hook_guard
    if mode == "off":
        return GuardResult(guard.NONE)
    key = _session(memory, call.session_id)
    threshold = memory.settings.loop_threshold
    facts = memory.guard_facts(key, call.key)
    if facts is None:
        return GuardResult(guard.NONE)
    newest, anchor, since, warned = facts.newest, facts.anchor, facts.since, facts.warned
    events = [guard.CallEvent(e.call_key, e.outcome, e.changes_state, e.target) for e in since]
    edit_target = call.target if call.tool_name in call.edit_tools else None
    action = guard.decide(mode, call.key, True, events, own_failures=facts.same, threshold=threshold,
                          specific=not failure_kinds.is_generic(newest.raw_log), edit_target=edit_target)
    if action == guard.DENY:
        if fix is None:
            fix = _known_fix(memory, key, newest)
        reason = inject.deny_reason(call.described, anchor, facts.same, newest.raw_log, fix)
        said.guard(memory, call, action, reason, anchor.id)
        return GuardResult(action, reason, anchor.id)
    if action == guard.WARN and facts.same < threshold and failure_kinds.says_nothing(newest.raw_log):
        return GuardResult(guard.NONE)  # only other calls repeated an error that says nothing: nothing to say
    if action == guard.WARN and not warned:
        if say_warning:
            _remember_injected(memory, key, [f"c:{anchor.id}", f"w:{anchor.id}:{call.key}"])
        if facts.same < threshold:
            text = inject.shared_error_text(call.described, anchor, facts.same)
        else:
            text = inject.warn_text(call.described, anchor, guard.changed_since(call.key, events, edit_target))
        if say_warning:
            said.guard(memory, call, action, text, anchor.id)
        return GuardResult(action, text, anchor.id)
    return GuardResult(guard.NONE)


def _known_fix(memory: Memory, key: SessionKey, failure: Slot) -> str | None:
    """The line of the latest working fix of this error (this project's sessions, this one included); read
    only when the guard denies, so an allowed call pays nothing for it."""
    return memory.known_fix(key, failure.error_keys)
