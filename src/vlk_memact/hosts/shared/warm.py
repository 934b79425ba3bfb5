"""A warm hook server: one long-lived process per user and installation answers the hooks, so that a hook
process costs the interpreter's start-up and one round trip on a Unix socket instead of importing the engine.

Why: a hook runs on every tool call. A fresh Python process importing the store, the engine, the
fingerprint and redaction tables spends ~100 ms of CPU before doing ~5 ms of work (bench/hooks.py).
How it stays harmless:
- the first hook that finds no server answers in its own process as before and starts one in the
  background; any failure to reach the server (none yet, crashed, stale socket) means the same;
- the server (warm_server.py, started as its own process) answers with exactly the code path of the
  in-process hook (runner.answer_event, handle()),
  with the settings of the hook's own environment, forwarded with each event;
- the socket lives in a private directory (0700) of the user's runtime or temporary directory, named
  after the installation (interpreter, package path, HOME), so another environment or HOME gets its own
  server; one server per name (a lock file), which exits after VLK_HOOK_SERVER_IDLE_SECONDS without a
  request, and within a second of its code changing (an upgrade, an edited checkout): it watches the
  modification times of the package's modules, so that no hook has to;
- the hook keeps its deadline: no answer in time means exit 0 and nothing printed;
- VLK_HOOK_SERVER=0 turns it off.
Every hook process starts here (scripts/vlk-memact calls hook() before importing anything else of the
package; `python -m vlk_memact hook` comes through commands.hook_main), so its client half imports only
what the interpreter has already loaded or builds in (`_socket`, `marshal`: socket.py, json, zlib and
hashlib would cost more than the round trip), and it reads its switches from the environment itself
(config.py costs a dataclass and pathlib); the server validates them all. marshal is safe here because
only this user can reach the socket, and both ends run the same interpreter (it is part of the name).
"""

import _socket
import marshal
import os
import sys

TYPE_CHECKING = False  # no typing, no __future__ at start-up (see above): annotations naming Any are quoted
if TYPE_CHECKING:
    from typing import Any

PROTOCOL = 2  # 2: the socket's name no longer carries the code's modification time
MAX_EVENT_BYTES = 64 * 1024 * 1024
CONNECT_TIMEOUT = 0.2
MAX_REPLY_BYTES = 4 * 1024 * 1024
_PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # src/vlk_memact


def _env_ms(name: str, default: int) -> int:
    try:
        value = int(os.environ.get(name, "").strip() or default)
    except ValueError:
        return default
    return value if value >= 1 else default


def enabled() -> bool:
    """On unless VLK_HOOK_SERVER=0; POSIX only (the server locks its socket with fcntl)."""
    return os.name == "posix" and os.environ.get("VLK_HOOK_SERVER", "1").strip().lower() not in (
        "0", "false", "no", "off")


def _digest(text: str) -> str:
    """64-bit FNV-1a of the text: a stable short name without loading zlib or hashlib."""
    value = 0xCBF29CE484222325
    for byte in text.encode():
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{value:016x}"


def socket_path() -> str:
    """Where this installation's server listens, in a directory only this user can enter."""
    root = os.environ.get("XDG_RUNTIME_DIR") or os.environ.get("TMPDIR") or "/tmp"  # not tempfile: it costs ms
    folder = os.path.join(root, f"vlk-memact-{os.getuid()}")
    try:
        info = os.stat(folder)
    except FileNotFoundError:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        info = os.stat(folder)
    if info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise PermissionError(f"{folder} is not private to this user")
    # sys.prefix, not sys.executable: `python` and `python3` of one environment are one installation (a
    # script's #! line may name either), while two environments never share a server.
    identity = "\x1f".join((sys.prefix, _PACKAGE, os.environ.get("HOME", ""),
                            os.environ.get("XDG_DATA_HOME", ""), str(PROTOCOL)))
    return os.path.join(folder, f"hooks-{_digest(identity)}.sock")


def _receive(conn: _socket.socket, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise ValueError("message too large")


_event: bytes | None = None  # read by hook(); the in-process answer takes it from read_event()


def read_event() -> bytes:
    """The hook's event: stdin, read once (at most one byte more than an event may hold, so that it can be
    refused)."""
    global _event
    if _event is None:
        if os.isatty(0):  # a person typed it: say what it waits for (a host pipes the event in)
            print("vlk-memact hook: reading one hook event (JSON) from stdin, Ctrl-D to end it; hosts run this "
                  "themselves (`vlk-memact hook --help`)", file=sys.stderr, flush=True)
        _event = sys.stdin.buffer.read(MAX_EVENT_BYTES + 1)
    return _event


def hook(argv: list[str]) -> int | None:
    """`vlk-memact hook HOST [--from-plugin]` answered by the warm server, with nothing more of the package
    imported (scripts/vlk-memact calls it first): the exit status, or None when this process must answer
    (no server, VLK_HOOK_SERVER=0, a command line or host the server does not take: commands.hook_main)."""
    if not argv or argv[0].startswith("-") or not enabled() or [a for a in argv[1:] if a != "--from-plugin"]:
        return None  # `hook --help` and the like included: entry.main prints the usage, nothing is started
    try:
        reply = ask(argv[0], argv[1:], read_event())
    except OSError:
        return None  # no private socket directory
    return None if reply is None else emit(argv[0], reply)


def ask(host: str, flags: list[str], raw: bytes) -> "dict[str, Any] | None":
    """The server's reply to this event, or None when no server could be reached or it declined the request
    (answer in process then).

    Once the event is sent, the server owns it: a late or broken reply is reported, never answered twice.
    """
    path = socket_path()
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    conn.settimeout(CONNECT_TIMEOUT)
    try:
        conn.connect(path)
    except OSError:
        conn.close()
        spawn(path)
        return None
    deadline = _env_ms("VLK_HOOK_DEADLINE_MS", 2500) / 1000
    request = {"v": PROTOCOL, "host": host, "flags": flags, "env": dict(os.environ), "event": raw}
    try:
        conn.settimeout(deadline)
        conn.sendall(marshal.dumps(request))
        conn.shutdown(_socket.SHUT_WR)
        reply = marshal.loads(_receive(conn, MAX_REPLY_BYTES))
    except (OSError, ValueError, EOFError, TypeError) as exc:
        timed_out = isinstance(exc, TimeoutError)
        what = (f"gave up after the {int(deadline * 1000)} ms deadline (VLK_HOOK_DEADLINE_MS); the warm server "
                "still records the event when it can") if timed_out \
            else f"the warm hook server failed ({type(exc).__name__}: {exc})"
        return {"problem": f"{what}; nothing was printed.", "event_name": "?"}
    finally:
        conn.close()
    if not isinstance(reply, dict):
        return {"problem": "the warm hook server sent no reply", "event_name": "?"}
    return None if reply.get("declined") else reply  # a host or protocol it does not take: answer here


def emit(host: str, reply: "dict[str, Any]") -> int:
    """Print the server's answer (JSON only), or the line saying what went wrong; the exit status is 0."""
    if reply.get("stdout"):  # the answer, as JSON text the server wrote
        sys.stdout.write(reply["stdout"])
        sys.stdout.flush()
    if reply.get("line"):  # the server has already written it to the hook log
        print(reply["line"], file=sys.stderr, flush=True)
    elif reply.get("problem"):
        from .hook_log import report

        report(host, str(reply.get("event_name", "?")), str(reply["problem"]))
    return 0


def leave(status: int) -> None:
    """End the hook process now that its answer is out: flush stdout and stderr, then os._exit, skipping the
    interpreter's teardown (module clean-up, garbage collection: ~1.5 ms, bench/results/profile.md), which a
    host waits for on every tool call. Nothing of the warm client needs it: no thread, no open file, no atexit.
    """
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # a closed or broken pipe: the host stopped reading, nothing more to say
    os._exit(status)


SPAWN_EVERY_SECONDS = 10.0  # a server that cannot start is not retried on every tool call


def spawn(path: str) -> None:
    """Start a server for this socket in the background; it exits at once if another one holds the lock."""
    import time

    marker = path + ".spawned"
    try:
        if time.time() - os.stat(marker).st_mtime < SPAWN_EVERY_SECONDS:
            return  # one was started moments ago (it may still be starting, or it cannot start)
    except OSError:
        pass
    try:
        with open(marker, "w"):
            pass
    except OSError:
        return
    import subprocess

    try:
        subprocess.Popen(
            [sys.executable, "-m", "vlk_memact.hosts.shared.warm_server", path],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, close_fds=True,
        )
    except OSError:
        pass  # no server: every hook answers in its own process, as with VLK_HOOK_SERVER=0
