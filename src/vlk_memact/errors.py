"""Shim: `vlk_memact.errors`, documented for programs, lives in core/errors.py now (import it from there)."""

from .core.errors import *  # noqa: F403
