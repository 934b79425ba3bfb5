"""`vlk-memact learn`: the command-line edge of learn/ (arguments, a progress display, the summary).

What is learned and how is learn/driver.py's; this module only reads the arguments, shows progress on
stderr (a bar on a terminal, else a line per 1,000 calls) and prints the summary, or one JSON object.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..config import Settings
from ..core.errors import InvalidInput
from ..engine import Memory
from ..hosts.shared.session_stores import HOSTS
from ..learn.driver import Options, Progress, Report, learn
from ..store import open_read_only

LINE_EVERY = 1000  # calls between two progress lines when stderr is not a terminal


def register(sub: Any) -> None:
    """Add `learn` to the vlk-memact parser."""
    learn_cmd = sub.add_parser(
        "learn", help="learn from the sessions your agents already wrote to disk (failures, loops, fixes)",
        description="Feed past sessions through the same hooks that record live sessions, at their own times: "
        "with no PATH, every host's own session store (~/.claude/projects, $CODEX_HOME/sessions, ~/.gemini/tmp, "
        "OpenCode's database). Learning again adds only what is new. --project gives one project key for every "
        "session read (default: the git root of each session's working directory, as the hooks use).")
    learn_cmd.add_argument("paths", nargs="*", metavar="PATH", help="a session file or a folder of them")
    learn_cmd.add_argument("--host", choices=HOSTS, help="only this host's sessions")
    learn_cmd.add_argument("--since", metavar="DATE", help="only sessions started on or after DATE (YYYY-MM-DD)")
    learn_cmd.add_argument("--dry-run", action="store_true",
                           help="learn into a scratch in-memory database and report; nothing is written")
    learn_cmd.add_argument("--json", action="store_true", help="print one JSON object")


def _since(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidInput(f"--since must be a date like 2026-11-30 (or a date and time), got {value!r}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


class BarProgress(Progress):
    """A tqdm bar over the sessions on a terminal; otherwise a line per LINE_EVERY calls (stderr)."""

    def __init__(self, stream: Any = None) -> None:
        self.stream = stream or sys.stderr
        self.bar: Any = None
        self.calls = 0
        self.sessions = 0
        self.total = 0

    def start(self, sessions: int) -> None:
        self.total = sessions
        if self.stream.isatty() and sessions:
            from tqdm import tqdm

            self.bar = tqdm(total=sessions, unit="session", file=self.stream, desc="learning", leave=False)

    def session(self, calls: int) -> None:
        self.sessions += 1
        if self.bar is not None:
            self.bar.update(1)

    def call(self) -> None:
        self.calls += 1
        if self.bar is not None:
            if self.calls % 50 == 0:
                self.bar.set_postfix(calls=self.calls, refresh=False)
        elif self.calls % LINE_EVERY == 0:
            print(f"learn: {self.calls} calls learned ({self.sessions} of {self.total} sessions done)",
                  file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def summary(report: Report, dry_run: bool) -> str:
    """What the run learned, per project, and what it left alone or could not read."""
    lead = "Would learn" if dry_run else "Learned"
    lines = [f"{lead} {report.total('sessions')} sessions ({report.total('calls')} calls): "
             f"{report.total('failures')} failures, {report.total('loops')} loops, {report.total('fixes')} fixes."]
    for project, tally in sorted(report.projects.items()):
        lines.append(f"  {project}: {tally.sessions} sessions, {tally.calls} calls, {tally.failures} failures, "
                     f"{tally.loops} loops, {tally.fixes} fixes")
    notes = [f"{report.sources} session sources found"]
    if report.unchanged:
        notes.append(f"{report.unchanged} unchanged since the last learn")
    if report.before_since:
        notes.append(f"{report.before_since} sessions before --since left alone")
    if report.open_calls:
        notes.append(f"{report.open_calls} call{'s' if report.open_calls > 1 else ''} without a result yet "
                     "(learned next time)")
    lines.append("; ".join(notes) + ".")
    if report.skipped:
        lines.append("Skipped: " + ", ".join(f"{n} {reason}" for reason, n in sorted(report.skipped.items())) + ".")
    if report.handler_errors:
        lines.append(f"{report.handler_errors} events failed in the hooks' handlers (as a live hook, they were "
                     f"skipped): " + "; ".join(report.errors))
    if dry_run:
        lines.append("(dry run: nothing was written)")
    return "\n".join(lines)


def as_json(report: Report, dry_run: bool) -> dict[str, Any]:
    return {
        "sessions_learned": report.total("sessions"), "calls": report.total("calls"),
        "failures": report.total("failures"), "loops": report.total("loops"), "fixes": report.total("fixes"),
        "projects": {p: vars(t) for p, t in sorted(report.projects.items())},
        "sources": report.sources, "unchanged": report.unchanged, "before_since": report.before_since,
        "open_calls": report.open_calls, "skipped": dict(report.skipped), "handler_errors": report.handler_errors,
        "dry_run": dry_run,
    }


def run(args: argparse.Namespace, settings: Settings) -> int:
    """Run `vlk-memact learn`; InvalidInput propagates to the CLI's `Error:` line."""
    for path in args.paths:
        if not Path(path).exists():
            raise InvalidInput(f"{path} does not exist; give a session file or a folder of them")
    options = Options(paths=tuple(Path(p).expanduser() for p in args.paths), host=args.host,
                      project=getattr(args, "project", None), since=_since(args.since))
    progress = BarProgress()
    if not args.verbose:  # a line per loop archived is the engine's INFO: noise over thousands of past calls
        logging.getLogger("vlk_memact").setLevel(logging.WARNING)
    url = args.database_url if args.database_url is not None else settings.database_url
    try:
        report = _learn(options, progress, url, settings, args.dry_run)
    except KeyboardInterrupt:
        print("learn: interrupted; what was learned so far is kept: run it again to go on from there.",
              file=sys.stderr)
        return 130
    print(json.dumps(as_json(report, args.dry_run)) if args.json else summary(report, args.dry_run))
    return 0


def _learn(options: Options, progress: Progress, url: str | None, settings: Settings, dry_run: bool) -> Report:
    if dry_run:
        ledger = open_read_only(url, settings.busy_timeout_ms)
        try:
            with Memory("sqlite::memory:", settings=settings, project="default") as scratch:
                report = learn(scratch, options, progress, ledger=ledger)
        finally:
            if ledger is not None:
                ledger.close()
        return report
    with Memory(url, settings=settings, project="default") as memory:
        return learn(memory, options, progress)
