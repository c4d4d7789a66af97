"""A real MCP client session against the server, over streamable HTTP and over stdio."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from .conftest import Server

TOOLS = {"add_memory", "search_memories", "list_memories", "get_memory", "update_memory",
         "delete_memory", "memory_history", "memory_context", "record_episode",
         "episode_context", "learn_outcome", "task_advice", "store_agent_memory",
         "similar_agent_states", "forget_user"}


@contextlib.asynccontextmanager
async def _http(server: Server, key: str | None) -> AsyncIterator[Client]:
    """A client session over streamable HTTP that sends the key (the SDK leaves a given HTTP
    client open, so it is closed here)."""
    headers = {"Authorization": f"Bearer {server.keys[key]}"} if key else {}
    async with httpx2.AsyncClient(headers=headers) as http, Client(
            streamable_http_client(server.url + "/mcp", http_client=http)) as client:
        yield client


def _result(result: Any) -> Any:
    """The structured result of a tool call (a list comes wrapped as {"result": [...]})."""
    assert not result.is_error, result.content
    out = result.structured_content
    return out["result"] if isinstance(out, dict) and set(out) == {"result"} else out


async def _exercise(client: Client, namespace: str | None = None) -> dict[str, Any]:
    ns = {"namespace": namespace} if namespace else {}
    tools = await client.list_tools()
    listed = {t.name: t for t in tools.tools}
    assert set(listed) >= TOOLS
    assert all(t.description and t.input_schema.get("type") == "object" for t in tools.tools)
    assert "text" in listed["add_memory"].input_schema["properties"]
    assert "content" not in listed["add_memory"].input_schema["properties"]  # the old name
    rec = _result(await client.call_tool("add_memory", {"text": "Lena keeps bees", **ns}))
    rid = rec["id"]
    assert rec["event"] == "add"
    again = _result(await client.call_tool("add_memory", {"content": "Lena keeps bees", **ns}))
    assert (again["id"], again["event"]) == (rid, "refresh")
    hits = _result(await client.call_tool("search_memories", {"query": "bees", **ns}))
    assert hits[0]["id"] == rid and hits[0]["text"] == "Lena keeps bees" and "score" in hits[0]
    assert _result(await client.call_tool("get_memory", {"memory_id": rid, **ns}))["text"] \
        == "Lena keeps bees"
    updated = _result(await client.call_tool("update_memory", {"memory_id": rid,
                                                               "importance": 0.8, **ns}))
    assert updated["importance"] == 0.8
    ctx = _result(await client.call_tool("memory_context", {"query": "bees", **ns}))
    assert rid in ctx["ids"]
    _result(await client.call_tool("record_episode", {
        "episode": {"task_id": "t", "score": 0.95, "successes": ["smoked the hive first"]},
        **ns}))
    block = await client.call_tool("episode_context", {"task_id": "t", **ns})
    assert "[WORKS] smoked the hive first" in block.content[0].text
    for _ in range(3):
        _result(await client.call_tool("learn_outcome", {
            "agent": "keeper", "project_id": "apiary", "task": "test the hive sensor",
            "outcome": True, "strategy_used": "calibrate the sensor at dawn", **ns}))
    advice = await client.call_tool("task_advice", {"task": "test the hive sensor",
                                                    "agent": "keeper", **ns})
    assert "calibrate the sensor at dawn" in advice.content[0].text
    for step in range(3):
        _result(await client.call_tool("store_agent_memory", {
            "agent_id": "bee", "contents": {"nectar": step, "flower": "clover"}, "step": step,
            **ns}))
    like = _result(await client.call_tool("similar_agent_states", {
        "agent_id": "bee", "state": {"nectar": 1, "flower": "clover"}, "k": 1, **ns}))
    assert like[0]["step_number"] == 1
    stats = await client.read_resource(f"memstream://{namespace or 'default'}/stats")
    assert json.loads(stats.contents[0].text)["records"] >= 1
    missing = await client.call_tool("get_memory", {"memory_id": "01NOPE", **ns})
    assert missing.is_error and "NotFound (404)" in missing.content[0].text
    bad = await client.call_tool("add_memory", {"text": "", **ns})
    assert bad.is_error and "InvalidInput (422)" in bad.content[0].text
    deleted = _result(await client.call_tool("delete_memory", {"memory_id": rid, **ns}))
    return {"deleted": deleted, "id": rid}


def test_streamable_http_session_every_tool(server: Server):
    async def main() -> None:
        async with _http(server, "admin") as client:
            out = await _exercise(client, "team-a")
            assert out["deleted"] == {"deleted": out["id"]}
    anyio.run(main)


def test_streamable_http_auth_and_isolation(server: Server):
    async def main() -> None:
        async with _http(server, "admin") as admin:
            secret = _result(await admin.call_tool("add_memory", {
                "content": "team-a mcp secret", "namespace": "team-a"}))
        async with _http(server, None) as anonymous:
            r = await anonymous.call_tool("search_memories", {"query": "secret"})
            assert r.is_error and "Unauthenticated (401)" in r.content[0].text
        async with _http(server, "reader") as reader:
            r = await reader.call_tool("add_memory", {"content": "x", "namespace": "team-a"})
            assert r.is_error and "ScopeViolation (403)" in r.content[0].text
        async with _http(server, "other") as other:
            calls = [
                ("add_memory", {"content": "x"}),
                ("search_memories", {"query": "secret"}),
                ("get_memory", {"memory_id": secret["id"]}),
                ("list_memories", {}),
                ("memory_history", {"memory_id": secret["id"]}),
                ("update_memory", {"memory_id": secret["id"], "text": "pwned"}),
                ("delete_memory", {"memory_id": secret["id"]}),
                ("memory_context", {"query": "secret"}),
                ("record_episode", {"episode": {"score": 1}}),
                ("episode_context", {}),
                ("learn_outcome", {"agent": "a", "project_id": "p", "task": "t",
                                   "outcome": True, "strategy_used": "s"}),
                ("task_advice", {"task": "t", "agent": "a"}),
                ("store_agent_memory", {"agent_id": "a", "contents": {"x": 1}, "step": 1}),
                ("similar_agent_states", {"agent_id": "a", "state": {"x": 1}}),
                ("forget_user", {"user_id": "u"}),
            ]
            assert {name for name, _ in calls} == TOOLS
            for name, args in calls:
                r = await other.call_tool(name, {**args, "namespace": "team-a"})
                assert r.is_error and "ScopeViolation (403)" in r.content[0].text, name
            with pytest.raises(Exception, match="ScopeViolation"):
                await other.read_resource("memstream://team-a/stats")
            own = _result(await other.call_tool("search_memories", {"query": "mcp secret"}))
            assert own == []  # its default namespace is team-b
            r = await other.call_tool("get_memory", {"memory_id": secret["id"]})
            assert r.is_error and "NotFound" in r.content[0].text
        async with _http(server, "admin") as admin:
            kept = _result(await admin.call_tool("get_memory", {"memory_id": secret["id"],
                                                                "namespace": "team-a"}))
            assert kept["text"] == "team-a mcp secret"
    anyio.run(main)


def test_stdio_session(tmp_path: Path):
    exe = str(Path(sys.executable).parent / "memstream")
    params = StdioServerParameters(command=exe, args=["--db", str(tmp_path / "stdio.db"),
                                                      "--embedder", "none", "mcp"],
                                   env={"MEMSTREAM_REFLECTION_THRESHOLD": "0"})

    async def main() -> None:
        async with Client(params) as client:
            out = await _exercise(client)
            assert out["deleted"] == {"deleted": out["id"]}
    anyio.run(main)


def test_streamable_http_calls_count_against_the_keys_rate(tmp_path: Path):
    """MCP tool calls share the key's token bucket with REST: no way around ``--rate``."""
    from .conftest import start, stop

    srv = start(tmp_path / "rate.db", "--rate", "1", keys={"admin": (["team-a"], "admin")})

    async def main() -> list[str]:
        async with _http(srv, "admin") as client:
            results = [await client.call_tool("search_memories", {"query": "x"})
                       for _ in range(6)]
        return [r.content[0].text if r.is_error else "ok" for r in results]

    try:
        with srv.client("admin") as http:
            assert http.get("/v1/stats").status_code == 200  # one of the burst of 2, via REST
        outcomes = anyio.run(main)
        assert outcomes[0] == "ok" and outcomes.count("ok") <= 2
        assert any("RateLimited (429)" in o for o in outcomes)
    finally:
        stop(srv)


def test_rest_and_mcp_share_one_tiered_memory(server: Server):
    """Without Redis, STM lives in the server process: an entry stored over REST is in the
    short-term tier MCP reads (each interface had its own tiers before, so MCP saw it in LTM
    only), and the other way round."""
    with server.client("admin") as http:
        r = http.post("/v1/agents/entries", json={
            "agent_id": "wren", "memory_type": "state", "contents": {"perch": "oak"},
            "step": 1, "namespace": "team-a"})
        assert r.status_code == 201, r.text

    async def main() -> None:
        async with _http(server, "admin") as client:
            (hit,) = _result(await client.call_tool("similar_agent_states", {
                "agent_id": "wren", "state": {"perch": "oak"}, "k": 1, "namespace": "team-a"}))
            assert hit["metadata"]["tier"] == "stm" and hit["similarity"] == 1.0
            _result(await client.call_tool("store_agent_memory", {
                "agent_id": "wren", "contents": {"perch": "elm"}, "step": 2,
                "namespace": "team-a"}))
    anyio.run(main)
    with server.client("admin") as http:
        got = http.post("/v1/agents/wren/similar", json={"state": {"perch": "elm"}, "k": 1,
                                                        "namespace": "team-a"}).json()
        assert got[0]["metadata"]["tier"] == "stm" and got[0]["contents"] == {"perch": "elm"}


def test_add_memory_takes_text_and_its_old_name(server: Server):
    """The tool lists ``text`` only; ``content`` (its old name) still works, both is a 422."""
    async def main() -> None:
        async with _http(server, "admin") as client:
            new = _result(await client.call_tool("add_memory", {"text": "Kit keeps goats"}))
            old = _result(await client.call_tool("add_memory", {"content": "Kit keeps hens"}))
            assert (new["text"], old["text"]) == ("Kit keeps goats", "Kit keeps hens")
            both = await client.call_tool("add_memory", {"text": "a", "content": "b"})
            assert both.is_error and "InvalidInput (422)" in both.content[0].text
            assert "pass only 'text'" in both.content[0].text
    anyio.run(main)
