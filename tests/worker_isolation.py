"""What keeps a test independent of the worker that runs it and of the tests before it (pytest-xdist runs the
suite in parallel processes): a user of its own, a PostgreSQL database per worker, loopback ports per worker.

- `user_folders(base)`: HOME, the XDG folders and a private runtime directory under `base`, for the
  autouse fixtures of tests/conftest.py. Anything that falls back to the user's folders (the default
  database, the hook log, the warm hook server's socket, a host's settings) then lands in the test's own.
- `make_worker_database(url)`: a database of this process's own on the server `url` names (CREATE
  DATABASE at the start of the run, DROP at its end); the tests' schemas are made inside it. A database
  that a killed run left behind is dropped by the next run on this host (its comment names the process).
- `worker_index()`: 0 for gw0 (or a run without xdist), 1 for gw1, ...: `free_port` in http_harness.py
  picks ports from the worker's own range.
"""

from __future__ import annotations

import os
import re
import socket
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

USER_FOLDERS = ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR")
_PREFIX = "vlk_test_"
_COMMENT = re.compile(r"^vlk-memact test run: host=(?P<host>\S+) pid=(?P<pid>\d+)$")


def user_folders(base: Path) -> dict[str, str]:
    """The environment of an empty user living in `base` (folders created; the runtime one private, as a
    login session's is: the warm hook server refuses a socket folder that others can enter)."""
    home = base / "home"
    folders = {
        "HOME": home,
        "XDG_CONFIG_HOME": home / ".config",
        "XDG_DATA_HOME": home / ".local" / "share",
        "XDG_STATE_HOME": home / ".local" / "state",
        "XDG_CACHE_HOME": home / ".cache",
        "XDG_RUNTIME_DIR": base / "run",
    }
    for path in folders.values():
        path.mkdir(parents=True, exist_ok=True)
    folders["XDG_RUNTIME_DIR"].chmod(0o700)
    return {name: str(path) for name, path in folders.items()}


def worker_index() -> int:
    """This xdist worker's number (gw3 -> 3); 0 without xdist."""
    match = re.fullmatch(r"gw(\d+)", os.environ.get("PYTEST_XDIST_WORKER", ""))
    return int(match.group(1)) if match else 0


def _with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + name))


def make_worker_database(server_url: str) -> str | None:
    """The URL of a new database for this process, or None when the server cannot be reached or refuses
    (require_postgres then reports the server itself, as before)."""
    try:
        import psycopg
    except ImportError:
        return None
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    name = f"{_PREFIX}{worker}_{uuid.uuid4().hex[:10]}"
    try:
        with psycopg.connect(server_url, autocommit=True, connect_timeout=3) as conn:
            _drop_left_behind(conn)
            conn.execute(f'CREATE DATABASE "{name}"')
            comment = f"vlk-memact test run: host={socket.gethostname()} pid={os.getpid()}"
            conn.execute(f"COMMENT ON DATABASE \"{name}\" IS '{comment}'")
    except psycopg.Error:
        return None
    return _with_database(server_url, name)


def drop_worker_database(server_url: str, worker_url: str) -> None:
    """Drop this process's database (FORCE: a server process a test left running must not keep it)."""
    import psycopg

    name = urlsplit(worker_url).path.lstrip("/")
    if not name.startswith(_PREFIX):
        return
    try:
        with psycopg.connect(server_url, autocommit=True, connect_timeout=3) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    except psycopg.Error:
        pass  # the next run on this host drops it (_drop_left_behind)


def _drop_left_behind(conn: object) -> None:
    """Drop the databases of earlier runs on this host whose process is gone (killed before its end)."""
    rows = conn.execute(  # type: ignore[attr-defined]
        "SELECT d.datname, shobj_description(d.oid, 'pg_database') FROM pg_database d WHERE d.datname LIKE %s",
        (_PREFIX + "%",)).fetchall()
    for name, comment in rows:
        match = _COMMENT.match(comment or "")
        if match and match["host"] == socket.gethostname() and not _alive(int(match["pid"])):
            try:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[attr-defined]
            except Exception:  # noqa: BLE001 - another run dropping it at the same moment: theirs to finish
                continue


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
