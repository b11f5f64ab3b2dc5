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


def test_missing_chromium_skips_here_and_fails_on_ci(no_ci, tmp_path):
    no_ci.setattr(bf, "CHROMIUM", str(tmp_path / "chromium"))
    with pytest.raises(pytest.skip.Exception, match="no Chromium at"):
        bf.check_browser()
    no_ci.setenv("MGRAG_REQUIRE_SERVICES", "1")
    with pytest.raises(pytest.fail.Exception, match="no Chromium at .*MGRAG_REQUIRE_SERVICES=1"):
        bf.check_browser()


def test_missing_playwright_skips_here_and_fails_on_ci(no_ci, tmp_path):
    chromium = tmp_path / "chromium"
    chromium.write_text("#!/bin/sh\n")
    chromium.chmod(0o755)
    no_ci.setattr(bf, "CHROMIUM", str(chromium))
    no_ci.setenv("PATH", str(tmp_path))
    no_ci.setitem(sys.modules, "playwright.sync_api", None)  # import raises ImportError
    with pytest.raises(pytest.skip.Exception, match="playwright is not installed"):
        bf.check_browser()
    no_ci.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="playwright is not installed"):
        bf.check_browser()
