"""`vlk-memact doctor`: check the configuration, the database and the host integrations; say how to fix each.

It never opens a Memory (a damaged or unreachable database is exactly what it must look at), never
writes to the database and never repairs anything: every failed check names the fix for a person to
apply. One line per check; exit code 0 only when every check passed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, fields
from typing import TextIO

from ..config import Settings, mask_password
from ..core.checks import Check, failed, passed
from ..core.errors import VlkError
from ..repository import identify

CONFIG = "configuration"


def configuration_checks(settings: Settings | None, url: str | None, project: str | None,
                         error: VlkError | None) -> list[Check]:
    """The settings in effect: DATABASE_URL (masked), the project, the limits."""
    if settings is None:
        return [failed(CONFIG, "settings", str(error), "fix that environment variable (see README, Configuration)")]
    checks = []
    source = "--database-url" if url is not None and url != settings.database_url else (
        "DATABASE_URL" if settings.database_url is not None else "default")
    effective = url if url is not None else settings.database_url
    if effective is None:
        from ..store.sqlite import default_path

        checks.append(passed(CONFIG, "DATABASE_URL", f"not set: the SQLite file {default_path()} (user data directory)"))
    elif effective.startswith(("postgresql://", "postgres://")):
        checks.append(passed(CONFIG, "DATABASE_URL", f"PostgreSQL {mask_password(effective)} (from {source})"))
    elif effective.startswith("sqlite:"):
        checks.append(passed(CONFIG, "DATABASE_URL", f"SQLite {effective} (from {source})"))
    else:
        checks.append(failed(CONFIG, "DATABASE_URL", f"{mask_password(effective)} has an unsupported scheme",
                             "use sqlite:PATH, sqlite:///ABS/PATH, sqlite::memory: or postgresql://USER@HOST/DB"))
    if project:
        where = f"{project} (from --project)"
    elif settings.project:
        where = f"{settings.project} (from VLK_PROJECT)"
    else:
        identity = identify()
        where = f"{identity.key} ({identity.why})"
        if identity.path_key:
            where += (f"; memories stored under its path key {identity.path_key} by an earlier release are merged "
                      "into it when a memory first opens this checkout")
        elif identity.key == "default":
            where += "; set VLK_PROJECT to share lessons by project"
    checks.append(passed(CONFIG, "project", where))
    defaults = Settings()
    changed = [f"VLK_{f.name.upper()}={getattr(settings, f.name)}" for f in fields(Settings)
               if f.name not in ("database_url", "project", "auth_tokens")
               and getattr(settings, f.name) != getattr(defaults, f.name)]
    limits = (f"loop threshold {settings.loop_threshold}, raw_log {settings.max_raw_log_chars} chars, fields "
              f"{settings.max_field_chars}, lessons {settings.max_lesson_chars}, listings {settings.max_list_limit} "
              f"rows, context {settings.context_max_tokens} tokens, busy timeout {settings.busy_timeout_ms} ms, "
              f"lock wait {settings.lock_wait_ms} ms, retention {settings.retention_days} days / "
              f"{settings.retention_past_per_session} PAST slots")
    checks.append(passed(CONFIG, "limits", limits + (f" (changed: {', '.join(changed)})" if changed else " (defaults)")))
    if not settings.redact_secrets:
        checks.append(failed(CONFIG, "secret redaction", "off (VLK_REDACT_SECRETS=0): secrets in logs are stored",
                             "unset VLK_REDACT_SECRETS unless nobody else can read this database"))
    return checks


def database_checks(url: str | None, settings: Settings) -> list[Check]:
    """The database checks of the backend the URL names (store/health.py)."""
    from ..store import health

    if url is not None and url.startswith(("postgresql://", "postgres://")):
        return health.postgres_checks(url)
    if url is not None and not url.startswith("sqlite:"):
        return []  # reported by the configuration checks
    from ..store.sqlite import sqlite_target

    try:
        target = sqlite_target(url, create_dirs=False)
    except VlkError as exc:
        return [failed("database", "database file", str(exc), "fix DATABASE_URL")]
    return health.sqlite_checks(target, busy_timeout_ms=min(settings.busy_timeout_ms, 2000),
                                default_location=url is None)


HostChecks = Callable[[], list[Check]]


def run_checks(url: str | None, project: str | None, host_checks: HostChecks | None = None) -> list[Check]:
    try:
        settings: Settings | None = Settings.from_env()
        error = None
    except VlkError as exc:
        settings, error = None, exc
    checks = configuration_checks(settings, url, project, error)
    if settings is not None:
        checks += database_checks(url if url is not None else settings.database_url, settings)
    elif url is not None:  # a bad VLK_* setting does not stop the database checks of an explicit URL
        checks += database_checks(url, Settings())
    if host_checks is not None:
        checks += host_checks()
    return checks


def render(checks: Sequence[Check]) -> str:
    """One line per check: `ok`/`FAIL`, the group and name, what was found, and the fix of a failure."""
    lines = []
    for check in checks:
        mark = "ok  " if check.ok else "FAIL"
        line = f"{mark} {check.group}: {check.name}: {check.detail}"
        if check.fix:
            line += f" -> fix: {check.fix}"
        lines.append(line)
    bad = sum(not c.ok for c in checks)
    lines.append(f"{len(checks)} checks, {bad} failed." if bad else f"{len(checks)} checks, all passed.")
    return "\n".join(lines)


def run_doctor(url: str | None, project: str | None, as_json: bool, out: TextIO,
               host_checks: HostChecks | None = None) -> int:
    """Print the checks (text or JSON); 0 when all passed, 1 otherwise."""
    checks = run_checks(url, project, host_checks)
    ok = all(c.ok for c in checks)
    if as_json:
        json.dump({"ok": ok, "checks": [asdict(c) for c in checks]}, out, indent=2, ensure_ascii=False)
        out.write("\n")
    else:
        out.write(render(checks) + "\n")
    return 0 if ok else 1
