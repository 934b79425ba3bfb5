"""Feeding past sessions through the hooks' own handlers: `vlk-memact learn` without its command line.

Sessions go in the order they started, each whole (events in time order), through `hosts.<host>.handle` as
the live hook would have run it, every write stamped with the event's own time (Memory.at). The events
run inside one batch (Store.batch: the handlers' transactions join it as savepoints) committed at the end
of each session and at least every COMMIT_SECONDS, so that live hooks writing to the same database never
wait long; what an event changed and the record that it was fed commit together, so an interrupted run
resumes after the last event it committed and never feeds one twice. A session learned before and grown
since (resumed) feeds its new events only, after a SessionStart `resume`; a source unchanged since it was
read in full is not read again.
"""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..engine import impact_record
from ..hosts.shared import session_stores
from ..hosts.commands import HANDLERS
from ..hosts.shared.runner import checkout_roots
from ..core import portable
from ..core.errors import StoreError
from ..store import LearnedSource, Store
from .events import EPOCH, LIVE_SECONDS, HookEvent, Session, Source, parse_time

if TYPE_CHECKING:
    from ..engine import Memory

log = logging.getLogger(__name__)

READERS = {host: f"vlk_memact.learn.{host.replace('-', '_')}" for host in session_stores.HOSTS}
COMMIT_SECONDS = 0.25  # a live hook waits at most about this long for learn's write lock
ERRORS_KEPT = 5


@dataclass(frozen=True)
class Options:
    """What to learn: the hosts' default stores (no paths) or these files and folders, one host or any."""

    paths: Sequence[Path] = ()
    host: str | None = None
    project: str | None = None  # one project key for every session read (else each session's own)
    since: datetime | None = None  # sessions that started before are left alone


@dataclass
class Tally:
    """What one project learned."""

    sessions: int = 0
    calls: int = 0
    failures: int = 0
    loops: int = 0
    fixes: int = 0


@dataclass
class Report:
    """What a run read, learned and could not read."""

    projects: dict[str, Tally] = field(default_factory=dict)
    sources: int = 0  # sources found
    unchanged: int = 0  # sources unchanged since they were read in full: not read again
    before_since: int = 0  # sessions left alone by --since
    open_calls: int = 0  # calls without a result yet (sessions being written): learned next time
    skipped: Counter[str] = field(default_factory=Counter)  # what could not be read, by reason
    handler_errors: int = 0
    errors: list[str] = field(default_factory=list)

    def total(self, name: str) -> int:
        return sum(getattr(t, name) for t in self.projects.values())


class Progress:
    """What the command line shows while learning (a bar, or a line per 1,000 calls); silent by default."""

    def start(self, sessions: int) -> None:
        """The number of sessions about to be read."""

    def session(self, calls: int) -> None:
        """One more session done, having fed this many calls."""

    def call(self) -> None:
        """One more call fed."""

    def close(self) -> None:
        """The run is over."""


def reader(host: str) -> Any:
    """The reader module of a host (learn/<host>.py): sources(path), read(sources), start_event(session, source)."""
    return import_module(READERS[host])


def find_sources(options: Options,
                 env: Mapping[str, str] | None = None) -> tuple[list[tuple[str, Source]], Counter[str]]:
    """(host, source) of every session to consider, and what could not be read while finding them."""
    problems: Counter[str] = Counter()
    hosts = (options.host,) if options.host else session_stores.HOSTS
    files: list[tuple[str | None, Path]] = []
    for path in options.paths:
        if not path.exists():
            problems["missing path"] += 1
        elif path.is_file():
            files.append((options.host or session_stores.guess_host(path), path))
        else:  # a folder may hold several hosts' files: each host takes those it wrote
            files += [(host, p) for host in hosts for p in session_stores.session_files(host, path)
                      if options.host or session_stores.guess_host(p) == host]
    if not options.paths:
        files = [(host, p) for host in hosts
                 for p in session_stores.session_files(host, session_stores.store_root(host, env))]
    found: list[tuple[str, Source]] = []
    seen: set[str] = set()
    for host, path in files:
        if host is None:
            problems["file of no known host"] += 1
            continue
        try:
            for source in reader(host).sources(path):
                if source.key not in seen:
                    seen.add(source.key)
                    found.append((host, source))
        except Exception as exc:  # noqa: BLE001 - a file no reader understands is counted, never fatal
            problems[f"unreadable {host} file ({type(exc).__name__})"] += 1
    return found, problems


def _handler(host: str) -> Callable[..., Any]:
    return import_module(HANDLERS[host]).handle


def project_key(source_cwd: str | None, options: Options, memory: Memory) -> str:
    """--project, else VLK_PROJECT (as the live hooks), else the git root of the session's directory."""
    return options.project or memory.settings.project or session_stores.project_of(source_cwd)


class Learner:
    """One run: the sources found, grouped into sessions, fed in the order they started."""

    def __init__(self, memory: Memory, options: Options, progress: Progress | None = None,
                 ledger: Store | None = None) -> None:
        self.memory = memory
        self.options = options
        self.progress = progress or Progress()
        self.ledger = ledger  # a dry run reads what was learned here, and writes into memory's scratch store
        self.report = Report()
        self._memories: dict[str, Memory] = {}
        self._roots: tuple[str, ...] = ()  # the checkout of the session being fed (core/portable.py)

    def _for(self, project: str) -> Memory:
        if project not in self._memories:
            self._memories[project] = self.memory.for_project(project)
        return self._memories[project]

    def _stores(self) -> list[tuple[Callable[[], Any], bool]]:
        """(a read transaction, is the ledger) of the memory, then of a dry run's ledger."""
        return [(self.memory.reading, False)] + ([(self.ledger.read, True)] if self.ledger is not None else [])

    def _known(self, source: Source) -> LearnedSource | None:
        for reading, ledger in self._stores():
            found = _reading(reading, lambda tx: tx.learned_source(self.memory.tenant, source.key), None, ledger)
            if found is not None:
                return found
        return None

    def _learned(self, project: str, units: list[str]) -> set[str]:
        found: set[str] = set()
        for reading, ledger in self._stores() if units else ():
            found |= _reading(reading, lambda tx: tx.learned_events(self.memory.tenant, project, units), set(),
                              ledger)
        return found

    def run(self, found: list[tuple[str, Source]]) -> Report:
        self.report.sources = len(found)
        groups: dict[tuple[str, str], list[Source]] = {}
        for host, source in found:
            known = self._known(source)
            if known is not None and known.stamp and known.stamp == source.stamp:
                self.report.unchanged += 1
                continue
            groups.setdefault((host, source.session_id), []).append(source)
        ordered = sorted(groups.items(), key=lambda item: min(s.started for s in item[1]))
        if self.options.since is not None:
            kept = [g for g in ordered if min(s.started for s in g[1]) >= self.options.since]
            self.report.before_since = len(ordered) - len(kept)
            ordered = kept
        self.progress.start(len(ordered))
        try:
            with self.memory.batched() as batch:
                for (host, _), sources in ordered:
                    calls = self._session(host, sources, batch)
                    batch.commit()
                    self.progress.session(calls)
        finally:
            self.progress.close()
        return self.report

    def _session(self, host: str, sources: list[Source], batch: Any) -> int:
        """Feed one session's new events; the number of calls fed."""
        try:
            session: Session = reader(host).read(sources)
        except Exception as exc:  # noqa: BLE001 - a session no reader understands is counted, never fatal
            self.report.skipped[f"unreadable {host} session ({type(exc).__name__})"] += 1
            return 0
        self.report.skipped.update(session.skipped)
        self.report.open_calls += session.open_calls
        project = project_key(session.cwd, self.options, self.memory)
        memory = self._for(project)
        learned = self._learned(project, [e.unit for e in session.events if e.unit])
        known_before = bool(learned) or any(self._known(s) is not None for s in sources)
        new = _new_events(session.events, learned)
        live = _captured_live(memory, session, new)
        if live:
            new = [e for e in new if e.unit not in live]
            _mark(memory, project, sorted(live))
        calls = 0
        if any(e.unit is not None for e in new):
            calls = self._feed(host, session, memory, project, new, known_before, batch)
        with memory.writing() as tx:
            for source in sources:
                stamp = "" if session.open_calls else source.stamp
                events = len([e for e in session.events if e.completes])
                tx.save_learned_source(memory.tenant, LearnedSource(source.key, host, session.session_id, project,
                                                                    stamp, events))
        return calls

    def _feed(self, host: str, session: Session, memory: Memory, project: str, new: list[HookEvent],
              known_before: bool, batch: Any) -> int:
        handle = _handler(host)
        key = memory.session_key(session.session_id)
        failed = [e.failed_call for e in new if e.failed_call]
        with memory.reading() as tx:
            stored_before = tx.stored_calls(key, failed, "failure") if failed else set()
            loops_before, fixes_before = tx.session_tally(key)
        start = reader(host).start_event(session, "resume" if known_before else "startup")
        # As the live hooks do (hosts/shared/runner.answer_event): the repository's files named relative to its root.
        self._roots = checkout_roots(session.cwd) if session.cwd and Path(session.cwd).is_dir() else ()
        self._handle(handle, start, memory, new[0].at, {})
        marks: list[str] = []
        calls = 0
        committed = time.monotonic()
        for event in new:
            self._handle(handle, event.payload, memory, event.at, event.options)
            if event.completes and event.unit is not None:
                marks.append(event.unit)
                if event.call:
                    calls += 1
                    self.progress.call()
            if time.monotonic() - committed >= COMMIT_SECONDS:
                _mark(memory, project, marks)
                batch.commit()
                committed = time.monotonic()
        _mark(memory, project, marks)
        with memory.reading() as tx:
            stored = tx.stored_calls(key, failed, "failure") if failed else set()
            loops_after, fixes_after = tx.session_tally(key)
        tally = self.report.projects.setdefault(project, Tally())
        tally.sessions += 1
        tally.calls += calls
        tally.failures += len(stored - stored_before)
        tally.loops += max(0, loops_after - loops_before)
        tally.fixes += max(0, fixes_after - fixes_before)
        return calls

    def _handle(self, handle: Callable[..., Any], payload: dict[str, Any], memory: Memory, at: datetime,
                options: Mapping[str, Any]) -> None:
        try:
            # What the handlers would say to a past session was never said to a model: no intervention is kept.
            with memory.at(at), impact_record.deferred():
                handle(portable.relative_value(payload, self._roots), memory, **options)
        except Exception as exc:  # noqa: BLE001 - like the live hook: one event failing does not stop the rest
            self.report.handler_errors += 1
            if len(self.report.errors) < ERRORS_KEPT:
                self.report.errors.append(f"{payload.get('hook_event_name')}: {type(exc).__name__}: {exc}")
            log.debug("handler failed on %s", payload.get("hook_event_name"), exc_info=True)


def _reading(reading: Callable[[], Any], read: Callable[[Any], Any], missing: Any, ledger: bool) -> Any:
    """A read of what was learned; for a dry run's read-only ledger, `missing` when it cannot say (written by a
    version without learn's tables)."""
    try:
        with reading() as tx:
            return read(tx)
    except StoreError:
        if not ledger:
            raise
        return missing


def _mark(memory: Memory, project: str, marks: list[str]) -> None:
    """Record the units fed since the last commit, in the transaction holding what they changed."""
    if marks:
        with memory.writing() as tx:
            tx.add_learned_events(memory.tenant, project, marks)
        marks.clear()


def _captured_live(memory: Memory, session: Session, events: list[HookEvent]) -> set[str]:
    """Units of calls the live hooks already stored, for a host whose events carry no call id (events.live_key):
    a host call of the same key stored within LIVE_SECONDS of the call's time."""
    keyed = [e for e in events if e.live_key is not None and e.unit is not None]
    if not keyed:
        return set()
    own = {e.live_key[1] for e in session.events if e.live_key is not None}  # what learn stored, earlier runs
    key = memory.session_key(session.session_id)
    found: set[str] = set()
    with memory.reading() as tx:
        for event in keyed:
            assert event.live_key is not None
            for row in tx.host_calls(key, call_key=event.live_key[0], newest_first=True, limit=20):
                if row.tool_use_id in own:
                    continue
                stored = parse_time(row.created_at.replace(" ", "T"), EPOCH)
                if abs((stored - event.at).total_seconds()) <= LIVE_SECONDS:
                    found.add(str(event.unit))
                    break
    return found


def _new_events(events: list[HookEvent], learned: set[str]) -> list[HookEvent]:
    """The events of units not learned yet, and the events without a unit (compactions) that come after the
    last learned unit (those before it were fed with it)."""
    last_learned = max((i for i, e in enumerate(events) if e.unit is not None and e.unit in learned), default=-1)
    return [e for i, e in enumerate(events)
            if (e.unit is not None and e.unit not in learned) or (e.unit is None and i > last_learned)]


def learn(memory: Memory, options: Options, progress: Progress | None = None, ledger: Store | None = None,
          env: Mapping[str, str] | None = None) -> Report:
    """Learn the sessions options name into memory; the report says what was read and learned."""
    found, problems = find_sources(options, os.environ if env is None else env)
    learner = Learner(memory, options, progress, ledger)
    learner.report.skipped.update(problems)
    return learner.run(found)
