"""A served request is logged once: memstream's JSON access line, not uvicorn's too."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from .conftest import start, stop


def test_one_access_log_line_per_request(tmp_path: Path):
    srv = start(tmp_path / "log.db")
    try:
        assert httpx.get(srv.url + "/v1/memories/probe-7f3a", timeout=10).status_code == 404
        assert httpx.get(srv.url + "/healthz", timeout=10).status_code == 200
    finally:
        stop(srv)
    lines = (tmp_path / "log.log").read_text().splitlines()
    probe = [line for line in lines if "probe-7f3a" in line]
    assert len(probe) == 1, lines
    entry = json.loads(probe[0])
    assert entry["method"] == "GET" and entry["status"] == 404


def test_the_access_log_is_one_json_object_per_line(tmp_path: Path):
    srv = start(tmp_path / "json.db")
    try:
        for n in range(3):
            httpx.get(f"{srv.url}/v1/memories/line-{n}", timeout=10)
    finally:
        stop(srv)
    lines = (tmp_path / "json.log").read_text().splitlines()
    entries = [json.loads(line) for line in lines if line.startswith("{")]
    assert [e["path"] for e in entries if "line-" in e["path"]] == [
        "/v1/memories/line-0", "/v1/memories/line-1", "/v1/memories/line-2"]
