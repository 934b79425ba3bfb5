"""Validation and cleaning of caller input, shared by the library API, the MCP tools and the CLI.

Every function either returns a clean value or raises InvalidInput naming the field and what to do.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from .errors import InvalidInput
from .model import ConstraintType, Scope

DEFAULT_SESSION = "default"
MAX_PROJECT_CHARS = 1024
MIN_CONTEXT_TOKENS = 200  # the smallest budget that holds the frame, a conflict and one truncated slot
MAX_CONTEXT_TOKENS = 1_000_000
MAX_SESSION_ID_CHARS = 256
MAX_IDS_PER_CALL = 1000
MAX_QUERY_CHARS = 1000
TRUNCATION_MARKER = "\n[... {omitted} characters truncated by vlk-memact ...]\n"

# Lone surrogates cannot be stored as UTF-8; NUL ends strings in many tools and terminals.
_UNSTORABLE = re.compile("[\ud800-\udfff\x00]")


def clean_text(value: str) -> str:
    """Replace characters that cannot be stored or shown faithfully with U+FFFD."""
    return _UNSTORABLE.sub("\ufffd", value)


def session_id(value: Any) -> str:
    """Missing, null, empty or blank means 'default' (fixes spec defect 24); otherwise trimmed."""
    if value is None:
        return DEFAULT_SESSION
    if not isinstance(value, str):
        raise InvalidInput(f"Field 'session_id' must be a string, got {_kind(value)}.")
    cleaned = clean_text(value).strip()
    if not cleaned:
        return DEFAULT_SESSION
    if len(cleaned) > MAX_SESSION_ID_CHARS:
        raise InvalidInput(
            f"Field 'session_id' is {len(cleaned)} characters; the limit is {MAX_SESSION_ID_CHARS}."
        )
    return cleaned


def required_text(name: str, value: Any, max_chars: int | None, hint: str = "") -> str:
    """A non-blank string, trimmed, at most max_chars characters (None: no limit)."""
    if value is None:
        raise InvalidInput(f"Field '{name}' is required.{_sep(hint)}")
    if not isinstance(value, str):
        raise InvalidInput(f"Field '{name}' must be a string, got {_kind(value)}.{_sep(hint)}")
    cleaned = clean_text(value).strip()
    if not cleaned:
        raise InvalidInput(f"Field '{name}' is required and cannot be empty.{_sep(hint)}")
    if max_chars is not None and len(cleaned) > max_chars:
        raise InvalidInput(
            f"Field '{name}' is {len(cleaned)} characters; the limit is {max_chars}. "
            "Shorten it to the essential sentence or excerpt."
        )
    return cleaned


def optional_text(name: str, value: Any, max_chars: int) -> str | None:
    """An optional string kept as given (not trimmed, as in the prototype), size-checked."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"Field '{name}' must be a string, got {_kind(value)}.")
    cleaned = clean_text(value)
    if len(cleaned) > max_chars:
        raise InvalidInput(f"Field '{name}' is {len(cleaned)} characters; the limit is {max_chars}.")
    return cleaned


def truncate_log(text: str, max_chars: int) -> tuple[str, bool]:
    """An over-long log keeps its head and tail around a visible marker."""
    if len(text) <= max_chars:
        return text, False
    # Errors sit at the end of most tool output and their cause near the start: keep both.
    head = max_chars * 2 // 5
    tail = max_chars - head
    omitted = len(text) - head - tail
    return text[:head] + TRUNCATION_MARKER.format(omitted=omitted) + text[-tail:], True


def tool_payload(value: Any, max_chars: int) -> str | None:
    """A string is kept as given; any other JSON value is stored as compact JSON (fixes defect 22)."""
    if value is None:
        return None
    if isinstance(value, str):
        return optional_text("tool_payload", value, max_chars)
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"Field 'tool_payload' must be a string or JSON value: {exc}.") from None
    return optional_text("tool_payload", text, max_chars)


def timeline_id(name: str, value: Any) -> int:
    """A positive integer id (bools are not ids)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"Field '{name}' must be a positive integer timeline id, got {_kind(value)}.")
    if value < 1:
        raise InvalidInput(
            f"Field '{name}' must be a positive integer timeline id, got {value}. "
            "Ids come from vlk_get_history or the [id:N] tags of vlk_fetch_context."
        )
    return value


def timeline_ids(name: str, values: Any) -> list[int]:
    """A non-empty list of positive ids, de-duplicated in order."""
    if values is None:
        raise InvalidInput(f"Field '{name}' is required: a list of PRESENT slot ids.")
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise InvalidInput(f"Field '{name}' must be a list of integers, got {_kind(values)}.")
    items = list(values)
    if not items:
        raise InvalidInput(f"Field '{name}' must contain at least one ID.")
    if len(items) > MAX_IDS_PER_CALL:
        raise InvalidInput(f"Field '{name}' has {len(items)} ids; the limit is {MAX_IDS_PER_CALL} per call.")
    seen: dict[int, None] = {}
    for index, item in enumerate(items):
        seen[timeline_id(f"{name}[{index}]", item)] = None
    return list(seen)


def constraint_type(value: Any) -> ConstraintType:
    """DERIVED (default) or PROSPECTIVE, case-insensitive."""
    if value is None:
        return ConstraintType.DERIVED
    if isinstance(value, str) and value.strip().upper() in ConstraintType.__members__:
        return ConstraintType(value.strip().upper())
    raise InvalidInput(
        f"Field 'constraint_type' must be 'DERIVED' (default) or 'PROSPECTIVE', got {value!r}."
    )


def limit(value: Any, default: int, maximum: int) -> int:
    """A listing limit: missing means the default; 1..maximum, larger values are capped."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"Field 'limit' must be an integer from 1 to {maximum}, got {_kind(value)}.")
    if value < 1:
        raise InvalidInput(f"Field 'limit' must be an integer from 1 to {maximum}, got {value}.")
    return min(value, maximum)


def scope(value: Any, default: Scope) -> Scope:
    """session, project or global, case-insensitive; missing means the default for the constraint type."""
    if value is None:
        return default
    if isinstance(value, str) and value.strip().lower() in {s.value for s in Scope}:
        return Scope(value.strip().lower())
    raise InvalidInput(f"Field 'scope' must be 'session', 'project' or 'global', got {value!r}.")


def max_tokens(value: Any, default: int) -> int:
    """A context budget in tokens (characters / 3.8)."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"Field 'max_tokens' must be an integer, got {_kind(value)}.")
    if not MIN_CONTEXT_TOKENS <= value <= MAX_CONTEXT_TOKENS:
        raise InvalidInput(
            f"Field 'max_tokens' must be from {MIN_CONTEXT_TOKENS} to {MAX_CONTEXT_TOKENS}, got {value}."
        )
    return value


def project(value: str) -> str:
    cleaned = clean_text(value).strip()
    if not cleaned or len(cleaned) > MAX_PROJECT_CHARS:
        raise InvalidInput(f"The project name must be 1 to {MAX_PROJECT_CHARS} characters, got {len(cleaned)}.")
    return cleaned


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def query(value: Any) -> str:
    """Search text: control characters (other than tab and newline) never occur in a useful query."""
    text = required_text("query", value, MAX_QUERY_CHARS)
    if _CONTROL.search(text):
        raise InvalidInput("Field 'query' must not contain control characters; search for the visible text.")
    return text


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _sep(hint: str) -> str:
    return f" {hint}" if hint else ""
