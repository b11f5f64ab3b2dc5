"""The foundation and the service layer type-check (issue 36): pyproject.toml's [tool.mypy] names core/ and services/,
and mypy, run with that configuration as `make typecheck` runs it, finds no error there."""
from __future__ import annotations

import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# kept between runs (under the system's temporary folder, not in the checkout): warm, mypy takes a few seconds; the
# first run reads the modules core and services import, about a minute on two busy cores
CACHE = Path(tempfile.gettempdir()) / "mgrag-mypy-cache"


def test_mypy_is_configured_for_core_and_services():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert {"core", "services"} <= set(config["files"])
    assert config.get("ignore_missing_imports") is not True  # per module, in [[tool.mypy.overrides]]
    assert "$(BIN)/mypy" in (ROOT / "Makefile").read_text()


def test_core_and_services_type_check():
    run = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(CACHE)], capture_output=True, text=True,
                         cwd=ROOT, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Success: no issues found" in run.stdout
