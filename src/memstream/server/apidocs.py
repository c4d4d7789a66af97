"""The API documentation pages, /docs (Swagger UI) and /redoc, from files that ship inside a
PyPI package (``fastapi-offline``'s copies of Swagger UI and ReDoc, MIT): nothing is loaded from
a CDN, so the pages work on a machine without internet. The pages and their start-up script
are memstream's own; only the two libraries' files are served from that package."""

from __future__ import annotations

from collections.abc import Callable
from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI, Response
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

__all__ = ["api_doc_pages"]

STATIC = Path(__file__).parent / "static"
# their own scripts only; Swagger UI sets inline styles and ReDoc starts a worker from a blob
HEADERS = {"Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
           "style-src 'self' 'unsafe-inline'; worker-src 'self' blob:; "
           "frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
           "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="icon" href="/static/apidocs/favicon.png">{head}
</head>
<body data-openapi="{openapi}">
{body}
</body>
</html>
"""


def api_doc_pages(app: FastAPI) -> dict[str, Callable[[], Response]]:
    """The pages /docs and /redoc, by name (the app serves them among its static pages, and
    must be made with docs_url=None, redoc_url=None); their libraries' files are mounted."""
    assets = Path(str(files("fastapi_offline") / "static"))
    app.mount("/static/apidocs", StaticFiles(directory=assets), name="apidocs")
    openapi = app.openapi_url or "/openapi.json"
    title = f"{app.title} API"

    def swagger_ui() -> Response:
        return HTMLResponse(_PAGE.format(
            title=title, openapi=openapi,
            head='\n<link rel="stylesheet" href="/static/apidocs/swagger-ui.css">',
            body='<div id="swagger-ui"></div>\n'
                 '<script src="/static/apidocs/swagger-ui-bundle.js"></script>\n'
                 '<script src="/static/apidocs-start.js"></script>'), headers=HEADERS)

    def redoc() -> Response:
        return HTMLResponse(_PAGE.format(
            title=title, openapi=openapi, head="",
            body='<div id="redoc"></div>\n'
                 '<script src="/static/apidocs/redoc.standalone.js"></script>\n'
                 '<script src="/static/apidocs-start.js"></script>'), headers=HEADERS)

    return {"docs": swagger_ui, "redoc": redoc}
