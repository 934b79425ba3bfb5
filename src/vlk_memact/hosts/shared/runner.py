"""Running one hook process: event from stdin, answer on stdout, within a deadline, never breaking the host.

Whatever goes wrong inside (an unreachable or locked database, a bad DATABASE_URL, a malformed event,
a bug), the hook exits 0 with nothing on stdout, and says what happened in one line on stderr and in
`hooks.log` in the data directory. Exit 2 is never used: Claude Code would block the call, or show
stderr to the model. VLK_HOOK_DEADLINE_MS bounds the whole hook, well under the host's timeout.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable, Collection
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...config import Settings
from ...core import portable
from ...repository import Identity, identify
from ...engine.store_only import StoreOnly
from .hook_log import report
from .warm import MAX_EVENT_BYTES

if TYPE_CHECKING:
    from ...engine import Memory

STDIN_MAX_BYTES = MAX_EVENT_BYTES
DEFAULT_DEADLINE_MS = Settings().hook_deadline_ms

Handler = Callable[[dict[str, Any], "Memory"], "dict[str, Any] | None"]


_EVENT = threading.local()  # (cwd, Identity) of the event this thread answers: its checkout is read once
CHECKOUT_SECONDS = 5.0  # how long the warm server trusts a folder's checkout without reading git's files again
_CHECKOUTS_KEPT = 256
_checkouts: dict[str | None, tuple[float, tuple[int | None, bool], Identity]] = {}  # cwd -> (until, stamp, it)
_roots: dict[str, tuple[Identity, tuple[str, ...]]] = {}  # cwd -> (the Identity they were found for, its roots)


def _stamp(cwd: str | None, identity: Identity) -> tuple[int | None, bool]:
    """What changes when the checkout does: when its git config last changed (a remote added or renamed changes
    the project; None for a worktree, whose .git is a file, or no repository) and whether cwd holds a .git (git init
    there)."""
    config: int | None = None
    if identity.root is not None:
        try:
            config = os.stat(os.path.join(identity.root, ".git", "config")).st_mtime_ns
        except OSError:
            pass
    return config, bool(cwd) and os.path.lexists(os.path.join(cwd or "", ".git"))


def _checkout(cwd: str | None) -> Identity:
    """identify(cwd), kept for CHECKOUT_SECONDS and while the checkout's git config is unchanged: the warm server
    answers every tool call of a session from the same folder, and reading git's files is a fifth of a failure
    event's work there (issue 37). A process answering one event reads them once, as before."""
    now = time.monotonic()
    known = _checkouts.get(cwd)
    if known is not None and now < known[0] and _stamp(cwd, known[2]) == known[1]:
        return known[2]
    identity = identify(Path(cwd) if cwd else None)
    if len(_checkouts) >= _CHECKOUTS_KEPT:
        _checkouts.clear()
    _checkouts[cwd] = (now + CHECKOUT_SECONDS, _stamp(cwd, identity), identity)
    return identity


def _identify(cwd: str | None) -> Identity:
    """The checkout of cwd (repository.py), read once per event: its roots and its project both need it."""
    known = getattr(_EVENT, "checkout", None)
    if known is not None and known[0] == cwd:
        return known[1]
    return _checkout(cwd)


def hook_target(settings: Settings, cwd: str | None) -> tuple[Settings, str, Identity]:
    """The settings a hook opens its memory with, the event's project (VLK_PROJECT, else the repository of the
    event's cwd, as the server) and the checkout it is in (repository.py)."""
    identity = _identify(cwd)
    return _quick(settings), settings.project or identity.key, identity


@functools.lru_cache(maxsize=64)
def _quick(settings: Settings) -> Settings:
    """The settings with a lock wait that ends well inside the hook's deadline (built once per settings)."""
    return replace(settings, busy_timeout_ms=max(50, min(settings.busy_timeout_ms, settings.hook_deadline_ms // 3)))


def open_memory(settings: Settings, cwd: str | None, store_only: bool = False) -> Memory | StoreOnly:
    """The memory of the event's project (hook_target)."""
    quick, project, identity = hook_target(settings, cwd)
    if store_only:
        return StoreOnly(quick, project, identity)
    from ...engine import Memory

    return Memory(settings=quick, project=project, identity=identity)


def _former_roots(memory: Any) -> tuple[str, ...]:
    """The path keys merged into the memory's project (engine/projects.merged_paths); () when unreadable."""
    try:
        return tuple(memory.merged_paths())
    except Exception:  # noqa: BLE001 - an older schema or a busy store: the answer goes out as it is
        return ()


def checkout_roots(cwd: str | None) -> tuple[str, ...]:
    """The root of the checkout holding cwd, as resolved and as the host spells it (through a symlink): the
    prefixes a hook's texts name files of the repository with (core/portable.py); kept with the checkout."""
    if not cwd:
        return ()
    identity = _identify(cwd)
    known = _roots.get(cwd)
    if known is not None and known[0] is identity:
        return known[1]
    roots = _roots_of(cwd, identity)
    if len(_roots) >= _CHECKOUTS_KEPT:
        _roots.clear()
    _roots[cwd] = (identity, roots)
    return roots


def _roots_of(cwd: str, identity: Identity) -> tuple[str, ...]:
    root = identity.root
    if root is None:
        return ()
    roots = [root]
    try:
        below = Path(cwd).resolve().relative_to(root)
    except (OSError, ValueError):
        return tuple(roots)
    depth = len(below.parts)
    spelled = Path(cwd)
    for _ in range(depth):
        spelled = spelled.parent
    if str(spelled) != root:
        roots.append(str(spelled))
    return tuple(roots)


def parse_event(raw: bytes) -> dict[str, Any]:
    """The event object of a hook's stdin; ValueError for anything else."""
    if len(raw) > STDIN_MAX_BYTES:
        raise ValueError(f"the event is larger than {STDIN_MAX_BYTES} bytes")
    event = json.loads(raw.decode("utf-8", "replace"))
    if not isinstance(event, dict):
        raise ValueError(f"the event is JSON {type(event).__name__}, not an object")
    return event


def read_stdin() -> bytes:
    """At most one byte more than an event may hold (so that parse_event can refuse it)."""
    return sys.stdin.buffer.read(STDIN_MAX_BYTES + 1)


def _failure(exc: BaseException) -> str:
    where = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    at = f" (at {Path(where[0].filename).name}:{where[0].lineno})" if where else ""
    return f"{type(exc).__name__}: {exc}{at}; nothing was printed."


Skip = Callable[[dict[str, Any]], "str | None"]
# Events answered from the store alone: their names, or a test of the event (a host with one event for
# success and failure decides by its payload).
StoreOnlyRule = Collection[str] | Callable[[dict[str, Any]], bool]
Opener = Callable[[Settings, "str | None", bool], Any]


def answer_event(
    handle: Handler,
    raw: bytes,
    settings: Settings,
    *,
    skip: Skip | None = None,
    store_only: StoreOnlyRule = (),
    opener: Opener = open_memory,
    durable: bool = True,
) -> tuple[str, dict[str, Any] | None, str | None]:
    """(event name, the answer to print or None, a problem to report or None); never raises.

    durable=False: the event's commit skips its fsync; the caller syncs the memory once the answer has left
    (the warm server, warm_server.py; docs/guarantees.md)."""
    event_name = "?"
    try:
        event = parse_event(raw)
        event_name = str(event.get("hook_event_name", "?"))[:60]
        reason = skip(event) if skip is not None else None
        if reason:
            return event_name, None, reason
        cwd = event.get("cwd")
        cwd = cwd if isinstance(cwd, str) else None
        # What is stored and told names the repository's files relative to its root (core/portable.py).
        _EVENT.checkout = (cwd, _checkout(cwd))
        roots = checkout_roots(cwd)
        event = portable.relative_value(event, roots)
        light = store_only(event) if callable(store_only) else event_name in store_only
        with opener(settings, cwd, light) as memory, memory.one_transaction(durable):  # one commit per event
            reply = handle(event, memory)
            if reply:  # texts an earlier release stored with a former checkout's paths read right here too
                roots = (*roots, *_former_roots(memory))
            return event_name, portable.relative_value(reply, roots), None
    except BaseException as exc:  # noqa: BLE001 - everything ends as exit 0 and a log line
        return event_name, None, _failure(exc)
    finally:
        _EVENT.checkout = None


def emit(host: str, event_name: str, answer: dict[str, Any] | None, problem: str | None) -> int:
    """Print the answer (JSON only) or report the problem; the exit status is always 0."""
    if problem:
        report(host, event_name, problem)
    elif answer:
        sys.stdout.write(json.dumps(answer, ensure_ascii=False))
        sys.stdout.flush()
    return 0


def run(
    host: str,
    handle: Handler,
    *,
    skip: Skip | None = None,
    store_only: StoreOnlyRule = (),
    raw: bytes | None = None,
) -> int:
    """Answer one event in this process within the deadline; exit 0 whatever happens.

    skip(event) may name a reason to do nothing (a double installation); it is logged, nothing is printed.
    Events named in store_only (or for which store_only(event) is true) get a StoreOnly instead of a Memory.
    raw: the event, if stdin was read already.
    """
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        settings: Settings | None = Settings.from_env()
        deadline_ms = settings.hook_deadline_ms if settings else DEFAULT_DEADLINE_MS
        problem: str | None = None
    except Exception as exc:  # noqa: BLE001 - a bad setting must not break the host either
        settings, deadline_ms, problem = None, DEFAULT_DEADLINE_MS, f"configuration: {exc}; nothing was printed."
    outcome: list[tuple[str, dict[str, Any] | None, str | None]] = []

    def work() -> None:
        data = raw if raw is not None else read_stdin()
        if settings is None:
            try:
                name = str(parse_event(data).get("hook_event_name", "?"))[:60]
            except Exception:  # noqa: BLE001
                name = "?"
            outcome.append((name, None, problem))
            return
        outcome.append(answer_event(handle, data, settings, skip=skip, store_only=store_only))

    worker = threading.Thread(target=work, name="vlk-hook", daemon=True)
    worker.start()
    worker.join(deadline_ms / 1000)
    if worker.is_alive():
        report(host, "?", f"gave up after the {deadline_ms} ms deadline (VLK_HOOK_DEADLINE_MS); nothing "
               "was printed. A write in flight is rolled back by the database.")
        sys.stderr.flush()
        os._exit(0)  # the worker may be waiting on a lock: do not wait for it
    return emit(host, *outcome[0])
