"""A bounded fuzz of every MCP tool's arguments through a real client session: no call makes
the server fail (a 5xx), and every error reads ``<Type> (<status>): <message>``."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from .conftest import start, stop

SEED = 20261122
CALLS_PER_TOOL = 40
ERROR = re.compile(r"^([A-Za-z]+) \((\d{3})\): \S")


def _deep(levels: int) -> dict[str, Any]:
    out: dict[str, Any] = {"leaf": 1}
    for _ in range(levels):
        out = {"a": out}
    return out


HOSTILE: list[Any] = [
    None, True, False, -1, 0, 1, 2**63, -(2**63) - 1, 2**70, 1e308, -1e308, 0.5, "", " ",
    # 400-digit integers; lone surrogates cannot be sent by the MCP client (it encodes UTF-8
    # strictly), so test_fuzz.py sends them to every REST body field, the tools' same models
    "x", "a" * 5000, "nul\x00byte", "é", 10**400, -(10**400),
    "01AAAAAAAAAAAAAAAAAAAAAAAA",
    "../../etc/passwd", "1e400", "2024-13-45T99:00:00Z", [], [1, "a", None], ["fact"],
    {}, {"a": 1}, _deep(100), {"n": {"in": list(range(1000))}}, {"$or": []},
    {"x": {"bogus": 1}}, {"position": [1, 2], "health": 0.5},
]
PLAUSIBLE = {"string": ["fuzz note", "team plan", "fox"], "integer": [1, 3, 10],
             "number": [0.5, 1.0], "boolean": [True, False], "object": [{"a": 1}],
             "array": [["fact"]]}


def _plausible(schema: dict[str, Any], rng: random.Random) -> Any:
    kinds = [s.get("type") for s in schema.get("anyOf", [schema]) if s.get("type") != "null"]
    return rng.choice(PLAUSIBLE.get(kinds[0] if kinds else "string", ["x"]))


def _arguments(schema: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    args: dict[str, Any] = {}
    required = set(schema.get("required", []))
    for name, prop in schema.get("properties", {}).items():
        roll = rng.random()
        if name == "namespace":
            args[name] = rng.choice(["fuzz", "fuzz", "", "../x", "a" * 300, 5])
        elif roll < 0.45:
            args[name] = rng.choice(HOSTILE)
        elif roll < 0.85 or name in required:
            args[name] = _plausible(prop, rng)
    return args


@pytest.mark.slow
def test_mcp_tools_never_fail_on_bad_arguments(tmp_path: Path):
    srv = start(tmp_path / "mcpfuzz.db", "--rate", "0")
    seen: dict[str, int] = {}

    async def main() -> None:
        rng = random.Random(SEED)
        async with httpx2.AsyncClient(timeout=60) as http, Client(
                streamable_http_client(srv.url + "/mcp", http_client=http)) as client:
            tools = (await client.list_tools()).tools
            assert len(tools) >= 12
            for tool in tools:
                for _ in range(CALLS_PER_TOOL):
                    args = _arguments(tool.input_schema, rng)
                    result = await client.call_tool(tool.name, args)
                    if not result.is_error:
                        continue
                    text = result.content[0].text
                    match = ERROR.match(text)
                    assert match, (tool.name, args, text[:300])
                    assert match.group(2).startswith("4"), (tool.name, args, text[:300])
                    seen[match.group(1)] = seen.get(match.group(1), 0) + 1
            missing = await client.call_tool("no_such_tool", {})
            assert ERROR.match(missing.content[0].text).group(1) == "NotFound"  # type: ignore

    try:
        anyio.run(main)
    finally:
        stop(srv)
    assert seen.get("InvalidInput", 0) > 50  # the fuzz reached the validation it means to test
