"""The `doctor` and `backup` subcommands: they work on the database directly, never through Memory."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from ..config import Settings
from ..core.errors import InvalidInput, VlkError


def doctor(args: argparse.Namespace) -> int:
    """Every check, one line each; 0 only when all passed (a bad setting is a failed check, not an error)."""
    from .doctor import run_doctor
    from .hosts_check import host_checks

    logging.basicConfig(stream=sys.stderr, level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return run_doctor(args.database_url, args.project, args.json, sys.stdout, host_checks)
    except VlkError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1


def backup(args: argparse.Namespace, settings: Settings) -> int:
    """A verified copy of the SQLite database; PostgreSQL is pointed at `export`."""
    url = args.database_url if args.database_url is not None else settings.database_url
    if url is not None and url.startswith(("postgresql://", "postgres://")):
        raise InvalidInput(
            "backup copies a SQLite database; for PostgreSQL use `vlk-memact export -o FILE` (lossless, loaded "
            "back with `vlk-memact import FILE`) or pg_dump."
        )
    from ..store.sqlite import sqlite_target
    from ..store.sqlite_backup import backup_sqlite

    report = backup_sqlite(sqlite_target(url, create_dirs=False), Path(args.file), settings.busy_timeout_ms)
    print(f"Backed up {report.source} to {report.destination}: {report.slots} slots, {report.pages} pages, "
          f"{report.size_bytes} bytes, integrity_check {report.integrity}, in {report.seconds:.2f} s.")
    return 0
