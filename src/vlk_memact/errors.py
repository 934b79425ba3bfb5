"""The one exception tree of vlk-memact; every message says what to fix.

    VlkError
    ├── InvalidInput   bad arguments from a caller (a tool, the CLI, the library API)
    ├── NotFound       an id that is not where the caller said it was
    ├── StoreError     the database failed; the cause is chained
    └── ConfigError    a setting (DATABASE_URL, VLK_*) cannot be used
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


class ConfigError(VlkError):
    """A configuration value cannot be used as given."""
