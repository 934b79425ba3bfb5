"""Codex CLI: adapter.py, install.py. Tests: tests/hosts/codex/.
"""
