"""Shim: `vlk_memact.model`, the value types programs annotate with, lives in core/model.py now."""

from .core.model import *  # noqa: F403
