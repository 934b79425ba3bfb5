"""The time a write is stamped with: the database's now, or a moment of the past that the caller names.

Learning from past sessions (`vlk-memact learn`) replays each event at the time it happened, so that what it
leaves (slots, hook calls, fixes, firings) carries the session's own times: the carry-over says on which day
a loop happened, a fix is older than the lesson met after it, retention ages rows from when they happened.
`stamped(when)` sets that time for the transactions this thread (this context) runs; every statement that
would write the database's now writes it instead, and every "N days / seconds ago" is counted from it.
Stamps are text in the stores' format, 'YYYY-MM-DD HH:MM:SS.mmm' in UTC, so they compare as strings.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime, timedelta

_AT: ContextVar[str | None] = ContextVar("vlk_store_clock", default=None)
_STAMP = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}")
FORMAT = "%Y-%m-%d %H:%M:%S"


def stamp_of(when: datetime) -> str:
    """A moment as the stores write it: UTC, to the millisecond (a naive datetime is taken as UTC)."""
    moment = when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)
    return moment.strftime(FORMAT) + f".{moment.microsecond // 1000:03d}"


@contextmanager
def stamped(when: datetime | None) -> Iterator[None]:
    """Within it, this context's writes are stamped `when` instead of now (None: now, as outside)."""
    token = _AT.set(None if when is None else stamp_of(when))
    try:
        yield
    finally:
        _AT.reset(token)


def current() -> str | None:
    """The stamp set by stamped(), or None when writes carry the database's now."""
    stamp = _AT.get()
    # Stamps go into SQL text as literals: only the exact format stamp_of() writes may ever get there.
    if stamp is not None and not _STAMP.fullmatch(stamp):
        raise ValueError(f"not a store time stamp: {stamp!r}")
    return stamp


def before(seconds: float, precise: bool) -> str | None:
    """The stamp `seconds` before the set one (to the millisecond when precise, else to the second), or None."""
    stamp = current()
    if stamp is None:
        return None
    moment = datetime.strptime(stamp, FORMAT + ".%f") - timedelta(seconds=seconds)
    return stamp_of(moment) if precise else moment.strftime(FORMAT)
