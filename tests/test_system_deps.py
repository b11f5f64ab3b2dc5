"""Every system program a test drives is installed by the project's own files (issue 32: a new machine's CI failed
because tesseract's English data was installed by hand on the old one)."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_make_test_installs_every_debian_package_the_tests_drive():
    make = (ROOT / "Makefile").read_text()
    packages = set(re.search(r"^SYSTEM_PACKAGES := (.+)$", make, re.M).group(1).split())
    assert {"chromium", "redis-server", "docker-compose", "tesseract-ocr", "tesseract-ocr-eng"} <= packages
    assert re.search(r"^test: system-deps ", make, re.M)  # make test (and .ci/run, which runs it) installs them
    assert "make test" in (ROOT / ".ci" / "run").read_text()
