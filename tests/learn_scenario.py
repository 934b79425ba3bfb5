"""The scenario every `test_learn_<host>_cli.py` plays with its host's real CLI, and what it checks.

Session one, without vlk-memact: the build fails (config.ok is missing), the agent writes config.ok, the build
passes: a failure and its fix. `vlk-memact learn --json` then reads the files the CLI left; a second learn
changes nothing. Session two, with the hooks installed and config.ok gone again: the build fails the same way,
and the hooks tell the model what fixed it in the earlier session.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

ERROR = "Error: config.ok is missing, run the setup first"
BUILD = f"test -f config.ok || {{ echo '{ERROR}' >&2; exit 1; }}; echo built"
SETUP = "echo ok > config.ok"
TOLD = "fixed in an earlier session by"


def learned(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The JSON report of `vlk-memact learn --json`, checked to have run."""
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def check_first_learn(report: dict[str, Any], calls: int) -> None:
    """One session learned, its calls, one failure and its fix, nothing unreadable."""
    assert report["sessions_learned"] == 1, report
    assert report["calls"] == calls, report
    assert (report["failures"], report["fixes"], report["skipped"]) == (1, 1, {}), report


def check_told(after: str) -> None:
    """What the model got right after the error came back: the error, and what fixed it in the first session."""
    assert ERROR in after and TOLD in after and "config.ok" in after, after


def check_install_note(result: subprocess.CompletedProcess[str], host: str) -> None:
    """The install's last line: the one past session of this project, and the command that learns it."""
    from vlk_memact.hosts.session_stores import LABELS

    assert result.returncode == 0, result.stderr
    said = result.stdout
    assert f"Found 1 past {LABELS[host]} session of this project" in said, said
    assert f"vlk-memact learn --host {host}" in said, said


def check_second_learn(report: dict[str, Any]) -> None:
    """A second learn over the same files learns nothing new."""
    assert (report["sessions_learned"], report["calls"], report["failures"], report["fixes"]) == (0, 0, 0, 0), report


def check_live_not_doubled(report: dict[str, Any]) -> None:
    """A learn after the session the hooks captured live stores none of its failures a second time."""
    assert (report["failures"], report["loops"], report["fixes"]) == (0, 0, 0), report
