"""The engine: Memory, one method per use case and one store transaction each, over the storage contract.
May import core/, fingerprint/, config and store/ (the Store protocol and open_store); never an edge."""

TYPE_CHECKING = False  # no typing at start-up: the hooks import engine.fix_memory on every tool call
if TYPE_CHECKING:
    from .memory import Memory

__all__ = ["Memory"]


def __getattr__(name: str) -> "type[Memory]":
    """Memory on first use (PEP 562): a hook that only reads fixes (fix_memory.py) does not load the engine."""
    if name == "Memory":
        from .memory import Memory

        return Memory
    raise AttributeError(f"module 'vlk_memact.engine' has no attribute {name!r}")
