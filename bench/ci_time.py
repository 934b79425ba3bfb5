"""Where the suite's time goes, read from the log of one `bash .ci/run` with `--durations=0`.

    CI=true bash .ci/run -p no:cacheprovider -q --durations=0 > ci.log 2>&1
    .venv/bin/python bench/ci_time.py ci.log [--label TEXT]

Prints a Markdown section (bench/results/ci-time.md collects them, one per measured run): each install step
with its time (.ci/run's `   NAME: S s` lines), the tests' wall time and outcome (pytest's closing line), the
load .ci/run printed, and the time of the tests by module: every setup, call and teardown that pytest
reported, summed per module. Under pytest-xdist those sums are worker-seconds: together they exceed the wall
time by about the number of busy workers. The real host CLIs' and the browser's modules are listed by name,
the rest as one line.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

REAL_CLIS = ("test_opencode_cli.py", "test_openai_hosts_cli.py", "test_codex_cli.py", "test_gemini_cli.py",
             "test_claude_code_cli.py", "test_claude_code_mcp.py", "test_hooks_e2e.py", "test_fixes_e2e.py",
             "test_viewer_browser.py")
STEP = re.compile(r"^   (?P<name>.+): (?P<seconds>[\d.]+) s$")
SKIPPED = re.compile(r"^== (?P<name>.+): current, skipped")
DURATION = re.compile(r"(?P<seconds>[\d.]+)s (?:call|setup|teardown)\s+tests/(?P<module>[\w/]+\.py)::")
CLOSING = re.compile(r"^=*\s*(?P<line>(?:\d+ \w+(?:, )?)+ in (?P<seconds>[\d.]+)s\b.*?)\s*=*$")
LOAD = re.compile(r"load: (?P<load>[\d.]+ [\d.]+ [\d.]+)")


def summarize(log: str, label: str) -> str:
    steps: list[tuple[str, str]] = []
    modules: Counter[str] = Counter()
    closing, loads = "", []
    for line in log.splitlines():
        if match := STEP.match(line):
            steps.append((match["name"], f"{float(match['seconds']):.1f} s"))
        elif match := SKIPPED.match(line):
            steps.append((match["name"], "skipped (current)"))
        elif match := DURATION.search(line):
            modules[match["module"]] += float(match["seconds"])
        elif match := CLOSING.match(line.strip()):
            closing = match["line"]
        loads += LOAD.findall(line)
    out = [f"### {label}", "", "| install step | time |", "| --- | --- |"]
    out += [f"| {name} | {time} |" for name, time in steps]
    installs = sum(float(t.split()[0]) for _, t in steps if t.endswith(" s"))
    out += [f"| **all install steps** | **{installs:.1f} s** |", "",
            f"Tests: `{closing or 'no closing line found'}`; load (1/5/15 min) before and after: "
            f"{' / '.join(loads) or 'not printed'}.", "",
            "| tests by module (setup + call + teardown, worker-seconds) | time |", "| --- | --- |"]
    cli_total = 0.0
    for module in REAL_CLIS:
        seconds = modules.get(module, 0.0)
        cli_total += seconds
        out.append(f"| {module} | {seconds:.1f} s |")
    rest = sum(modules.values()) - cli_total
    out += [f"| real CLIs and the browser, together | {cli_total:.1f} s |",
            f"| the rest ({len([m for m in modules if m not in REAL_CLIS])} modules) | {rest:.1f} s |",
            f"| all | {sum(modules.values()):.1f} s |", ""]
    top = [(m, s) for m, s in modules.most_common() if m not in REAL_CLIS][:8]
    out.append("Slowest of the rest: " + ", ".join(f"{m} {s:.1f} s" for m, s in top) + ".")
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", type=Path, help="the output of `bash .ci/run ... --durations=0`")
    parser.add_argument("--label", default=None, help="the section's title (default: the log's file name)")
    args = parser.parse_args()
    print(summarize(args.log.read_text(encoding="utf-8", errors="replace"), args.label or args.log.name))


if __name__ == "__main__":
    main()
