"""The `vlk-memact` command line: argparse subcommands (main.py) and the demo, thin over the engine.
May import everything below it: engine, core/, config, server/, ops/, hosts/, viewer/."""

from .main import main

__all__ = ["main"]
