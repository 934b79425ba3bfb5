"""Gemini CLI: adapter.py, events.py (its event names and tool names), install.py. Tests: tests/hosts/gemini/.
"""
