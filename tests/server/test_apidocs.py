"""/docs and /redoc render the API's operations in headless Chromium with the network cut off:
every file they load comes from this server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from .. import machine
from .conftest import Server, start, stop

sync_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start(tmp_path_factory.mktemp("apidocs") / "docs.db")
    yield srv
    stop(srv)


def _open(server: Server, path: str) -> tuple[Any, list[str], list[str], Any]:
    chromium, why = machine.chromium()  # installed as root when missing
    if chromium is None:  # one clear reason, and no event loop left running
        pytest.skip(why)
    p = sync_api.sync_playwright().start()
    try:
        browser = p.chromium.launch(executable_path=chromium, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
    except Exception:
        p.stop()  # else its event loop stays running and breaks every later asyncio.run
        raise
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    elsewhere: list[str] = []
    errors: list[str] = []

    def only_here(route: Any) -> None:
        if urlsplit(route.request.url).netloc == urlsplit(server.url).netloc:
            route.continue_()
        else:  # no network: anything else fails, and is noted
            elsewhere.append(route.request.url)
            route.abort()

    context.route("**/*", only_here)
    page = context.new_page()
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(server.url + path)
    return page, elsewhere, errors, (p, browser)


def _close(handles: Any) -> None:
    p, browser = handles
    browser.close()
    p.stop()


@pytest.mark.slow
def test_swagger_ui_renders_offline(server: Server, tmp_path: Path):
    page, elsewhere, errors, handles = _open(server, "/docs")
    try:
        page.wait_for_selector(".opblock", timeout=20_000)
        operations = page.locator(".opblock").count()
        assert operations > 10
        assert page.locator(".opblock-summary-path", has_text="/v1/search").count() >= 1
        assert elsewhere == [] and errors == []
    finally:
        _close(handles)


def test_redoc_renders_offline(server: Server):
    page, elsewhere, errors, handles = _open(server, "/redoc")
    try:
        page.wait_for_selector("h1", timeout=20_000)
        assert "memstream" in page.locator("h1").first.inner_text()
        page.get_by_text("/v1/search").first.wait_for(state="attached")
        assert elsewhere == [] and errors == []
    finally:
        _close(handles)
