"""Secrets never reach the database file (WAL included) nor any tool output; redaction can be turned off."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from mcp import Client

from vlk_memact import Memory, Settings
from vlk_memact.server import build_server

pytestmark = pytest.mark.anyio


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


# Fake secrets, assembled from pieces so no secret-looking literal sits in this file.
JWT = ".".join([_b64(b'{"alg":"HS256","typ":"JWT"}'), _b64(b'{"sub":"1234567890","name":"Jane"}'),
                "Qm9yaW5nU2lnbmF0dXJlVmFsdWVGb3JUZXN0czEyMzQ"])
PEM_BODY = "MIIEpAIBAAKCAQEA" + "q3xT9vB2" * 20
CASES: list[tuple[str, str, str]] = [
    # (kind, secret bytes that must vanish, the log line that carries it)
    ("aws-access-key", "AKIA" + "Q7XN4RZ2LM5K8WPD", "aws s3 ls failed with key {s}"),
    ("aws-secret-key", "wJalrXUtnFEMI" + "/K7MDENG/bPxRfiCYzQ9ExampleKy", "aws_secret_access_key = {s}"),
    ("gcp-api-key", "AIza" + "SyD3x9Q2w7e4r5t6y7u8i9o0p1a2s3d4f5g", "maps request denied for key={s}"),
    ("azure-storage-key", "AccountKey=" + "Zm9vYmFyYmF6cXV4" * 5 + "ab==",
     "DefaultEndpointsProtocol=https;AccountName=acct;{s};EndpointSuffix=core.windows.net"),
    ("github-token", "ghp_" + "R8sT2uV4wX6yZ8aB0cD2eF4gH6iJ8kL0mN2o", "git push: remote rejected, token {s}"),
    ("gitlab-token", "glpat-" + "Xy7Zk2Qw9Rt4Lm8Np3Vb", "401 Unauthorized using {s}"),
    ("slack-token", "xoxb-" + "2918273645-8273645192-" + "qWeRtYuIoPaSdFgHjKlZxCvB", "slack api error for {s}"),
    ("stripe-key", "sk_live_" + "51Hq8K2eZvKYlo2C9x7Lw3Pq", "Stripe: No such customer (api key {s})"),
    ("openai-api-key", "sk-proj-" + "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5oQ7sU9wY1bD3fH5", "openai.AuthenticationError {s}"),
    ("anthropic-api-key", "sk-ant-api03-" + "Zq7" * 30, "anthropic 401 invalid x-api-key {s}"),
    ("bearer-token", "eyQ9" + "tokenValue7Xk2Lm9Np4Qr8St3Uv6Wx", "curl -H 'Authorization: Bearer {s}' returned 403"),
    ("jwt", JWT, "session cookie {s} expired"),
    ("private-key", PEM_BODY, "-----BEGIN RSA PRIVATE KEY-----\n{s}\n-----END RSA PRIVATE KEY-----"),
    ("url-credentials", "hunter2" + "Secret9", "psql: could not connect to postgres://admin:{s}@db.internal:5432/app"),
    ("secret-assignment", "Pa55w0rd" + "!Winter24", "login failed: password={s} user=admin"),
    ("env-secret", "d8f7a6s5" + "d4f3g2h1j0k9l8", "DATABASE_PASSWORD={s}"),
]


async def every_output(client: Client, session: str) -> str:
    """The text and structured content of every read tool, concatenated."""
    outputs = []
    for tool, args in [("vlk_fetch_context", {}), ("vlk_get_history", {"limit": 500}),
                       ("vlk_search_memory", {"query": "a"}), ("vlk_search_memory", {"query": "REDACTED"}),
                       ("vlk_summarize_session", {})]:
        result = await client.call_tool(tool, {**args, "session_id": session})
        outputs.append(result.content[0].text + json.dumps(result.structured_content))
    return "\n".join(outputs)


def database_bytes(db: Path) -> bytes:
    return b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*"))


@pytest.mark.parametrize(("kind", "secret", "line"), CASES, ids=[c[0] for c in CASES])
async def test_a_secret_never_reaches_the_database_or_any_output(tmp_path: Path, kind: str, secret: str,
                                                                 line: str) -> None:
    db = tmp_path / "vlk.db"
    text = line.format(s=secret)
    with Memory(f"sqlite:///{db}", project="p") as memory:
        async with Client(build_server(memory), mode="legacy") as client:
            seen: list[str] = []
            for _ in range(3):  # three times: a loop, so an anchor and its evidence are made from it too
                result = await client.call_tool("vlk_record_state", {
                    "raw_log": text, "file_context": text, "tool_payload": {"cmd": text}, "session_id": "s"})
                seen.append(result.content[0].text + json.dumps(result.structured_content))
                assert result.structured_content["redacted"], kind
            slot = (await client.call_tool("vlk_record_state", {"raw_log": f"other {text}", "session_id": "s"}))
            result = await client.call_tool("vlk_time_travel", {
                "target_timeline_ids": [slot.structured_content["timeline_id"]], "learning": f"avoid {text}",
                "raw_log_excerpt": text, "session_id": "s"})
            seen.append(result.content[0].text + json.dumps(result.structured_content))
            seen.append(await every_output(client, "s"))
    everything = "\n".join(seen)
    assert secret not in everything and "***REDACTED***" in everything
    raw = database_bytes(db)
    assert secret.encode() not in raw
    assert secret.encode("utf-16-le") not in raw


def test_commit_hashes_uuids_and_ids_are_kept(memory: Memory) -> None:
    text = ("fatal: bad object 9fceb02d0ae598e95dc970b74767f19372d61af8 in request "
            "123e4567-e89b-12d3-a456-426614174000, order id 48213991, unexpected token } at 3:14")
    assert memory.record_state(raw_log=text).redacted == []
    assert memory.get_history().slots[0].raw_log == text


def test_redaction_can_be_turned_off_explicitly(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLK_REDACT_SECRETS", "0")
    secret = "ghp_" + "R8sT2uV4wX6yZ8aB0cD2eF4gH6iJ8kL0mN2o"
    with Memory(f"sqlite:///{db_path}", settings=Settings.from_env(), project="p") as m:
        assert m.record_state(raw_log=f"token {secret}").redacted == []
        assert m.get_history().slots[0].raw_log == f"token {secret}"


def test_a_secret_is_redacted_before_an_overlong_log_is_cut(memory: Memory) -> None:
    secret = "ghp_" + "R8sT2uV4wX6yZ8aB0cD2eF4gH6iJ8kL0mN2o"
    head = "x " * 13_100  # puts the token across the point where a 65,536-character log is cut
    result = memory.record_state(raw_log=head + secret + " y" * 40_000)
    assert result.truncated and "github-token" in result.redacted

