"""Host adapters: memory that works without the model remembering to use it (`vlk-memact hook HOST`).
May import the engine, store/, core/, fingerprint/ and config; never server/, cli/, ops/ or viewer/.

A host (Claude Code, Gemini CLI, Codex CLI; OpenCode through the plugin install writes) runs
`vlk-memact hook HOST` on its lifecycle events; commands.py maps HOST to its adapter and installer.

Where things are (one sub-package per host, the shared hook logic apart from them):

    claude_code/  adapter.py, install.py                                                      tests/hosts/claude_code/
    gemini/       adapter.py, events.py, install.py                                           tests/hosts/gemini/
    codex/        adapter.py, install.py                                                      tests/hosts/codex/
    opencode/     adapter.py, install.py, plugin.js                                           tests/hosts/opencode/
    shared/       capture.py (failures, successes, the guard's facts), guard.py (the pure       tests/hosts/shared/
                  decision), fixes.py, carryover.py (what a session starts with), failures.py,
                  steps.py, shell.py + read_only.py (one shell reader), said.py, inject.py
                  (every injected text), runner.py (deadline, log, one transaction per event,
                  never breaking the host), warm.py/warm_server.py/warm_pool.py (the warm hook
                  server), install_files.py (what every installer shares), session_stores.py,
                  hook_log.py

Hooks reach the memory only through Memory's public API (engine/hook_events.py); the engine owns the storage.
Nothing in this package imports the MCP SDK: a hook runs on every tool call and must start fast. The
hook process itself goes through shared/warm.py (a long-lived server per installation answers; without one, the
process answers alone).

A new host: a sub-package like claude_code/ (adapter.py with HOST, STORE_ONLY_EVENTS and handle(event, memory),
which turns the host's events into shared.capture.ToolCall, its host=HOST included, and calls the shared logic with
the host's tool names), one line in commands.HANDLERS, and its installer, over shared/install_files.py (the project
folder, backups, and the words every install reports in).
"""
