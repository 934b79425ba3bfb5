"""A bounded load test of the Streamable HTTP server on loopback, for SQLite and PostgreSQL.

    .venv/bin/python bench/load.py                      # 8 clients x 20 s against each backend
    .venv/bin/python bench/load.py --clients 4 --seconds 5 --backend sqlite

N concurrent MCP clients (the SDK's, over HTTP, each with its own bearer token's tenant session)
record distinct errors and fetch the context for a fixed time. Reports calls per second, median and
p99 latency and errors (which must be zero). Traffic goes to 127.0.0.1 only and stops by itself.
Figures go to bench/results/load.json and bench/results/load.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from http_harness import free_port, start_server, wait_for_port  # noqa: E402

RESULTS = ROOT / "bench" / "results"
TOKEN = "load-test-token-0123456789"
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo"]


def word(n: int) -> str:
    return "".join(WORDS[(n // len(WORDS) ** k) % len(WORDS)] for k in range(3))


async def worker(url: str, index: int, deadline: float, latencies: list[float], errors: list[str]) -> None:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            n = 0
            session = f"load-{index}"
            while time.monotonic() < deadline:
                tool, args = (("vlk_fetch_context", {"session_id": session}) if n % 5 == 4 else
                              ("vlk_record_state", {"raw_log": f"Error: {word(n)} failed in worker {word(index)}",
                                                    "session_id": session}))
                started = time.perf_counter()
                try:
                    result = await client.call_tool(tool, args)
                    if result.is_error:
                        errors.append(result.content[0].text[:200])
                except Exception as exc:  # a load test counts failures instead of stopping
                    errors.append(repr(exc)[:200])
                latencies.append(time.perf_counter() - started)
                n += 1


async def run_load(url: str, clients: int, seconds: float) -> dict[str, float]:
    latencies: list[float] = []
    errors: list[str] = []
    deadline = time.monotonic() + seconds
    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for i in range(clients):
            tg.start_soon(worker, url, i, deadline, latencies, errors)
    elapsed = time.perf_counter() - started
    ordered = sorted(latencies)
    return {
        "clients": clients,
        "seconds": round(elapsed, 2),
        "calls": len(latencies),
        "calls_per_second": round(len(latencies) / elapsed, 1),
        "median_ms": round(statistics.median(ordered) * 1000, 2) if ordered else 0.0,
        "p99_ms": round(ordered[int(len(ordered) * 0.99) - 1] * 1000, 2) if ordered else 0.0,
        "errors": len(errors),
        "first_error": errors[0] if errors else "",
    }


def postgres_url() -> str | None:
    base = os.environ.get("VLK_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
    try:
        import psycopg

        schema = "vlk_load_" + uuid.uuid4().hex[:8]
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')
        sep = "&" if "?" in base else "?"
        return f"{base}{sep}options=-csearch_path%3D{schema}"
    except Exception as exc:  # no driver or no server: the backend is reported as skipped
        print(f"PostgreSQL unavailable: {exc}", file=sys.stderr)
        return None


def measure(backend: str, clients: int, seconds: float) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/load.db" if backend == "sqlite" else postgres_url()
        if url is None:
            return {"backend": backend, "skipped": "PostgreSQL not reachable"}
        port = free_port()
        proc = start_server(url, f"{TOKEN}=load", port, Path(tmp) / "server.log")
        try:
            wait_for_port(port, proc)
            figures = anyio.run(run_load, f"http://127.0.0.1:{port}/mcp", clients, seconds)
        finally:
            proc.terminate()
            proc.wait(timeout=20)
        return {"backend": backend, **figures}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="both")
    args = parser.parse_args()
    backends = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
    before = os.getloadavg()
    rows = [measure(b, args.clients, args.seconds) for b in backends]
    after = os.getloadavg()
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "load.json").write_text(json.dumps(rows, indent=2))
    lines = ["# HTTP load test (loopback)", "",
             f"`.venv/bin/python bench/load.py --clients {args.clients} --seconds {args.seconds:g}`: each client "
             "records distinct errors and fetches its context every fifth call, through the SDK client over "
             "Streamable HTTP with a bearer token.", "",
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.cpu_count()} cores shared with other "
             f"work, load average {before[0]:.2f} before and {after[0]:.2f} after: throughput is the machine's as "
             "much as the server's, compare runs only at a similar load.", "",
             "| backend | clients | calls | calls/s | median ms | p99 ms | errors |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        if "skipped" in r:
            lines.append(f"| {r['backend']} | skipped: {r['skipped']} | | | | | |")
        else:
            lines.append(f"| {r['backend']} | {r['clients']} | {r['calls']} | {r['calls_per_second']} | "
                         f"{r['median_ms']} | {r['p99_ms']} | {r['errors']} |")
    text = "\n".join(lines) + "\n"
    (RESULTS / "load.md").write_text(text)
    print(text)
    return 1 if any(r.get("errors") for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
