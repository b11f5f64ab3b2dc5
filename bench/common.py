"""Shared benchmark code for the scripts under ``bench/``: a re-export of :mod:`app.evaluation.bench`.

``python bench/x.py`` puts ``bench/`` first on ``sys.path``, not the project root; this module fixes that and
sets the offline flags before anything imports transformers.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from app.evaluation.bench import *  # noqa: E402,F401,F403
from ingest.jobs.queue import ingest_files  # noqa: E402


def fit_rows_parser(description: str) -> argparse.ArgumentParser:
    """The arguments of the scripts that read the rows of ``bench/fit_reader.py collect``: ``--train`` and ``--dev``,
    each a comma-separated list of row files."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--train", required=True, help="row files fitted on (comma-separated)")
    ap.add_argument("--dev", required=True, help="row files chosen on (comma-separated)")
    return ap


def chroma_library(data_dir: Path):
    """An :class:`AppContext` over an index of chroma's five documents as a user's library would hold them (`mg`,
    θ = 300, the default embedder, no router) in ``data_dir``; documents missing from it (a run interrupted while
    building it) are ingested first. Shared by the benchmarks that ask chroma's questions through the product."""
    from app.context import AppContext
    from core.settings import Settings

    ctx = AppContext(Settings(data_dir=Path(data_dir), chunker="mg", theta=300, router="none"))
    docs = sorted((ROOT.parent / "shared" / "bench" / "chroma" / "docs").glob("*.md"))
    gen = ctx.catalog.live_gen()
    have = {d["doc_id"] for d in ctx.catalog.documents(gen)} if gen is not None else set()
    missing = [p for p in docs if p.name not in have]
    if missing:
        ingest_files(ctx, missing)
    return ctx
