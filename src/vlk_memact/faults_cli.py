"""The `doctor` and `backup` subcommands: they work on the database directly, never through Memory."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .config import Settings
from .errors import InvalidInput


def run(args: argparse.Namespace, settings: Settings) -> int:
    url = args.database_url if args.database_url is not None else settings.database_url
    if args.command == "doctor":
        from .doctor import run_doctor
        from .hosts_check import host_checks

        return run_doctor(args.database_url, args.project, args.json, sys.stdout, host_checks)
    return _backup(url, Path(args.file), settings)


def _backup(url: str | None, destination: Path, settings: Settings) -> int:
    if url is not None and url.startswith(("postgresql://", "postgres://")):
        raise InvalidInput(
            "backup copies a SQLite database; for PostgreSQL use `vlk-memact export -o FILE` (lossless, loaded "
            "back with `vlk-memact import FILE`) or pg_dump."
        )
    from .store.sqlite import sqlite_target
    from .store.sqlite_backup import backup_sqlite

    report = backup_sqlite(sqlite_target(url, create_dirs=False), destination, settings.busy_timeout_ms)
    print(f"Backed up {report.source} to {report.destination}: {report.slots} slots, {report.pages} pages, "
          f"{report.size_bytes} bytes, integrity_check {report.integrity}, in {report.seconds:.2f} s.")
    return 0
