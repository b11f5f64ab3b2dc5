"""The built wheel holds what an installed MGRAG needs at run time: the shipped router (``MGRAG_ROUTER=default``,
``router/runtime.py``) and the evaluation sets, besides the code (issue 36: the image installs with ``pip install .``,
so what package data leaves out is missing there)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = sorted(p.parent.name for p in ROOT.glob("*/__init__.py"))  # the project's top-level packages


def test_every_package_is_declared_and_copied_into_the_image():
    include = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    assert sorted(p.rstrip("*") for p in include) == PACKAGES
    docker = (ROOT / "Dockerfile").read_text()
    assert all(f"COPY {p} {p}" in docker for p in PACKAGES), PACKAGES


@pytest.mark.integration
def test_the_wheel_holds_the_shipped_router_and_the_evaluation_sets(tmp_path):
    src = tmp_path / "src"  # built from a copy, so that the build leaves nothing in the working tree
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for pkg in PACKAGES:
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
    assert "cli/main.py" in names and "api/v1.py" in names
    # installed from the wheel (not the working tree): the shipped router is found and loads with MGRAG_ROUTER=default
    site = tmp_path / "site"
    out = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    probe = ("import json, router.runtime as r, cli.main as c; rt, note = r.load_runtime('default');"
             "print(json.dumps({'router': str(rt.path) if rt else note, 'cli': c.__file__}))")
    env = {**os.environ, "PYTHONPATH": str(site), "HF_HUB_OFFLINE": "1", "MGRAG_ROUTER": "default"}
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["router"] == str(site / "router" / "default") and got["cli"].startswith(str(site)), got
