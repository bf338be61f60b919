"""The demo page at / (files in app/static, served under /static)."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse, HTMLResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.types import Receive, Scope, Send

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"

PLACEHOLDER = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>vit-digits</title></head>
<body><h1>vit-digits</h1><p>The demo page is not installed. The API is documented at
<a href="/docs">/docs</a>.</p></body></html>
"""

# The page runs on its own files alone (no inline script or style, nothing from another origin), so the
# browser is told to run nothing else: not an injected script, not inside another site's frame, no form
# posting elsewhere. Canvas pixels and dropped files are data: and blob: URLs.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
NOSNIFF = {"X-Content-Type-Options": "nosniff"}  # a file is what its Content-Type says, never sniffed
PAGE_HEADERS = {
    "Content-Security-Policy": CSP, "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer", **NOSNIFF,
}  # fmt: skip

router = APIRouter(tags=["page"])


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
async def index() -> Response:
    """The demo page."""
    page = STATIC_DIR / "index.html"
    if page.is_file():
        return FileResponse(page, media_type="text/html", headers=PAGE_HEADERS)
    return HTMLResponse(PLACEHOLDER, headers=PAGE_HEADERS)


class OptionalStaticFiles(StaticFiles):
    """StaticFiles that answers 404 (not 500) while the folder does not exist, and never lets a file be
    sniffed as another type."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        response.headers.update(NOSNIFF)
        return response

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not Path(str(self.directory)).is_dir():
            await Response('{"detail":"Not Found"}', status_code=404, media_type="application/json")(
                scope, receive, send
            )
            return
        await super().__call__(scope, receive, send)


def static_files() -> StaticFiles:
    return OptionalStaticFiles(directory=STATIC_DIR, check_dir=False)
