"""Fuzzing the REST API from its own OpenAPI schema: no input makes the server fail (5xx)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .conftest import start, stop


def test_schemathesis_finds_no_server_error(tmp_path: Path):
    srv = start(tmp_path / "fuzz.db", "--rate", "0", keys={"admin": (["fuzz"], "admin")})
    try:
        exe = str(Path(sys.executable).parent / "schemathesis")
        res = subprocess.run(
            [exe, "run", srv.url + "/openapi.json", "--checks",
             "not_a_server_error,error_body_is_documented", "--max-examples", "25",
             "--seed", "20261122", "--header", f"Authorization: Bearer {srv.keys['admin']}",
             # the event stream never ends by itself; test_events.py checks its bad input
             "--exclude-path", "/v1/events"],
            capture_output=True, text=True, timeout=600, cwd=Path(__file__).parent,
            env={**os.environ, "SCHEMATHESIS_HOOKS": "schemathesis_hooks"})
    finally:
        stop(srv)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert " passed" in res.stdout and "failed" not in res.stdout.split("SUMMARY")[-1]
