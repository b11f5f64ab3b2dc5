"""The examples in the modules' docstrings hold (pytest runs no doctests by itself here)."""
from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODULES = sorted(".".join(p.relative_to(ROOT).with_suffix("").parts)
                 for pkg in ("app", "ingest", "retrieval", "router", "ui") for p in (ROOT / pkg).rglob("*.py")
                 if ">>> " in p.read_text(encoding="utf-8"))


def test_modules_with_examples_are_found():
    assert {"app.scorer", "app.grounding", "ingest.readers.pdf"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed"
