"""The server application: REST under /v1, MCP over streamable HTTP at /mcp, health at /healthz,
Prometheus metrics at /metrics, one JSON error body for every failure, per-key rate limits,
request size limits, structured access logs and a graceful shutdown that drains requests and
flushes background work."""

from __future__ import annotations

import contextlib
import hmac
import inspect
import json
import logging
import re
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from starlette.convertors import Convertor, register_url_convertor
from starlette.exceptions import HTTPException as StarletteHTTPException

from .. import __version__
from ..core import tracing
from ..core.clock import iso_times
from ..core.routes import PREFIX
from ..engine.delivery import Deliverer
from ..engine.memory import Memory
from ..errors import (
    InvalidInput,
    MemstreamError,
    RateLimited,
    ScopeViolation,
    Unauthenticated,
)
from .apidocs import api_doc_pages
from .auth import OPEN, authenticate
from .errors import error_body, status_for
from .event_routes import router as event_router
from .heap import TRIM_AFTER, trim
from .limits import BodyLimit, Limiter, RateLimiter, SharedRateLimiter
from .mcp import build_mcp
from .routes import router
from .security import (
    LOOPBACK,
    KeyPolicy,
    check_bind,
    check_browser,
    check_content_type,
    check_host,
    is_loopback,
)

access_log = logging.getLogger("memstream.access")
STATIC = Path(__file__).parent / "static"
# The inspector loads nothing from elsewhere and talks only to this server's API.
PAGE_HEADERS = {"Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
                "frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
                "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}


#: the name of the URL convertor that matches the static pages' names, and nothing else
PAGE = "memstream_page"


#: the static pages by name: the inspector (the empty name, ``/``), then the API's documentation
PAGES = ("", "docs", "redoc")


class _Pages(Convertor[str]):
    """Matches the names of ``PAGES``."""

    regex = "(?:" + "|".join(re.escape(n) for n in PAGES) + ")"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


@dataclass(frozen=True)
class ServerSettings:
    max_body_bytes: int = 5 * 2**20
    rate_per_key: float = 100.0
    burst_per_key: int = 200
    drain_seconds: float = 30.0
    #: host names the server answers to (the Host header); None: loopback names on a loopback
    #: address, any name elsewhere (where keys are required)
    allowed_hosts: tuple[str, ...] | None = None
    #: None: keys are required when one exists (see ``security.KeyPolicy``)
    require_keys: bool | None = None
    #: deliver the webhooks' events from this process (``memstream.engine.delivery.Deliverer``)
    deliver_webhooks: bool = True
    #: open event streams (``GET /v1/events``) one key (or, keyless, one address) may hold,
    #: and the server in all: one more is answered 429
    streams_per_key: int = 4
    streams: int = 64
    #: the bearer token a Prometheus scrape sends to read ``/metrics`` when keys are required
    #: (a tenant's key, even an admin one, may not read the whole server's counts); None: only
    #: an open loopback server answers ``/metrics``
    metrics_token: str | None = None
    #: requests handled at once (each in a thread of its own); more wait for a free thread
    threads: int = 128


#: the HTTP methods /metrics counts by name; any other is counted as "other" (a made-up method
#: name must not grow the label set)
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def method_label(method: str) -> str:
    return method if method in METHODS else "other"


class StreamSlots:
    """How many event streams each key (or address) and the server hold open: a stream takes a
    slot while it is open (``take``/``give``), and none is given beyond the caps."""

    def __init__(self, per_key: int, total: int) -> None:
        self.per_key, self.total = per_key, total
        self._open: dict[str, int] = {}
        self._lock = threading.Lock()

    def take(self, holder: str) -> None:
        with self._lock:
            if sum(self._open.values()) >= self.total:
                raise RateLimited(f"the server holds {self.total} open event streams, the most "
                                  "it allows (ServerSettings.streams); try again later", 5.0)
            if self._open.get(holder, 0) >= self.per_key:
                raise RateLimited(f"this key holds {self.per_key} open event streams, the most "
                                  "one key may (ServerSettings.streams_per_key); close one",
                                  5.0)
            self._open[holder] = self._open.get(holder, 0) + 1

    def give(self, holder: str) -> None:
        with self._lock:
            left = self._open.get(holder, 0) - 1
            if left > 0:
                self._open[holder] = left
            else:
                self._open.pop(holder, None)


class TimesJSONResponse(JSONResponse):
    """The API's JSON: every time (a number under a time key: ``created_at``, history ``at``,
    ...) written as ISO 8601 UTC, as in the typed answers (``models.IsoTime``)."""

    def render(self, content: Any) -> bytes:
        return super().render(iso_times(content))


def _scrape(header: str | None, token: str | None) -> bool:
    """Whether a request carries the operator's metrics token."""
    if not token or not header:
        return False
    given = header.removeprefix("Bearer ").strip()
    return hmac.compare_digest(given.encode(), token.encode())


def _error(exc: MemstreamError) -> JSONResponse:
    headers = {}
    if isinstance(exc, RateLimited):
        headers["Retry-After"] = str(max(1, round(exc.retry_after)))
    return JSONResponse(error_body(exc), status_code=status_for(exc), headers=headers)


def _large(headers: Any) -> bool:
    length = headers.get("content-length")
    return bool(length and length.isdigit() and int(length) >= TRIM_AFTER)


async def _limit(limiter: Limiter, caller: str) -> None:
    """``limiter.check``, never on the event loop when it asks a remote service (Redis)."""
    if isinstance(limiter, RateLimiter):  # in memory: microseconds
        limiter.check(caller)
    else:
        await anyio.to_thread.run_sync(limiter.check, caller)


def _not_json(error: Any) -> str:
    """A body that is not JSON, in the user's terms: where it breaks and what was expected."""
    where = error["loc"][-1] if isinstance(error["loc"][-1], int) else 0
    what = str((error.get("ctx") or {}).get("error") or "not JSON")
    return (f"the request body is not valid JSON: at character {where + 1}, "
            f"{what[:1].lower() + what[1:]}; send one JSON object (Content-Type: "
            "application/json)")


def create_app(memory: Memory, settings: ServerSettings | None = None, *,
               host: str = "127.0.0.1", redis_url: str | None = None) -> FastAPI:
    """The ASGI app over one ``Memory`` (closed by the app's shutdown). ``host`` is where the
    server listens: without API keys it must be a loopback address, and on one every request's
    Host must be a loopback name (see ``security``). With ``redis_url``, agents' tiers live in
    that Redis and rate limits are counted there, shared by every server that uses it."""
    settings = settings or ServerSettings()
    policy = KeyPolicy(memory.store, settings.require_keys)
    check_bind(policy, host)
    allowed_hosts = settings.allowed_hosts if settings.allowed_hosts is not None else \
        (tuple(LOOPBACK) if is_loopback(host) else None)
    limiter: Limiter = RateLimiter(settings.rate_per_key, settings.burst_per_key) \
        if not redis_url else SharedRateLimiter(settings.rate_per_key, settings.burst_per_key,
                                                redis_url)
    mcp = build_mcp(memory, redis_url=redis_url, limiter=limiter, policy=policy)
    mcp_app = mcp.streamable_http_app(streamable_http_path="/mcp", stateless_http=True,
                                      json_response=True, host=host)
    registry = CollectorRegistry()
    requests = Counter("memstream_requests", "HTTP requests", ["method", "route", "status"],
                       registry=registry)
    latency = Histogram("memstream_request_seconds", "HTTP request latency", ["route"],
                        registry=registry)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # requests run in threads; a search waiting for a query worker holds one, so the
        # default 40 would leave quick adds queued behind searches at 50 clients
        anyio.to_thread.current_default_thread_limiter().total_tokens = settings.threads
        deliverer = Deliverer(memory.store.events,
                              allow_private=memory.config.webhooks_private).start() \
            if settings.deliver_webhooks else None
        async with mcp.session_manager.run():
            yield
        if deliverer is not None:
            await anyio.to_thread.run_sync(deliverer.stop)
        await anyio.to_thread.run_sync(tracing.flush)
        try:
            memory.flush(timeout=settings.drain_seconds)
        except MemstreamError as exc:  # work stays queued in the database for the next start
            access_log.warning("shutdown before background work finished: %s", exc)
        memory.close()

    # FastAPI's own telemetry (newer releases) is left off: the server's spans are memstream's
    # (tracing.server_span), made only when tracing is configured
    quiet: dict[str, Any] = {"telemetry": {
        "tracing": False, "metrics": False, "logs": False, "operation_spans": False}} \
        if "telemetry" in inspect.signature(FastAPI).parameters else {}
    app = FastAPI(title="memstream", version=__version__, lifespan=lifespan,
                  description="Long-term memory for LLM agents: REST API (MCP at /mcp).",
                  docs_url=None, redoc_url=None, default_response_class=TimesJSONResponse,
                  **quiet)  # docs: install_api_docs
    app.state.memory = memory
    app.state.redis_url = redis_url
    app.state.streams = StreamSlots(settings.streams_per_key, settings.streams)

    @app.middleware("http")
    async def guard_and_log(request: Request,
                            call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        started = time.perf_counter()
        path, headers = request.url.path, request.headers
        key_id = None
        try:
            check_host(headers, allowed_hosts)
            header = headers.get("authorization") or headers.get("x-api-key")
            check_browser(headers, has_key=bool(header), allowed=allowed_hosts)
            address = f"ip:{request.client.host if request.client else '-'}"
            mcp = path == "/mcp" or path.startswith("/mcp/")
            if path == "/metrics" and _scrape(header, settings.metrics_token):
                request.state.principal = OPEN  # the operator's scrape, nothing else
            elif path.startswith(PREFIX + "/") or path == "/metrics" or (mcp and header):
                try:  # a read of the store: in a thread, so that a busy store never holds the loop
                    principal = await anyio.to_thread.run_sync(
                        lambda: authenticate(memory.store, header, required=policy.required))
                except Unauthenticated:
                    await _limit(limiter, address)  # failed attempts count against the address
                    raise
                key_id = principal.key_id
                request.state.principal = principal
                if path == "/metrics" and principal.key_id is not None:
                    raise ScopeViolation(
                        "/metrics counts every tenant's requests, so a tenant's key may not "
                        "read it: scrape it with the operator's token (memstream serve "
                        "--metrics-token, env MEMSTREAM_METRICS_TOKEN)")
            if not (mcp and header):  # MCP counts each tool call against its key
                await _limit(limiter, key_id or address)
            check_content_type(request.method, path, headers)
            with tracing.server_span(request.method, path, dict(headers)) as span:
                response = await call_next(request)
                route = getattr(request.scope.get("route"), "path", None) or "unmatched"
                if span is not None:  # named by route template, as the metrics are
                    span.update_name(f"{request.method} {route}")
                    span.set_attribute("http.route", route)
                    span.set_attribute("http.response.status_code", response.status_code)
        except MemstreamError as exc:
            response = _error(exc)
        if _large(headers) or _large(response.headers):  # what it made is freed: give the
            # pages back to the system (server/heap.py)
            await anyio.to_thread.run_sync(trim)
        elapsed = time.perf_counter() - started
        # labelled by route template (never by raw path: no ids, no unbounded label sets)
        route = getattr(request.scope.get("route"), "path", None) or "unmatched"
        requests.labels(method_label(request.method), route, str(response.status_code)).inc()
        latency.labels(route).observe(elapsed)
        access_log.info(json.dumps({"method": request.method, "path": path,
                                    "status": response.status_code, "key": key_id,
                                    "ms": round(elapsed * 1000, 2)}))
        return response

    @app.exception_handler(MemstreamError)
    async def memstream_error(request: Request, exc: MemstreamError) -> JSONResponse:
        return _error(exc)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        broken = next((e for e in errors if e.get("type") == "json_invalid"), None)
        if broken is not None:
            return _error(InvalidInput(_not_json(broken)))
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                             for e in errors[:5])
        return _error(InvalidInput(f"invalid request: {problems}"))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        """Routing's own errors (no such path, a method the path does not take) in the same
        body as every other error."""
        kind = {404: "NotFound", 405: "MethodNotAllowed"}.get(exc.status_code, "HTTPError")
        message = f"{exc.detail}: {request.method} {request.url.path}"
        return JSONResponse({"error": {"type": kind, "status": exc.status_code,
                                       "message": message}},
                            status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(UnicodeDecodeError)
    async def bad_encoding(request: Request, exc: UnicodeDecodeError) -> JSONResponse:
        return _error(InvalidInput("the request body is not valid UTF-8"))

    @app.get("/healthz", tags=["operations"])
    def healthz() -> dict[str, Any]:
        memory.store.kv.get_meta("schema_version")  # the store answers
        return {"status": "ok", "version": __version__}

    @app.get("/metrics", tags=["operations"], response_class=Response)
    def metrics() -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    def inspector() -> Response:
        """The memory inspector: a static page that uses the /v1 API with the user's key."""
        return FileResponse(STATIC / "index.html", headers=PAGE_HEADERS)

    app.include_router(router)
    app.include_router(event_router)
    pages = {"": inspector, **api_doc_pages(app)}
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.router.routes.extend(mcp_app.routes)  # POST /mcp: MCP over streamable HTTP

    assert tuple(pages) == PAGES
    register_url_convertor(PAGE, _Pages())

    @app.get(f"/{{page:{PAGE}}}", include_in_schema=False)
    def static_page(page: str) -> Response:
        """The pages that serve static files: the inspector at /, the API's documentation at
        /docs and /redoc (the route matches no other path)."""
        return pages[page]()
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    return app
