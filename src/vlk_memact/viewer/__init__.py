"""`vlk-memact ui`: a local web viewer of sessions, timelines, loops, lessons and the exact context.
May import the engine, store/ (its read model), core/, config and server.transports; never cli/ or ops/.

A thin edge over Memory, like the MCP server and the CLI: build_app() makes the Starlette app,
serve_ui() binds and runs it. Read-only unless started with allow_write (revoke only).
"""

from __future__ import annotations

from .app import Viewer, build_app
from .launch import serve_ui

__all__ = ["Viewer", "build_app", "serve_ui"]
