"""Browser fixtures: a real uvicorn serving the demo page on loopback, driven by Playwright + Chromium.

Chromium comes from Debian (``apt-get install chromium`` -> /usr/bin/chromium); Playwright's own
browser download needs the internet, which CI does not have. Without a Chromium the tests skip.

The service serves the shipped checkpoints (model_store/checkpoints) when both vit-mnist and
cnn-mnist are there; otherwise randomly initialised models with the same names, so the page can
still be exercised (the accuracy assertions then only check that a digit is shown).
Set VIT_DIGITS_BASE_URL to test an already running service instead of starting one.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from testkit.server import ServiceProcess, wait_ready

REPO_ROOT = Path(__file__).resolve().parents[2]
SHIPPED_STORE = REPO_ROOT / "model_store" / "checkpoints"
ARTIFACTS = REPO_ROOT / "test-artifacts" / "browser"
MODEL_NAMES = ("vit-mnist", "cnn-mnist")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-quic",
    "--disable-sync",
]
STARTUP_TIMEOUT_S = 90


def find_chromium() -> str | None:
    """CHROMIUM_PATH, else Debian's /usr/bin/chromium, else any chromium on PATH."""
    candidates = [
        os.environ.get("CHROMIUM_PATH"),
        "/usr/bin/chromium",
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
    ]
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def shipped_store_complete() -> bool:
    return all((SHIPPED_STORE / name / "card.json").is_file() for name in MODEL_NAMES)


def build_random_store(root: Path) -> Path:
    """vit-mnist and cnn-mnist with random weights: real architectures, meaningless predictions."""
    from model_store import save_untrained

    for name in MODEL_NAMES:
        save_untrained(name, root / name, note="random initialisation (browser tests)")
    return root


@dataclass
class Service:
    base_url: str
    models: list[dict]
    trained: bool  # the shipped checkpoints are served: predictions must be right

    @property
    def names(self) -> list[str]:
        return [m["name"] for m in self.models]


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = find_chromium()
    if path is None:
        pytest.skip(
            "no Chromium found (looked for $CHROMIUM_PATH, /usr/bin/chromium, chromium on PATH); "
            "install it with `apt-get install chromium` to run the browser tests"
        )
    return path


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def service(
    chromium_path: str, artifacts_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Service]:
    """The real service: uvicorn in a subprocess on a free loopback port (or VIT_DIGITS_BASE_URL)."""
    external = os.environ.get("VIT_DIGITS_BASE_URL")
    if external:
        base_url = external.rstrip("/")
        wait_ready(base_url, timeout=STARTUP_TIMEOUT_S)
        models = httpx.get(f"{base_url}/v1/models", timeout=10).json()["models"]
        trained = all(m.get("metrics", {}).get("test_accuracy", 0) >= 0.98 for m in models)
        yield Service(base_url, models, trained)
        return

    trained = shipped_store_complete()
    store = SHIPPED_STORE if trained else build_random_store(tmp_path_factory.mktemp("store"))
    env = {"MODEL_STORE_DIR": str(store), "LOG_LEVEL": "warning"}
    server = ServiceProcess(env, workers=None, log_path=artifacts_dir / "server.log", access_log=True)
    with server.start(timeout=STARTUP_TIMEOUT_S):
        models = httpx.get(f"{server.url}/v1/models", timeout=10).json()["models"]
        yield Service(server.url, models, trained)


# Module scope, not session: Playwright's sync API keeps an asyncio loop running in the main
# thread while it is open, which would break asyncio.run() in every test collected after these.
@pytest.fixture(scope="module")
def chromium_browser(chromium_path: str):
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (dev extras)")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@dataclass
class PageSession:
    """A page plus what it did: requests to other hosts, uncaught JavaScript errors and what its
    Content-Security-Policy refused."""

    page: object
    base_url: str
    foreign_requests: list[str]
    js_errors: list[str]

    def goto(self) -> None:
        self.page.goto(self.base_url + "/")


def _refused(message) -> bool:  # type: ignore[no-untyped-def]
    return message.type == "error" and "Content Security Policy" in message.text


def open_page(browser, service: Service, **context_args) -> tuple[object, PageSession]:
    context = browser.new_context(**({"viewport": {"width": 1280, "height": 900}} | context_args))
    page = context.new_page()
    page.set_default_timeout(15_000)
    session = PageSession(page, service.base_url, [], [])
    local = (service.base_url, "data:", "blob:")
    page.on("request", lambda r: None if r.url.startswith(local) else session.foreign_requests.append(r.url))
    page.on("pageerror", lambda e: session.js_errors.append(str(e)))
    # whatever the page's Content-Security-Policy refuses is an error too (the console says why)
    page.on("console", lambda m: session.js_errors.append(m.text) if _refused(m) else None)
    return context, session


@pytest.fixture
def page_session(chromium_browser, service: Service) -> Iterator[PageSession]:
    """A fresh desktop-sized page (1280x900) already showing the demo with its model panels."""
    context, session = open_page(chromium_browser, service)
    session.goto()
    for name in service.names:
        session.page.get_by_test_id(f"prediction-{name}").wait_for()
    yield session
    context.close()
    assert not session.js_errors, f"uncaught JavaScript errors: {session.js_errors}"
    assert not session.foreign_requests, f"the page must work offline but fetched: {session.foreign_requests}"


@pytest.fixture
def new_page(chromium_browser, service: Service) -> Iterator:
    """Factory for pages with other viewports or colour schemes; closed after the test."""
    contexts = []

    def make(**context_args) -> PageSession:
        context, session = open_page(chromium_browser, service, **context_args)
        contexts.append((context, session))
        return session

    yield make
    for context, session in contexts:
        context.close()
        assert not session.js_errors, f"uncaught JavaScript errors: {session.js_errors}"
