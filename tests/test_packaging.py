"""The built wheel holds what an installed MGRAG needs at run time: the shipped router (``MGRAG_ROUTER=default``,
``router/runtime.py``) and the evaluation sets, besides the code (issue 36: the image installs with ``pip install .``,
so what package data leaves out is missing there)."""
from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.integration
def test_the_wheel_holds_the_shipped_router_and_the_evaluation_sets(tmp_path):
    src = tmp_path / "src"  # built from a copy, so that the build leaves nothing in the working tree
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for pkg in ("app", "ingest", "retrieval", "router", "ui"):
        shutil.copytree(ROOT / pkg, src / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                          str(tmp_path / "dist"), str(src)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("mgrag-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {f"router/default/{p.name}" for p in (ROOT / "router" / "default").iterdir()
               if p.suffix in (".json", ".safetensors")}
    assert shipped and shipped <= names, shipped - names
    assert {"router/default/config.json", "router/default/model.safetensors"} <= names
    assert any(n.startswith("app/evaluation/sets/") and n.endswith(".jsonl") for n in names)
    assert "app/cli.py" in names and "ui/api.py" in names
