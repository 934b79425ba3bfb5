"""The sections of bench/perf.py, one module each, and its report; `python bench/perf.py` runs them.

They import the shared pieces from bench/harness and never each other (except `modes`).
"""
