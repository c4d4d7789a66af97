"""OpenTelemetry spans, off unless configured (``Config(tracing=True)`` or
``MEMSTREAM_TRACING=1``; the ``otel`` extra installs the API and SDK).

memstream only makes spans: they go to the tracer provider the application sets up, so nothing
leaves the process unless the user configures an exporter. ``memstream serve`` sets one up
from the standard environment variables (``setup_from_env``): ``OTEL_EXPORTER_OTLP_ENDPOINT``
(or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) for OTLP over HTTP, ``OTEL_TRACES_EXPORTER=console``
to print spans.

Spans: ``memstream.add``, ``memstream.search`` with children ``memstream.embed``,
``memstream.keyword_search``, ``memstream.vector_search``, ``memstream.rerank`` (the learned
stage) and ``memstream.store.<method>`` (the store's reads and writes); ``memstream.enrich``
(the background worker); ``memstream.llm`` (with token counts); and one server span per HTTP
request, continuing the caller's trace from its ``traceparent`` header.

When tracing is off, each instrumented call costs one flag test.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from collections.abc import Callable, Iterator
from typing import Any, ParamSpec, TypeVar

from ..errors import MissingDependency

__all__ = ["enable", "enabled", "flush", "setup_from_env", "span", "traced", "wrap"]

P = ParamSpec("P")
R = TypeVar("R")
log = logging.getLogger("memstream.tracing")

_tracer: Any = None
_NOTHING = contextlib.nullcontext()


def enable() -> None:
    """Make spans from now on (in this process), through OpenTelemetry's global provider."""
    global _tracer
    if _tracer is not None:
        return
    try:
        from opentelemetry import trace
    except ImportError as exc:
        raise MissingDependency("tracing needs OpenTelemetry: pip install 'memstream[otel]'"
                                ) from exc
    _tracer = trace.get_tracer("memstream")


def disable() -> None:
    global _tracer
    _tracer = None


def enabled() -> bool:
    return _tracer is not None


def span(name: str, **attributes: Any) -> contextlib.AbstractContextManager[Any]:
    """A span around a block (nothing when tracing is off). None attributes are left out."""
    if _tracer is None:
        return _NOTHING
    found: contextlib.AbstractContextManager[Any] = _tracer.start_as_current_span(
        name, attributes={k: v for k, v in attributes.items() if v is not None})
    return found


def traced(name: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """A decorator: the function's calls are spans named ``name``."""
    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            if _tracer is None:
                return fn(*args, **kwargs)
            with _tracer.start_as_current_span(name):
                return fn(*args, **kwargs)
        return run
    return decorate


#: store and embedder methods whose spans have their own names
_NAMES = {"vector_search": "memstream.vector_search",
          "embed_query": "memstream.embed", "embed_documents": "memstream.embed",
          "embed": "memstream.embed"}


#: the parts of a store (``store.protocol.Store``, and its API keys): their methods' spans
#: are ``memstream.store.<method>``
_PARTS = frozenset({"records", "indexes", "queues", "kv", "transfer", "events", "keys",
                    "graph"})


class _Traced:
    """A proxy that makes a span of every method call of the object it wraps."""

    def __init__(self, inner: Any, prefix: str) -> None:
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "_prefix", prefix)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if name in _PARTS:  # a store's part: its calls are the store's, named as before
            return _Traced(value, self._prefix)
        if name.startswith("_") or not callable(value):
            return value
        label = _NAMES.get(name, f"{self._prefix}.{name}")

        @functools.wraps(value)
        def run(*args: Any, **kwargs: Any) -> Any:
            # a store or embedder call is a span only inside a traced operation: the polls of
            # background loops (webhooks, subscribers, key checks) make no traces of their own
            if _tracer is None or not _inside():
                return value(*args, **kwargs)
            with _tracer.start_as_current_span(label):
                return value(*args, **kwargs)
        return run

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._inner, name, value)


def _inside() -> bool:
    from opentelemetry import trace

    return bool(trace.get_current_span().get_span_context().is_valid)


def wrap(obj: R, prefix: str) -> R:
    """``obj`` with a span around each of its public method calls (when tracing is on)."""
    return _Traced(obj, prefix)  # type: ignore[return-value]


def setup_from_env() -> str | None:
    """For ``memstream serve``: give OpenTelemetry an SDK provider with the exporter the
    standard environment variables name, unless the process has one. Returns what was set up
    (None: nothing was asked for)."""
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or \
        os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    console = os.environ.get("OTEL_TRACES_EXPORTER", "").lower() == "console"
    if not endpoint and not console:
        return None
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
    except ImportError as exc:
        raise MissingDependency("tracing needs OpenTelemetry: pip install 'memstream[otel]'"
                                ) from exc
    provider = TracerProvider(resource=Resource.create(
        {"service.name": os.environ.get("OTEL_SERVICE_NAME", "memstream")}))
    if endpoint:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError as exc:
            raise MissingDependency("OTLP export needs opentelemetry-exporter-otlp-proto-http: "
                                    "pip install 'memstream[otel]'") from exc
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        what = f"OTLP to {endpoint}"
    else:
        provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
        what = "console"
    trace.set_tracer_provider(provider)
    return what


def flush(timeout_ms: int = 5000) -> None:
    """Send the spans the provider still holds (a server's shutdown calls this: the process
    may end by its signal, without running exit handlers)."""
    if _tracer is None:
        return
    from opentelemetry import trace

    force = getattr(trace.get_tracer_provider(), "force_flush", None)
    if callable(force):
        force(timeout_ms)


@contextlib.contextmanager
def server_span(method: str, route: str, headers: dict[str, str]) -> Iterator[Any]:
    """The span of one HTTP request, a child of the caller's trace (``traceparent``)."""
    if _tracer is None:
        yield None
        return
    from opentelemetry import propagate
    from opentelemetry.trace import SpanKind

    with _tracer.start_as_current_span(
            f"{method} {route}", context=propagate.extract(headers), kind=SpanKind.SERVER,
            attributes={"http.request.method": method, "url.path": route}) as s:
        yield s
