"""Merging the memories of a checkout's path key into its repository's key, alike in both stores.

Why: every earlier release keyed a project by the absolute path of its git root; a project is now its
repository (repository.py). Lessons, fixes, loops and sessions stored under the path must keep working, so
the engine merges them into the repository's key the first time it sees that checkout
(``engine/projects.py``), once: ``project_merges`` (the schema migration named ``*_project_merges``)
records each path merged and into which key. Nothing is dropped: a session whose id the key already has
is appended after it (its slots renumbered); a host call or learned event already there stays under the path.
"""

from __future__ import annotations

from .dialect import SqlDialect

# The tables that carry a project, and the columns that must stay unique within (tenant, project, session).
_PLAIN = ("fixes", "learned_sources")
_UNIQUE_BY = {"host_calls": ("session_id", "tool_use_id"), "host_sessions": ("session_id",),
              "learned_events": ("event_id",)}


class Projects(SqlDialect):
    """The Transaction protocol's project merge (see the module docstring)."""

    def project_merged(self, path: str) -> str | None:
        """The key the path key was merged into, or None when it never was."""
        rows = self._rows("SELECT project FROM project_merges WHERE path = ?", (path,))
        return str(rows[0][0]) if rows else None

    def project_merges(self) -> list[tuple[str, str, int, str]]:
        """Every merge: (path, key, rows moved, when), newest first."""
        return [(str(p), str(k), int(n), str(w)) for p, k, n, w in self._rows(
            "SELECT path, project, moved, merged_at FROM project_merges ORDER BY merged_at DESC, path")]

    def merge_project(self, path: str, key: str) -> int:
        """Move every row of project `path` (all tenants) to project `key` and record it; rows moved."""
        moved = 0
        # Sessions of one id under both keys (the MCP tools' "default" session): the path's slots go after.
        for tenant, session, top in self._rows(
            "SELECT k.tenant, k.session_id, MAX(k.sequence_order) FROM agent_timeline k WHERE k.project = ? "
            "AND EXISTS (SELECT 1 FROM agent_timeline p WHERE p.project = ? AND p.tenant = k.tenant "
            "AND p.session_id = k.session_id) GROUP BY k.tenant, k.session_id", (key, path)):
            moved += self._count(
                "UPDATE agent_timeline SET project = ?, sequence_order = sequence_order + ? "
                "WHERE project = ? AND tenant = ? AND session_id = ?", (key, int(top), path, tenant, session))
        moved += self._count("UPDATE agent_timeline SET project = ? WHERE project = ?", (key, path))
        for table in _PLAIN:
            moved += self._count(f"UPDATE {table} SET project = ? WHERE project = ?", (key, path))  # noqa: S608
        for table, columns in _UNIQUE_BY.items():
            same = "".join(f" AND x.{c} = {table}.{c}" for c in columns)
            moved += self._count(
                f"UPDATE {table} SET project = ? WHERE project = ? AND NOT EXISTS (SELECT 1 FROM {table} x "  # noqa: S608
                f"WHERE x.tenant = {table}.tenant AND x.project = ?{same})", (key, path, key))
        self._exec(f"INSERT INTO project_merges (path, project, moved, merged_at) VALUES (?, ?, ?, {self._NOW})",
                   (path, key, moved))
        return moved
