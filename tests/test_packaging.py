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
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = sorted(p.parent.name for p in ROOT.glob("*/__init__.py"))  # the project's top-level packages
# issue 48: the product apart from the lab. Each extra and the distributions it installs (the part that needs them
# says which extra to install when they are missing: tests/test_without_extras.py); none is a core dependency.
EXTRAS = {"plots": {"matplotlib"}, "llamaindex": {"llama-index-core"}, "langchain": {"langchain-text-splitters"},
          "bench": {"matplotlib", "llama-index-core", "langchain-text-splitters", "chonkie"}}


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _names(lines) -> dict[str, Requirement]:
    return {canonicalize_name(r.name): r for r in map(Requirement, lines)}


def test_the_lab_and_the_adapters_libraries_are_extras_not_core_dependencies():
    project = _project()
    core = _names(project["dependencies"])
    extras = project["optional-dependencies"]
    for extra, dists in EXTRAS.items():
        assert set(_names(extras[extra])) == dists, extra
        assert not dists & set(core), f"{sorted(dists & set(core))} should be in the {extra} extra, not a dependency"
    # the bench extra holds the plots, llamaindex and langchain extras written out: the same specifiers
    bench = _names(extras["bench"])
    for extra in ("plots", "llamaindex", "langchain"):
        for name, req in _names(extras[extra]).items():
            assert bench[name].specifier == req.specifier, (extra, str(req), str(bench[name]))


def test_the_setup_installs_every_extra_the_suite_needs():
    """`make setup` (which `make test` runs) installs the extras that hold what the tests import: all but cuda."""
    extras = _project()["optional-dependencies"]
    (line,) = [x for x in (ROOT / "Makefile").read_text().splitlines() if "pip install" in x and " -e " in x]
    named = line.split('".[')[1].split("]")[0].split(",")
    installed = set().union(*(_names(extras[e]) for e in named))
    for extra in set(extras) - {"cuda"}:
        assert set(_names(extras[extra])) <= installed, f"make setup does not install the {extra} extra"


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
    # `pip install mgrag` (no extras) installs none of the extras' libraries: they are Requires-Dist with an extra
    meta = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    reqs = [Requirement(x.split(":", 1)[1]) for x in meta.splitlines() if x.startswith("Requires-Dist:")]
    core = {canonicalize_name(r.name) for r in reqs if r.marker is None}
    assert "torch" in core and not core & set().union(*EXTRAS.values()), sorted(core)
    for extra, dists in EXTRAS.items():
        assert dists <= {canonicalize_name(r.name) for r in reqs if r.marker and r.marker.evaluate({"extra": extra})}
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
