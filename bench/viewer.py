"""How long the viewer's pages take, side by side with the engine call or store read each is built on.

    .venv/bin/python bench/viewer.py             # 10^3, 10^4 and 10^5 slots
    .venv/bin/python bench/viewer.py --quick     # 10^3 and 10^4, fewer samples

The databases are bench/perf.py's (real agent output from shared/data/trajectories-dev, many sessions
and projects, mostly archived), built the same way. Each page is fetched through the ASGI app in
process (Starlette's test client, no sockets), behind the real guard (cookie, Host, headers), and
compared with its floor, measured in the same run on the same file:

    static file     (the request overhead of the in-process client and the guard)
    sessions page   vs  the store's project and session lists alone
    timeline page   vs  vlk_get_history of the same session (300 slots)
    lessons page    vs  vlk_summarize_session (which reads the same visible constraints)
    context page    vs  vlk_fetch_context, the real (writing) call the dry run mirrors
    preview_context vs  vlk_fetch_context, both in process (the dry run's own cost)
    search, tenant  vs  vlk_search_memory in one session (the indexed search)

Figures (median and p95 ms, ratio page / floor) go to bench/results/viewer.json and viewer.md.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from harness.database import (  # noqa: E402
    ACTIVE_PROJECT,
    ACTIVE_SESSION,
    NEEDLE,
    Databases,
    engine_settings,
    sqlite_url,
)
from harness.log import speaker  # noqa: E402
from harness.machine import machine  # noqa: E402
from harness.texts import load_observations, make_pool  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from vlk_memact import Memory  # noqa: E402
from vlk_memact.viewer import build_app  # noqa: E402

RESULTS = ROOT / "bench" / "results"
PORT = 40999  # never bound: the client talks to the app in process
say = speaker("viewer")


def timed(action: Callable[[], Any], samples: int) -> list[float]:
    action()  # warm caches
    out = []
    for _ in range(samples):
        started = time.perf_counter()
        action()
        out.append((time.perf_counter() - started) * 1000)
    return out


def stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"median_ms": round(statistics.median(ordered), 3),
            "p95_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 3)}


def bench_size(path: Path, n: int, samples: int) -> list[dict[str, Any]]:
    memory = Memory(sqlite_url(path), settings=engine_settings(), project=ACTIVE_PROJECT)
    try:
        viewer = build_app(memory, port=PORT)
        client = TestClient(viewer.app, base_url=f"http://127.0.0.1:{PORT}")
        assert client.get("/?token=" + viewer.secrets.token).status_code == 200
        query = urlencode({"project": ACTIVE_PROJECT, "session": ACTIVE_SESSION})

        def page(url: str) -> Callable[[], None]:
            def get() -> None:
                response = client.get(url)
                assert response.status_code == 200, (url, response.status_code)
            return get

        def sessions_floor() -> None:
            with memory.reading() as tx:
                tx.projects(memory.tenant)
                tx.sessions(memory.tenant, None, 200)

        rows = [
            ("static file (the HTTP floor)", page("/static/viewer.css"), "(none: request overhead)",
             lambda: None),
            ("sessions page", page("/"), "tx.projects + tx.sessions (200)", sessions_floor),
            ("timeline page", page(f"/session?{query}"), "vlk_get_history (300)",
             lambda: memory.get_history(session_id=ACTIVE_SESSION, limit=300)),
            ("lessons page", page(f"/lessons?{query}"), "vlk_summarize_session",
             lambda: memory.summarize_session(session_id=ACTIVE_SESSION)),
            ("context page (dry run)", page(f"/context?{query}"), "vlk_fetch_context",
             lambda: memory.fetch_context(session_id=ACTIVE_SESSION)),
            ("Memory.preview_context", lambda: memory.preview_context(session_id=ACTIVE_SESSION),
             "vlk_fetch_context", lambda: memory.fetch_context(session_id=ACTIVE_SESSION)),
            ("search page, every session", page("/search?" + urlencode({"q": NEEDLE})),
             "vlk_search_memory (one session)",
             lambda: memory.search_memory(query=NEEDLE, session_id=ACTIVE_SESSION)),
        ]
        found = []
        for name, action, floor_name, floor in rows:
            fast = samples if "search" not in name and "sessions" not in name else max(3, samples // 4)
            a, b = stats(timed(action, fast)), stats(timed(floor, fast))
            found.append({"slots": n, "page": name, **a, "floor": floor_name, "floor_median_ms": b["median_ms"],
                          "ratio": round(a["median_ms"] / b["median_ms"], 2) if b["median_ms"] > 0.001 else None,
                          "samples": fast})
            say(f"{n:>8,} {name:<28} {a['median_ms']:9.2f} ms   floor {floor_name}: {b['median_ms']:.2f} ms")
        return found
    finally:
        memory.close()


def _machine() -> str:
    m = machine()
    return (f"{m['cpu']}, {m['cores']} cores, Python {m['python']}, SQLite {m['sqlite']}, "
            f"load average {m['load_average_at_start'][0]:.1f} at start")


def markdown(results: dict[str, Any]) -> str:
    lines = [
        "# Viewer pages (`vlk-memact ui`)",
        "",
        f"Command: `{results['command']}`; started {results['started']}; {results['machine']}.",
        "Pages fetched in process through the guarded ASGI app (Starlette test client); floors measured in the",
        "same run on the same file. The machine was shared with other jobs: figures are noisy.",
        "",
        "| slots | page | median ms | p95 ms | floor | floor median ms | page / floor |",
        "| ---: | --- | ---: | ---: | --- | ---: | ---: |",
    ]
    for row in results["rows"]:
        lines.append(f"| {row['slots']:,} | {row['page']} | {row['median_ms']:.2f} | {row['p95_ms']:.2f} | "
                     f"{row['floor']} | {row['floor_median_ms']:.2f} | {'x' + str(row['ratio']) if row['ratio'] else '-'} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10^3 and 10^4 slots, fewer samples")
    parser.add_argument("--cache", type=Path, help="keep built databases here (shared with bench/perf.py --cache)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    sizes = (10**3, 10**4) if args.quick else (10**3, 10**4, 10**5)
    samples = 8 if args.quick else 30
    observations, source = load_observations()
    pool = make_pool(observations, 600 if args.quick else 4000, random.Random(args.seed))
    tag = f"{source}|{len(observations)}|{len(pool)}|{args.seed}"
    work = Path(tempfile.mkdtemp(prefix="vlk-viewer-bench-"))
    dbs = Databases(work, args.cache, pool, args.seed, tag)
    rows = []
    for n in sizes:
        rows += bench_size(dbs.copy(n, "viewer"), n, samples)
    results = {
        "command": "python bench/viewer.py" + (" --quick" if args.quick else ""),
        "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": _machine(),
        "texts": source,
        "rows": rows,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    stem = "viewer-quick" if args.quick else "viewer"
    (RESULTS / f"{stem}.json").write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / f"{stem}.md").write_text(markdown(results))
    say(f"wrote bench/results/{stem}.json and .md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
