"""Claude Code: adapter.py (its hook events), install.py (`vlk-memact install claude-code`). Tests: tests/hosts/claude_code/.
"""
