"""What a backend's transaction supplies so that the operations both stores share can run on it.

The shared operations (timeline, host_calls, retention, export, fixes, browse) hold the logic and every
statement SQLite and PostgreSQL spell alike, written once with sqlite3's `?` placeholders (the
PostgreSQL transaction turns them into psycopg's `%s`: postgres_tx.psycopg_style). A backend's
transaction class lists those operations as bases and supplies what is its own: four driver calls,
and the few fragments its dialect spells differently, each with the parameters it binds.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..core.model import SessionKey
from . import clock

SEPARATOR = "\x1f"  # between the searched fields, so that a match never spans two of them
# The text a search looks in: a slot's log, file context, lesson and evidence, case-folded by vlk_fold()
# (a function each store defines). Binds three SEPARATORs.
SEARCHED = """vlk_fold(
                    COALESCE(c.raw_log, '') || ? || COALESCE(c.file_context, '') || ? ||
                    COALESCE(t.learning_summary, '') || ? || COALESCE(t.evidence, ''))"""
SESSION = " t.tenant = ? AND t.project = ? AND t.session_id = ? "  # binds session_params(key)
# The same test when ids are given: `|| ''` keeps these columns off the indexes, so that the rows are found by id
# (primary key) and not by walking every slot of the session or the tenant, which SQLite picks otherwise.
SESSION_BY_ID = " t.tenant || '' = ? AND t.project || '' = ? AND t.session_id || '' = ? "


def session_params(key: SessionKey) -> tuple[str, str, str]:
    return (key.tenant, key.project, key.session)


def equalities(alias: str, filters: Iterable[tuple[str, Any]]) -> tuple[str, list[Any]]:
    """('alias.column = ? AND …' for each (column, value) whose value is not None, those values); ('', [])
    when none is given. Only the filters given go in, so that each narrows an index range."""
    conditions, values = [], []
    for column, value in filters:
        if value is not None:
            conditions.append(f"{alias}{column} = ?")
            values.append(value)
    return " AND ".join(conditions), values


class SqlDialect:
    """The driver calls and dialect fragments the shared operations use (see the module docstring)."""

    # ---- driver calls ----

    def _rows(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement; every row it returns."""
        raise NotImplementedError

    def _stream(self, query: str, params: Sequence[Any] = ()) -> Iterable[tuple[Any, ...]]:
        """Run one statement; its rows, lazily where the driver can (an export reads whole tables)."""
        raise NotImplementedError

    def _exec(self, query: str, params: Sequence[Any] = ()) -> None:
        """Run one statement for its effect."""
        raise NotImplementedError

    def _count(self, query: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; how many rows it changed."""
        raise NotImplementedError

    # ---- what the dialects do differently ----

    def _index_keys(self, constraint_id: int, keys: Sequence[str]) -> int:
        """Index a constraint under its fingerprint keys (a key twice: once); how many entries were new."""
        raise NotImplementedError

    def _link(self, constraint_id: int, source_ids: Sequence[int], relation: str) -> int:
        """Record that a constraint was learned or merged from these slots; how many links were new."""
        raise NotImplementedError

    # The current UTC time as created_at text ('YYYY-MM-DD HH:MM:SS.mmm'), binding nothing.
    _NOW_SQL: str

    @property
    def _NOW(self) -> str:  # noqa: N802 - read like the constant it is outside a clock.stamped() block
        """The time a write is stamped with: now, or the moment clock.stamped() set (a literal; see clock.py)."""
        stamp = clock.current()
        return self._NOW_SQL if stamp is None else f"'{stamp}'"

    def _in_ids(self, ids: Sequence[int]) -> tuple[str, Any]:
        """(' IN …' or ' = ANY(…)' to append to a column, the one parameter it binds) for a list of ids."""
        raise NotImplementedError

    def _in_texts(self, values: Sequence[str]) -> tuple[str, Any]:
        """The same as _in_ids for a list of strings."""
        raise NotImplementedError

    def _days_ago(self, days: int) -> tuple[str, Any]:
        """(an expression for the time `days` ago as created_at text to the second, its one parameter), counted
        from the moment clock.stamped() set when there is one."""
        stamp = clock.before(days * 86400, precise=False)
        return ("?", stamp) if stamp is not None else self._days_ago_sql(days)

    def _seconds_ago(self, seconds: int) -> tuple[str, Any]:
        """(an expression for the time `seconds` ago as created_at text to the millisecond, its one parameter),
        counted from the moment clock.stamped() set when there is one."""
        stamp = clock.before(seconds, precise=True)
        return ("?", stamp) if stamp is not None else self._seconds_ago_sql(seconds)

    def _days_ago_sql(self, days: int) -> tuple[str, Any]:
        """_days_ago counted from the database's now."""
        raise NotImplementedError

    def _seconds_ago_sql(self, seconds: int) -> tuple[str, Any]:
        """_seconds_ago counted from the database's now."""
        raise NotImplementedError

    def _visible(self, key: SessionKey) -> tuple[str, tuple[Any, ...]]:
        """(a condition on t: the FUTURE constraints the session sees, its parameters): the session's own,
        its project's and the tenant's global ones."""
        raise NotImplementedError

    def _contains(self, query: str) -> tuple[str, tuple[Any, ...]]:
        """(a condition: SEARCHED contains query case-insensitively and literally, the parameters it binds)."""
        raise NotImplementedError
