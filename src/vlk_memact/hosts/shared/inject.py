"""Every text a hook puts in the model's context; pure functions.

Rules (issue #9, and the hosts' injection defences): every text starts with `vlk-memact:`, states
facts (what failed, how often, what was learned, what the guard will do) instead of giving orders in a
"system" voice, quotes recorded data on one line with the server's markers neutralised, and stays
under a character cap well below the host's own limit (10,000 characters for Claude Code).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ...core.model import ConflictView, LoopReport, Origin, Slot
from ...core.quoting import quoted_line
from ...core.render import CHARS_PER_TOKEN, estimate_tokens

PREFIX = "vlk-memact:"
MAX_CHARS = 4000  # any injected text; Claude Code moves text over 10,000 characters to a file
CALL_CHARS = 160
LESSON_CHARS = 400
EVIDENCE_CHARS = 240
LOG_CHARS = 300
MIN_CUT_CHARS = 120  # below this, a constraint that does not fit is left out rather than cut
CUT_MARKER = " [... {n} characters left out; vlk_get_history shows everything]"


def cap(text: str, max_chars: int = MAX_CHARS) -> str:
    """The text within max_chars, cut at a line end when possible, with a visible marker."""
    if len(text) <= max_chars:
        return text
    room = max_chars - len(CUT_MARKER.format(n=len(text)))
    head = text[:room]
    if "\n" in head[room // 2 :]:
        head = head[: head.rindex("\n")]
    return head + CUT_MARKER.format(n=len(text) - len(head))


def _redacted(text: str) -> str:
    """Secrets in a command are replaced in what the hook writes, as in what it stores."""
    from ...core.redact import redact  # only when there is something to say: it compiles a large table

    return redact(text).text


def describe_call(tool_name: str, tool_input: Any) -> str:
    """A call as a person would name it: the command of a shell call, the file of an edit."""
    if isinstance(tool_input, Mapping):
        command = tool_input.get("command")
        if isinstance(command, str) and command.strip():
            return f"{tool_name} `{quoted_line(_redacted(command), CALL_CHARS)}`"
        for field in ("file_path", "notebook_path", "path", "url", "pattern", "query"):
            value = tool_input.get(field)
            if isinstance(value, str) and value.strip():
                return f"{tool_name} on {quoted_line(_redacted(value), CALL_CHARS)}"
    return tool_name


def _ids(ids: Sequence[int]) -> str:
    return ", ".join(f"#{i}" for i in ids)


def describe_constraint(constraint: Slot, session_id: str | None = None) -> str:
    """One line per constraint: what kind, what it says (lessons) or shows (loops), its evidence, where from.
    Evidence that is a host's refusal (stored before hosts/shared/failures.py existed) is never quoted."""
    from .failures import non_failure

    if constraint.evidence and non_failure(constraint.evidence):
        constraint = replace(constraint, evidence=None)
    if constraint.origin is Origin.ANCHOR:
        body = "a repeated error (loop anchor)"
        if constraint.evidence:
            body += f"; evidence: \"{quoted_line(constraint.evidence, EVIDENCE_CHARS)}\""
    elif constraint.origin is Origin.CONSOLIDATED and constraint.lessons:
        # A merged loop anchor's text is the in-session order "change approach now": it is not repeated here.
        lessons = [lesson for lesson in constraint.lessons if "CURRENT STRATEGY EXHAUSTED" not in lesson]
        merged = len(constraint.lessons) - len(lessons)
        body = "lessons: " + "; ".join(quoted_line(lesson, LESSON_CHARS) for lesson in lessons) if lessons else ""
        if merged:
            body += ("; " if body else "") + f"{merged} merged loop anchor{'s' if merged > 1 else ''} (repeated errors)"
    else:
        kind = (constraint.constraint_type.value if constraint.constraint_type else "DERIVED").lower()
        body = f"{kind} lesson: {quoted_line(constraint.learning_summary or '', LESSON_CHARS)}"
        if constraint.evidence:
            body += f"; evidence: \"{quoted_line(constraint.evidence, EVIDENCE_CHARS)}\""
    if session_id is not None and constraint.session_id != session_id:
        scope = constraint.scope.value if constraint.scope else "session"
        body += f" (learned in session '{quoted_line(constraint.session_id, 60)}', {scope} scope)"
    return f"[id:{constraint.id}] {body}"


def guard_note(mode: str) -> str:
    if mode == "deny":
        return ("The vlk-memact guard declines an identical re-run of this call until a file edit or another "
                "command has succeeded.")
    return ""


def _names(calls: Sequence[str], shown: int = 3) -> str:
    names = list(calls[:shown])
    more = len(calls) - len(names)
    if more:
        names.append(f"{more} more")
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]


def loop_text(call: str, loop: LoopReport, anchor: Slot | None, mode: str,
              calls: Sequence[str] = (), own: int | None = None, threshold: int = 3) -> str:
    """A loop was intercepted by the capture of this failure. It says what repeated: this call (own: how
    many of the looped failures were this very call), or one error from different calls (then named)."""
    others = [c for c in dict.fromkeys(calls) if c != call]
    archived = f"{_ids(loop.archived_ids)}, now archived, ~{loop.tokens_saved} tokens"
    if not others:
        text = (f"{PREFIX} {call} failed with the same error {loop.occurrences} times in this session "
                f"({archived}); loop anchor [id:{loop.anchor_id}].")
    else:
        text = (f"{PREFIX} the same error came from {len(others) + 1} different calls in this session, "
                f"{loop.occurrences} times in all: {call} and {_names(others)} ({archived}); "
                f"loop anchor [id:{loop.anchor_id}].")
    if anchor is not None and anchor.evidence:
        text += f" Error: \"{quoted_line(anchor.evidence, EVIDENCE_CHARS)}\"."
    repeated = own if own is not None else (loop.occurrences if not others else 0)
    note = guard_note(mode) if repeated >= threshold else ""
    return cap(text + (" " + note if note else ""))


def recall_text(call: str, recalled: Sequence[Slot], session_id: str) -> str:
    """The error just captured matches lessons learned earlier (shown the way carry-over shows them)."""
    lines = [f"{PREFIX} the error of {call} was seen before:"]
    for constraint in recalled:
        times = "time" if constraint.fire_count == 1 else "times"
        lines.append(f"- {describe_constraint(constraint, session_id)}; matched {constraint.fire_count} {times}")
    return cap("\n".join(lines))


def repeat_text(call: str, ids: Sequence[int], threshold: int) -> str:
    """The same error is live more than once, below the loop threshold."""
    return cap(f"{PREFIX} {call} failed with the same error as before: it is now live {len(ids)} times "
               f"({_ids(ids)}); at {threshold} it counts as a loop.")


OVERRIDE = "To run it unchanged anyway, set VLK_HOOK_GUARD=warn."


def deny_reason(call: str, anchor: Slot, failures: int, error: str | None = None, fix: str | None = None) -> str:
    """Why an identical re-run is declined, in two lines: what happened, then what to do instead (the fix
    when fix memory knows one, else the anchor's advice) and how to override. The model reads it as the
    tool result."""
    from ...core.loops import (
        error_excerpt,  # here, not at import: the guard's process never loads the fingerprints
    )

    shown = error_excerpt(error, EVIDENCE_CHARS) if error else (anchor.evidence or "")
    said = f" (\"{quoted_line(shown, EVIDENCE_CHARS)}\")" if shown else ""
    first = (f"{PREFIX} not run. {call} already failed {failures} times in this session with the same error{said}, "
             f"and nothing that changes state has succeeded since (loop anchor [id:{anchor.id}]).")
    instead = (f"Instead: what fixed this error before: {quoted_line(fix, LESSON_CHARS)}; or change the cause first."
               if fix else "Instead: change the cause first (edit the file, fix the command or what it needs), "
               "or try another approach.")
    return cap(f"{first}\n{instead} {OVERRIDE}")


def warn_text(call: str, anchor: Slot, changed: bool) -> str:
    """An identical re-run that is allowed (something changed, or the guard only warns), with what is known."""
    why = ("something has changed since it last failed, so it runs" if changed
           else "nothing has changed since it last failed")
    text = f"{PREFIX} {call} is identical to a call whose failures formed a loop (anchor [id:{anchor.id}]); {why}."
    if anchor.evidence:
        text += f" Its error was: \"{quoted_line(anchor.evidence, EVIDENCE_CHARS)}\"."
    return cap(text)


def shared_error_text(call: str, anchor: Slot, failures: int) -> str:
    """A call that failed fewer times than a loop, with an error other calls looped on: it runs, said once."""
    times = "once" if failures == 1 else f"{failures} times"
    text = (f"{PREFIX} {call} failed {times} in this session with an error that other calls repeated "
            f"(loop anchor [id:{anchor.id}]); it runs.")
    if anchor.evidence:
        text += f" The error: \"{quoted_line(anchor.evidence, EVIDENCE_CHARS)}\"."
    return cap(text)


def _present_line(slot: Slot) -> str:
    where = f" in {quoted_line(slot.file_context, 120)}" if slot.file_context else ""
    return f"[id:{slot.id}] live error{where}: \"{quoted_line(slot.raw_log or '', LOG_CHARS)}\""


def _conflict_line(conflict: ConflictView) -> str:
    return f"constraints #{conflict.first_id} and #{conflict.second_id} contradict each other: {conflict.description}"


def context_text(
    heading: str,
    constraints: Sequence[Slot],
    conflicts: Sequence[ConflictView],
    present: Sequence[Slot],
    session_id: str,
    max_tokens: int,
    max_chars: int = MAX_CHARS,
) -> tuple[str | None, list[Slot], list[Slot]]:
    """A context block within max_tokens and max_chars: conflicts, constraints in rank order, then live errors
    newest first; returns the text (None when there is nothing to say) and what made it in."""
    budget = min(max_tokens, int(max_chars / CHARS_PER_TOKEN))
    lines = [f"{PREFIX} {heading}"]
    used = estimate_tokens(lines[0]) + 20  # room for the "left out" line
    for conflict in conflicts:
        line = "- " + _conflict_line(conflict)
        if used + estimate_tokens(line) + 1 <= budget:
            lines.append(line)
            used += estimate_tokens(line) + 1
    shown_c: list[Slot] = []
    shown_p: list[Slot] = []
    left_out = 0
    for constraint in constraints:
        line = "- " + describe_constraint(constraint, session_id)
        room = int((budget - used - 1) * CHARS_PER_TOKEN)
        if estimate_tokens(line) > budget - used - 1 and room >= MIN_CUT_CHARS:
            line = line[: room - 1] + "…"  # a long lesson (a consolidation) is cut rather than dropped
        if used + estimate_tokens(line) + 1 <= budget:
            lines.append(line)
            shown_c.append(constraint)
            used += estimate_tokens(line) + 1
        else:
            left_out += 1
    for slot in sorted(present, key=lambda s: s.sequence_order, reverse=True):
        line = "- " + _present_line(slot)
        if used + estimate_tokens(line) + 1 <= budget:
            lines.append(line)
            shown_p.append(slot)
            used += estimate_tokens(line) + 1
        else:
            left_out += 1
    if len(lines) == 1:
        return None, [], []
    if left_out:
        lines.append(f"({left_out} more left out to stay within {max_tokens} tokens; vlk_fetch_context shows them.)")
    return cap("\n".join(lines), max_chars), shown_c, shown_p
