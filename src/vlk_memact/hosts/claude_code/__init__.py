"""Claude Code: adapter.py (its hook events), install.py (`vlk-memact install claude-code`; also the settings helpers the other installers share). Tests: tests/hosts/claude_code/.
"""
