"""Settings, read from the environment once; the only module that touches os.environ."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields

from .errors import ConfigError

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


@dataclass(frozen=True, slots=True)
class Settings:
    """Every tunable of vlk-memact, with its environment variable and default."""

    database_url: str | None = None  # DATABASE_URL; None = a file in the user's data directory
    loop_threshold: int = 3  # VLK_LOOP_THRESHOLD: repeats that make a loop (spec §6)
    consolidate_above: int = 5  # VLK_CONSOLIDATE_ABOVE: merge when active constraints exceed this
    consolidated_max_chars: int = 2000  # VLK_CONSOLIDATED_MAX_CHARS: cap of a merged lesson body
    max_raw_log_chars: int = 65536  # VLK_MAX_RAW_LOG_CHARS: longer logs keep head and tail
    max_field_chars: int = 8192  # VLK_MAX_FIELD_CHARS: file_context, tool_payload
    max_lesson_chars: int = 2000  # VLK_MAX_LESSON_CHARS: learning and raw_log_excerpt
    max_list_limit: int = 500  # VLK_MAX_LIST_LIMIT: cap of get_history / search_memory limits
    busy_timeout_ms: int = 5000  # VLK_BUSY_TIMEOUT_MS: SQLite wait for a lock before retrying
    log_level: str = "INFO"  # VLK_LOG_LEVEL

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Build settings from environment variables; unknown VLK_* names are ignored."""
        env = os.environ if environ is None else environ
        values: dict[str, object] = {}
        url = env.get("DATABASE_URL", "").strip()
        if url:
            values["database_url"] = url
        for f in fields(cls):
            if f.name == "database_url":
                continue
            name = "VLK_" + f.name.upper()
            raw = env.get(name)
            if raw is None or not raw.strip():
                continue
            if f.type == "int":
                try:
                    number = int(raw.strip())
                except ValueError:
                    raise ConfigError(f"{name} must be a whole number, got {raw!r}") from None
                if number < 1:
                    raise ConfigError(f"{name} must be at least 1, got {number}")
                values[f.name] = number
            else:
                level = raw.strip().upper()
                if level not in LOG_LEVELS:
                    raise ConfigError(f"{name} must be one of {', '.join(LOG_LEVELS)}, got {raw!r}")
                values[f.name] = level
        return cls(**values)  # type: ignore[arg-type]
