"""Settings, read from the environment once; the only module that touches os.environ."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

from .core.errors import ConfigError

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
GUARD_MODES = ("deny", "warn", "off")
# The settings that take one of a few words: the words, and how a value is normalised before the check.
_CHOICES = {"log_level": (LOG_LEVELS, str.upper), "hook_guard": (GUARD_MODES, str.lower)}


def mask_password(url: str) -> str:
    """A DATABASE_URL with its password replaced by ***, in the userinfo and in any password= parameter
    (sslpassword= included)."""
    masked = re.sub(r"^(\w+://[^:/@]*):[^@/]*@", r"\1:***@", url)
    return re.sub(r"(?i)([?&]\w*password=)[^&]*", r"\1***", masked)


@dataclass(frozen=True, slots=True)
class Settings:
    """Every tunable of vlk-memact, with its environment variable and default."""

    database_url: str | None = None  # DATABASE_URL; None = a file in the user's data directory
    project: str | None = None  # VLK_PROJECT; None = the git repository of the working directory, else "default"
    loop_threshold: int = 3  # VLK_LOOP_THRESHOLD: repeats that make a loop (spec §6)
    consolidate_above: int = 5  # VLK_CONSOLIDATE_ABOVE: merge when active constraints exceed this
    consolidated_max_chars: int = 2000  # VLK_CONSOLIDATED_MAX_CHARS: cap of a merged lesson body
    max_raw_log_chars: int = 65536  # VLK_MAX_RAW_LOG_CHARS: longer logs keep head and tail
    max_field_chars: int = 8192  # VLK_MAX_FIELD_CHARS: file_context, tool_payload
    max_lesson_chars: int = 2000  # VLK_MAX_LESSON_CHARS: learning and raw_log_excerpt
    max_list_limit: int = 500  # VLK_MAX_LIST_LIMIT: cap of get_history / search_memory limits
    max_listing_chars: int = 1_000_000  # VLK_MAX_LISTING_CHARS: text a listing returns at most (newest first)
    context_max_tokens: int = 4000  # VLK_CONTEXT_MAX_TOKENS: budget of fetch_context when max_tokens is absent
    retention_days: int = 30  # VLK_RETENTION_DAYS: PAST slots older than this are pruned
    retention_past_per_session: int = 500  # VLK_RETENTION_PAST_PER_SESSION: newest PAST slots kept per session
    prune_every: int = 100  # VLK_PRUNE_EVERY: a session is pruned on every N-th record
    busy_timeout_ms: int = 5000  # VLK_BUSY_TIMEOUT_MS: SQLite wait for a lock before retrying
    lock_wait_ms: int = 30000  # VLK_LOCK_WAIT_MS: longest wait for another writer's lock, then a retryable error
    log_level: str | None = None  # VLK_LOG_LEVEL; None: INFO for the servers, WARNING for the other commands
    redact_secrets: bool = True  # VLK_REDACT_SECRETS: 0 turns secret redaction off (explicitly)
    auth_tokens: str | None = None  # VLK_AUTH_TOKENS: HTTP bearer tokens, "TOKEN=TENANT,TOKEN=TENANT"
    auth_tokens_file: str | None = None  # VLK_AUTH_TOKENS_FILE: a file of tokens (JSON object or TOKEN TENANT lines)
    hook_guard: str = "deny"  # VLK_HOOK_GUARD: deny | warn | off, what a hook does with an unchanged looping call
    hook_context_tokens: int = 800  # VLK_HOOK_CONTEXT_TOKENS: budget of the context a hook injects at session start
    hook_deadline_ms: int = 2500  # VLK_HOOK_DEADLINE_MS: a hook gives up (silently) after this long
    hook_dedupe_seconds: int = 120  # VLK_HOOK_DEDUPE_SECONDS: a model's record of an error a hook just captured is
    #                                 the same evidence within this window
    hook_server: bool = True  # VLK_HOOK_SERVER: 0 answers every hook in its own process (no warm server)
    hook_server_idle_seconds: int = 600  # VLK_HOOK_SERVER_IDLE_SECONDS: the warm server exits after this idle time
    impact: bool = True  # VLK_IMPACT: 0 records no interventions (what was said to the agent; `vlk-memact impact`)
    holdout: float = 0.0  # VLK_HOLDOUT: the share (0 to 0.5) of just-in-time fix recalls the hooks withhold, as
    #                       an experiment `vlk-memact impact` reports on; 0 (off) by default
    host_session_id: str | None = None  # VLK_HOST_SESSION_ID, else CLAUDE_CODE_SESSION_ID: the stdio server's
    #                                     default session (the host's, so its hooks and the model share one)

    def logging_level(self, server: bool) -> str:
        """VLK_LOG_LEVEL when set; else INFO for a server (its start-up lines say where it serves from) and
        WARNING for a one-shot command (a user reading its output needs no "store ready" line)."""
        return self.log_level or ("INFO" if server else "WARNING")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Build settings from environment variables; unknown VLK_* names are ignored."""
        env = os.environ if environ is None else environ
        values: dict[str, object] = {}
        url = env.get("DATABASE_URL", "").strip()
        if url:
            values["database_url"] = url
        project = env.get("VLK_PROJECT", "").strip()
        if project:
            values["project"] = project
        host_session = (env.get("VLK_HOST_SESSION_ID", "") or env.get("CLAUDE_CODE_SESSION_ID", "")).strip()
        if host_session:
            values["host_session_id"] = host_session
        for f in fields(cls):
            if f.name in ("database_url", "project", "host_session_id"):
                continue
            if f.name.startswith("auth_"):
                text = env.get("VLK_" + f.name.upper(), "").strip()
                if text:
                    values[f.name] = text
                continue
            name = "VLK_" + f.name.upper()
            raw = env.get(name)
            if raw is None or not raw.strip():
                continue
            if f.type == "bool":
                flag = raw.strip().lower()
                if flag not in ("0", "1", "true", "false", "yes", "no", "on", "off"):
                    raise ConfigError(f"{name} must be 1 or 0, got {raw!r}")
                values[f.name] = flag in ("1", "true", "yes", "on")
            elif f.type == "float":
                try:
                    share = float(raw.strip())
                except ValueError:
                    raise ConfigError(f"{name} must be a number between 0 and 0.5, got {raw!r}") from None
                if not 0 <= share <= 0.5:
                    raise ConfigError(f"{name} must be between 0 and 0.5, got {raw!r}")
                values[f.name] = share
            elif f.type == "int":
                try:
                    number = int(raw.strip())
                except ValueError:
                    raise ConfigError(f"{name} must be a whole number, got {raw!r}") from None
                if number < 1:
                    raise ConfigError(f"{name} must be at least 1, got {number}")
                values[f.name] = number
            else:
                choices, normal = _CHOICES[f.name]
                choice = normal(raw.strip())
                if choice not in choices:
                    raise ConfigError(f"{name} must be one of {', '.join(choices)}, got {raw!r}")
                values[f.name] = choice
        return cls(**values)  # type: ignore[arg-type]


def settings_key(environ: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The variables Settings.from_env reads (DATABASE_URL, CLAUDE_CODE_SESSION_ID and every VLK_*): equal keys give
    equal settings, so that the warm hook server builds them once per environment, not once per event."""
    return tuple(sorted((k, v) for k, v in environ.items()
                        if k.startswith("VLK_") or k in ("DATABASE_URL", "CLAUDE_CODE_SESSION_ID")))


def data_dir() -> Path:
    """vlk-memact's folder in the user's data directory (XDG_DATA_HOME honoured): the default database, the
    hook log, the installers' backups."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("vlk-memact", appauthor=False))


def detect_project(start: Path | None = None) -> str:
    """The project key of the folder `start` (repository.py): its repository's normalised remote, else the
    path of its main checkout; "default" outside any repository."""
    from .repository import identify

    return identify(start).key
