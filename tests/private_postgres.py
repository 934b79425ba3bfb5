"""A private PostgreSQL instance for tests that restart or stop the server (never the shared one at 5432).

initdb refuses to run as root, so as root the cluster belongs to the `postgres` user (the server
binaries drop to it through a preexec setuid); as anyone else it belongs to the caller. The data
directory and the socket live in a fresh directory under /tmp that this user can traverse, and the
server listens on a free loopback port.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from fault_harness import fail_or_skip
from http_harness import free_port


def _bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(p.split("/")[4]))
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("pg_ctl")
    return Path(on_path).parent if on_path else None


@dataclass
class PrivatePostgres:
    bin: Path
    data: Path
    port: int
    log: Path
    demote: Callable[[], None] | None

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def pg_ctl(self, *args: str, timeout: float = 60) -> None:
        done = subprocess.run([str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w", *args],
                              preexec_fn=self.demote, capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, (args, done.stdout, done.stderr, self.log.read_text()[-2000:])

    def start(self) -> None:
        options = f"-p {self.port} -k {self.data.parent} -c listen_addresses=127.0.0.1"
        self.pg_ctl("start", "-o", options)

    def stop(self, mode: str = "fast") -> None:
        self.pg_ctl("stop", "-m", mode)

    def restart(self, mode: str = "fast") -> None:
        self.pg_ctl("restart", "-m", mode)


@contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    """initdb + pg_ctl start on a free port; stopped and deleted afterwards."""
    bin_dir = _bin_dir()
    if bin_dir is None or not (bin_dir / "initdb").exists():
        fail_or_skip("PostgreSQL server binaries (initdb, pg_ctl) are not installed (apt-get install postgresql)")
        raise AssertionError("unreachable")
    demote = None
    owner = None
    if os.geteuid() == 0:
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            fail_or_skip("running as root, and there is no `postgres` user to own a private cluster")
            raise AssertionError("unreachable") from None
        uid, gid = owner.pw_uid, owner.pw_gid

        def demote() -> None:
            os.setgid(gid)
            os.setuid(uid)

    root = Path(tempfile.mkdtemp(prefix="vlk-private-pg-", dir="/tmp"))
    os.chmod(root, 0o755)
    data = root / "data"
    log = root / "server.log"
    if owner is not None:
        os.chown(root, owner.pw_uid, owner.pw_gid)
    server = PrivatePostgres(bin_dir, data, free_port(), log, demote)
    try:
        done = subprocess.run([str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8",
                               "--no-instructions"], preexec_fn=demote, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        server.start()
        yield server
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run([str(bin_dir / "pg_ctl"), "-D", str(data), "stop", "-m", "immediate", "-w"],
                           preexec_fn=demote, capture_output=True, timeout=60)
        time.sleep(0.1)
        shutil.rmtree(root, ignore_errors=True)
