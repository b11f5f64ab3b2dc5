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


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists() or shutil.which("chromium") is None:
        if os.environ.get("CI") or os.environ.get("MGRAG_REQUIRE_SERVICES") == "1":
            pytest.fail(f"{CHROMIUM} is missing on CI; .ci/run installs it with `apt-get install -y chromium`")
        pytest.skip(f"no Chromium at {CHROMIUM}: `apt-get install -y chromium` to run the browser tests")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if os.environ.get("CI") or os.environ.get("MGRAG_REQUIRE_SERVICES") == "1":
            pytest.fail("playwright is missing: pip install -e '.[dev]'")
        pytest.skip("playwright is not installed: pip install -e '.[dev]'")
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
