"""One writer process for the throughput section of bench/perf.py.

    python bench/perf_writer.py DATABASE_URL PROJECT SESSION SECONDS START_AT TEXTS_JSON

Waits until the wall-clock time START_AT (so that every writer starts together), then records
states through the library API for SECONDS and prints one JSON line: records, errors, seconds.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from vlk_memact import Memory, Settings  # noqa: E402
from vlk_memact.core.errors import VlkError  # noqa: E402


def main() -> None:
    url, project, session, seconds, start_at, texts_file = sys.argv[1:7]
    texts = json.loads(Path(texts_file).read_text(encoding="utf-8"))
    settings = Settings.from_env({"VLK_LOG_LEVEL": "WARNING"})
    records = errors = 0
    with Memory(url, settings=settings, project=project) as memory:
        delay = float(start_at) - time.time()
        if delay > 0:
            time.sleep(delay)
        started = time.perf_counter()
        deadline = started + float(seconds)
        i = 0
        while time.perf_counter() < deadline:
            text = f"$ step {i} of {session} at {time.time():.6f}\n{texts[i % len(texts)]}"
            try:
                memory.record_state(raw_log=text, session_id=session)
                records += 1
            except VlkError:
                errors += 1
            i += 1
        elapsed = time.perf_counter() - started
    print(json.dumps({"records": records, "errors": errors, "seconds": elapsed}))


if __name__ == "__main__":
    main()
