"""`Memory.impact()`: what the memory said to agents and what followed, as one report (issue 33).

The figures come from the interventions the edges recorded (engine/impact_record.py) and their outcomes
(impact_outcomes.py). The CLI (`vlk-memact impact`), the viewer's Impact page and the server's /metrics
all read this one report, so they always agree.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..core import interventions as kinds
from .base import MemoryBase
from .impact_outcomes import Outcome, outcomes

RECENT = 50  # interventions listed one by one, newest first
MIN_CASES = 5  # resolved recalls on each side before the holdout comparison is worked out
# Student's t, 97.5th percentile, by degrees of freedom (a 95% two-sided interval); 1.96 beyond 30.
_T975 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23, 12: 2.18,
         15: 2.13, 20: 2.09, 25: 2.06, 30: 2.04}


def _t975(df: float) -> float:
    if df > 30:
        return 1.96
    return next(v for d, v in sorted(_T975.items()) if d >= max(1, math.floor(df)))


def holdout(told: Sequence[Outcome], withheld: Sequence[Outcome]) -> dict[str, Any]:
    """Resolution steps when the fix was told vs withheld (VLK_HOLDOUT), with a 95% confidence interval of the
    difference (Welch), or "not enough cases"."""
    def side(cases: Sequence[Outcome]) -> tuple[dict[str, Any], list[int]]:
        steps = [o.steps_here for o in cases if o.resolved and o.steps_here is not None]
        return {"cases": len(cases), "resolved": sum(bool(o.resolved) for o in cases),
                "mean_steps": round(statistics.fmean(steps), 2) if steps else None}, steps

    told_view, a = side(told)
    withheld_view, b = side(withheld)
    report: dict[str, Any] = {"told": told_view, "withheld": withheld_view, "difference": None, "ci95": None}
    if len(a) < MIN_CASES or len(b) < MIN_CASES:
        report["verdict"] = (f"not enough cases: {len(a)} told and {len(b)} withheld recalls resolved so far, "
                             f"at least {MIN_CASES} of each are needed")
        return report
    difference = statistics.fmean(b) - statistics.fmean(a)  # steps a told fix saved
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / ((va ** 2 / (len(a) - 1)) + (vb ** 2 / (len(b) - 1))) if se else float(len(a) + len(b) - 2)
    half = _t975(df) * se
    low, high = difference - half, difference + half
    report.update(difference=round(difference, 2), ci95=[round(low, 2), round(high, 2)])
    significant = low > 0 or high < 0
    report["verdict"] = ("significant: " if significant else "not significant yet: ") + (
        f"telling the fix changed the steps to resolution by {difference:+.2f} (95% CI {low:+.2f} to {high:+.2f})")
    return report


def _fix_rows(found: Sequence[Outcome]) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for o in found:
        iv = o.intervention
        row = rows.setdefault(iv.subject or iv.detail or "?", {
            "fix": iv.detail, "told": 0, "applied": 0, "resolved": 0, "steps_saved": 0, "sessions": []})
        row["told"] += 1
        row["applied"] += bool(o.applied)
        row["resolved"] += bool(o.resolved)
        row["steps_saved"] += o.steps_saved
        if iv.session_id not in row["sessions"]:
            row["sessions"].append(iv.session_id)
    return list(rows.values())


def summarize(found: Sequence[Outcome], project: str | None, since: str | None) -> dict[str, Any]:
    """The report: totals, the fixes named, the denials and what followed, the holdout, figures per day."""
    by_kind: dict[str, list[Outcome]] = {k: [] for k in kinds.KINDS}
    for o in found:
        by_kind.setdefault(o.intervention.kind, []).append(o)
    told, denied, carried = by_kind[kinds.FIX_TOLD], by_kind[kinds.DENY], by_kind[kinds.CARRIED]
    said = [o for o in found if o.intervention.kind in kinds.SAID]
    days: dict[str, dict[str, Any]] = {}
    for o in found:
        iv = o.intervention
        day = days.setdefault(iv.created_at[:10], {"day": iv.created_at[:10], "interventions": 0, "chars": 0,
                                                   "fixes_applied": 0, "fixes_resolved": 0, "then_changed": 0,
                                                   "met_again": 0, "steps_saved": 0, "sessions": [],
                                                   "where": []})
        day["interventions"] += iv.kind in kinds.SAID
        day["chars"] += iv.chars if iv.kind in kinds.SAID else 0
        if iv.kind == kinds.FIX_TOLD:
            day["fixes_applied"] += bool(o.applied)
            day["fixes_resolved"] += bool(o.resolved)
            day["steps_saved"] += o.steps_saved
        day["then_changed"] += bool(iv.kind == kinds.DENY and o.changed)
        day["met_again"] += bool(iv.kind == kinds.CARRIED and o.met_again)
        if iv.session_id not in day["sessions"]:
            day["sessions"].append(iv.session_id)
        if {"project": iv.project, "session": iv.session_id} not in day["where"]:
            day["where"].append({"project": iv.project, "session": iv.session_id})
    return {
        "project": project,
        "since": since,
        "sessions": len({(o.intervention.project, o.intervention.session_id) for o in found}),
        "interventions": {k: len(v) for k, v in by_kind.items()},
        "chars_injected": sum(o.intervention.chars for o in said),
        "chars_by_kind": dict(Counter({k: sum(o.intervention.chars for o in v) for k, v in by_kind.items()})),
        "fixes_told": {"total": len(told), "applied": sum(bool(o.applied) for o in told),
                       "resolved": sum(bool(o.resolved) for o in told),
                       "not_observable": sum(o.applied is None for o in told)},
        "denials": {"total": len(denied), "then_changed": sum(bool(o.changed) for o in denied),
                    "overridden": sum(bool(o.overridden) for o in denied),
                    "then_succeeded": sum(bool(o.succeeded) for o in denied)},
        "lessons_recalled": {"total": len(by_kind[kinds.RECALL]),
                             "resolved": sum(bool(o.resolved) for o in by_kind[kinds.RECALL])},
        "carried_facts": {"told": len(carried), "met_again": sum(bool(o.met_again) for o in carried)},
        "steps_saved": sum(o.steps_saved for o in told),
        "fixes": _fix_rows(told),
        "denied_calls": [{"session": o.intervention.session_id, "call": o.intervention.detail,
                          "then_changed": bool(o.changed), "changed_to": o.changed_to, "overridden": bool(o.overridden),
                          "then_succeeded": bool(o.succeeded), "at": o.intervention.created_at} for o in denied],
        "holdout": holdout(told, by_kind[kinds.FIX_WITHHELD]),
        "days": sorted(days.values(), key=lambda d: d["day"]),
        "recent": [_recent(o) for o in found[-RECENT:]][::-1],
    }


def _followed(o: Outcome) -> str:
    """What followed an intervention, in a few words ("" when nothing is known)."""
    kind = o.intervention.kind
    if kind == kinds.DENY:
        said = (f"changed the call to {o.changed_to}" if o.changed_to else "changed the call" if o.changed
                else "overrode it" if o.overridden else "did not retry")
        return said + (
            ", then it worked" if o.succeeded else "")
    if kind in (kinds.FIX_TOLD, kinds.FIX_WITHHELD):
        applied = "steps not seen" if o.applied is None else "applied" if o.applied else "not applied"
        return f"{applied}, {'resolved' if o.resolved else 'not resolved'}" + (
            f" in {o.steps_here} step(s) (the finding session: {o.steps_before})" if o.steps_here is not None
            and o.steps_before is not None else "")
    if kind == kinds.CARRIED and o.met_again is not None:
        return "met again in the session" if o.met_again else "not met in the session"
    if kind == kinds.RECALL and o.resolved is not None:
        return "resolved afterwards" if o.resolved else "not resolved"
    return ""


def _recent(o: Outcome) -> dict[str, Any]:
    iv = o.intervention
    return {"kind": iv.kind, "project": iv.project, "session": iv.session_id, "at": iv.created_at,
            "chars": iv.chars, "about": iv.detail, "followed": _followed(o)}


class Impact(MemoryBase):
    """Memory.impact(): the report of what the memory said and what followed."""

    def impact(self, *, every_project: bool = False, since: str | None = None, session: str | None = None,
               limit: int = 100_000) -> dict[str, Any]:
        """The impact report of this memory's project (or of every project of the tenant), since a date
        ('YYYY-MM-DD', inclusive) when given."""
        project = None if every_project else self.project
        with self.store.read() as tx:
            found = tx.interventions(self.tenant, project, since, session, limit)
            done = outcomes(tx, found)
        return summarize(done, project, since)
