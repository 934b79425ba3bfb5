"""What the benchmarks share: the built databases, the real-output texts, the floors, the MCP servers, statistics.

Each benchmark stays one command (`python bench/NAME.py`) and imports what it needs from here; nothing
here imports a benchmark module, and nothing runs at import.
"""
