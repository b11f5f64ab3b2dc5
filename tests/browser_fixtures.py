"""Headless Chromium for the browser tests (Debian's /usr/bin/chromium driven by Playwright): one browser per test
session, shared by the UI and the security tests (a second Playwright instance in one process fails), a fresh
context per test."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"


def required() -> bool:
    """True where a missing browser is a failure, not a skip: CI (.ci/run exports MGRAG_REQUIRE_SERVICES=1)."""
    return bool(os.environ.get("CI")) or os.environ.get("MGRAG_REQUIRE_SERVICES") == "1"


def check_browser() -> None:
    """Chromium at :data:`CHROMIUM` and Playwright importable; else skip, or fail where :func:`required`."""
    missing = None
    if not Path(CHROMIUM).exists() or shutil.which("chromium") is None:
        missing = f"no Chromium at {CHROMIUM}: `apt-get install -y chromium` (.ci/run installs it)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            missing = "playwright is not installed: pip install -e '.[dev]'"
    if missing and required():
        pytest.fail(f"{missing}; MGRAG_REQUIRE_SERVICES=1 (CI) makes a missing browser a failure")
    if missing:
        pytest.skip(missing)


@pytest.fixture(scope="session")
def browser():
    check_browser()
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


@pytest.fixture
def page(browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = ctx.new_page()
    pg.set_default_timeout(30_000)
    yield pg
    ctx.close()


def ask_and_open_sources(page, url: str, question: str) -> None:
    """Open the app at ``url``, ask ``question`` in the Chat tab, wait for the answer's "Sources (k)" and open them."""
    from playwright.sync_api import expect

    page.goto(url)
    page.get_by_role("tab", name="Chat").click()
    page.locator("#question textarea").fill(question)
    page.locator("#ask").click()
    expect(page.locator("#chatbot").get_by_text("Sources (")).to_have_count(1, timeout=30_000)
    page.locator("#chatbot").get_by_text("Sources (").click()
