"""The host-neutral hook logic every adapter calls: capture (failures, successes, the guard's facts), guard (the pure
decision), fixes, carryover, failures, steps, shell and read_only (one shell reader), said, inject, runner (deadline,
log, one transaction per event), warm/warm_server/warm_pool (the warm hook server), install_files, session_stores,
hook_log. Imports no host package. Tests: tests/hosts/shared/.
"""
