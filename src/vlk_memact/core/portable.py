"""Texts that read right in every checkout: paths inside the repository named relative to its root.

Why: a project is its repository on every machine (repository.py), so a fix one teammate stored is told in
another's checkout. `/home/a/src/app/config.json` means nothing at `/Users/b/work/app`; `config.json` means
the same file in both. Paths outside the repository (a virtualenv, /usr/lib, the home folder) stay as they
are: they are this machine's environment, and the truth about what happened.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

# A path goes on after the root with "/"; anything else that may follow a file name ends it.
_PATH_CHAR = r"[\w.\-+@~%]"


@lru_cache(maxsize=64)
def _pattern(roots: tuple[str, ...]) -> re.Pattern[str] | None:
    usable = sorted({r.rstrip("/") for r in roots if r and r.rstrip("/")}, key=len, reverse=True)
    if not usable:
        return None
    alternatives = "|".join(re.escape(r) for r in usable)
    # The root followed by "/name" (dropped with its slash), or by nothing path-like (the root itself: ".").
    # Not preceded by a path character, so /x/app never matches inside /y/x/app.
    return re.compile(rf"(?<!{_PATH_CHAR})(?<!/)(?:{alternatives})(?:/+(?={_PATH_CHAR})|(?!{_PATH_CHAR}|/))")


def relative(text: str, roots: Iterable[str]) -> str:
    """The text with each path under one of the roots written relative to it (the root alone: ".")."""
    pattern = _pattern(tuple(roots))
    if pattern is None or not text:
        return text
    return pattern.sub(lambda m: "" if m.group(0).endswith("/") else ".", text)


KEPT_FIELDS = frozenset({"cwd", "transcript_path", "session_id", "hook_event_name"})


def relative_value(value: Any, roots: tuple[str, ...], kept: frozenset[str] = KEPT_FIELDS) -> Any:
    """A JSON value (a hook's event or answer) with every string made relative (relative()); the fields named in
    `kept` at any level are left as they are (the hook needs the real working directory and transcript)."""
    if not roots:
        return value
    if isinstance(value, str):
        return relative(value, roots)
    if isinstance(value, dict):
        return {k: v if k in kept else relative_value(v, roots, kept) for k, v in value.items()}
    if isinstance(value, list):
        return [relative_value(v, roots, kept) for v in value]
    return value
