"""Fuzzing the REST API from its own OpenAPI schema: no input makes the server fail (5xx)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import start, stop


@pytest.mark.slow
def test_schemathesis_finds_no_server_error(tmp_path: Path):
    srv = start(tmp_path / "fuzz.db", "--rate", "0", keys={"admin": (["fuzz"], "admin")})
    try:
        exe = str(Path(sys.executable).parent / "schemathesis")
        res = subprocess.run(
            [exe, "run", srv.url + "/openapi.json", "--checks",
             "not_a_server_error,error_body_is_documented", "--max-examples", "25",
             "--seed", "20261122", "--header", f"Authorization: Bearer {srv.keys['admin']}",
             # the event stream never ends by itself; test_events.py checks its bad input
             "--exclude-path", "/v1/events",
             # no tenant key reads /metrics (the operator's token does): test_hardening.py
             "--exclude-path", "/metrics"],
            capture_output=True, text=True, timeout=600, cwd=Path(__file__).parent,
            env={**os.environ, "SCHEMATHESIS_HOOKS": "schemathesis_hooks"})
    finally:
        stop(srv)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert " passed" in res.stdout and "failed" not in res.stdout.split("SUMMARY")[-1]


#: what a JSON body can carry that no field of the API can hold
HOSTILE = ["lone \ud800 surrogate", {"k\udfff": "v"}, ["\ud800"], 10**400, -(10**400), 2**64]


def _resolve(spec: dict, schema: dict) -> dict:
    while "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = spec["components"]["schemas"][name]
    return schema


def test_every_body_field_refuses_surrogates_and_huge_integers_with_a_4xx(tmp_path: Path):
    """Each field of each JSON body, in turn, holding a lone surrogate or an integer of 400
    digits: the answer is a 4xx error body, never a 5xx (the schema fuzz above never generates
    either: JSON generators leave surrogates out, and integers stay within 64 bits)."""
    import json

    srv = start(tmp_path / "hostile.db", "--rate", "0", keys={"admin": (["fuzz"], "admin")})
    failures: list[str] = []
    tried = 0
    try:
        with srv.client("admin") as http:
            spec = http.get("/openapi.json").json()
            for path, methods in spec["paths"].items():
                concrete = path.replace("{", "").replace("}", "")  # ids become their names
                for method, op in methods.items():
                    body = op.get("requestBody", {}).get("content", {}).get("application/json")
                    if body is None:
                        continue
                    props = _resolve(spec, body["schema"]).get("properties", {})
                    for field in props:
                        for value in HOSTILE:
                            tried += 1
                            raw = json.dumps({field: value})  # \ud800 escaped, as a client sends
                            r = http.request(method.upper(), concrete, content=raw,
                                             headers={"content-type": "application/json"})
                            if r.status_code >= 500 or (
                                    r.status_code >= 400 and "error" not in r.json()):
                                failures.append(f"{method.upper()} {path} {field}={value!r:.40}:"
                                                f" {r.status_code} {r.text[:120]}")
    finally:
        stop(srv)
    assert tried > 300
    assert failures == [], "\n".join(failures[:20])
