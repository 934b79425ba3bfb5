"""The warm hook server's side (see warm.py for why it exists and how it stays harmless): one process per
socket answers each event with the in-process code path (runner.answer_event and the host's handle()).

The client half, warm.py, is the hook's hot path and never imports this module: it starts it as
`python -m vlk_memact.hosts.shared.warm_server PATH` (warm.spawn).
"""

from __future__ import annotations

import marshal
import os
import sys

from .warm import _PACKAGE, MAX_EVENT_BYTES, PROTOCOL, _env_ms, _receive

CODE_CHECK_SECONDS = 1.0  # how soon a server notices that its code changed
MAX_WORKERS = 8  # events answered at once; more wait in the listen backlog (a hook keeps its own deadline)


def _code_stamp() -> str:
    """The newest modification time of the package's modules: the server exits when it changes."""
    newest = 0.0
    for folder, _, files in os.walk(_PACKAGE):
        for name in files:
            if name.endswith(".py"):
                newest = max(newest, os.stat(os.path.join(folder, name)).st_mtime)
    return repr(newest)


def durable(used: list) -> None:
    """The fsync the event's commit skipped (runner.answer_event durable=False), right after the answer left;
    a failure is logged in the hook log, as any other."""
    for memory in used:
        try:
            memory.sync()
        except Exception as exc:  # noqa: BLE001 - logged; the next commit of the store syncs the log again
            from .hook_log import report

            report("?", "sync", f"could not make the event durable: {type(exc).__name__}: {exc}", to_stderr=False)


def serve(path: str) -> None:
    """Listen on path until idle or until the code changes; each connection is one event, answered by the
    in-process code path."""
    import contextlib
    import fcntl
    import functools
    import json
    import queue
    import socket
    import threading
    import time

    stamp = _code_stamp()  # before the imports below: an edit made while they load is seen

    from ...config import Settings, settings_key
    from ...engine import Memory
    from ...engine import impact_record
    from .. import commands
    from . import runner
    from .warm_pool import MemoryPool

    lock = open(path + ".lock", "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another server owns this socket
    own = Settings.from_env()
    if os.path.exists(path):
        os.unlink(path)  # a crashed server's socket: the lock says nobody listens on it
    old_umask = os.umask(0o077)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.umask(old_umask)
    listener.listen(64)
    listener.settimeout(min(CODE_CHECK_SECONDS, own.hook_server_idle_seconds))
    memories = MemoryPool(lambda key: Memory(settings=key[0], project=key[1], identity=key[2]))
    # Settings of a hook's environment, built once per environment (a ConfigError is not kept: raised each time).
    settings_of = functools.lru_cache(maxsize=64)(lambda key: Settings.from_env(dict(key)))
    guard = threading.Lock()
    # A client sends its event at once and waits at most its deadline: a connection silent for longer is
    # dropped, so that it cannot hold a worker.
    socket_seconds = _env_ms("VLK_HOOK_DEADLINE_MS", 2500) / 1000
    slots = threading.BoundedSemaphore(MAX_WORKERS)

    def answer(conn: socket.socket) -> None:
        used: list[Memory] = []  # to sync once the answer has left

        def opener(settings: Settings, cwd: str | None, _store_only: bool) -> object:
            lease = memories.lease(runner.hook_target(settings, cwd))
            used.append(lease.memory)
            return lease

        with conn:
            host = "?"
            said: list[object] = []
            conn.settimeout(socket_seconds)
            try:
                request = marshal.loads(_receive(conn, 2 * MAX_EVENT_BYTES))
                host = str(request.get("host"))
                if request.get("v") != PROTOCOL or host not in commands.HANDLERS:
                    with contextlib.suppress(OSError):  # the hook answers in its process (a usage line)
                        conn.sendall(marshal.dumps({"declined": True}))
                    return
                adapter = commands.host_module(host)
                settings = settings_of(settings_key(request["env"]))
                skip = commands.plugin_doubled if "--from-plugin" in request.get("flags", []) else None
                with impact_record.deferred() as said:  # written once the answer has left (issue 33)
                    # The event's commit is made durable after the answer (sync below): the host does not wait
                    # for the fsync (docs/guarantees.md).
                    name, reply, problem = runner.answer_event(
                        adapter.handle, request["event"], settings, skip=skip, opener=opener, durable=False)
            except OSError:
                return  # silent past the deadline, or gone: nobody waits for an answer
            except Exception as exc:  # noqa: BLE001 - a bad request is the client's problem, reported there
                name, reply, problem = "?", None, f"{type(exc).__name__}: {exc}; nothing was printed."
            line = runner.report(host, name, problem, to_stderr=False) if problem else None
            try:
                text = json.dumps(reply, ensure_ascii=False) if reply else ""
                conn.sendall(marshal.dumps({"event_name": name, "stdout": text, "line": line}))
            except OSError:
                said = []  # the hook gave up (its deadline): nothing was said
            conn.close()  # the client reads to the end of the stream: its wait ends here, not after the writes below
            impact_record.flush(said)  # what the host now shows the model
            durable(used)

    changed = threading.Event()
    checked = [time.monotonic()]

    def check_code() -> None:
        """At most once a second, and never before a reply: a hook waits on its own answer only."""
        now = time.monotonic()
        with guard:
            if now - checked[0] < CODE_CHECK_SECONDS:
                return
            checked[0] = now
        if _code_stamp() != stamp:
            changed.set()  # upgraded or edited: the next hook answers in its process and starts a new server

    def serve_one(conn: socket.socket) -> None:
        try:
            answer(conn)
            check_code()
        finally:
            slots.release()

    # MAX_WORKERS threads started once, each taking the next accepted connection: a thread started per event
    # costs a hook more than the queue's hand-over (issue 37).
    jobs: queue.SimpleQueue[socket.socket | None] = queue.SimpleQueue()

    def work() -> None:
        while (conn := jobs.get()) is not None:
            serve_one(conn)

    workers = [threading.Thread(target=work, name=f"vlk-hook-{n}", daemon=True) for n in range(MAX_WORKERS)]
    for worker in workers:
        worker.start()
    last_request = time.monotonic()
    try:
        while not changed.is_set():
            if not slots.acquire(timeout=CODE_CHECK_SECONDS):
                continue  # every worker busy: the next connection waits in the backlog
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                slots.release()
                if time.monotonic() - last_request >= own.hook_server_idle_seconds:
                    break
                check_code()
                continue
            last_request = time.monotonic()
            jobs.put(conn)
    finally:
        listener.close()
        if os.path.exists(path):
            os.unlink(path)
        lock.close()  # a new server may take over the name while the last answers finish here
        for _ in workers:
            jobs.put(None)
        for worker in workers:
            worker.join(_env_ms("VLK_HOOK_DEADLINE_MS", 2500) / 1000)
        memories.close()  # a request still running past the join closes its Memory when it ends


if __name__ == "__main__":
    serve(sys.argv[1])

