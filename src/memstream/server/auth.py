"""API keys and what they may do.

A key looks like ``ms_<id>_<secret>``. The store keeps the id, the sha256 of the secret, the
namespaces the key may use and its role: ``read`` (get, list, search, context, stats, history,
export), ``write`` (also add, update, delete, learn, record episodes) or ``admin`` (also
delete_all, import, reflect, consolidate). The plain key is shown once, when it is created.
When no key exists the server runs open, bound to 127.0.0.1 only.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from ..core import validate as v
from ..errors import InvalidInput, NotFound, ScopeViolation, Unauthenticated
from ..store import ApiKey, Store, keys_of

ROLES = ("read", "write", "admin")


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: a key (or the open local server, ``key_id`` None, all namespaces)."""

    key_id: str | None
    namespaces: tuple[str, ...] | None
    role: str

    def namespace_for(self, requested: str | None, default: str) -> str:
        if requested is not None:
            return v.namespace(requested)
        if self.namespaces:
            return self.namespaces[0]
        return default

    def authorize(self, namespace: str, need: str) -> None:
        if self.namespaces is not None and namespace not in self.namespaces:
            raise ScopeViolation(f"this API key may not use namespace {namespace!r}; it is bound "
                                 f"to {list(self.namespaces)}")
        if ROLES.index(self.role) < ROLES.index(need):
            raise ScopeViolation(f"this API key has the {self.role!r} role; this needs {need!r}")


OPEN = Principal(None, None, "admin")


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def create_key(store: Store, *, name: str, namespaces: list[str], role: str,
               now: float) -> tuple[str, ApiKey]:
    """Make a key; returns (the plain key, shown only now, and its stored record)."""
    if role not in ROLES:
        raise InvalidInput(f"role must be one of {', '.join(ROLES)}")
    if not namespaces:
        raise InvalidInput("a key needs at least one namespace")
    spaces = tuple(v.namespace(ns) for ns in namespaces)
    key_id, secret = secrets.token_hex(8), secrets.token_urlsafe(32)
    record = ApiKey(key_id, _digest(secret), name or key_id, spaces, role, now)
    keys_of(store).put_key(record)
    return f"ms_{key_id}_{secret}", record


def revoke_key(store: Store, key_id: str, *, now: float) -> None:
    if not keys_of(store).revoke_key(key_id, at=now):
        raise NotFound(f"no API key {key_id!r}; `memstream keys list` shows them")


def list_keys(store: Store) -> list[ApiKey]:
    """Every key record, oldest first (revoked ones too)."""
    return keys_of(store).list_keys()


def keys_enabled(store: Store) -> bool:
    return any(k.revoked_at is None for k in keys_of(store).list_keys())


def authenticate(store: Store, authorization: str | None, *, required: bool) -> Principal:
    """The principal for an ``Authorization: Bearer <key>`` header (or ``X-API-Key`` value)."""
    if not authorization:
        if required:
            raise Unauthenticated("this server needs an API key: send 'Authorization: Bearer "
                                  "<key>' (create one with `memstream keys create`)")
        return OPEN
    token = authorization.removeprefix("Bearer ").strip()
    parts = token.split("_", 2)
    if len(parts) != 3 or parts[0] != "ms":
        raise Unauthenticated("the API key is malformed; keys look like ms_<id>_<secret>")
    record = keys_of(store).get_key(parts[1])
    if record is None or not hmac.compare_digest(record.hash, _digest(parts[2])):
        raise Unauthenticated("the API key is not valid")
    if record.revoked_at is not None:
        raise Unauthenticated("the API key was revoked")
    return Principal(record.id, record.namespaces, record.role)
