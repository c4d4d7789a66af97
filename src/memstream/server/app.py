"""The server application: REST under /v1, MCP over streamable HTTP at /mcp, health at /healthz,
Prometheus metrics at /metrics, one JSON error body for every failure, per-key rate limits,
request size limits, structured access logs and a graceful shutdown that drains requests and
flushes background work."""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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

from .. import __version__
from ..errors import InvalidInput, MemstreamError, RateLimited
from ..memory import Memory
from .auth import authenticate, keys_enabled
from .errors import error_body, status_for
from .inspect import router as inspect_router
from .limits import BodyLimit, Limiter, RateLimiter, SharedRateLimiter
from .mcp import build_mcp
from .routes import router

access_log = logging.getLogger("memstream.access")
STATIC = Path(__file__).parent / "static"
# The inspector loads nothing from elsewhere and talks only to this server's API.
PAGE_HEADERS = {"Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
                "frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
                "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}


@dataclass(frozen=True)
class ServerSettings:
    max_body_bytes: int = 5 * 2**20
    rate_per_key: float = 100.0
    burst_per_key: int = 200
    drain_seconds: float = 30.0


class _Keys:
    """Whether keys are required, re-read from the store at most once a second."""

    def __init__(self, memory: Memory) -> None:
        self.memory, self._at, self._value = memory, 0.0, False

    def required(self) -> bool:
        if time.monotonic() - self._at > 1.0:
            self._value, self._at = keys_enabled(self.memory.store), time.monotonic()
        return self._value


def _error(exc: MemstreamError) -> JSONResponse:
    headers = {}
    if isinstance(exc, RateLimited):
        headers["Retry-After"] = str(max(1, round(exc.retry_after)))
    return JSONResponse(error_body(exc), status_code=status_for(exc), headers=headers)


def create_app(memory: Memory, settings: ServerSettings | None = None, *,
               host: str = "127.0.0.1", redis_url: str | None = None) -> FastAPI:
    """The ASGI app over one ``Memory`` (closed by the app's shutdown). ``host`` is where the
    server listens: on a loopback address MCP also checks Host and Origin headers. With
    ``redis_url``, agents' tiers live in that Redis and rate limits are counted there, shared
    by every server that uses it."""
    settings = settings or ServerSettings()
    limiter: Limiter = RateLimiter(settings.rate_per_key, settings.burst_per_key) \
        if not redis_url else SharedRateLimiter(settings.rate_per_key, settings.burst_per_key,
                                                redis_url)
    mcp = build_mcp(memory, redis_url=redis_url, limiter=limiter)
    mcp_app = mcp.streamable_http_app(streamable_http_path="/mcp", stateless_http=True,
                                      json_response=True, host=host)
    registry = CollectorRegistry()
    requests = Counter("memstream_requests", "HTTP requests", ["method", "route", "status"],
                       registry=registry)
    latency = Histogram("memstream_request_seconds", "HTTP request latency", ["route"],
                        registry=registry)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with mcp.session_manager.run():
            yield
        try:
            memory.flush(timeout=settings.drain_seconds)
        except MemstreamError as exc:  # work stays queued in the database for the next start
            access_log.warning("shutdown before background work finished: %s", exc)
        memory.close()

    app = FastAPI(title="memstream", version=__version__, lifespan=lifespan,
                  description="Long-term memory for LLM agents: REST API (MCP at /mcp).")
    app.state.memory = memory
    app.state.tiers = {}
    app.state.redis_url = redis_url
    keys = _Keys(memory)

    @app.middleware("http")
    async def authenticate_and_log(request: Request,
                                   call_next: Callable[[Request], Awaitable[Response]]
                                   ) -> Response:
        started = time.perf_counter()
        path = request.url.path
        route = path if not path.startswith("/v1/memories/") else "/v1/memories/{id}"
        key_id = None
        try:
            if path.startswith("/v1/"):
                header = request.headers.get("authorization") or request.headers.get("x-api-key")
                principal = authenticate(memory.store, header, required=keys.required())
                key_id = principal.key_id
                limiter.check(key_id or (request.client.host if request.client else "local"))
                request.state.principal = principal
            response = await call_next(request)
        except MemstreamError as exc:
            response = _error(exc)
        elapsed = time.perf_counter() - started
        requests.labels(request.method, route, str(response.status_code)).inc()
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
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                             for e in exc.errors()[:5])
        return _error(InvalidInput(f"invalid request: {problems}"))

    @app.exception_handler(UnicodeDecodeError)
    async def bad_encoding(request: Request, exc: UnicodeDecodeError) -> JSONResponse:
        return _error(InvalidInput("the request body is not valid UTF-8"))

    @app.get("/healthz", tags=["operations"])
    def healthz() -> dict[str, Any]:
        memory.store.get_meta("schema_version")  # the store answers
        return {"status": "ok", "version": __version__}

    @app.get("/metrics", tags=["operations"], response_class=Response)
    def metrics() -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/", include_in_schema=False)
    def inspector() -> FileResponse:
        """The memory inspector: a static page that uses the /v1 API with the user's key."""
        return FileResponse(STATIC / "index.html", headers=PAGE_HEADERS)

    app.include_router(router)
    app.include_router(inspect_router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.router.routes.extend(mcp_app.routes)  # POST /mcp: MCP over streamable HTTP
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    return app
