"""The hook log: one line per problem, on stderr and in `hooks.log` in the data directory.

Its own module so that the warm client (warm.py), the in-process runner (runner.py) and the `hook` command
(commands.py) can all report without importing one another.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

LOG_NAME = "hooks.log"
LOG_MAX_BYTES = 1_000_000  # then hooks.log becomes hooks.log.1


def log_path() -> Path:
    """hooks.log beside the default database, in the user's data directory."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("vlk-memact", appauthor=False)) / LOG_NAME


def report(host: str, event_name: str, message: str, *, to_stderr: bool = True) -> str:
    """One line on stderr and in the hook log (returned); a log that cannot be written is not a reason to fail."""
    line = f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} vlk-memact hook {host} {event_name}: {message}"
    line = " ".join(line.split())[:2000]
    if to_stderr:
        print(line, file=sys.stderr, flush=True)
    try:
        path = log_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and path.stat().st_size > LOG_MAX_BYTES:
            path.replace(path.with_name(LOG_NAME + ".1"))
        with open(path, "a", encoding="utf-8") as out:
            out.write(line + "\n")
    except OSError:
        pass
    return line
