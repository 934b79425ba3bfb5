"""Host adapters: memory that works without the model remembering to use it (`vlk-memact hook HOST`).
May import the engine, store/, core/, fingerprint/ and config; never server/, cli/, ops/ or viewer/.

A host (Claude Code, Gemini CLI, Codex CLI; OpenCode through the plugin install writes) runs
`vlk-memact hook HOST` on its lifecycle events. The host-neutral core
lives here (capture.py: failures, successes and the guard's facts; carryover.py: what a session starts
with; guard.py: the pure guard decision; inject.py: every injected text; runner.py: deadline, log and
never breaking the host); each host module only parses its events and builds its envelopes.

Nothing in this package imports the MCP SDK: a hook runs on every tool call and must start fast. The
hook process itself goes through warm.py (a long-lived server per installation answers; without one, the
process answers alone).

A new host: a module like claude_code.py (HOST, STORE_ONLY_EVENTS and handle(event, memory), which turns
the host's events into capture.ToolCall, its host=HOST included, and calls the core with the host's tool
names), one line in commands.HANDLERS, and its installer, over install_files.py (the project folder,
backups, and the words every install reports in).
"""
