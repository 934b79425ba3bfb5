"""The transports: stdio, and Streamable HTTP with bearer-token authentication mapped to tenants.

HTTP is stateless (the SDK's stateless mode), so several replicas behind a load balancer can serve one
PostgreSQL database. DNS-rebinding protection (Host and Origin checks) stays on; binding to anything
but loopback without authentication is refused.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from ..core.errors import ConfigError
from ..engine import Memory
from .metrics import Metrics
from .tools import build_server

log = logging.getLogger(__name__)

MCP_PATH = "/mcp"
MIN_TOKEN_CHARS = 16
LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def parse_tokens(text: str, source: str) -> dict[str, str]:
    """Tokens as a JSON object {token: tenant}, or lines `TOKEN TENANT` / `TOKEN=TENANT` (# comments)."""
    stripped = text.strip()
    pairs: dict[str, str] = {}
    if stripped.startswith("{"):
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{source} is not valid JSON: {exc}") from None
        pairs = {str(k): str(v) for k, v in data.items()}
    else:
        for number, line in enumerate(stripped.replace(",", "\n").splitlines(), start=1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            token, _, tenant = line.replace("=", " ", 1).partition(" ")
            if not tenant.strip():
                raise ConfigError(f"{source} line {number}: expected 'TOKEN TENANT', got a token without a tenant")
            pairs[token.strip()] = tenant.strip()
    for token, tenant in pairs.items():
        if len(token) < MIN_TOKEN_CHARS:
            raise ConfigError(f"{source}: a token of tenant {tenant!r} is shorter than {MIN_TOKEN_CHARS} characters")
    if not pairs:
        raise ConfigError(f"{source} holds no tokens")
    return pairs


def load_tokens(tokens_file: str | None, tokens_env: str | None) -> dict[str, str] | None:
    """Tokens from a file (VLK_AUTH_TOKENS_FILE / --tokens-file) or the VLK_AUTH_TOKENS variable; None if neither."""
    if tokens_file:
        try:
            return parse_tokens(Path(tokens_file).read_text(encoding="utf-8"), tokens_file)
        except OSError as exc:
            raise ConfigError(f"cannot read the tokens file {tokens_file}: {exc.strerror}") from None
    if tokens_env:
        return parse_tokens(tokens_env, "VLK_AUTH_TOKENS")
    return None


class BearerAuth:
    """ASGI middleware: a request needs `Authorization: Bearer <token>` of a known token, else 401."""

    def __init__(self, app: ASGIApp, tokens: Mapping[str, str]) -> None:
        self.app = AuthContextMiddleware(app)
        self.tokens = [(token.encode(), tenant) for token, tenant in tokens.items()]

    def tenant_of(self, header: str | None) -> str | None:
        if not header or not header.lower().startswith("bearer "):
            return None
        offered = header[7:].strip().encode()
        found = None
        for token, tenant in self.tokens:  # compare with every token, in constant time each
            if hmac.compare_digest(offered, token):
                found = tenant
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        tenant = self.tenant_of(headers.get("authorization"))
        if tenant is None:
            body = json.dumps({"error": "invalid_token", "error_description": "a valid bearer token is required"})
            await send({"type": "http.response.start", "status": 401, "headers": [
                (b"content-type", b"application/json"), (b"www-authenticate", b'Bearer error="invalid_token"')]})
            await send({"type": "http.response.body", "body": body.encode()})
            return
        token = AccessToken(token="redacted", client_id=tenant, scopes=[])
        await self.app({**scope, "user": AuthenticatedUser(token)}, receive, send)


def security_settings(host: str, port: int, allowed_hosts: list[str]) -> TransportSecuritySettings:
    """Host and Origin checks stay on: loopback names always, plus the names a proxy forwards."""
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    if not is_loopback(host):
        hosts.append(f"{host}:*")
    for name in allowed_hosts:
        hosts += [name] if ":" in name else [name, f"{name}:*"]
    bare = [h.removesuffix(":*") for h in hosts if h.endswith(":*")]
    origins = [f"{scheme}://{h}" for h in (*hosts, *bare) for scheme in ("http", "https")]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=origins)


def http_app(memory: Memory, tokens: Mapping[str, str] | None, host: str, port: int,
             allowed_hosts: list[str] | None = None) -> Any:
    """The ASGI application: stateless Streamable HTTP at /mcp and the impact counters at /metrics, behind bearer
    auth when tokens are given."""
    if tokens is None and not is_loopback(host):
        raise ConfigError(
            f"refusing to serve on {host} without authentication: set VLK_AUTH_TOKENS or VLK_AUTH_TOKENS_FILE "
            "(or --tokens-file), or bind to 127.0.0.1"
        )
    server = build_server(memory)
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        transport_security=security_settings(host, port, allowed_hosts or []),
        host=host,
    )
    app = Metrics(app, memory)  # GET /metrics, behind the same token (server/metrics.py)
    return BearerAuth(app, tokens) if tokens is not None else app


def serve_http(memory: Memory, tokens: Mapping[str, str] | None, host: str, port: int,
               allowed_hosts: list[str] | None = None) -> None:
    """Run the HTTP transport with uvicorn until interrupted."""
    import uvicorn

    app = http_app(memory, tokens, host, port, allowed_hosts)
    log.info("vlk-memact serving MCP over Streamable HTTP at http://%s:%d%s (%s); database: %s", host, port,
             MCP_PATH, f"{len(tokens)} token(s)" if tokens else "no authentication", memory.database_url)
    # log_config=None: uvicorn logs through ours, to stderr, instead of printing access lines to stdout.
    uvicorn.run(app, host=host, port=port, log_level=memory.settings.logging_level(server=True).lower(), log_config=None)
