"""The one exception tree of vlk-memact; every message says what to fix.

    VlkError
    ├── InvalidInput   bad arguments from a caller (a tool, the CLI, the library API)
    ├── NotFound       an id that is not where the caller said it was
    ├── StoreError     the database failed; the cause is chained
    │   ├── DiskFull            no space left where the database lives
    │   ├── ReadOnlyDatabase    the file, its directory or the URL (mode=ro) forbids writing
    │   ├── DatabaseCorrupt     not a database, or a damaged one (never repaired behind the user's back)
    │   ├── DatabaseIOError     the operating system failed a read or write (file-size limit, failing disk)
    │   ├── DatabaseLocked      another process held the write lock past the wait      (retryable)
    │   └── DatabaseUnavailable the database server cannot be reached or dropped us   (retryable)
    └── ConfigError    a setting (DATABASE_URL, VLK_*) cannot be used

`retryable` says whether the same call may succeed if simply repeated a moment later, without
anyone changing anything (a lock released, a server back up): a hook or a client may retry those
and should only log the others, which need a person to act.
"""

from __future__ import annotations


class VlkError(Exception):
    """Root of every error vlk-memact raises on purpose."""


class InvalidInput(VlkError):
    """An argument is missing, of the wrong kind, or out of range."""


class NotFound(VlkError):
    """An id does not name a slot in the state and session the caller gave."""


class StoreError(VlkError):
    """The storage backend failed; the driver error is kept as __cause__."""

    retryable = False


class DiskFull(StoreError):
    """The file system holding the database has no space left: the write was refused whole."""


class ReadOnlyDatabase(StoreError):
    """Writing is not allowed (permissions, a read-only file system, or mode=ro); reads still work."""


class DatabaseCorrupt(StoreError):
    """The file is not a database or is damaged; it is left untouched for the user to restore or move aside."""


class DatabaseIOError(StoreError):
    """The operating system refused a read or write of the database file."""


class DatabaseLocked(StoreError):
    """Another process held the write lock for longer than the store waits; the call did nothing."""

    retryable = True


class DatabaseUnavailable(StoreError):
    """The database server is unreachable or closed the connection; the pool reconnects by itself."""

    retryable = True


class ConfigError(VlkError):
    """A configuration value cannot be used as given."""


class WouldWait(Exception):  # noqa: N818 - a signal to the caller, not an error anyone reports
    """A write under a store's attempt() met a lock held by another thread or process: nothing was done, and
    the call can be made again where waiting blocks no one (server/tools.run_in_place moves it to a worker
    thread). Only the SQLite store offers attempt(); a store without it always waits."""
