"""OpenCode: adapter.py (the plugin's events), install.py, plugin.js (the plugin install writes). Tests: tests/hosts/opencode/.
"""
