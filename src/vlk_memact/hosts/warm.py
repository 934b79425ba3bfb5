"""Compatibility: a `vlk-memact` script installed before hosts/ was split into sub-packages imports
`vlk_memact.hosts.warm`; the warm client is hosts/shared/warm.py. Keeps such a script on the fast path."""

from .shared.warm import hook, leave

__all__ = ["hook", "leave"]
