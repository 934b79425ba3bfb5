"""Learning from the sessions already on disk (`vlk-memact learn`): day one knows last month.

Each host keeps its past sessions (hosts/shared/session_stores.py says where). A reader per host (claude_code.py,
codex.py, gemini.py, opencode.py) turns one session's files into the very events that host delivers to its
hooks, at the moments they happened: the calls the host reports as failed, the successes, the prompts,
the session's start and compactions, leaving out what the host fires no event for (Claude Code's input
checks and sibling cancellations; a permission refusal or an interrupt is no failure). driver.py feeds
them, in order, through the hooks' own handlers (hosts/*.handle), each write stamped with the event's
time (Memory.at) inside batched transactions (Store.batch), and keeps what it fed (learned_sources,
learned_events) so that nothing is learned twice. What counts as a failure, a loop or a fix is decided
there and only there.
May import hosts/, engine, store/, core/, fingerprint/ and config; never server/, cli/, ops/ or viewer/.
"""
