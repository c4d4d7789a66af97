"""One catalog of operations (server/catalog.py): every operation, with every one of its
parameters, is on the REST API, among the MCP tools and on ``Client``; the CLI's core verbs
take the search and selection parameters; an MCP session uses the new tools' parameters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import click
import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute

from memstream import Client, Memory
from memstream.cli import cli
from memstream.core.routes import ROUTES
from memstream.server.app import create_app
from memstream.server.catalog import OPERATIONS, Operation
from memstream.server.event_routes import router as event_router
from memstream.server.mcp import build_mcp
from memstream.server.routes import router

from ..signatures import parameter_names
from .conftest import Server
from .test_mcp import _http, _result

#: Client methods named as Memory's (the others are named as the operation)
CLIENT = {"add_memory": "add", "search_memories": "search", "list_memories": "get_all",
          "get_memory": "get", "update_memory": "update", "delete_memory": "delete",
          "memory_history": "history", "memory_context": "context",
          "audit_memories": "audit", "restore_memory": "restore",
          "invalidate_memory": "invalidate",
          "list_entities": "entities", "get_entity": "entity", "add_memories": "add_many",
          "add_messages": "add", "delete_memories": "delete_all", "import": "import_jsonl"}
#: parameters Client names otherwise: none (one name per concept)
RENAMED: dict[str, str] = {}
#: what one Client method names otherwise (a conversation is ``add``'s text)
CLIENT_NAMES: dict[str, dict[str, str]] = {"add_messages": {"messages": "text"}}
#: operations with no Client method, and why
NOT_IN_CLIENT = {"namespaces": "the inspector's page", "inspect_records": "the inspector's page",
                 "inspect_record": "the inspector's page",
                 "inspect_overview": "the inspector's page"}
#: the CLI's core verbs, and the operation whose parameters each must take
CLI = {"search": "search_memories", "list": "list_memories"}
#: parameters a CLI verb names otherwise or needs not take (reads never touch from a shell)
CLI_NOT = {"touch", "fusion", "namespace", "step_range", "order"}


def _fields(op: Operation) -> set[str]:
    return set(op.request.model_fields)


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Any:
    mem = Memory(tmp_path_factory.mktemp("catalog") / "c.db", embedder="none")
    yield create_app(mem)
    mem.close()


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.name)
def test_rest_takes_every_parameter(op: Operation):
    routes = [r for r in [*router.routes, *event_router.routes] if isinstance(r, APIRoute)
              and r.path == "/v1" + op.path and op.method in r.methods]
    assert routes, f"no REST route {op.method} /v1{op.path} for {op.name}"
    dep = routes[0].dependant
    taken = {p.name for p in dep.path_params} | {p.name for p in dep.query_params}
    if op.raw_body is not None:  # the request's body itself (an import's JSON Lines)
        taken.add(op.raw_body)
    for body in dep.body_params:
        taken |= set(body.field_info.annotation.model_fields)  # type: ignore[union-attr]
    assert taken == _fields(op), f"{op.name}: REST differs by {taken ^ _fields(op)}"


def test_mcp_has_every_operation_with_its_parameters(app: Any):
    async def tools() -> dict[str, Any]:
        server = build_mcp(app.state.memory)
        return {t.name: t for t in (await server.list_tools())}

    listed = anyio.run(tools)
    assert not {op.name for op in OPERATIONS if not op.tool} & set(listed)
    for op in (op for op in OPERATIONS if op.tool):
        assert op.name in listed, f"no MCP tool {op.name}"
        schema = listed[op.name].input_schema
        assert set(schema["properties"]) == _fields(op), op.name
        assert listed[op.name].description == op.summary
        for name, prop in schema["properties"].items():  # every parameter is described
            assert prop.get("description"), f"{op.name}.{name} has no description"


def test_every_mcp_tool_describes_every_parameter(app: Any):
    """The catalog's tools and those declared beside it (``forget_user``) alike."""
    async def tools() -> list[Any]:
        return list(await build_mcp(app.state.memory).list_tools())

    bare = [f"{t.name}.{name}" for t in anyio.run(tools)
            for name, prop in t.input_schema["properties"].items() if not prop.get("description")]
    assert bare == []


def test_client_has_every_operation_with_its_parameters():
    for op in (op for op in OPERATIONS if op.name not in NOT_IN_CLIENT):
        method = getattr(Client, CLIENT.get(op.name, op.name), None)
        assert method is not None, f"Client has no method for {op.name}"
        params = parameter_names(method)
        names = CLIENT_NAMES.get(op.name, {})
        wanted = {names.get(f, RENAMED.get(f, f)) for f in _fields(op)}
        if op.name == "add_memory":
            wanted.discard("content")
            params.discard("content")
        assert wanted <= params, f"Client.{method.__name__} lacks {wanted - params}"


def test_the_cli_core_verbs_take_the_parameters():
    for verb, name in CLI.items():
        command = cli.commands[verb]
        assert isinstance(command, click.Command)
        names = {p.name for p in command.params}
        op = next(o for o in OPERATIONS if o.name == name)
        missing = _fields(op) - names - CLI_NOT - {"query", "k", "limit"}
        assert missing == set(), f"memstream {verb} lacks {missing}"


def _outside(app: Any) -> list[str]:
    """The routes of ``app`` that no operation of the catalog declares."""
    declared = {("/v1" + op.path, op.method) for op in OPERATIONS}
    return sorted(f"{method} {r.path}" for r in app.routes if isinstance(r, APIRoute)
                  for method in r.methods if (r.path, method) not in declared)


def test_every_route_goes_through_the_catalog(app: Any):
    """Under /v1 every route is an operation of the catalog (15 were written beside it);
    outside stay three: health, metrics and the one route of the pages that serve static
    files (the inspector and the API's documentation: they were three routes)."""
    assert {op.name for op in OPERATIONS} == set(ROUTES)
    assert _outside(app) == ["GET /healthz", "GET /metrics", "GET /{page:memstream_page}"]
    assert not [r for r in _outside(app) if "/v1" in r]


def test_the_pages_route_serves_its_pages_and_no_other_path(app: Any):
    from fastapi.testclient import TestClient

    http = TestClient(app, base_url="http://127.0.0.1", client=("127.0.0.1", 5000))
    for path, marker in (("/", "inspector"), ("/docs", "swagger-ui"), ("/redoc", "redoc")):
        page = http.get(path)
        assert page.status_code == 200 and marker in page.text.lower(), path
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    for path in ("/nope", "/docs/x", "/redocs", "/v1"):
        missing = http.get(path)
        assert missing.status_code == 404 and missing.json()["error"]["type"] == "NotFound"
    assert http.post("/nope").status_code == 404  # not 405: the route matches no other path


def test_the_route_check_can_fail(app: Any):
    extra = FastAPI()
    extra.include_router(app.router)

    @extra.get("/v1/by-hand")
    def by_hand() -> dict[str, str]:
        return {}

    assert "GET /v1/by-hand" in _outside(extra)


def test_the_catalog_check_can_fail():
    """A parameter missing from one interface is reported: the REST comparison is strict."""
    op = next(o for o in OPERATIONS if o.name == "search_memories")
    assert _fields(op) - {"as_of"} != _fields(op)


def test_an_mcp_session_lists_filters_by_time_and_validity_and_updates_metadata(
        server: Server, tmp_path: Path):
    async def main() -> None:
        ns = {"namespace": "team-a"}
        async with _http(server, "admin") as client:
            old = _result(await client.call_tool("add_memory", {
                "content": "Ines lives in Porto", "user_id": "ines",
                "at": "2026-01-10T09:00:00Z", **ns}))
            new = _result(await client.call_tool("add_memory", {
                "content": "Ines moved to Lisbon", "user_id": "ines",
                "at": "2026-03-02T09:00:00Z", **ns}))
            assert old["created_at"] == "2026-01-10T09:00:00Z"  # compact: ISO dates
            assert set(old) >= {"id", "text", "kind", "created_at"}
            listed = _result(await client.call_tool("list_memories", {
                "user_id": "ines", "since": "2026-02-01T00:00:00Z", **ns}))
            assert [r["id"] for r in listed] == [new["id"]]
            found = _result(await client.call_tool("search_memories", {
                "query": "where does Ines live", "user_id": "ines",
                "until": "2026-02-01T00:00:00Z", **ns}))
            assert [h["id"] for h in found] == [old["id"]]
            changed = _result(await client.call_tool("update_memory", {
                "memory_id": old["id"], "metadata": {"source": "onboarding"}, **ns}))
            assert changed["metadata"] == {"source": "onboarding"}
            history = _result(await client.call_tool("memory_history", {
                "memory_id": old["id"], **ns}))
            assert [e["event"] for e in history] == ["add", "update"]
            as_of = _result(await client.call_tool("search_memories", {
                "query": "Ines", "user_id": "ines", "as_of": "2026-02-01T00:00:00Z", **ns}))
            assert {h["id"] for h in as_of} == {old["id"]}  # the later one did not exist yet
            bad = await client.call_tool("list_memories", {"order": "sideways", **ns})
            assert bad.is_error and "InvalidInput (422)" in bad.content[0].text
    anyio.run(main)


def test_the_reference_shows_every_tool_and_parameter():
    from memstream.server.reference import reference

    doc = Path(__file__).parents[2] / "docs" / "operations.md"
    assert doc.read_text(encoding="utf-8") == reference(), \
        "docs/operations.md is stale: regenerate it (the command is in its first lines)"


def test_an_mcp_session_applies_a_change_by_hand_and_undoes_it(server: Server):
    async def main() -> None:
        ns = {"namespace": "team-a"}
        async with _http(server, "admin") as client:
            old = _result(await client.call_tool("add_memory", {
                "content": "Oskar's bike shop is on Mill Lane", "user_id": "oskar", **ns}))
            new = _result(await client.call_tool("add_memory", {
                "content": "Oskar moved the shop to Harbour Street", "user_id": "oskar", **ns}))
            bad = await client.call_tool("invalidate_memory", {
                "memory_id": old["id"], "superseded_by": "nope", **ns})
            assert bad.is_error and "NotFound" in bad.content[0].text
            done = _result(await client.call_tool("invalidate_memory", {
                "memory_id": old["id"], "superseded_by": new["id"], **ns}))
            assert done["id"] == old["id"] and done["superseded_by"] == new["id"]
            hits = _result(await client.call_tool("search_memories", {
                "query": "Oskar bike shop Mill Lane", "user_id": "oskar", **ns}))
            assert hits[0]["id"] == new["id"] and old["id"] not in [h["id"] for h in hits]
            back = _result(await client.call_tool("restore_memory", {
                "memory_id": old["id"], **ns}))
            assert back["id"] == old["id"] and "invalidated_at" not in back
    anyio.run(main)
