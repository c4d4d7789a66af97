"""The REST routes of change events and webhooks, and the server-sent event stream.

``GET /v1/events`` streams the change events of the namespaces the key may use (or one of them)
as server-sent events: ``id:`` is the event number, ``event:`` its type, ``data:`` its JSON. A
client that reconnects sends ``Last-Event-ID`` (browsers do) and gets what it missed, while the
outbox keeps it. The key is checked again every few seconds: a revoked key's stream ends.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import StreamingResponse

from ..core.routes import PREFIX
from ..errors import MemstreamError
from .auth import authenticate, keys_enabled
from .catalog import Subscription, route
from .models import (
    MAX_INT,
    EventsRequest,
    EventType,
    NamespaceRequest,
    StreamRequest,
    WebhookRef,
    WebhookRequest,
)
from .routes import _req, _run

router = APIRouter(prefix=PREFIX)

POLL = 0.25  # seconds between two reads of the outbox
KEEPALIVE = 15.0  # seconds of silence before a comment line keeps proxies from closing
RECHECK = 5.0  # seconds between two checks that the key is still valid


@route(router, "list_events", tags=["events"])
def list_events(request: Request, namespace: str | None = None,
                after: int = Query(0, ge=0, le=MAX_INT), limit: int = Query(100, ge=1, le=1000),
                types: Annotated[list[EventType] | None, Query()] = None
                ) -> list[dict[str, Any]]:
    """Change events numbered above ``after``, oldest first (poll with the last number)."""
    return _run(request, "list_events",  # type: ignore[no-any-return]
                _req(EventsRequest, namespace=namespace, after=after, limit=limit,
                     types=types or []))


@route(router, "register_webhook", status_code=201, tags=["events"])
def register_webhook(request: Request, body: WebhookRequest) -> dict[str, Any]:
    """Register a webhook; the answer carries its signing secret, shown only now."""
    return _run(request, "register_webhook", body)  # type: ignore[no-any-return]


@route(router, "list_webhooks", tags=["events"])
def list_webhooks(request: Request, namespace: str | None = None) -> list[dict[str, Any]]:
    """The namespace's webhooks and their delivery state."""
    return _run(request, "list_webhooks",  # type: ignore[no-any-return]
                _req(NamespaceRequest, namespace=namespace))


@route(router, "delete_webhook", tags=["events"])
def delete_webhook(request: Request, webhook_id: str,
                   namespace: str | None = None) -> dict[str, Any]:
    return _run(request, "delete_webhook",  # type: ignore[no-any-return]
                _req(WebhookRef, namespace=namespace, webhook_id=webhook_id))


@route(router, "webhook_dead_letters", tags=["events"])
def webhook_dead_letters(request: Request, webhook_id: str,
                         namespace: str | None = None) -> list[dict[str, Any]]:
    return _run(request, "webhook_dead_letters",  # type: ignore[no-any-return]
                _req(WebhookRef, namespace=namespace, webhook_id=webhook_id))


@route(router, "redeliver_webhook", tags=["events"])
def redeliver_webhook(request: Request, webhook_id: str,
                      namespace: str | None = None) -> dict[str, Any]:
    return _run(request, "redeliver_webhook",  # type: ignore[no-any-return]
                _req(WebhookRef, namespace=namespace, webhook_id=webhook_id))


@route(router, "stream_events", tags=["events"], response_class=StreamingResponse)
async def stream_events(request: Request, namespace: str | None = None,
                        after: int | None = Query(None, ge=0, le=MAX_INT),
                        types: Annotated[list[EventType] | None, Query()] = None,
                        last_event_id: str | None = Header(None)) -> StreamingResponse:
    """Server-sent events: every change event of the key's namespaces (or of ``namespace``)
    from now on, or after ``Last-Event-ID`` / ``after`` when given."""
    if last_event_id is not None and last_event_id.strip().isdigit():
        after = int(last_event_id.strip())
    body = _req(StreamRequest, namespace=namespace, after=after, types=types)
    sub: Subscription = await anyio.to_thread.run_sync(
        lambda: _run(request, "stream_events", body))
    who = request.state.principal
    header = request.headers.get("authorization") or request.headers.get("x-api-key")
    holder = f"key:{who.key_id}" if who.key_id else \
        f"ip:{request.client.host if request.client else '-'}"
    request.app.state.streams.take(holder)  # 429 beyond the caps (ServerSettings.streams*)
    return StreamingResponse(
        _stream(request, sub.namespaces, sub.start, sub.types, header, holder),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})


async def _stream(request: Request, spaces: list[str] | None, cursor: int, types: list[str],
                  header: str | None, holder: str) -> AsyncIterator[str]:
    try:
        async for chunk in _events(request, spaces, cursor, types, header):
            yield chunk
    finally:
        request.app.state.streams.give(holder)


async def _events(request: Request, spaces: list[str] | None, cursor: int, types: list[str],
                  header: str | None) -> AsyncIterator[str]:
    mem = request.app.state.memory
    yield "retry: 2000\n\n"
    quiet = checked = time.monotonic()
    while not await request.is_disconnected():
        if header and time.monotonic() - checked > RECHECK:
            checked = time.monotonic()
            try:
                await anyio.to_thread.run_sync(
                    lambda: authenticate(mem.store, header, required=True))
            except MemstreamError as exc:
                yield f"event: error\ndata: {json.dumps({'message': str(exc)})}\n\n"
                return
        last = await anyio.to_thread.run_sync(mem.store.events.last_event_seq)
        events = await anyio.to_thread.run_sync(functools.partial(
            mem.store.events.events_after, spaces, cursor, limit=500, types=types, upto=last))
        # a keyless stream (the open local server) ends as soon as a key exists: it never
        # shows what was written after the server began to require keys
        if events and not header and await anyio.to_thread.run_sync(keys_enabled, mem.store):
            message = "the server now requires an API key: reconnect with one"
            yield f"event: error\ndata: {json.dumps({'message': message})}\n\n"
            return
        for e in events:
            yield f"id: {e.seq}\nevent: {e.type}\ndata: {json.dumps(e.to_dict())}\n\n"
        cursor = events[-1].seq if len(events) == 500 else last
        if events:
            quiet = time.monotonic()
        elif time.monotonic() - quiet > KEEPALIVE:
            quiet = time.monotonic()
            yield f": keepalive {cursor}\n\n"
        if len(events) < 500:
            await anyio.sleep(POLL)
