"""StoreOnly: the part of Memory the hooks' guard and resolution use, without the engine's imports.

PreToolUse and PostToolUse run on every tool call; they need settings, the store, the session rule, the public hook
API (hook_events.py) and recording what was said (impact_record.py), not the engine's imports. It lives in the
engine because it owns the store: hosts/ reach it only through the public API, as they reach Memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ..config import Settings
from ..core import inputs
from ..core.model import SessionKey
from .hook_events import HookEvents
from .impact_record import InterventionRecorder

if TYPE_CHECKING:
    from ..repository import Identity
    from ..store import Store


class StoreOnly(InterventionRecorder, HookEvents):
    """The part of Memory the guard and resolution use (settings, store, session keys, recording what was said),
    without the engine's imports: PreToolUse and PostToolUse run on every tool call and need nothing more."""

    tenant = "local"
    default_session = None

    def __init__(self, settings: Settings, project: str, identity: Identity | None = None) -> None:
        from ..store import open_store

        self.settings = settings
        self.project = inputs.project(project)
        self.store: Store = open_store(settings.database_url, busy_timeout_ms=settings.busy_timeout_ms)
        if identity is not None and identity.path_key and self.project == identity.key:
            from .projects import merge_path_key

            try:  # as Memory does (engine/base.py): a checkout's old path key merged on first sight
                merge_path_key(self.store, identity)
            except Exception:  # noqa: BLE001 - the next Memory to open tries again
                pass

    def _key(self, session_id: Any) -> SessionKey:
        return SessionKey(self.tenant, self.project, inputs.session_id(session_id))

    @contextmanager
    def one_transaction(self, durable: bool = True) -> Iterator[None]:
        """As Memory.one_transaction: the event's writes, if any, in one transaction."""
        with self.store.batch(durable=durable) as batch:
            try:
                yield
            finally:
                batch.commit()

    def sync(self) -> None:
        """As Memory.sync."""
        self.store.sync()

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> StoreOnly:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
