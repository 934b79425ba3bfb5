"""`vlk-memact ui`: bind, print the URL actually bound (with its token), serve until interrupted.

The socket is bound before the app is built, so port 0 picks a free port and the Host check and the
printed URL name the real one. The URL goes to stdout alone on its line (a script or test reads it);
logs go to stderr and never carry the token (uvicorn's access log, which would, is off).
"""

from __future__ import annotations

import logging
import socket
import sys
import threading
import time
import webbrowser
from typing import TextIO

from ..core.errors import ConfigError
from ..engine import Memory
from ..server.transports import is_loopback
from .app import build_app, describe_database

log = logging.getLogger(__name__)

SHUTDOWN_SECONDS = 2  # open event streams are closed after this on Ctrl-C


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (port 0: any free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}; choose another --port (0: any free one)") from None
    return sock


def serve_ui(memory: Memory, *, host: str = "127.0.0.1", port: int = 0, allow_write: bool = False,
             allow_remote: bool = False, extra_hosts: tuple[str, ...] = (), open_browser: bool = False,
             out: TextIO | None = None) -> None:
    """Serve the viewer until interrupted."""
    import uvicorn

    if not is_loopback(host) and not allow_remote:
        raise ConfigError(
            f"refusing to serve the viewer on {host}: it binds loopback only unless you pass --allow-remote "
            "(the token is still required, and the traffic is plain HTTP: put TLS in front of it)"
        )
    sock = bind(host, port)
    bound = sock.getsockname()[1]
    viewer = build_app(memory, host=host, port=bound, allow_write=allow_write, extra_hosts=extra_hosts)
    print(viewer.url, file=out or sys.stdout, flush=True)
    log.info("vlk-memact viewer listening on %s:%d (%s; database: %s); open the URL printed on stdout",
             host, bound, "writes allowed: revoke" if allow_write else "read-only", describe_database(memory.database_url))
    config = uvicorn.Config(viewer.app, log_config=None, access_log=False, lifespan="off",
                            log_level=memory.settings.logging_level(server=True).lower(), timeout_graceful_shutdown=SHUTDOWN_SECONDS)
    server = uvicorn.Server(config)
    if open_browser:
        threading.Thread(target=_open_when_started, args=(server, viewer.url), daemon=True).start()
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()


def _open_when_started(server: object, url: str) -> None:
    for _ in range(100):
        if getattr(server, "started", False):
            webbrowser.open(url)
            return
        time.sleep(0.05)
