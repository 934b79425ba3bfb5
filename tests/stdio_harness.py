"""A stdio server child for the stress tests: raw line-delimited JSON-RPC pipes, robust to any reply.

`mcp_clients.RawServer` keys responses by their id as is; the stress tests also send ids that are
objects or arrays (hostile input) and must tell apart "the server answered" from "the server was
killed", so this pipe keys responses by the canonical JSON of their id, checks every stdout line
as it arrives, and can drain what a killed server wrote before it died.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Mapping
from typing import IO, Any

from mcp_clients import SERVER_ARGS, SERVER_COMMAND, JsonRpcWriter, initialize_params


def id_key(request_id: Any) -> str:
    """A hashable, canonical name for any JSON value used as a JSON-RPC id."""
    return json.dumps(request_id, sort_keys=True, ensure_ascii=True)


def is_valid_jsonrpc_output(message: Any) -> bool:
    """What a server may write to stdout: a JSON-RPC 2.0 response, notification or request."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return False
    if "method" in message:
        return isinstance(message["method"], str)
    if "id" not in message or ("result" in message) == ("error" in message):
        return False
    request_id = message["id"]  # JSON-RPC 2.0: a String, a Number or Null
    if isinstance(request_id, bool) or not isinstance(request_id, (str, int, float, type(None))):
        return False
    if "error" in message:
        error = message["error"]
        return (
            isinstance(error, dict)
            and isinstance(error.get("code"), int)
            and isinstance(error.get("message"), str)
        )
    return True


class ServerPipe(JsonRpcWriter):
    """`python -m vlk_memact` as a child process, driven line by line over stdin/stdout.

    A reader thread queues every stdout line; `wait_for` parses them, fails on anything that is not
    valid JSON-RPC output, and files responses under `id_key(id)`.
    """

    def __init__(self, env: Mapping[str, str], stderr: IO[bytes]) -> None:
        self.process = subprocess.Popen(
            [SERVER_COMMAND, *SERVER_ARGS],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=dict(env),
        )
        self.responses: dict[str, dict[str, Any]] = {}  # the first response for each id
        self.lines_read = 0
        self.error_codes: Counter[int] = Counter()  # over every error response, ids repeated or not
        self._queue: queue.Queue[bytes | None] = queue.Queue()
        self._next_id = 0
        self._reader = threading.Thread(target=self._read_stdout, name="server-pipe-stdout", daemon=True)
        self._reader.start()

    def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._queue.put(line)
        self._queue.put(None)

    # ---- writing ----

    def tool_request(self, name: str, arguments: dict[str, Any]) -> str:
        return self.request("tools/call", {"name": name, "arguments": arguments})

    # ---- reading ----

    def _take(self, line: bytes) -> None:
        self.lines_read += 1
        try:
            message = json.loads(line)
        except ValueError as exc:
            raise AssertionError(f"stdout line is not JSON: {line[:300]!r}") from exc
        assert is_valid_jsonrpc_output(message), f"stdout line is not JSON-RPC output: {line[:300]!r}"
        if "id" in message and "method" not in message:
            self.responses.setdefault(id_key(message["id"]), message)
            if "error" in message:
                self.error_codes[message["error"]["code"]] += 1

    def wait_for(self, *ids: Any, timeout: float = 30.0) -> list[dict[str, Any]]:
        """Read until every id has its response; return them in the order asked."""
        keys = [id_key(i) for i in ids]
        deadline = time.monotonic() + timeout
        while not all(k in self.responses for k in keys):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(
                    f"no response for {[k for k in keys if k not in self.responses]} in {timeout}s"
                )
            try:
                line = self._queue.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                self._queue.put(None)  # stay at EOF for later reads
                raise EOFError(
                    f"server closed stdout (exit code {self.process.poll()}) before answering {keys}"
                )
            self._take(line)
        return [self.responses[k] for k in keys]

    def call(self, method: str, params: Any = None, timeout: float = 30.0) -> dict[str, Any]:
        (response,) = self.wait_for(self.request(method, params), timeout=timeout)
        return response

    def initialize(self, protocol_version: str = "2025-06-18") -> dict[str, Any]:
        response = self.call("initialize", initialize_params(protocol_version), timeout=60)
        assert "result" in response, response
        self.notify("notifications/initialized")
        return response

    def drain(self, timeout: float = 10.0) -> None:
        """After the process ended: read whatever it wrote before it died, up to EOF."""
        self._reader.join(timeout)
        while True:
            try:
                line = self._queue.get_nowait()
            except queue.Empty:
                return
            if line is None:
                self._queue.put(None)
                return
            self._take(line)

    def close_stdin_and_wait(self, timeout: float) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        code = self.process.wait(timeout=timeout)
        self.drain(timeout)
        return code

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)
        try:
            if self.process.stdin is not None:
                self.process.stdin.close()
        except OSError:  # a broken pipe to a killed child
            pass


def tool_data(response: dict[str, Any]) -> dict[str, Any]:
    """structuredContent of a successful tools/call response; fails on an error of any kind."""
    assert "error" not in response, f"JSON-RPC error: {response['error']}"
    result = response["result"]
    assert result.get("isError") is not True, f"tool error: {result['content'][0]['text']}"
    return result["structuredContent"]


# ---- words: distinct texts must differ in words, not numbers (fingerprints mask numbers) ----

WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
    "quebec",
    "romeo",
    "sierra",
    "tango",
    "uniform",
    "victor",
    "whiskey",
    "xray",
    "yankee",
    "zulu",
]


def words_for(number: int, count: int = 3) -> str:
    """`count` words naming `number` in base 26: distinct numbers give distinct word sequences."""
    assert 0 <= number < len(WORDS) ** count
    picked = []
    for _ in range(count):
        number, digit = divmod(number, len(WORDS))
        picked.append(WORDS[digit])
    return " ".join(picked)


# ---- the crash writer: a library-API writer meant to be killed with SIGKILL ----
#
# It lives here rather than in test_crash_safety.py so that its process does not import pytest:
# each crash round starts one, and start-up time is the crash test's budget.
# Run as: python tests/stdio_harness.py crash-writer DATABASE_URL PROJECT SEED

CRASH_SESSIONS = ("crash-alpha", "crash-bravo", "crash-charlie")
CRASH_LOOPS = tuple(f"PermissionError: write to {words_for(i, 2)} denied by policy" for i in range(6))


def crash_writer(database_url: str, project: str, seed: int) -> None:
    """Loop over record / fetch (pipeline) / time travel / revoke, printing one JSON line per
    acknowledged operation AFTER the call returned, flushed, so the parent knows what was committed."""
    assert 0 <= seed < 100, "distinct texts are numbered seed * 4096 + n, in four words"
    import random
    import sys

    from vlk_memact import Memory, Settings

    rng = random.Random(seed)

    def ack(**fields: Any) -> None:
        sys.stdout.write(json.dumps(fields) + "\n")
        sys.stdout.flush()

    # Settings (retention, log level) come from the environment the test gives this process.
    with Memory(database_url, settings=Settings.from_env(), project=project) as memory:
        ack(op="ready")
        for n in range(4096):
            session = rng.choice(CRASH_SESSIONS)
            roll = rng.random()
            if roll < 0.70:
                if rng.random() < 0.35:
                    text = rng.choice(CRASH_LOOPS)  # repeats: the next pipeline archives them
                else:
                    text = f"observed {words_for(seed * 4096 + n, 4)} while building"
                result = memory.record_state(raw_log=text, session_id=session)
                ack(op="record", id=result.timeline_id, session=session, text=text)
            elif roll < 0.90:
                context = memory.fetch_context(session_id=session)
                ack(
                    op="fetch",
                    session=session,
                    anchors=[loop.anchor_id for loop in context.loops],
                    archived=[i for loop in context.loops for i in loop.archived_ids],
                    merged=[merge.consolidated_id for merge in context.merges],
                )
                if context.present_ids and rng.random() < 0.5:
                    targets = rng.sample(
                        context.present_ids, min(len(context.present_ids), rng.randint(1, 3))
                    )
                    travel = memory.time_travel(
                        target_timeline_ids=targets,
                        learning=f"avoid {words_for(rng.randrange(26**3))} when building",
                        raw_log_excerpt="observed while building",
                        session_id=session,
                        scope=rng.choice(["session", "project"]),
                    )
                    ack(op="travel", session=session, constraint=travel.constraint_id, moved=travel.moved_ids)
                elif context.constraint_ids and rng.random() < 0.15:
                    target = rng.choice(context.constraint_ids)
                    memory.revoke_future(timeline_id=target, session_id=session)
                    ack(op="revoke", session=session, constraint=target)
            elif roll < 0.99:
                summary = memory.summarize_session(session_id=session)
                ack(op="summary", session=session, total=summary.total)
            else:  # retention over every session, sometimes with VACUUM and a WAL checkpoint
                done = memory.maintenance(vacuum=rng.random() < 0.3)
                ack(op="maintenance", pruned=done.slots_deleted)
        ack(op="done")


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["crash-writer"]:
        crash_writer(sys.argv[2], sys.argv[3], int(sys.argv[4]))
