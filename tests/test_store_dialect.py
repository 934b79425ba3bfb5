"""The operations both stores share (store/timeline.py, host_calls, retention, export, fixes, browse, learned) and what
each backend supplies for them (store/dialect.py): nothing left unsupplied, placeholders translated right."""

from __future__ import annotations

import inspect

import pytest

from vlk_memact.store import Transaction
from vlk_memact.store.browse import Browse
from vlk_memact.store.dialect import SqlDialect, equalities
from vlk_memact.store.export import Export
from vlk_memact.store.fixes import Fixes
from vlk_memact.store.host_calls import HostCalls
from vlk_memact.store.learned import Learned
from vlk_memact.store.retention import Retention
from vlk_memact.store.sqlite_tx import SqliteTx
from vlk_memact.store.timeline import Timeline

SHARED = (SqlDialect, Timeline, HostCalls, Retention, Export, Fixes, Browse, Learned)


def _backends() -> list[type]:
    from vlk_memact.store.postgres_tx import PostgresTx

    return [SqliteTx, PostgresTx]


def _left_to_backends() -> set[str]:
    """Names a shared class declares without a value (annotations) or as a hook that raises NotImplementedError."""
    names: set[str] = set()
    for shared in SHARED:
        names |= {name for name in vars(shared).get("__annotations__", {})}
        names |= {name for name, value in vars(shared).items()
                  if inspect.isfunction(value) and "raise NotImplementedError" in inspect.getsource(value)}
    return names


@pytest.mark.parametrize("backend", _backends(), ids=lambda c: c.__name__)
def test_each_backend_supplies_what_the_shared_operations_leave_to_it(backend: type) -> None:
    left = _left_to_backends()
    assert {"_rows", "_exec", "_in_ids", "_NOW_SQL", "_days_ago_sql", "_SESSIONS"} <= left  # the scan finds the hooks
    for name in sorted(left):
        owner = next((c for c in backend.__mro__ if name in vars(c)), None)
        assert owner is not None and owner not in SHARED, f"{backend.__name__} does not supply {name}"


@pytest.mark.parametrize("backend", _backends(), ids=lambda c: c.__name__)
def test_each_backend_has_every_operation_of_the_transaction_protocol(backend: type) -> None:
    operations = {name for name, value in vars(Transaction).items()
                  if inspect.isfunction(value) and not name.startswith("_")}
    assert len(operations) > 30
    assert not {name for name in operations if not inspect.isfunction(getattr(backend, name, None))}


def test_shared_statements_get_psycopg_placeholders_and_jsonb_operators_stay() -> None:
    from vlk_memact.store.postgres_tx import psycopg_style

    assert psycopg_style("SELECT 1 WHERE a = ? AND b IN (?, ?)") == "SELECT 1 WHERE a = %s AND b IN (%s, %s)"
    assert psycopg_style("WHERE x = %s AND f.slot_uids::jsonb ?| %s AND k ?& %s") == (
        "WHERE x = %s AND f.slot_uids::jsonb ?| %s AND k ?& %s")


def test_only_the_filters_given_become_conditions() -> None:
    assert equalities("f.", (("tenant", "t"), ("project", None), ("session_id", "s"))) == (
        "f.tenant = ? AND f.session_id = ?", ["t", "s"])
    assert equalities("", (("call_key", None),)) == ("", [])
