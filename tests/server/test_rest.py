"""Every route, every error mapping and every key role, against the real server over HTTP."""

from __future__ import annotations

import json

import pytest

from memstream import PROFILES, Client, NotFound, ScopeViolation, Unauthenticated
from memstream.retrieval.scoring import PAST_RECENCY

from .conftest import SCRAPE, Server, start, stop

NDJSON = {"content-type": "application/x-ndjson"}


def test_health_metrics_openapi(server: Server):
    with server.client() as http:
        assert http.get("/healthz").json()["status"] == "ok"
        spec = http.get("/openapi.json").json()
        assert "/v1/search" in spec["paths"] and "/v1/memories/{memory_id}" in spec["paths"]
        http.get("/v1/stats")  # a counted request (401 without a key)
        assert http.get("/metrics").status_code == 401  # it needs the operator's token
        scrape = {"Authorization": f"Bearer {SCRAPE}"}
        assert "memstream_requests_total" in http.get("/metrics", headers=scrape).text
    with server.client("admin") as http:  # a tenant's key, even an admin one, may not
        assert http.get("/metrics").status_code == 403


def test_every_route_with_an_admin_key(server: Server):
    with server.client("admin") as http:
        rec = http.post("/v1/memories", json={"content": "Ana prefers window seats",
                                              "user_id": "ana", "kind": "preference",
                                              "data": {"seat": "window"}})
        assert rec.status_code == 201 and rec.json()["namespace"] == "team-a"
        rid = rec.json()["id"]
        batch = http.post("/v1/memories/batch", json={"items": [
            {"content": "Ana flies to Oslo on Monday", "user_id": "ana"},
            {"content": "Ana is vegetarian", "user_id": "ana", "kind": "fact"}]})
        assert batch.status_code == 201 and len(batch.json()) == 2
        msgs = http.post("/v1/memories/messages", json={
            "messages": [{"role": "user", "content": "hello there"}], "infer": False})
        assert msgs.json()[0]["event"] == "add"
        listed = http.post("/v1/memories/list", json={"user_id": "ana", "kinds": ["fact"]})
        assert [r["text"] for r in listed.json()] == ["Ana is vegetarian"]
        assert http.get(f"/v1/memories/{rid}").json()["data"] == {"seat": "window"}
        patched = http.patch(f"/v1/memories/{rid}", json={"importance": 0.9})
        assert patched.json()["importance"] == 0.9
        assert [h["event"] for h in http.get(f"/v1/memories/{rid}/history").json()] == [
            "add", "update"]
        hits = http.post("/v1/search", json={"query": "seat preference", "user_id": "ana"})
        assert hits.json()[0]["record"]["id"] == rid
        assert set(hits.json()[0]["explain"]) >= {"recency", "importance", "relevance"}
        ctx = http.post("/v1/context", json={"query": "Ana", "budget": 30}).json()
        assert 0 < ctx["tokens"] <= 30 and ctx["text"].startswith("- ")
        assert http.get("/v1/stats").json()["records"] == 4
        dump = http.get("/v1/export").text
        assert len(dump.splitlines()) == 4
        again = http.post("/v1/import", content=dump.encode(), headers=NDJSON)
        assert again.status_code == 409
        assert http.post("/v1/import", content=dump.encode(), headers=NDJSON,
                         params={"skip_existing": True}).json() == {"imported": 0}
        assert http.post("/v1/reflect").status_code == 200
        assert http.post("/v1/consolidate").status_code == 200
        ep = http.post("/v1/episodes", json={"agent_id": "bot", "episode": {
            "task_id": "t", "score": 0.9, "successes": ["planned first"]}})
        assert ep.status_code == 201
        assert "[WORKS] planned first" in http.get(
            "/v1/episodes/context", params={"agent_id": "bot", "task_id": "t"}).json()["context"]
        assert http.get("/v1/episodes/summary", params={"agent_id": "bot"}).json()[
            "total_episodes"] == 1
        for _ in range(3):
            out = http.post("/v1/learning/outcomes", json={
                "agent": "bot", "project_id": "p", "task": "test the login form",
                "outcome": True, "strategy_used": "fill valid credentials first"})
            assert out.status_code == 201
        advice = http.post("/v1/learning/advice", json={"task": "test the login form",
                                                        "agent": "bot"}).json()
        assert advice["heuristics"][0]["confidence"] == 1.0
        for step in range(3):
            entry = http.post("/v1/agents/entries", json={
                "agent_id": "fox", "contents": {"food": step, "zone": "meadow"}, "step": step})
            assert entry.status_code == 201
        window = http.get("/v1/agents/fox/range", params={"start": 1, "end": 2}).json()
        assert [e["step_number"] for e in window] == [1, 2]
        like = http.post("/v1/agents/fox/similar", json={"state": {"food": 2, "zone": "meadow"},
                                                         "k": 1}).json()
        assert like[0]["step_number"] == 2 and like[0]["similarity"] > 0.9
        assert http.delete(f"/v1/memories/{rid}").json() == {"deleted": rid}
        gone = http.post("/v1/memories/delete", json={"user_id": "ana"})
        assert gone.json() == {"deleted": 2}


def test_old_parameter_names_are_aliases(server: Server):
    """One name per concept (k, budget, kind); the old names still work, and both at once is a
    422 that names the one to keep."""
    with server.client("admin") as http:
        for step in range(2):
            assert http.post("/v1/agents/entries", json={
                "agent_id": "owl", "memory_type": "action", "contents": {"step": step},
                "step": step}).status_code == 201
        assert http.post("/v1/agents/entries", json={
            "agent_id": "owl", "kind": "state", "contents": {"step": 9}, "step": 9}
        ).status_code == 201
        for name in ("kind", "memory_type"):
            got = http.get("/v1/agents/owl/range", params={"start": 0, "end": 9, name: "action"})
            assert [e["step_number"] for e in got.json()] == [0, 1]
            like = http.post("/v1/agents/owl/similar", json={"state": {"step": 9}, "k": 3,
                                                             name: "state"}).json()
            assert [e["step_number"] for e in like] == [9]
        both = http.get("/v1/agents/owl/range", params={"start": 0, "end": 9, "kind": "state",
                                                         "memory_type": "action"})
        assert both.status_code == 422 and "pass only 'kind'" in both.json()["error"]["message"]
        for name in ("budget", "max_tokens"):
            ctx = http.get("/v1/episodes/context", params={"agent_id": "owl", name: 0})
            assert ctx.status_code == 200 and ctx.json()["context"] == ""
        for name in ("k", "top_k"):
            advice = http.post("/v1/learning/advice", json={"task": "t", "agent": "owl",
                                                            name: 2})
            assert advice.status_code == 200
        twice = http.post("/v1/learning/advice", json={"task": "t", "agent": "owl", "k": 2,
                                                       "top_k": 3})
        assert twice.status_code == 422


@pytest.mark.parametrize(("key", "method", "path", "body", "status", "error"), [
    (None, "GET", "/v1/stats", None, 401, "Unauthenticated"),
    ("bogus", "GET", "/v1/stats", None, 401, "Unauthenticated"),
    ("reader", "POST", "/v1/memories", {"content": "x"}, 403, "ScopeViolation"),
    ("writer", "POST", "/v1/memories/delete", {}, 403, "ScopeViolation"),
    ("admin", "GET", "/v1/stats?namespace=team-b", None, 403, "ScopeViolation"),
    ("admin", "GET", "/v1/memories/01NOSUCHRECORD", None, 404, "NotFound"),
    ("admin", "POST", "/v1/memories", {"content": ""}, 422, "InvalidInput"),
    ("admin", "POST", "/v1/memories", {"content": "x", "importance": 3}, 422, "InvalidInput"),
    ("admin", "POST", "/v1/search", {"query": "x", "filters": {"a": {"like": 1}}}, 422,
     "InvalidFilter"),
    ("admin", "POST", "/v1/search", {"query": "x", "surprise": 1}, 422, "InvalidInput"),
    ("admin", "POST", "/v1/memories", {"content": "x", "namespace": "bad ns!"}, 422,
     "InvalidInput"),
])
def test_error_mapping(server: Server, key, method, path, body, status, error):
    headers = {"Authorization": "Bearer ms_nope_nope"} if key == "bogus" else {}
    with server.client(key if key != "bogus" else None) as http:
        resp = http.request(method, path, json=body, headers=headers)
    assert resp.status_code == status, resp.text
    assert resp.json()["error"]["type"] == error
    assert resp.json()["error"]["message"]


def test_conflict_and_payload_limits(server: Server):
    with server.client("admin") as http:
        rec = http.post("/v1/memories", json={"content": "unique"}).json()
        line = json.dumps(rec)
        assert http.post("/v1/import", content=line.encode(), headers=NDJSON).status_code == 409
        big = http.post("/v1/memories", content=b'{"content": "' + b"x" * (6 * 2**20) + b'"}',
                        headers={"content-type": "application/json"})
        assert big.status_code == 413 and big.json()["error"]["type"] == "PayloadTooLarge"
        bad_utf8 = http.post("/v1/import", content=b"\xff\xfe", headers=NDJSON)
        assert bad_utf8.status_code == 422


def test_key_roles(server: Server):
    with server.client("reader") as http:
        assert http.post("/v1/search", json={"query": "anything"}).status_code == 200
        assert http.get("/v1/stats").status_code == 200
        assert http.post("/v1/memories", json={"content": "no"}).status_code == 403
    with server.client("writer") as http:
        rid = http.post("/v1/memories", json={"content": "writer note"}).json()["id"]
        assert http.patch(f"/v1/memories/{rid}", json={"text": "edited"}).status_code == 200
        assert http.post("/v1/reflect").status_code == 403
        assert http.post("/v1/import", content=b"", headers=NDJSON).status_code in (200, 403)
        assert http.delete(f"/v1/memories/{rid}").status_code == 200


def test_isolation_every_route_with_another_namespace_key(server: Server):
    with server.client("admin") as http:
        secret = http.post("/v1/memories", json={"content": "team-a secret launch code"}).json()
        hid = http.post("/v1/webhooks", json={"url": "http://127.0.0.1:9/x"}).json()["id"]
    sid = secret["id"]
    attempts = [
        ("POST", "/v1/memories", {"content": "x", "namespace": "team-a"}, None),
        ("POST", "/v1/memories/batch", {"namespace": "team-a", "items": [{"content": "x"}]},
         None),
        ("POST", "/v1/memories/messages", {"namespace": "team-a", "infer": False,
                                           "messages": [{"content": "x"}]}, None),
        ("POST", "/v1/memories/list", {"namespace": "team-a"}, None),
        ("GET", f"/v1/memories/{sid}", None, {"namespace": "team-a"}),
        ("PATCH", f"/v1/memories/{sid}", {"text": "pwned"}, {"namespace": "team-a"}),
        ("DELETE", f"/v1/memories/{sid}", None, {"namespace": "team-a"}),
        ("POST", "/v1/memories/delete", {"namespace": "team-a"}, None),
        ("GET", f"/v1/memories/{sid}/history", None, {"namespace": "team-a"}),
        ("POST", f"/v1/memories/{sid}/restore", None, {"namespace": "team-a"}),
        ("POST", f"/v1/memories/{sid}/invalidate", {"superseded_by": sid},
         {"namespace": "team-a"}),
        ("POST", "/v1/audit", {"namespace": "team-a"}, None),
        ("POST", "/v1/search", {"query": "secret", "namespace": "team-a"}, None),
        ("POST", "/v1/context", {"query": "secret", "namespace": "team-a"}, None),
        ("POST", "/v1/entities/list", {"namespace": "team-a"}, None),
        ("POST", "/v1/entities/profile", {"name": "x", "namespace": "team-a"}, None),
        ("GET", "/v1/stats", None, {"namespace": "team-a"}),
        ("GET", "/v1/export", None, {"namespace": "team-a"}),
        ("POST", "/v1/reflect", None, {"namespace": "team-a"}),
        ("POST", "/v1/consolidate", None, {"namespace": "team-a"}),
        ("POST", "/v1/episodes", {"namespace": "team-a", "episode": {"score": 1}}, None),
        ("GET", "/v1/episodes/context", None, {"namespace": "team-a"}),
        ("GET", "/v1/episodes/summary", None, {"namespace": "team-a"}),
        ("POST", "/v1/learning/outcomes", {"namespace": "team-a", "agent": "a",
                                           "project_id": "p", "task": "t", "outcome": True,
                                           "strategy_used": "s"}, None),
        ("POST", "/v1/learning/advice", {"namespace": "team-a", "task": "t", "agent": "a"},
         None),
        ("POST", "/v1/agents/entries", {"namespace": "team-a", "agent_id": "fox",
                                        "contents": {"x": 1}, "step": 1}, None),
        ("GET", "/v1/agents/fox/range", None, {"namespace": "team-a", "start": 0, "end": 9}),
        ("POST", "/v1/agents/fox/similar", {"namespace": "team-a", "state": {"x": 1}}, None),
        ("POST", "/v1/inspect/records", {"namespace": "team-a"}, None),
        ("GET", f"/v1/inspect/records/{sid}", None, {"namespace": "team-a"}),
        ("GET", "/v1/inspect/overview", None, {"namespace": "team-a"}),
        ("GET", "/v1/events", None, {"namespace": "team-a"}),
        ("GET", "/v1/events/list", None, {"namespace": "team-a"}),
        ("POST", "/v1/webhooks", {"url": "http://127.0.0.1:9/x", "namespace": "team-a"}, None),
        ("GET", "/v1/webhooks", None, {"namespace": "team-a"}),
        ("DELETE", f"/v1/webhooks/{hid}", None, {"namespace": "team-a"}),
        ("GET", f"/v1/webhooks/{hid}/dead-letters", None, {"namespace": "team-a"}),
        ("POST", f"/v1/webhooks/{hid}/redeliver", None, {"namespace": "team-a"}),
    ]
    with server.client("other") as http:  # every namespaced route of the API is tried
        spec = http.get("/openapi.json").json()
        routes = {(m.upper(), p) for p, ops in spec["paths"].items() for m in ops
                  if p.startswith("/v1/")}
        tried = {(m, p.replace(sid, "{record_id}" if "/inspect/" in p else "{memory_id}")
                  .replace("/fox/", "/{agent_id}/").replace(hid, "{webhook_id}"))
                 for m, p, _, _ in attempts}
        assert routes - tried == {("POST", "/v1/import"), ("GET", "/v1/namespaces")}
        assert http.get("/v1/namespaces").json()["namespaces"] == ["team-b"]
        for method, path, body, params in attempts:
            resp = http.request(method, path, json=body, params=params)
            assert resp.status_code == 403, (method, path, resp.text)
            assert "team-a" not in resp.text or "may not use namespace" in resp.text
        line = json.dumps({**secret, "id": "01AAAAAAAAAAAAAAAAAAAAAAAA"})
        assert http.post("/v1/import", content=line.encode(), headers=NDJSON).status_code == 403
        # without naming a namespace, the key's own namespace is used: nothing of team-a shows
        assert http.post("/v1/search", json={"query": "secret launch code"}).json() == []
        assert http.get(f"/v1/memories/{sid}").status_code == 404
        assert http.get("/v1/export").text == ""
    with server.client("admin") as http:
        assert http.get(f"/v1/memories/{sid}").json()["text"] == "team-a secret launch code"
        assert [h["id"] for h in http.get("/v1/webhooks").json()] == [hid]  # untouched
        http.delete(f"/v1/webhooks/{hid}")


def test_python_client(server: Server):
    with Client(server.url, api_key=server.keys["both"]) as client:
        rec = client.add("Client-made memory about kayaks", namespace="team-b", user_id="k")
        assert client.get(rec.id, namespace="team-b").text == rec.text
        hits = client.search("kayaks", namespace="team-b", k=3)
        recency, importance, relevance = PROFILES["default"].as_tuple()
        assert hits[0].record.id == rec.id and hits[0].explain.weights == (
            recency * PAST_RECENCY, importance, relevance)  # not a question about the present
        assert client.update(rec.id, namespace="team-b", importance=0.7).importance == 0.7
        assert [h.event for h in client.history(rec.id, namespace="team-b")] == ["add", "update"]
        # update takes provenance and the change's time, as Memory.update does (ISO or epoch)
        other = client.add("Kayak rental receipt", namespace="team-b")
        changed = client.update(rec.id, namespace="team-b", provenance=[other.id],
                                at="2030-01-02T03:04:05Z")
        assert changed.provenance == (other.id,)
        assert client.history(rec.id, namespace="team-b")[-1].at == 1893553445.0
        assert len(client.add_many(["one", {"content": "two"}], namespace="team-b")) == 2
        assert client.context("kayaks", namespace="team-b", budget=50).tokens > 0
        assert client.stats(namespace="team-b")["records"] >= 4
        # every order the engine lists by, REST lists by (one definition: _types.Order)
        for step in (3, 1, 2):
            client.add(f"step {step} of the kayak trip", namespace="team-b", step=step,
                       kind="action")
        steps = [r.step for r in client.get_all(namespace="team-b", kinds="action",
                                                 order="-step")]
        assert steps == [3, 2, 1]
        assert client.get_all(namespace="team-b", kinds="observation")
        client.delete(rec.id, namespace="team-b")
        with pytest.raises(NotFound):
            client.get(rec.id, namespace="team-b")
        with pytest.raises(ScopeViolation):
            client.search("x", namespace="team-c")
    with pytest.raises(Unauthenticated), Client(server.url) as anonymous:
        anonymous.stats()


def test_a_client_id_cannot_add_to_the_request(server: Server):
    """An id goes into the path escaped (``_routes.request``): one carrying a query string
    cannot turn a delete into an erasure or name another namespace."""
    with Client(server.url, api_key=server.keys["both"]) as client:
        rec = client.add("A note that must keep its history", namespace="team-b")
        with pytest.raises(NotFound):
            client.delete(f"{rec.id}?erase=true", namespace="team-b")
        with pytest.raises(NotFound):
            client.get(f"{rec.id}?namespace=team-b")  # the key's first namespace is team-a
        assert [h.event for h in client.history(rec.id, namespace="team-b")] == ["add"]
        client.delete(rec.id, namespace="team-b")
        assert [h.event for h in client.history(rec.id, namespace="team-b")] == ["add", "delete"]


def test_rate_limit_and_graceful_shutdown(tmp_path):
    srv = start(tmp_path / "rl.db", "--rate", "2")
    try:
        with srv.client() as http:
            codes = [http.get("/v1/stats").status_code for _ in range(12)]
        assert 429 in codes and codes[0] == 200
        with srv.client() as http:
            limited = next(r for r in (http.get("/v1/stats") for _ in range(10))
                           if r.status_code == 429)
        assert limited.json()["error"]["type"] == "RateLimited"
        assert int(limited.headers["Retry-After"]) >= 1
    finally:
        assert stop(srv) in (0, -15)  # uvicorn re-raises SIGTERM once it has shut down
    assert "Application shutdown complete" in (tmp_path / "rl.log").read_text()


ISO = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$"


def test_times_are_iso_8601_utc_in_answers_and_both_forms_are_read(server: Server):
    """Every time in an answer is ISO 8601 UTC; inputs take ISO or epoch seconds; the user's
    own JSON is never rewritten; the Python client gets seconds back."""
    import re

    from memstream.core.clock import to_timestamp

    with server.client("admin") as http:
        a = http.post("/v1/memories", json={"content": "the boiler was serviced", "at":
                                            "2024-05-08T13:56:00Z",
                                            "data": {"paid_at": 1700000000}}).json()
        b = http.post("/v1/memories", json={"content": "the boiler pressure dropped",
                                            "at": 1715176560}).json()
        for rec in (a, b):
            assert re.match(ISO, rec["created_at"]) and re.match(ISO, rec["last_accessed_at"])
        assert a["created_at"] == "2024-05-08T13:56:00.000000Z"
        assert b["created_at"] == "2024-05-08T13:56:00.000000Z"
        assert a["data"] == {"paid_at": 1700000000}  # the user's JSON as it was written
        http.patch(f"/v1/memories/{a['id']}", json={"importance": 0.8})
        history = http.get(f"/v1/memories/{a['id']}/history").json()
        assert all(re.match(ISO, h["at"]) for h in history)
        hit = http.post("/v1/search", json={"query": "boiler", "touch": False}).json()[0]
        assert re.match(ISO, hit["record"]["created_at"])
        stats = http.get("/v1/stats").json()
        assert re.match(ISO, stats["oldest"]) and re.match(ISO, stats["newest"])
        listed = http.post("/v1/memories/list", json={"since": "2024-05-08T00:00:00Z",
                                                      "until": 1715212800}).json()
        assert len(listed) == 2
        spec = http.get("/openapi.json").json()["components"]["schemas"]
        out = spec.get("RecordOut-Output", spec.get("RecordOut"))
        assert out["properties"]["created_at"]["type"] == "string"
    with Client(server.url, api_key=server.keys["admin"]) as client:
        got = client.get(a["id"])
        assert got.created_at == to_timestamp("2024-05-08T13:56:00Z")  # Python keeps numbers
        assert isinstance(client.history(a["id"])[0].at, float)


def test_the_inspector_opens_an_agents_record(server: Server):
    """An agent's state is stored without history rows; the inspector still opens it, with its
    tier (it answered 404 before)."""
    with server.client("admin") as http:
        made = http.post("/v1/agents/entries", json={
            "agent_id": "npc-7", "memory_type": "state", "contents": {"hp": 30, "zone": "swamp"},
            "step": 3})
        assert made.status_code == 201, made.text
        rid = made.json()["memory_id"]
        got = http.get(f"/v1/inspect/records/{rid}")
        assert got.status_code == 200, got.text
        body = got.json()
        assert body["record"]["space"] == "agents" and body["record"]["tier"] in (
            "stm", "im", "ltm")
        assert body["history"] == []


def test_an_add_says_what_it_did(server: Server):
    """A new record comes back with event "add", the same text again with "refresh" (the
    stored record), as python-api.md says of REST and MCP."""
    with server.client("admin") as http:
        first = http.post("/v1/memories", json={"content": "the heron nests by the old weir"})
        again = http.post("/v1/memories", json={"content": "the heron nests by the old weir"})
        assert first.status_code == again.status_code == 201
        assert first.json()["event"] == "add" and again.json()["event"] == "refresh"
        assert again.json()["id"] == first.json()["id"]
        batch = http.post("/v1/memories/batch", json={"items": [
            {"content": "the heron nests by the old weir"}, {"content": "a kingfisher too"}]})
        assert [r["event"] for r in batch.json()] == ["refresh", "add"]
        listed = http.post("/v1/memories/list", json={}).json()
        assert all(r["event"] is None for r in listed)  # only an add says it


def test_a_memory_is_sent_as_text_everywhere(server: Server):
    """Records, import and export call a memory's words ``text``: the add and batch routes, the
    Client and Python take ``text`` too; ``content`` stays as its old name, and both at once is
    a 422 that names the one to keep."""
    from memstream import InvalidInput, Memory

    with server.client("admin") as http:
        one = http.post("/v1/memories", json={"text": "Ana prefers window seats"})
        assert one.status_code == 201, one.text
        assert one.json()["text"] == "Ana prefers window seats"
        old = http.post("/v1/memories", json={"content": "Ana is vegetarian"})
        assert old.status_code == 201 and old.json()["text"] == "Ana is vegetarian"
        both = http.post("/v1/memories", json={"text": "a", "content": "b"})
        assert both.status_code == 422
        batch = http.post("/v1/memories/batch", json={"items": [
            {"text": "Bob prefers aisle seats"}, {"content": "Bob drinks tea"}]})
        assert batch.status_code == 201, batch.text
        assert [r["text"] for r in batch.json()] == ["Bob prefers aisle seats", "Bob drinks tea"]
        schema = http.get("/openapi.json").json()["components"]["schemas"]["AddRequest"]
        assert "text" in schema["required"]
    with Client(server.url, server.keys["admin"]) as c:
        assert c.add(text="Cleo rides a bike").text == "Cleo rides a bike"
        assert c.add(content="Cleo owns a cat").text == "Cleo owns a cat"
        assert c.add("Cleo reads comics").text == "Cleo reads comics"
        assert [r.text for r in c.add_many([{"text": "Dan swims"}, "Dan runs"])] == \
            ["Dan swims", "Dan runs"]
    with Memory(":memory:", embedder="none") as mem:
        assert mem.add(text="Eve bakes bread").text == "Eve bakes bread"
        assert mem.add(content="Eve sings").text == "Eve sings"
        with pytest.raises(InvalidInput, match="pass only 'text'"):
            mem.add("Eve", content="Eve")
        assert [r.text for r in mem.add_many([{"text": "Fay"}, {"content": "Gus"}])] == \
            ["Fay", "Gus"]


def test_a_body_that_is_not_json_says_where_and_what_was_expected(server: Server):
    with server.client("admin") as http:
        for body, where, what in ((b'{"text": "x",, "kind": "fact"}', 14, "expecting property"),
                                  (b"text=hello", 1, "expecting value")):
            r = http.post("/v1/memories", content=body,
                          headers={"Content-Type": "application/json"})
            assert r.status_code == 422
            message = r.json()["error"]["message"]
            assert message.startswith("the request body is not valid JSON: at character "
                                      f"{where}, {what}"), message
            assert "Content-Type: application/json" in message
            assert "body." not in message and "JSON decode error" not in message
