"""A database as an earlier release wrote it, rebuilt for a migration test: that release's schema (the migrations
up to the first it did not have), then its rows from a dump that tests/corpus/ made with that release."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from vlk_memact.store import postgres_schema, sqlite_schema

ORDER = ("memory_contents", "agent_timeline", "constraint_links", "constraint_keys", "fixes", "fix_keys")  # references


def read_dump(name: str) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    """The dump and its tables in an order that inserts every referenced row first."""
    dump = json.loads((Path(__file__).parent / "data" / name).read_text(encoding="utf-8"))
    tables = sorted(dump["tables"].items(), key=lambda item: ORDER.index(item[0]) if item[0] in ORDER else len(ORDER))
    for _, data in tables:  # a retired slot references the lesson that retired it: the lesson first
        if "retired_by" in data["columns"]:
            by = data["columns"].index("retired_by")
            data["rows"].sort(key=lambda row: row[by] is not None)
    return dump, tables


def load_sqlite(url: str, dump: dict[str, Any], tables: list[tuple[str, dict[str, Any]]]) -> None:
    conn = sqlite3.connect(url.removeprefix("sqlite:///"))
    for step in sqlite_schema.MIGRATIONS[: dump["schema_version"]]:
        step(conn)
    conn.execute(f"PRAGMA user_version = {dump['schema_version']}")
    for table, data in tables:
        marks = ", ".join("?" for _ in data["columns"])
        conn.executemany(f"INSERT INTO {table} ({', '.join(data['columns'])}) VALUES ({marks})", data["rows"])
    conn.commit()
    conn.close()


def load_postgres(url: str, tables: list[tuple[str, dict[str, Any]]], first_missing: str) -> None:
    """The PostgreSQL schema up to the migration whose name ends with first_missing, then the rows (SQLite's 0
    and 1 as booleans where PostgreSQL has a boolean column)."""
    import psycopg

    from vlk_memact.store.postgres import postgres_target

    conninfo, schema = postgres_target(url)
    previous = next(i for i, step in enumerate(postgres_schema.MIGRATIONS) if step.__name__.endswith(first_missing))
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{schema}"')
        conn.execute(f"CREATE TABLE {postgres_schema.VERSION_TABLE} (version integer PRIMARY KEY, name text NOT NULL,"
                     f" applied_at text NOT NULL DEFAULT {postgres_schema.NOW_MILLIS})")
        for number, step in enumerate(postgres_schema.MIGRATIONS[:previous], start=1):
            step(conn)
            conn.execute(f"INSERT INTO {postgres_schema.VERSION_TABLE} (version, name) VALUES (%s, %s)",
                         (number, step.__name__))
        for table, data in tables:
            if table == "fingerprint_keys_version":
                conn.execute("UPDATE fingerprint_keys_version SET version = %s", (data["rows"][0][0],))
                continue
            flags = {name for (name,) in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND table_name = %s "
                "AND data_type = 'boolean'", (schema, table))}
            rows = [[bool(v) if c in flags and v is not None else v for c, v in zip(data["columns"], row)]
                    for row in data["rows"]]
            marks = ", ".join("%s" for _ in data["columns"])
            with conn.cursor() as cur:
                cur.executemany(f"INSERT INTO {table} ({', '.join(data['columns'])}) VALUES ({marks})", rows)
            if "id" in data["columns"]:
                conn.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
