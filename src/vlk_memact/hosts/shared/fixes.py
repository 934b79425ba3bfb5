"""Fix memory at the hooks: what resolved a failure in a session, and saying it when the error comes back.

Resolution (on a success): the failures of the same call, or of a changed version of it (same tool and
same target: the same script or program, the same file), since that call last succeeded are resolved.
The fix is what ran between the last failure of an error and the success and could have changed the
outcome: successful edits, writes and state-changing commands (never reads), plus the changed call
itself when the call changed. The same call passing with nothing in between "passed on retry": kept
as such, never offered as a fix. Only recorded calls are named, by their stored summaries.

Recall (on a failure): a fix of the same error (a shared fingerprint key) from an earlier session of
the project, or a global one, is said in one line per fix, latest working fix first; a fix that was
told in this session, applied, and the error came back anyway is demoted and not offered again.
An error that failed the same way (same fingerprint) in an earlier session and has no fix to tell is
said once, at its first failure in the session: "failed the same way in session X on day Y; not
resolved there" (or "a later run of the same call passed there"). This is where a fact of an earlier
session is told (issue 34): at the failure it concerns, not at every session start.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...core.model import Fix, FixStep, HostCall, NewFix, NewHostCall, Retired, Scope, SessionKey, Slot
from ...core.quoting import quoted_line
from ...engine.fix_memory import FIX, FIXES_LOOKED_AT, RETRY, fix_line, match_keys, working
from . import failures as failure_kinds
from . import inject

if TYPE_CHECKING:
    from ...engine import Memory
    from ...store import Transaction

MAX_STEPS = 3  # steps kept per fix, those closest to the success
MAX_ERRORS = 8  # distinct errors (fingerprints) one success keeps a fix for (a reproduce script meets many)
CALLS_LOOKED_AT = 200  # a session's recent calls read to resolve or to tell an applied fix
ERROR_CHARS = 300  # the head of the resolved error kept with the fix
FIXES_TOLD = 2  # distinct fixes said after one failure
EARLIER_READ = 20  # the newest failures of an error, in any session of the project, read for the note


@dataclass(frozen=True)
class Planned:
    """The fix of one error: its kind, the steps kept (oldest first) and how many older ones were left out."""

    kind: str
    steps: tuple[FixStep, ...]
    left_out: int


# A run that only shows whether the error is still there, by its target (hosts/shared/steps.py program_of): a test
# runner, a reproduction or check script. It is never "what fixed it": it ran before the error too.
_VERIFY = re.compile(
    r"^(?:pytest|py\.test|tox|nox|jest|vitest|mocha|phpunit|rspec|ctest|unittest|nosetests)$"
    r"|^\S+ -m (?:pytest|unittest|doctest|nose2?|tox)$"
    r"|^(?:npm|yarn|pnpm|bun|deno|go|cargo|dotnet|swift|mix|make|mvn|gradle) (?:test|check|vet)$"
    r"|^\S+ (?:\S*/)?(?:repro\w*|test\w*|\w+_tests?|check\w*|verify\w*|debug\w*)\.(?:py|js|mjs|ts|sh|rb|php|pl)$",
    re.I)
# A file that only reproduces or tests an error (reproduce_issue.py, test_bug.py, a reproduction/ folder): writing
# it is setting up the check, not fixing what it checks.
_VERIFY_FILE = re.compile(r"(?:^|/)(?:repro\w*|tests?_\w+|\w+_tests?|debug_\w+)\.\w+$"
                          r"|(?:^|/)(?:repro|reproduce|reproduction|repro_\w+|reproduce_\w+)/", re.I)
_REDIRECT = re.compile(r">\s*['\"]?([^\s'\";&|]+)")
# Names an error is about: a quoted word, a file with an extension, the program a shell could not find.
_NAMED = re.compile(r"['\"`]([\w.@/+-]{2,})['\"`]|([\w.-]+\.[A-Za-z]{1,5})\b|(\S+): (?:command )?not found")


def is_verification(target: str | None) -> bool:
    """Does a call with this target only run a test, a reproduction or a check (see _VERIFY)?"""
    return bool(target) and bool(_VERIFY.match(target or ""))


def _sets_up_a_check(call: HostCall) -> bool:
    """Does a step write a reproduction or test script (by a file tool, or a shell redirect into it)?"""
    written = [call.target] if call.target and " " not in call.target else []  # a file tool's file
    written += _REDIRECT.findall(call.summary or "")
    return any(_VERIFY_FILE.search(path) for path in written)


def _related(step: HostCall, names: set[str]) -> bool:
    """Is a step about what failed: does it act on or name a file, module or program the error names?"""
    said = f"{step.target or ''} {step.summary or ''}"
    words = {w.rsplit("/", 1)[-1] for w in re.findall(r"[\w.@/+-]+", said)}
    return bool(names & words)


def _names_in(error: str, failed_summary: str) -> set[str]:
    """The files, modules and programs an error (and the failed call) names, by base name and first part."""
    names: set[str] = set()
    for match in _NAMED.finditer(f"{error[:4000]}\n{failed_summary}"):
        name = next(g for g in match.groups() if g).rsplit("/", 1)[-1]
        names.update((name, name.split(".", 1)[0]))  # numpy of numpy.linalg, setup of setup.py
    return {n for n in names if len(n) > 2}


def plan_fix(failed_key: str, success: NewHostCall, between: Sequence[HostCall], failed: HostCall | None = None,
             error: str = "") -> Planned:
    """The fix of a failure whose last occurrence had call key failed_key (the call: failed, its error: error),
    resolved by success; between are the session's calls after that failure and before the success, oldest
    first. Pure.

    Steps are the successful state-changing calls between, never a re-run of the failing script or program (the
    same target as the failed call), a test or reproduction run (is_verification) nor the writing of a test or
    reproduction script (_sets_up_a_check) unless that script is what failed: they ran before the error too, in
    the next session. When some act on or
    name what the error names (the file in the traceback, the missing module or program, a config file the failed
    call read), only those are kept."""
    steps: list[HostCall] = []
    failed_target = failed.target if failed is not None and failed.tool == success.tool else None
    names = _names_in(error, failed.summary or "" if failed is not None else "")
    for call in between:
        if call.outcome != "success" or not call.changes_state or not call.summary:
            continue  # failures, reads and read-only commands change nothing the next call sees
        if call.call_key in (failed_key, success.call_key) or is_verification(call.target):
            continue
        if _sets_up_a_check(call) and not _related(call, names):
            continue  # a reproduction or test script written: the fix only when it is what failed
        if failed_target and " " in failed_target and call.target == failed_target:
            continue  # the failing script run again with other arguments: it shows, it does not fix
        steps = [s for s in steps if s.summary != call.summary] + [call]  # a repeated step counts once, last
    related = [s for s in steps if _related(s, names)] if names else []
    chosen = [FixStep(s.tool_use_id, s.tool, s.summary or "", s.call_key) for s in (related or steps)]
    if success.call_key != failed_key and success.summary and not is_verification(success.target):
        chosen.append(FixStep(success.tool_use_id, success.tool, success.summary, success.call_key))
    if not chosen:
        return Planned(RETRY, (), 0)
    kept = tuple(chosen[-MAX_STEPS:])
    return Planned(FIX, kept, len(chosen) - len(kept))


def _changed_version_counts(success: NewHostCall, shell_tools: Collection[str]) -> bool:
    """Does a success with another key on the same target resolve that target's failures? For a file tool
    yes (the same file), for a command only when the target names a script or subcommand (`python run.py`,
    `git commit`) or the command changes state: `cat a` passing says nothing about `cat b`."""
    if success.target is None or success.tool is None:
        return False
    return success.tool not in shell_tools or " " in success.target or success.changes_state


def _unresolved(calls: Sequence[HostCall], skip_id: int) -> list[HostCall]:
    """The failures, newest first, after the newest success among calls (newest first)."""
    found = []
    for call in calls:
        if call.id == skip_id:
            continue
        if call.outcome == "success":
            break
        found.append(call)
    return found


def resolve(tx: Transaction, key: SessionKey, success: NewHostCall, success_id: int,
            shell_tools: Collection[str]) -> list[int]:
    """Store the fixes a success just recorded (success_id) resolves; return the ids of the failed slots."""
    failures = {c.id: c for c in _unresolved(
        tx.host_calls(key, call_key=success.call_key, newest_first=True, limit=FIXES_LOOKED_AT), success_id)}
    if _changed_version_counts(success, shell_tools):
        same_target = [c for c in tx.host_calls(key, target=success.target, newest_first=True, limit=FIXES_LOOKED_AT)
                       if c.tool == success.tool]
        failures.update((c.id, c) for c in _unresolved(same_target, success_id))
    failed = [c for c in failures.values() if c.outcome == "failure" and c.slot_id is not None]
    if not failed:
        return []
    slots = {s.id: s for s in tx.slots_by_id(key, [c.slot_id for c in failed if c.slot_id is not None])}
    # One fix per error: its occurrences, newest first; the errors most recently failing first.
    errors: dict[str, list[tuple[HostCall, Slot]]] = {}
    for call in sorted(failed, key=lambda c: c.id, reverse=True):
        slot = slots.get(call.slot_id or 0)
        if slot is not None:
            errors.setdefault(slot.fingerprint or f"slot:{slot.id}", []).append((call, slot))
    if not errors:
        return []
    oldest_last = min(pairs[0][0].id for pairs in list(errors.values())[:MAX_ERRORS])
    recent = tx.host_calls(key, after_id=oldest_last, newest_first=True, limit=CALLS_LOOKED_AT)
    recent = sorted((c for c in recent if c.id < success_id), key=lambda c: c.id)
    for pairs in list(errors.values())[:MAX_ERRORS]:
        last_call, last_slot = pairs[0]
        planned = plan_fix(last_call.call_key, success, [c for c in recent if c.id > last_call.id], last_call,
                           last_slot.raw_log or "")
        keys = tuple(dict.fromkeys(k for _, s in pairs for k in s.error_keys))
        if not keys:
            continue
        scope = "global" if any(c.scope is Scope.GLOBAL for c in tx.constraints_matching(key, keys)) else "project"
        tx.add_fix(NewFix(
            key, planned.kind, last_slot.fingerprint, match_keys(keys[:16]), (last_slot.raw_log or "")[:ERROR_CHARS],
            last_call.summary or "", success.summary or "", planned.steps, planned.left_out,
            tuple(s.uid for _, s in pairs if s.uid), scope,
        ))
    return [s.id for pairs in errors.values() for _, s in pairs]


# ---- recall ----


def recall_text(fixes: Sequence[Fix], session_id: str) -> str | None:
    """One line per fix (at most FIXES_TOLD), latest first; None without a working fix."""
    told = fixes[:FIXES_TOLD]
    if not told:
        return None
    lines = []
    for i, fix in enumerate(told):
        where = "in this session" if fix.session_id == session_id else "in an earlier session"
        lead = f"{inject.PREFIX} fixed {where} by: " if i == 0 else f"{inject.PREFIX} before that, fixed by: "
        lines.append(lead + fix_line(fix))
    return inject.cap("\n".join(lines))


def earlier_text(tx: Transaction, key: SessionKey, slot: Slot, call: str) -> str | None:
    """The note for a failure whose error failed the same way in an earlier session and has no fix to tell;
    None when it did not, when it already failed earlier in this session (said then), or when it names nothing."""
    if not slot.fingerprint or failure_kinds.is_generic(slot.raw_log):
        return None
    met = tx.project_failures(key, slot.fingerprint, EARLIER_READ, content=False)  # where and when, not the logs
    if any(s.session_id == key.session and s.id < slot.id for s in met):
        return None
    earlier = [s for s in met if s.session_id != key.session and s.id < slot.id]
    if not earlier:
        return None
    there = [s for s in earlier if s.session_id == earlier[0].session_id]
    times = "" if len(there) == 1 else f" ({len(there)} times there)"
    outcome = "a later run of the same call passed there." if _passed_there(tx, key, there) else "not resolved there."
    return (f"{inject.PREFIX} {call} failed the same way in session '{quoted_line(earlier[0].session_id, 12)}' on "
            f"{earlier[0].created_at[:10]}{times}; {outcome}")


def _passed_there(tx: Transaction, key: SessionKey, slots: Sequence[Slot]) -> bool:
    """Did a later run of a call that failed as these slots succeed in their session?"""
    if any(s.retired_reason is Retired.RESOLVED for s in slots):
        return True
    where = SessionKey(key.tenant, key.project, slots[0].session_id)
    failed = tx.host_calls(where, outcome="failure", slot_ids=sorted({s.id for s in slots}), newest_first=True,
                           limit=MAX_ERRORS)
    return any(tx.host_calls(where, call_key=c.call_key, outcome="success", after_id=c.id, limit=1) for c in failed)


PROJECT_FIXES_READ = 200  # the newest fixes of the project a SessionStart matches its lessons against


def lesson_lookup(memory: Memory, session_id: str) -> Callable[[Slot], str | None]:
    """For the carry-over (hosts/shared/carryover.py): the line of the latest working fix of a lesson's error. The
    project's newest fixes are read once, before the carry-over opens its own transaction."""
    key = memory.session_key(session_id)
    with memory.reading() as tx:
        known = working(tx.fixes(key.tenant, key.project, None, PROJECT_FIXES_READ))

    def fix_for(lesson: Slot) -> str | None:
        keys = set(match_keys(lesson.error_keys))
        found = next((f for f in known if keys.intersection(f.fingerprint_keys)), None)
        return fix_line(found) if found is not None else None

    return fix_for
