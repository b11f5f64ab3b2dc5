"""Installs are pinned (issue 36): constraints.txt, which `make setup`, CI and the Dockerfile install with, pins every
dependency of pyproject.toml (the app's and the dev, bench and mcp extras that `make setup` installs) to one version,
and .ci/lock.py writes it from the installed packages' metadata."""
from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent


def _pins(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: {line!r} is not pinned with =="
            out[canonicalize_name(name)] = version
    return out


def test_every_dependency_the_setup_installs_is_pinned():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    for extra in ("dev", "bench", "mcp"):  # what `make setup` installs
        wanted += project["optional-dependencies"][extra]
    pins = _pins((ROOT / "constraints.txt").read_text())
    for line in wanted:
        req = Requirement(line)
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is not in constraints.txt (make lock)"
        assert req.specifier.contains(pins[name], prereleases=True), f"{req.name}=={pins[name]} does not meet {line}"
    assert "bitsandbytes" not in pins  # the cuda extra: for the GPU host to choose
    for line in (ROOT / "Makefile").read_text().splitlines():
        if "pip install" in line and "-e" in line:
            assert "-c constraints.txt" in line, line
    assert "-c constraints.txt" in (ROOT / "Dockerfile").read_text()


def test_the_lock_script_pins_what_is_installed(tmp_path):
    out = tmp_path / "c.txt"
    run = subprocess.run([sys.executable, str(ROOT / ".ci" / "lock.py"), str(out)], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr
    pins = _pins(out.read_text())
    from importlib import metadata

    assert pins["torch"] == "2.13.0" and pins["pytest"] == metadata.version("pytest")
    assert {"gradio", "transformers", "qdrant-edge-py", "rq", "ruff"} <= set(pins)
