"""The server's security policy, decided in one place.

- **Keys.** Whether the server requires API keys is decided once, when the app is made: keys
  are required when any active key exists (or when asked for). A server that requires keys
  never stops requiring them, even when its last key is revoked; an open server starts
  requiring them as soon as a key is created. Nothing a client or an operator does while the
  server runs makes it more open.
- **Open only on loopback.** A server without keys serves 127.0.0.1 / ::1 only:
  ``create_app`` refuses any other address.
- **Browsers.** A loopback server answers only requests whose ``Host`` is a loopback name
  (no DNS rebinding); request bodies must be JSON (``application/json``, or JSON Lines for
  ``/v1/import``), so a web page cannot send one with a simple cross-site form or ``fetch``;
  and a request without a key that a browser marks as cross-site (``Sec-Fetch-Site`` or an
  ``Origin`` other than the server's) is refused.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from ..core.routes import ROUTES
from ..errors import InvalidInput, ScopeViolation, UnsupportedMediaType
from ..store import Store
from .auth import keys_enabled

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_JSON = ("application/json",)
_JSON_LINES = ("application/x-ndjson", "application/jsonl", "application/json",
               "application/jsonlines")


class KeyPolicy:
    """Whether requests need an API key: decided when the server starts, never relaxed.

    With ``require=None`` keys are required when the store holds an active key; while no key
    exists the store is looked at again (at most once a second) so that the first key created
    takes effect. ``require=True`` requires keys from the start; ``require=False`` is an
    explicitly open server (loopback only), which stays open.
    """

    def __init__(self, store: Store, require: bool | None = None) -> None:
        self._store = store
        self._explicit = require is not None
        self._required = bool(require) if require is not None else keys_enabled(store)
        self._checked = time.monotonic()

    @property
    def required(self) -> bool:
        if self._required or self._explicit:
            return self._required
        if time.monotonic() - self._checked > 1.0:  # only ever from open to closed
            self._required = keys_enabled(self._store)
            self._checked = time.monotonic()
        return self._required


def is_loopback(host: str) -> bool:
    return host.strip("[]").lower() in LOOPBACK or host.startswith("127.")


def check_bind(policy: KeyPolicy, host: str) -> None:
    """Refuse to serve a non-loopback address without keys."""
    if not policy.required and not is_loopback(host):
        raise InvalidInput(
            f"refusing to serve {host} without API keys: anyone who can reach it would be "
            "admin of every namespace. Create a key first (`memstream keys create --namespace "
            "<ns> --role admin`) or serve 127.0.0.1")


def _hostname(value: str) -> str:
    """The host part of a Host header or an origin (without port or brackets), lowercased."""
    netloc = urlsplit(value).netloc if "://" in value else value
    if netloc.startswith("["):
        return netloc[1:netloc.find("]")].lower() if "]" in netloc else netloc.lower()
    return netloc.rsplit(":", 1)[0].lower() if netloc.count(":") == 1 else netloc.lower()


def check_host(headers: Mapping[str, str], allowed: Iterable[str] | None) -> None:
    """``allowed``: host names the server answers to (None: any)."""
    if allowed is None:
        return
    host = _hostname(headers.get("host", ""))
    if host not in set(allowed):
        raise ScopeViolation(f"this server does not answer to host {host!r}; use "
                             "http://127.0.0.1:<port> (requests for other names are refused "
                             "as DNS rebinding)")


def check_browser(headers: Mapping[str, str], *, has_key: bool, allowed: Iterable[str] | None
                  ) -> None:
    """Refuse a request without a key that a browser sent from another site."""
    if has_key:
        return  # a page can only send an Authorization header with CORS, which is off
    if headers.get("sec-fetch-site", "") in ("cross-site", "same-site"):
        raise ScopeViolation("cross-site requests without an API key are refused")
    origin = headers.get("origin")
    if origin is not None and origin != "null":
        here = _hostname(headers.get("host", ""))
        if _hostname(origin) != here or (allowed is not None and here not in set(allowed)):
            raise ScopeViolation(f"requests from origin {origin!r} without an API key are "
                                 "refused")
    elif origin == "null":
        raise ScopeViolation("requests from an opaque origin without an API key are refused")


def check_content_type(method: str, path: str, headers: Mapping[str, str]) -> None:
    """A request with a body must say it is JSON (JSON Lines for /v1/import)."""
    if method not in _BODY_METHODS:
        return
    length = headers.get("content-length")
    chunked = "chunked" in headers.get("transfer-encoding", "").lower()
    kind = headers.get("content-type", "").split(";")[0].strip().lower()
    if not kind and not chunked and length in (None, "0"):
        return  # no body
    accepted = _JSON_LINES if path == ROUTES["import"].url else _JSON
    if kind not in accepted:
        raise UnsupportedMediaType(
            f"the request body must be sent as {accepted[0]} (got {kind or 'no content type'!r}); "
            f"set the header 'Content-Type: {accepted[0]}'")
