"""Several server processes over one PostgreSQL: a mixed load through all of them, one killed
with SIGKILL in the middle; every acknowledged write is read back through another server."""

from __future__ import annotations

import pytest

from memstream.bench import load


@pytest.mark.slow
def test_four_servers_one_killed_lose_no_acknowledged_write(pg_url: str) -> None:
    report = load.run(clients=16, seconds=8, add_share=0.6, embedder="none", db=pg_url,
                      servers=4, kill_after=3, echo=lambda s: None)
    assert report["servers"] == 4 and report["killed"] == [0]
    assert report["acknowledged_adds"] > 200
    assert report["acknowledged_by_killed"] > 0  # it did work before it died
    assert report["lost_writes"] == 0
    # the only errors are requests in flight to the server when it was killed
    assert all("on server 0" in kind for kind in report["error_kinds"]), report["error_kinds"]
    assert report["errors"] <= 16
