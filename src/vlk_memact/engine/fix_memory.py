"""Fix memory as every reader shows it: a fix in one line, the working fixes of an error, a lesson's fix.

The hooks resolve and recall (hosts/shared/fixes.py); the engine, the MCP tools, the CLI and the viewer read
fixes through these functions, so a fix reads the same wherever it is shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING

from ..core.model import Fix, FixStep, SessionKey, Slot
from ..core.quoting import quoted_line

if TYPE_CHECKING:
    from ..store import Transaction
    from .base import MemoryBase

FIX = "fix"
RETRY = "retry"
FIXES_LOOKED_AT = 20
STEP_CHARS = 150


def match_keys(fingerprint_keys: Sequence[str]) -> tuple[str, ...]:
    """The keys a fix is stored and looked up by: the error's fingerprint keys, and each one without the
    function it was raised in (`...@<module>`, `...@load`): the same missing module or command met from
    another function is the same error to fix."""
    keys = dict.fromkeys(fingerprint_keys)
    for key in fingerprint_keys:
        if "@" in key:
            keys.setdefault(key.rsplit("@", 1)[0] + "@", None)
    return tuple(keys)


def _step_text(step: FixStep) -> str:
    return quoted_line(step.summary, STEP_CHARS)


def fix_line(fix: Fix) -> str:
    """What fixed the error, as one line: the steps oldest first, and what then passed."""
    steps = list(fix.steps)
    changed = bool(steps) and steps[-1].summary == fix.passed
    if changed:
        steps = steps[:-1]
    said = "; ".join(_step_text(s) for s in steps)
    if fix.left_out:
        said = f"{fix.left_out} earlier step{'s' if fix.left_out > 1 else ''}, then {said}"
    passed = quoted_line(fix.passed, STEP_CHARS)
    if changed and said:
        return f"{said} (then the changed call {passed} passed)"
    if changed:
        return f"the changed call {passed} (it passed)"
    return f"{said} (then {passed} passed)"


def working(fixes: Sequence[Fix]) -> list[Fix]:
    """Distinct fixes (by what they did), latest first; a fix whose latest record was demoted is left out."""
    seen: set[tuple[str, ...]] = set()
    kept = []
    for fix in sorted(fixes, key=lambda f: f.id, reverse=True):
        if fix.kind != FIX:
            continue
        what = tuple(s.summary for s in fix.steps)
        if what in seen:
            continue
        seen.add(what)
        if fix.demoted == 0:
            kept.append(fix)
    return kept


def fix_of(tx: Transaction, key: SessionKey, fingerprint_keys: Sequence[str]) -> Fix | None:
    """The latest working fix of an error with these keys anywhere in the project (this session included)."""
    if not fingerprint_keys:
        return None
    found = working(tx.fixes_matching(key, match_keys(fingerprint_keys), FIXES_LOOKED_AT, include_own=True))
    return found[0] if found else None


def fixed_and_gone(constraint: Slot, fix: Fix | None) -> bool:
    """A lesson whose error was fixed and has not been met since (its last firing is older than the fix): the
    carry-over need not inject it at the next SessionStart."""
    if fix is None:
        return False
    seen = max(constraint.last_fired_at or "", constraint.created_at or "")
    return seen < fix.created_at  # both 'YYYY-MM-DD HH:MM:SS[.fff]' in UTC: the text order is the time order


def carryover_view(tx: Transaction, key: SessionKey, constraints: Sequence[Slot]) -> tuple[dict[int, str], set[int]]:
    """For SessionStart: each lesson's fix line (to show with it), and the ids of lessons fixed and not met
    since (to leave out)."""
    lines: dict[int, str] = {}
    gone: set[int] = set()
    if not constraints or not tx.has_fixes(key.tenant):  # a tenant without fix memory: nothing to look up
        return lines, gone
    for constraint in constraints:
        fix = fix_of(tx, key, constraint.fingerprint_keys)
        if fix is not None:
            lines[constraint.id] = fix_line(fix)
            if fixed_and_gone(constraint, fix):
                gone.add(constraint.id)
    return lines, gone


def lesson_fixes(tx: Transaction, key: SessionKey, constraints: Sequence[Slot]) -> dict[int, str]:
    """Constraint id -> the line of its error's latest working fix, for the constraints that have one."""
    return carryover_view(tx, key, constraints)[0]


def error_fixes(tx: Transaction, key: SessionKey, fingerprint_keys: Sequence[str], limit: int = 2) -> list[str]:
    """The lines of the working fixes of an error from other sessions of the project, latest first."""
    if not fingerprint_keys or not tx.has_fixes(key.tenant):
        return []
    found = tx.fixes_matching(key, match_keys(fingerprint_keys), FIXES_LOOKED_AT)
    return [fix_line(f) for f in working(found)[:limit]]


def describe_fix(fix: Fix) -> str:
    """A fix as a listing shows it: kind, where, the error it resolved (its error lines, not a host's leading
    `Exit code 1`), and what fixed it."""
    # Imported here: the hooks' guard path imports this module, and never the fingerprints.
    from ..core.loops import error_excerpt

    what = "passed on retry" if fix.kind == RETRY else f"fixed by: {fix_line(fix)}"
    demoted = f" [came back after it was applied {fix.demoted}x]" if fix.demoted else ""
    return (f"#{fix.id} {fix.created_at[:19]} session '{quoted_line(fix.session_id, 60)}': "
            f"\"{quoted_line(error_excerpt(fix.error, 120), 120)}\" {what}{demoted}")


def list_fixes(
    memory: MemoryBase, session: str | None = None, limit: int = 50, every_project: bool = False
) -> list[Fix]:
    """The newest fixes of the memory's tenant and project (or of every project; or of one session)."""
    with memory.store.read() as tx:
        return tx.fixes(memory.tenant, None if every_project else memory.project, session, limit)


def fixes_text(fixes: Sequence[Fix]) -> str:
    """A listing, one fix a line, newest first."""
    return "\n".join(describe_fix(f) for f in fixes) if fixes else "No fixes recorded."


def fix_json(fix: Fix) -> dict[str, object]:
    """A fix as JSON listings show it (its steps as objects)."""
    data = asdict(fix)
    data["steps"] = [asdict(s) for s in fix.steps]
    return data
