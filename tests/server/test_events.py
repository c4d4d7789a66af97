"""Change events and webhooks through a real server: REST, the server-sent event stream, MCP
tools and ``Client``, each held to the namespaces of its key; the server's own delivery, also
after a SIGKILL mid-delivery."""

from __future__ import annotations

import contextlib
import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from memstream import Client, Memory, ScopeViolation
from memstream.bench.webhooks import Receiver
from memstream.events import EVENT_TYPES
from memstream.server.auth import create_key, revoke_key
from memstream.server.models import EventType

from .conftest import KEYS, Server, start, stop
from .test_mcp import _http, _result


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = start(tmp_path_factory.mktemp("events") / "events.db", keys=KEYS)
    yield s
    stop(s)


def _sse(server: Server, key: str, count: int, *, headers: dict[str, str] | None = None,
         **params: Any) -> list[dict[str, Any]]:
    """The first ``count`` events of the stream (with their ids), or fewer at a read timeout."""
    out: list[dict[str, Any]] = []
    with server.client(key) as http, http.stream(
            "GET", "/v1/events", params=params, headers=headers or {},
            timeout=httpx.Timeout(2.0)) as resp:
        assert resp.status_code == 200, resp.read()
        assert resp.headers["content-type"].startswith("text/event-stream")
        event: dict[str, Any] = {}
        try:
            for line in resp.iter_lines():
                if line.startswith("id: "):
                    event["id"] = int(line[4:])
                elif line.startswith("event: "):
                    event["event"] = line[7:]
                elif line.startswith("data: "):
                    event["data"] = json.loads(line[6:])
                elif not line and "data" in event:
                    out.append(event)
                    event = {}
                    if len(out) == count:
                        break
        except httpx.ReadTimeout:
            pass
    return out


def test_the_api_s_types_are_the_engine_s() -> None:
    assert EventType.__args__ == EVENT_TYPES  # type: ignore[attr-defined]


@pytest.mark.slow
def test_events_rest_and_sse_show_a_key_only_its_namespaces(srv: Server) -> None:
    with srv.client("admin") as a, srv.client("other") as b:
        start_a = a.get("/v1/events/list").json()
        assert start_a == [] or all(e["namespace"] == "team-a" for e in start_a)
        rec = a.post("/v1/memories", json={"content": "Ana's flight is on Friday"}).json()
        b.post("/v1/memories", json={"content": "team b's secret plan"})
        mine = a.get("/v1/events/list").json()
        assert mine and {e["namespace"] for e in mine} == {"team-a"}
        assert mine[-1]["record_ids"] == [rec["id"]] and "text" not in mine[-1]["data"]
        theirs = b.get("/v1/events/list").json()
        assert {e["namespace"] for e in theirs} == {"team-b"}
        denied = a.get("/v1/events/list", params={"namespace": "team-b"})
        assert denied.status_code == 403
        assert a.get("/v1/events", params={"namespace": "team-b"}).status_code == 403
    streamed = _sse(srv, "admin", 50, after=0)
    assert streamed and {e["data"]["namespace"] for e in streamed} == {"team-a"}
    assert [e["id"] for e in streamed] == [e["data"]["seq"] for e in streamed]
    both = _sse(srv, "both", 50, after=0)
    assert {e["data"]["namespace"] for e in both} == {"team-a", "team-b"}


def test_the_stream_refuses_bad_input_before_it_starts(srv: Server) -> None:
    with srv.client("reader") as http:
        for params in ({"after": -1}, {"after": "x"}, {"types": "created"},
                       {"namespace": "not a namespace!"}):
            resp = http.get("/v1/events", params=params)
            assert resp.status_code == 422, (params, resp.text)
            assert resp.json()["error"]["type"] == "InvalidInput"
        assert http.get("/v1/events", params={"namespace": "team-b"}).status_code == 403
    with httpx.Client(base_url=srv.url) as anonymous:
        assert anonymous.get("/v1/events").status_code == 401


@pytest.mark.slow
def test_the_stream_resumes_after_last_event_id_and_filters_types(srv: Server) -> None:
    with srv.client("writer") as w:
        ids = [w.post("/v1/memories", json={"content": f"note {i}"}).json()["id"]
               for i in range(3)]
        w.delete(f"/v1/memories/{ids[0]}")
    events = _sse(srv, "reader", 100, after=0)
    mid = events[-3]["id"]
    resumed = _sse(srv, "reader", 100, headers={"Last-Event-ID": str(mid)})
    assert [e["id"] for e in resumed] == [e["id"] for e in events if e["id"] > mid]
    deleted = _sse(srv, "reader", 100, after=0, types="deleted")
    assert deleted and {e["event"] for e in deleted} == {"deleted"}


@pytest.mark.slow
def test_a_revoked_key_s_stream_ends(tmp_path: Path) -> None:
    srv = start(tmp_path / "revoke.db", keys={"k": (["ns"], "read"), "w": (["ns"], "write")})
    try:
        with srv.client("k") as http, http.stream("GET", "/v1/events",
                                                 timeout=httpx.Timeout(20.0)) as resp:
            assert resp.status_code == 200
            with Memory(srv.db, embedder="none") as mem:
                key_id = srv.keys["k"].split("_")[1]
                revoke_key(mem.store, key_id, now=time.time())
            lines = []
            for line in resp.iter_lines():  # ends within the recheck interval
                lines.append(line)
            assert any(line == "event: error" for line in lines)
            assert "revoked" in "\n".join(lines)
    finally:
        stop(srv)


def test_a_keyless_stream_ends_when_the_first_key_is_made(tmp_path: Path) -> None:
    srv = start(tmp_path / "open.db")  # no key: the open loopback server
    try:
        with srv.client() as http, http.stream("GET", "/v1/events",
                                               timeout=httpx.Timeout(20.0)) as resp:
            assert resp.status_code == 200
            with Memory(srv.db, embedder="none") as mem:
                create_key(mem.store, name="first", namespaces=["ns"], role="admin",
                           now=time.time())
                mem.add("written after the key, in another namespace", namespace="other")
            lines = list(resp.iter_lines())  # ends within seconds
        assert "event: error" in lines and "requires an API key" in "\n".join(lines)
        assert not any("added" in line for line in lines)
    finally:
        stop(srv)


def test_webhook_routes_need_admin_and_hold_to_the_namespace(srv: Server) -> None:
    with srv.client("admin") as a, srv.client("other") as b, srv.client("writer") as w:
        assert w.post("/v1/webhooks", json={"url": "http://127.0.0.1:9/x"}).status_code == 403
        made = a.post("/v1/webhooks", json={"url": "http://127.0.0.1:9/x",
                                            "types": ["deleted"]})
        assert made.status_code == 201, made.text
        hook = made.json()
        assert hook["secret"].startswith("whsec_") and hook["namespace"] == "team-a"
        assert all("secret" not in h for h in a.get("/v1/webhooks").json())
        assert hook["id"] not in [h["id"] for h in b.get("/v1/webhooks").json()]
        for method, path in (("DELETE", f"/v1/webhooks/{hook['id']}"),
                             ("GET", f"/v1/webhooks/{hook['id']}/dead-letters"),
                             ("POST", f"/v1/webhooks/{hook['id']}/redeliver")):
            assert b.request(method, path).status_code == 404  # not in team-b
            assert b.request(method, path, params={"namespace": "team-a"}).status_code == 403
        assert a.post("/v1/webhooks", json={"url": "file:///etc/passwd"}).status_code == 422
        assert a.post("/v1/webhooks", json={"url": "http://127.0.0.1:9/x",
                                            "types": ["created"]}).status_code == 422
        assert a.get(f"/v1/webhooks/{hook['id']}/dead-letters").json() == []
        assert a.delete(f"/v1/webhooks/{hook['id']}").json() == {"deleted": hook["id"]}


def test_client_and_mcp_tools_hold_to_the_namespace(srv: Server) -> None:
    with Client(srv.url, srv.keys["other"]) as b:
        b.add("for team b only")
        hook = b.register_webhook("http://127.0.0.1:9/b")
        assert [h["id"] for h in b.list_webhooks()] == [hook["id"]]
        assert {e["namespace"] for e in b.list_events()} == {"team-b"}
        with pytest.raises(ScopeViolation):
            b.list_events(namespace="team-a")
        b.delete_webhook(hook["id"])

    async def main() -> None:
        async with _http(srv, "admin") as a, _http(srv, "other") as other:
            made = _result(await a.call_tool("register_webhook",
                                             {"url": "http://127.0.0.1:9/mcp"}))
            listed = _result(await other.call_tool("list_webhooks", {}))
            assert made["id"] not in [h["id"] for h in listed]
            for tool in ("delete_webhook", "webhook_dead_letters", "redeliver_webhook"):
                gone = await other.call_tool(tool, {"webhook_id": made["id"]})
                assert gone.is_error and "NotFound (404)" in gone.content[0].text, tool
                cross = await other.call_tool(tool, {"webhook_id": made["id"],
                                                     "namespace": "team-a"})
                assert cross.is_error and "ScopeViolation (403)" in cross.content[0].text
            reader = await other.call_tool("register_webhook",
                                           {"url": "http://127.0.0.1:9/x",
                                            "namespace": "team-a"})
            assert reader.is_error and "ScopeViolation (403)" in reader.content[0].text
            cross = await other.call_tool("list_events", {"namespace": "team-a"})
            assert cross.is_error and "ScopeViolation (403)" in cross.content[0].text
            events = _result(await other.call_tool("list_events", {"after": 0}))
            assert events and {e["namespace"] for e in events} == {"team-b"}
            _result(await a.call_tool("delete_webhook", {"webhook_id": made["id"]}))
    anyio.run(main)


def test_each_namespace_s_webhook_gets_only_its_own_events(srv: Server) -> None:
    a_hook, b_hook = Receiver().start(), Receiver().start()
    try:
        with Client(srv.url, srv.keys["admin"]) as a, Client(srv.url, srv.keys["other"]) as b:
            made_a = a.register_webhook(a_hook.url)
            made_b = b.register_webhook(b_hook.url)
            a_hook.secret, b_hook.secret = made_a["secret"], made_b["secret"]
            ids_a = {a.add(f"team a note {i}").id for i in range(5)}
            ids_b = {b.add(f"team b note {i}").id for i in range(5)}
            deadline = time.monotonic() + 20
            while (len(a_hook.events) < 5 or len(b_hook.events) < 5) and \
                    time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(1.0)  # anything more would have come by now
            assert {e["record_ids"][0] for e in a_hook.events} == ids_a
            assert {e["record_ids"][0] for e in b_hook.events} == ids_b
            assert {e["namespace"] for e in a_hook.events} == {"team-a"}
            assert {e["namespace"] for e in b_hook.events} == {"team-b"}
            a.delete_webhook(made_a["id"])
            b.delete_webhook(made_b["id"])
    finally:
        a_hook.stop()
        b_hook.stop()


@pytest.mark.slow
def test_the_server_delivers_and_resumes_after_a_sigkill_mid_delivery(tmp_path: Path) -> None:
    slow = Receiver(delay=1.5).start()  # each delivery takes 1.5 s: the kill lands inside one
    srv = start(tmp_path / "deliver.db", keys={"k": (["ns"], "admin")})
    try:
        with Client(srv.url, srv.keys["k"]) as c:
            slow.secret = c.register_webhook(slow.url)["secret"]
            ids = [c.add(f"memory {i}").id for i in range(30)]
        deadline = time.monotonic() + 20
        while not slow.arrivals and time.monotonic() < deadline:
            time.sleep(0.01)
        assert slow.arrivals and not slow.deliveries, "not killed mid-delivery"
        srv.proc.send_signal(signal.SIGKILL)  # while the server waits for the answer
        srv.proc.wait(timeout=10)
        srv = start(srv.db)  # the same store, keys already in it
        srv.keys = {}
        deadline = time.monotonic() + 40
        while len({e["record_ids"][0] for e in slow.events}) < 30 and \
                time.monotonic() < deadline:
            time.sleep(0.1)
        got = [e["record_ids"][0] for e in slow.events]
        assert set(got) == set(ids)  # every event, at least once
        first = list(dict.fromkeys(got))
        assert first == ids  # in order
    finally:
        slow.stop()
        if srv.proc.poll() is None:
            stop(srv)


def test_a_key_holds_a_bounded_number_of_open_streams(tmp_path: Path) -> None:
    """Streams are capped per key (4) and per server: one more is a 429 that says which cap,
    another key still gets its own, and a closed stream gives its slot back."""
    s = start(tmp_path / "caps.db", keys=KEYS)
    try:
        with contextlib.ExitStack() as open_streams:
            http = open_streams.enter_context(s.client("reader"))
            for _ in range(4):
                resp = open_streams.enter_context(http.stream("GET", "/v1/events"))
                assert resp.status_code == 200
            with http.stream("GET", "/v1/events") as over:
                assert over.status_code == 429
                assert "streams_per_key" in over.read().decode()
            with s.client("admin") as other, other.stream("GET", "/v1/events") as resp:
                assert resp.status_code == 200  # another key has its own slots
        deadline = time.monotonic() + 10  # the server notices the closed streams
        while True:
            with s.client("reader") as http, http.stream("GET", "/v1/events") as resp:
                if resp.status_code == 200:
                    break
            assert time.monotonic() < deadline, "the closed streams' slots never came back"
            time.sleep(0.2)
    finally:
        stop(s)
