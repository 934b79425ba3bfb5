"""The engine: Memory, one method per use case and one store transaction each, over the storage contract.
May import core/, fingerprint/, config and store/ (the Store protocol and open_store); never an edge."""

from .memory import Memory

__all__ = ["Memory"]
