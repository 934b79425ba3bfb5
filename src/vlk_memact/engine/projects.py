"""A checkout's memories stored under its path key, merged into its repository's key on first sight.

Why: earlier releases keyed a project by the path of its git root; now a project is its repository
(repository.py). The first time a memory opens a checkout whose path key was never merged, what is stored
under that path moves to the repository's key (store/projects.py), once: a cheap probe of
``project_merges`` after that, and nothing at all for the rest of the process.
"""

from __future__ import annotations

import logging
import time

from ..repository import Identity
from ..store import Store

log = logging.getLogger(__name__)
MERGED_FRESH_SECONDS = 60.0  # a long-lived process (the warm hook server) reads the merges again after this
_MERGED: dict[tuple[str, str], tuple[float, tuple[str, ...]]] = {}  # (store url, key) -> (read at, paths)
_SEEN: set[tuple[str, str, str]] = set()  # (store url, path, key) merged or found merged in this process


def merge_path_key(store: Store, identity: Identity) -> int:
    """Merge the checkout's old path key into its repository's key unless done before; rows moved."""
    path, key = identity.path_key, identity.key
    if path is None:
        return 0
    seen = (store.url, path, key)
    if seen in _SEEN and ":memory:" not in store.url:
        return 0
    with store.read() as tx:
        done = tx.project_merged(path)
    if done is None:
        with store.write() as tx:
            if tx.project_merged(path) is None:  # another process did it meanwhile
                moved = tx.merge_project(path, key)
                _SEEN.add(seen)
                if moved:
                    log.info("Merged %d rows of the path key %s into the repository's key %s", moved, path, key)
                return moved
    _SEEN.add(seen)
    return 0


def merged_paths(store: Store, key: str) -> tuple[str, ...]:
    """The former path keys merged into `key` (the roots of the checkouts earlier releases stored texts from):
    what is told names files under them relative too (hosts/shared/runner.py). Read at most once a minute."""
    cached = _MERGED.get((store.url, key))
    now = time.monotonic()
    if cached is not None and now - cached[0] < MERGED_FRESH_SECONDS and ":memory:" not in store.url:
        return cached[1]
    with store.read() as tx:
        paths = tuple(p for p, k, _, _ in tx.project_merges() if k == key)
    _MERGED[(store.url, key)] = (now, paths)
    return paths
