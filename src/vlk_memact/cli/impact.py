"""`vlk-memact impact`: what the memory told agents and what followed, for a project or all of them.

A thin edge over Memory.impact() (engine/impact.py): the readable report names each fix by its commands or
files; --json prints the report object itself.
"""

from __future__ import annotations

import argparse
import json
import re
from typing import Any

from ..core.errors import InvalidInput
from ..core.quoting import quoted_line

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_KIND_NAMES = {"fix_told": "fixes told", "deny": "denials", "warn": "warnings", "carried": "facts carried",
               "loop": "loops announced", "recall": "lessons recalled", "repeat": "repeats announced",
               "fix_withheld": "fixes withheld (holdout)"}


def register(sub: Any) -> None:
    impact = sub.add_parser(
        "impact", help="what the memory told agents (fixes, denials, facts) and what followed",
        description="Report the interventions the hooks and MCP tools recorded for this repository's project (or "
        "--project KEY, or --all-projects) and what the agent did next, computed from the session's recorded "
        "calls: fixes told, applied and resolved, steps saved, denials and the changed call after them, facts "
        "carried at session start and met again, and the characters it cost.")
    impact.add_argument("--all-projects", action="store_true", help="every project of the tenant")
    impact.add_argument("--since", metavar="DATE", help="only interventions from this day on (YYYY-MM-DD, UTC)")
    impact.add_argument("--tenant", default="local", help="the tenant to report on (default: %(default)s)")
    impact.add_argument("--json", action="store_true", help="print the report as one JSON object")


def run(memory: Any, args: argparse.Namespace) -> str:
    since = args.since
    if since is not None and not _DATE.match(since):
        raise InvalidInput(f"--since must be a date as YYYY-MM-DD, got {since!r}")
    report = memory.for_tenant(args.tenant).impact(every_project=args.all_projects, since=since)
    if args.json:
        return json.dumps(report, ensure_ascii=False, indent=2)
    return text(report)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def text(report: dict[str, Any]) -> str:
    """The report as a person reads it."""
    where = "every project" if report["project"] is None else f"project {report['project']}"
    since = f" since {report['since']}" if report["since"] else ""
    lines = [f"vlk-memact impact: {where}{since}, {_plural(report['sessions'], 'session')}"]
    counts = {k: n for k, n in report["interventions"].items() if n}
    if not counts:
        lines.append("Nothing was said to an agent yet: no fix told, no call denied, no fact carried.")
        return "\n".join(lines)
    said = ", ".join(f"{_KIND_NAMES.get(k, k)} {n}" for k, n in counts.items())
    chars = report["chars_injected"]
    lines.append(f"Said: {said}; {chars:,} characters injected (~{chars // 4:,} tokens).")
    told = report["fixes_told"]
    if told["total"]:
        lines.append(f"Fixes told: {told['total']}, applied {told['applied']}, resolved {told['resolved']}"
                     + (f" ({told['not_observable']} through the MCP tools, whose calls are not seen)"
                        if told["not_observable"] else "")
                     + f"; {_plural(report['steps_saved'], 'step')} saved against the sessions that found them.")
        for fix in report["fixes"]:
            lines.append(f"  - {quoted_line(fix['fix'] or '?', 200)}: told {fix['told']}x, applied "
                         f"{fix['applied']}, resolved {fix['resolved']}, {_plural(fix['steps_saved'], 'step')} saved")
    denials = report["denials"]
    if denials["total"]:
        lines.append(f"Denials: {denials['total']}, then changed the call {denials['then_changed']}, overridden "
                     f"{denials['overridden']}, a call of the same tool and target then succeeded "
                     f"{denials['then_succeeded']}.")
        for denied in report["denied_calls"][-10:]:
            what = (f"changed to `{quoted_line(denied['changed_to'], 120)}`" if denied.get("changed_to")
                    else "changed" if denied["then_changed"] else "overridden" if denied["overridden"]
                    else "not changed")
            lines.append(f"  - {quoted_line(denied['call'] or '?', 160)} in session "
                         f"'{quoted_line(denied['session'], 40)}': {what}"
                         + (", then succeeded" if denied["then_succeeded"] else ""))
    recalled = report["lessons_recalled"]
    if recalled["total"]:
        lines.append(f"Lessons recalled when their error came back: {recalled['total']}, resolved afterwards "
                     f"{recalled['resolved']}.")
    carried = report["carried_facts"]
    if carried["told"]:
        lines.append(f"Facts carried at session start: {carried['told']}, met again in that session "
                     f"{carried['met_again']}.")
    experiment = report["holdout"]
    if experiment["withheld"]["cases"]:
        lines.append(f"Holdout (VLK_HOLDOUT): {experiment['told']['cases']} recalls told, "
                     f"{experiment['withheld']['cases']} withheld; {experiment['verdict']}.")
    return "\n".join(lines)
