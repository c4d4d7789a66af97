"""Entities over a real server: REST, MCP tools and ``Client``, each held to the namespace of
its key (another namespace's key sees none of the names)."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest

from memstream import Client, NotFound, ScopeViolation

from .conftest import KEYS, Server, start, stop
from .test_mcp import _http, _result


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = start(tmp_path_factory.mktemp("entities") / "entities.db", keys=KEYS)
    yield s
    stop(s)


def test_rest_and_client_read_the_entities_of_their_namespace(srv: Server) -> None:
    with Client(srv.url, srv.keys["admin"]) as a:
        a.add("Lunch with Ingrid Vasquez at Café Luso.", user_id="u1")
        a.add("Ingrid Vasquez moved to the Oslo office.", user_id="u1")
        listed = a.entities(user_id="u1")
        assert [(e.name, e.mentions) for e in listed][:1] == [("Ingrid Vasquez", 2)]
        profile = a.entity("Ingrid", user_id="u1")
        assert profile.name == "Ingrid Vasquez"
        assert [r.text for r in profile.records] == [
            "Ingrid Vasquez moved to the Oslo office.", "Lunch with Ingrid Vasquez at Café Luso."]
        assert {e.name for e, _ in profile.related} == {"Café Luso", "Oslo"}
    with srv.client("other") as http:
        assert http.post("/v1/entities/list", json={}).json() == []
        gone = http.post("/v1/entities/profile", json={"name": "Ingrid Vasquez"})
        assert gone.status_code == 404
        cross = http.post("/v1/entities/list", json={"namespace": "team-a"})
        assert cross.status_code == 403
    with Client(srv.url, srv.keys["other"]) as b:
        assert b.entities() == []
        with pytest.raises(NotFound):
            b.entity("Ingrid Vasquez")
        with pytest.raises(ScopeViolation):
            b.entity("Ingrid Vasquez", namespace="team-a")
    with srv.client("reader") as http:  # a read key reads them
        assert http.post("/v1/entities/list", json={"query": "vasq"}).json()[0]["name"] == \
            "Ingrid Vasquez"


def test_mcp_tools_hold_to_the_namespace(srv: Server) -> None:
    with Client(srv.url, srv.keys["admin"]) as a:
        a.add("Zofia Brandt signed the lease for the Leipzig flat.")

    async def main() -> None:
        async with _http(srv, "admin") as a, _http(srv, "other") as other:
            mine = _result(await a.call_tool("list_entities", {"query": "zofia"}))
            assert [e["name"] for e in mine] == ["Zofia Brandt"]
            profile = _result(await a.call_tool("get_entity", {"name": "Zofia Brandt"}))
            assert profile["records"][0]["text"].startswith("Zofia Brandt signed")
            assert _result(await other.call_tool("list_entities", {"query": "zofia"})) == []
            gone = await other.call_tool("get_entity", {"name": "Zofia Brandt"})
            assert gone.is_error and "NotFound (404)" in gone.content[0].text
            cross = await other.call_tool("get_entity", {"name": "Zofia Brandt",
                                                         "namespace": "team-a"})
            assert cross.is_error and "ScopeViolation (403)" in cross.content[0].text
    anyio.run(main)
