"""Where the browser tests need Chromium and Playwright: a machine without them skips the tests, CI fails them
(.ci/run exports MGRAG_REQUIRE_SERVICES=1), whichever of the two is missing."""
from __future__ import annotations

import sys

import pytest

from tests import browser_fixtures as bf


@pytest.fixture
def no_ci(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("MGRAG_REQUIRE_SERVICES", raising=False)
    return monkeypatch


def outcome() -> str:
    """What the browser fixture's check does here: "ok", "skip: <why>" or "fail: <why>" (caught, so that a skip
    where a failure is due fails this test instead of skipping it)."""
    try:
        bf.check_browser()
    except pytest.skip.Exception as e:
        return f"skip: {e}"
    except pytest.fail.Exception as e:
        return f"fail: {e}"
    return "ok"


def test_missing_chromium_skips_here_and_fails_on_ci(no_ci, tmp_path):
    no_ci.setattr(bf, "CHROMIUM", str(tmp_path / "chromium"))
    assert outcome().startswith("skip: no Chromium at")
    no_ci.setenv("MGRAG_REQUIRE_SERVICES", "1")
    got = outcome()
    assert got.startswith("fail: no Chromium at") and "MGRAG_REQUIRE_SERVICES=1" in got


def test_missing_playwright_skips_here_and_fails_on_ci(no_ci, tmp_path):
    chromium = tmp_path / "chromium"
    chromium.write_text("#!/bin/sh\n")
    chromium.chmod(0o755)
    no_ci.setattr(bf, "CHROMIUM", str(chromium))
    no_ci.setenv("PATH", str(tmp_path))
    no_ci.setitem(sys.modules, "playwright.sync_api", None)  # import raises ImportError
    assert outcome().startswith("skip: playwright is not installed")
    no_ci.setenv("CI", "true")
    assert outcome().startswith("fail: playwright is not installed")
