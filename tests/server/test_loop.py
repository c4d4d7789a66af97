"""No route holds the event loop: while a heavy request runs (a 5 MB import, an export of tens
of thousands of records), a request that needs no store (the inspector's page) still answers
at once. The import parsed and wrote on the event loop and held every request for its whole
length. (A request that reads the SQLite store still waits for a write transaction of the same
process to commit: one connection per process, issue "one tenant stalls all".)"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import httpx
import pytest

from memstream import Memory

from .conftest import start, stop

N = 15_000  # about 3 MB of JSON Lines


def _lines() -> str:
    return "".join(json.dumps({"text": f"imported note {n}: " + "lorem ipsum dolor " * 9,
                               "user_id": f"u{n % 50}"}) + "\n" for n in range(N))


HEAVY = {
    "import": lambda http: http.post("/v1/import", content=_lines().encode(),
                                     headers={"Content-Type": "application/x-ndjson"}),
    "export": lambda http: http.get("/v1/export"),
}


@pytest.mark.slow
@pytest.mark.parametrize("route", sorted(HEAVY))
def test_the_server_answers_during_a_heavy_route(tmp_path: Path, route: str) -> None:
    db = tmp_path / "heavy.db"
    if route != "import":
        with Memory(db, embedder="none") as mem:
            mem.add_many([{"text": f"seeded note {n}: " + "lorem ipsum dolor " * 9,
                           "user_id": f"u{n % 3}"} for n in range(N * 3 // 5)])
    srv = start(db, "--max-body-mb", "64", "--rate", "100000")
    try:
        done: dict[str, float] = {}

        def heavy() -> None:
            with httpx.Client(base_url=srv.url, timeout=300) as http:
                started = time.monotonic()
                answer = HEAVY[route](http)
                assert answer.status_code < 300, answer.text[:500]
                done["seconds"] = time.monotonic() - started

        worker = threading.Thread(target=heavy)
        worker.start()
        waits = []
        with httpx.Client(base_url=srv.url, timeout=60) as http:
            while worker.is_alive():
                started = time.monotonic()
                assert http.get("/").status_code == 200
                waits.append(time.monotonic() - started)
                time.sleep(0.02)
        worker.join()
        assert "seconds" in done, "the heavy request failed"
        assert len(waits) >= 3, f"the {route} took only {done['seconds']:.2f} s: make it heavier"
        assert max(waits) < 1.0, (route, done["seconds"], sorted(waits)[-5:])
    finally:
        stop(srv)
