"""Host adapters: memory that works without the model remembering to use it.

A host (Claude Code, ...) runs `vlk-memact hook HOST` on its lifecycle events. The host-neutral core
lives here (capture.py: failures, successes and the guard's facts; carryover.py: what a session starts
with; guard.py: the pure guard decision; inject.py: every injected text; runner.py: deadline, log and
never breaking the host); each host module only parses its events and builds its envelopes.

Nothing in this package imports the MCP SDK: a hook runs on every tool call and must start fast.
"""
