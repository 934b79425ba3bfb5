"""The MCP server: build_server(memory) with the seven tools (tools.py), and its stdio and HTTP transports.
May import the engine, core/, config and hosts.failures; never cli/, ops/ or viewer/."""

from .tools import INSTRUCTIONS, build_server

__all__ = ["INSTRUCTIONS", "build_server"]
