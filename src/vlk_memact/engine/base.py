"""What every part of Memory shares: its settings, store, project and tenant, session keys, redaction.

The parts (recording.py, history.py, context.py, lessons.py, admin.py) each add the methods of one
responsibility; memory.py puts them together as the library API.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from types import TracebackType
from typing import Any, Self

from ..config import Settings
from ..core import inputs, portable
from ..core.model import SessionKey
from ..core.redact import redact
from ..repository import Identity, identify
from ..store import Store, clock, open_store
from .context_cache import ContextCache
from .loop_memo import LoopMemo
from .slot_cache import SlotCache

DEFAULT_TENANT = "local"


class MemoryBase:
    """The state of one Memory: a store seen as one tenant from one project."""

    def __init__(
        self,
        database_url: str | None = None,
        *,
        settings: Settings | None = None,
        store: Store | None = None,
        project: str | None = None,
        tenant: str = DEFAULT_TENANT,
        default_session: str | None = None,
        identity: Identity | None = None,
    ) -> None:
        self.settings = settings if settings is not None else Settings.from_env()
        # The checkout this memory serves (repository.py): its key is the project unless one is named, and
        # paths under its root are stored relative to it (core/portable.py). None: the working directory's.
        if identity is None and project is None:
            identity = identify()
        self.identity = identity
        # The session a call without session_id lands in: the host's, when a host names one (stdio server
        # under Claude Code), so the model's own calls and the host's hooks share one session.
        self.default_session = default_session
        self.project = inputs.project(project or self.settings.project or (identity.key if identity else "default"))
        self._roots = (identity.root,) if identity is not None and identity.root else ()
        self.tenant = tenant
        self._tenants: dict[str, Self] = {}
        self._contexts = ContextCache()
        self._present = SlotCache()
        self._loops = LoopMemo()
        if store is None:
            url = database_url if database_url is not None else self.settings.database_url
            store = open_store(url, busy_timeout_ms=self.settings.busy_timeout_ms, lock_wait_ms=self.settings.lock_wait_ms)
        self.store = store
        if identity is not None and self.project == identity.key and identity.path_key:
            from .projects import merge_path_key

            try:
                merge_path_key(store, identity)
            except Exception as exc:  # a busy or read-only store: serve anyway, the next open tries again
                import logging

                logging.getLogger(__name__).warning("Could not merge the path key %s yet: %s", identity.path_key, exc)

    def for_tenant(self, tenant: str) -> Self:
        """The same store seen as another tenant: nothing of one tenant is visible to another."""
        if tenant == self.tenant:
            return self
        view = self._tenants.get(tenant)
        if view is None:
            view = type(self)(settings=self.settings, store=self.store, project=self.project, tenant=tenant,
                              default_session=self.default_session, identity=self.identity)
            self._tenants[tenant] = view
        return view

    def for_project(self, project: str) -> Self:
        """The same store and tenant seen from another project (the viewer browses every project)."""
        if project == self.project:
            return self
        return type(self)(settings=self.settings, store=self.store, project=project, tenant=self.tenant)

    def _key(self, session_id: Any) -> SessionKey:
        if self.default_session and (session_id is None or (isinstance(session_id, str) and not session_id.strip())):
            session_id = self.default_session
        return SessionKey(self.tenant, self.project, inputs.session_id(session_id))

    def _redact(self, text: str | None, found: list[str]) -> Any:
        """The text with recognisable secrets replaced (unless VLK_REDACT_SECRETS=0), kinds going to found, and
        the paths under the checkout's root relative to it (core/portable.py)."""
        if text is None:
            return text
        text = portable.relative(text, self._roots)
        if not self.settings.redact_secrets:
            return text
        result = redact(text)
        found.extend(result.kinds)
        return result.text

    def at(self, when: datetime | None) -> AbstractContextManager[None]:
        """Within it, what this memory writes in this thread is stamped `when`, not now: slots, hook calls, fixes
        and firings carry the moment a past session's event happened, and ages are counted from it (learning from
        past sessions, learn/). None: now."""
        return clock.stamped(when)

    @contextmanager
    def one_transaction(self, durable: bool = True) -> Iterator[None]:
        """Within it, every write of this thread joins one store transaction, made durable by one commit at the
        end: a hook event's capture, loop check and fix note cost one fsync, not one each (bench/goals.py
        hooks). Reads before the first write do not take the write lock. What the block wrote before an
        exception is committed all the same, as it was when each write was a transaction of its own; if the
        commit fails, nothing of the block is kept and the caches are dropped. Blocks do not nest.

        durable=False: the commit is in the store (safe from a crash of any process) but its fsync waits for
        sync(): the warm hook server answers the host first, then syncs (docs/guarantees.md)."""
        committed = False
        try:
            with self.store.batch(durable=durable) as batch:
                try:
                    yield
                finally:
                    batch.commit()
                    committed = True
        except BaseException:
            if not committed:
                self._contexts, self._present, self._loops = ContextCache(), SlotCache(), LoopMemo()
            raise

    def sync(self) -> None:
        """Make durable what one_transaction(durable=False) committed (an fsync); also after close()."""
        self.store.sync()

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
