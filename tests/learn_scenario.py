"""The scenario every `test_learn_<host>_cli.py` plays with its host's real CLI, and what it checks.

Session one, without vlk-memact: the build fails (config.ok is missing), the agent writes config.ok, the build
passes: a failure and its fix. `vlk-memact learn --json` then reads the files the CLI left; a second learn
changes nothing. Session two, with the hooks installed and config.ok gone again: the build fails the same way,
and the hooks tell the model what fixed it in the earlier session.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
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
    from vlk_memact.hosts.shared.session_stores import LABELS

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


def shared_tests(host: str) -> dict[str, Callable[[dict[str, Any]], None]]:
    """The checks every host's module makes on its `lived` fixture (which holds `again`, `later_text`, `install`
    and `after_live`), named for the host so that `pytest -k learn` and the name say which host they cover."""

    def second_learn(lived: dict[str, Any]) -> None:
        check_second_learn(learned(lived["again"]))

    def told(lived: dict[str, Any]) -> None:
        check_told(lived["later_text"])

    def install_note(lived: dict[str, Any]) -> None:
        check_install_note(lived["install"], host)

    def not_doubled(lived: dict[str, Any]) -> None:
        check_live_not_doubled(learned(lived["after_live"]))

    tests = {"a_second_learn_changes_nothing": second_learn,
             "a_later_session_is_told_the_fix_when_the_error_recurs": told,
             "install_says_how_many_past_sessions_it_found": install_note,
             "does_not_count_twice_what_the_live_hooks_captured": not_doubled}
    named = {}
    for what, test in tests.items():
        test.__name__ = f"test_learn_{host.replace('-', '_')}_{what}"
        named[test.__name__] = test
    return named
