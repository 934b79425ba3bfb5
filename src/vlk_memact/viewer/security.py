"""The viewer's guard: launch token, session cookie, Host and Origin checks, security headers.

Recorded text is attacker-influenced tool output and the viewer runs on a person's machine, so every
request must prove it comes from the person who started it (the token printed at launch, then an
HttpOnly SameSite=Strict cookie), be addressed to this server by name (Host: a DNS-rebinding page
cannot forge it) and, for anything but a plain read, come from a page of this server (Origin, and
Sec-Fetch-Site where the browser sends it). The headers keep a page from running any script but the
viewer's own file (CSP), from being framed, cached, or leaking its URL to another site.

The referrer policy is `same-origin`, not `no-referrer`: under `no-referrer` a browser sends
`Origin: null` on the viewer's own POSTs (the Fetch standard ties the Origin of a non-CORS request to
the referrer policy), and the origin check could not tell them from a foreign sandboxed page's.
`same-origin` sends the origin (and the path, which never holds the token) to this server only, and
nothing at all to any other site.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qsl, quote, urlencode

from markupsafe import escape
from starlette.types import ASGIApp, Message, Receive, Scope, Send

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
REFERRER_POLICY = "same-origin"
SECURITY_HEADERS = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", REFERRER_POLICY.encode()),
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]
SAFE_METHODS = ("GET", "HEAD")
# Sec-Fetch-Site values a browser sends for a request made by a page of this origin (or typed by the user).
OWN_FETCH_SITES = ("same-origin", "none")
TOKEN_PARAM = "token"


@dataclass
class Secrets:
    """Per-launch random values: the token in the printed URL, the cookie it is exchanged for, the CSRF token."""

    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    cookie: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))

    def csrf_ok(self, offered: str | None) -> bool:
        return offered is not None and hmac.compare_digest(offered.encode(), self.csrf.encode())


def allowed_hosts(host: str, port: int, names: Iterable[str]) -> set[str]:
    """Host header values this server answers to: its loopback names and address, and names given."""
    hosts = {f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}"}
    if host not in ("0.0.0.0", "::"):
        hosts.add(f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
    for name in names:
        hosts.add(name if ":" in name.lstrip("[").split("]")[-1] else f"{name}:{port}")
    return hosts


class Guard:
    """ASGI middleware in front of every route, static files and the event stream included."""

    def __init__(self, app: ASGIApp, keys: Secrets, hosts: set[str], cookie_name: str) -> None:
        self.app = app
        self.keys = keys
        self.hosts = hosts
        self.origins = {f"http://{h}" for h in hosts}
        self.cookie_name = cookie_name

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":  # the viewer has none: never let one past the checks below
            await receive()
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k, v) for k, v in SECURITY_HEADERS if k not in names]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        method = scope["method"]
        if headers.get("host") not in self.hosts:
            # DNS rebinding: a foreign page whose name resolves to 127.0.0.1 still sends its own name.
            await _plain(send_with_headers, 421, "This viewer answers only to its own address (Host header refused).")
            return
        refused = self._foreign(method, headers.get("origin"), headers.get("sec-fetch-site"))
        if refused:
            await _plain(send_with_headers, 403, refused)
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        offered = [v for k, v in query if k == TOKEN_PARAM]
        if offered:
            if method in SAFE_METHODS and hmac.compare_digest(offered[-1].encode(), self.keys.token.encode()):
                await self._exchange(send_with_headers, scope["path"], [(k, v) for k, v in query if k != TOKEN_PARAM])
                return
            await _unauthorized(send_with_headers)
            return
        if not self._has_cookie(headers.get("cookie")):
            await _unauthorized(send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)

    def _foreign(self, method: str, origin: str | None, fetch_site: str | None) -> str | None:
        """Why a request is refused as not coming from a page of this viewer; None when it may go on.

        `Origin: null` (a sandboxed frame, a data: or file: page, a redirect through another site) is
        never one of ours: our pages send their origin, their referrer policy keeps it. A browser's
        Sec-Fetch-Site cannot be set by a page, so a write it calls cross-site or same-site (another port
        of this host) is refused even when an Origin header looks right.
        """
        if origin is not None and origin not in self.origins:
            if origin == "null":
                return "Cross-origin request refused (Origin: null: the request did not come from a viewer page)."
            return f"Cross-origin request refused (it came from {origin[:100]}, not from this viewer)."
        if method in SAFE_METHODS:
            return None
        if origin is None:
            return "A request that changes something must come from a viewer page (it carried no Origin)."
        if fetch_site is not None and fetch_site not in OWN_FETCH_SITES:
            return f"Cross-site request refused (the browser says it came from a {fetch_site[:20]} page)."
        return None

    def _has_cookie(self, header: str | None) -> bool:
        if not header:
            return False
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(header)
        except CookieError:
            return False
        morsel = jar.get(self.cookie_name)
        return morsel is not None and hmac.compare_digest(morsel.value.encode(), self.keys.cookie.encode())

    async def _exchange(self, send: Send, path: str, rest: list[tuple[str, str]]) -> None:
        """Swap the token for the cookie and drop the token from the address bar (and from history)."""
        # Re-encoded, and never "//host": the redirect stays on this server.
        target = "/" + quote(path.lstrip("/")) + ("?" + urlencode(rest) if rest else "")
        cookie = f"{self.cookie_name}={self.keys.cookie}; HttpOnly; SameSite=Strict; Path=/"
        await send({"type": "http.response.start", "status": 303, "headers": [
            (b"location", target.encode("latin-1", "replace")), (b"set-cookie", cookie.encode()),
            (b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})


async def _plain(send: Send, status: int, text: str) -> None:
    body = text.encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def _unauthorized(send: Send) -> None:
    body = (
        "<!doctype html><html lang=en><meta charset=utf-8><title>vlk-memact viewer: sign-in needed</title>"
        "<h1>Open the address printed by <code>vlk-memact ui</code></h1>"
        f"<p>{escape('This viewer needs the one-time link it printed when it started (it carries a token). ')}"
        "Restarting the viewer prints a new one.</p>"
    ).encode()
    await send({"type": "http.response.start", "status": 401, "headers": [
        (b"content-type", b"text/html; charset=utf-8"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
