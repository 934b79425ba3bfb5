"""The stdio transport served by the event loop (server/stdio_pipes.py): the wire stays clean of stray output,
long lines are read whole, the process's descriptors come back as they were, and a wire the loop cannot
serve (a regular file) is served by the SDK's own streams."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

SERVER = r"""
import os, subprocess, sys
from mcp.server import MCPServer
from vlk_memact.server import sdk_private
from vlk_memact.server.stdio_pipes import serve_stdio

server = MCPServer("pipes")
serve_on = sdk_private.serve_stdio

async def saying_which(server, stdin, stdout):
    print("STREAMS", type(stdin).__name__, type(stdout).__name__, file=sys.stderr, flush=True)
    await serve_on(server, stdin, stdout)

sdk_private.serve_stdio = saying_which

@server.tool()
def shout(text: str) -> str:
    '''Echo the text, after writing to stdout as careless code and child processes do.'''
    print("STRAY PRINT", flush=True)
    subprocess.run(["echo", "CHILD OUTPUT"], check=True)
    return text.upper()[:40] + f" ({len(text)} chars)"

serve_stdio(server)
print(f"AFTER blocking={os.get_blocking(1)}", flush=True)
"""


def _message(request_id: int | None, method: str, params: dict | None = None) -> str:
    message: dict = {"jsonrpc": "2.0", "method": method}
    if request_id is not None:
        message["id"] = request_id
    if params is not None:
        message["params"] = params
    return json.dumps(message) + "\n"


HANDSHAKE = _message(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                       "clientInfo": {"name": "t", "version": "0"}}) + _message(
    None, "notifications/initialized")


def _start(tmp_path: Path, stdin: Any = subprocess.PIPE) -> tuple[subprocess.Popen[str], Path]:
    stderr_path = tmp_path / "stderr.txt"
    with stderr_path.open("wb") as stderr:
        process = subprocess.Popen([sys.executable, "-c", SERVER], stdin=stdin, stdout=subprocess.PIPE,
                                   stderr=stderr, text=True)
    return process, stderr_path


def _read_until(process: subprocess.Popen[str], request_id: int) -> list[str]:
    """stdout lines up to the answer to request_id (the client waits for its answers before closing stdin)."""
    assert process.stdout is not None
    lines = []
    while line := process.stdout.readline():
        lines.append(line.rstrip("\n"))
        if line.startswith("{") and json.loads(line).get("id") == request_id:
            return lines
    raise AssertionError(f"no answer to {request_id}: {lines}")


def test_stray_output_misses_the_wire_a_long_line_is_read_whole_and_the_descriptors_come_back(
        tmp_path: Path) -> None:
    process, stderr_path = _start(tmp_path)
    assert process.stdin is not None and process.stdout is not None
    try:
        text = "x" * 5_000_000  # one line far beyond asyncio's default 64 KiB limit
        process.stdin.write(HANDSHAKE + _message(2, "tools/call", {"name": "shout", "arguments": {"text": text}}))
        process.stdin.flush()
        lines = _read_until(process, 2)
        process.stdin.close()
        rest = process.stdout.read().splitlines()
        assert process.wait(timeout=30) == 0
    finally:
        process.kill()
    assert json.loads(lines[-1])["result"]["content"][0]["text"] == "X" * 40 + " (5000000 chars)"
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in lines)  # nothing else reached the wire
    stderr = stderr_path.read_text()
    assert "STREAMS LinesIn TextOut" in stderr  # served by the event loop
    assert "STRAY PRINT" in stderr and "CHILD OUTPUT" in stderr
    assert rest == ["AFTER blocking=True"]  # fd 1 is the wire again, and blocking as print() expects


def test_a_socket_wire_as_node_hosts_give_it_is_served_by_the_loop(tmp_path: Path) -> None:
    """Node's child_process (Claude Code, Gemini CLI, OpenCode) hands a child one socket pair for stdin and
    stdout, not two pipes."""
    ours, theirs = socket.socketpair()
    stderr_path = tmp_path / "stderr.txt"
    with stderr_path.open("wb") as stderr:
        process = subprocess.Popen([sys.executable, "-c", SERVER], stdin=theirs, stdout=theirs, stderr=stderr)
    theirs.close()
    wire = ours.makefile("rwb")
    try:
        wire.write((HANDSHAKE + _message(2, "tools/call", {"name": "shout", "arguments": {"text": "hi"}})).encode())
        wire.flush()
        answers = [json.loads(wire.readline()) for _ in range(2)]
        ours.shutdown(socket.SHUT_WR)  # the client is done: EOF on the server's stdin
        rest = wire.read().decode().splitlines()
        assert process.wait(timeout=30) == 0
    finally:
        process.kill()
        wire.close()
        ours.close()
    assert answers[1]["result"]["content"][0]["text"] == "HI (2 chars)"
    assert "STREAMS LinesIn TextOut" in stderr_path.read_text()
    assert rest == ["AFTER blocking=True"]


def test_a_wire_the_loop_cannot_serve_is_served_by_the_sdk_streams(tmp_path: Path) -> None:
    requests = tmp_path / "requests.jsonl"
    requests.write_text(HANDSHAKE)
    with requests.open("rb") as stdin:  # a regular file: asyncio's pipe transports refuse it
        process, stderr_path = _start(tmp_path, stdin)
        try:
            out, _ = process.communicate(timeout=30)
        finally:
            process.kill()
    assert process.returncode == 0, stderr_path.read_text()
    lines = out.splitlines()
    assert json.loads(lines[0])["result"]["serverInfo"]["name"] == "pipes"
    assert "STREAMS NoneType NoneType" in stderr_path.read_text()  # the SDK opened its own
    assert lines[-1] == "AFTER blocking=True"
