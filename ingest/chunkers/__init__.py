"""Chunkers, one module each, behind :class:`ingest.chunkers.base.Chunker`.

``build_chunker(name, theta, ...)`` is the factory used by the pipeline, the CLI and the benchmarks.
"""
from __future__ import annotations

from ingest.chunkers.base import Chunker

CHUNKERS = ("recursive", "paragraph", "semantic", "lg", "mg", "lgmgc")
NEEDS_LM = frozenset({"lg", "lgmgc"})


def build_chunker(name: str, theta: int = 300, *, scorer=None, embedder=None, lg_config=None) -> Chunker:
    """A chunker by name. ``scorer`` (a LogitsScorer) is needed by lg/lgmgc, ``embedder`` by semantic."""
    from ingest.chunkers.logits import LGConfig, LGMGCChunker, LogitsGuidedChunker
    from ingest.chunkers.multigranular import MultiGranularChunker
    from ingest.chunkers.paragraph import ParagraphChunker
    from ingest.chunkers.recursive import RecursiveChunker
    from ingest.chunkers.semantic import SemanticChunker

    if name == "recursive":
        return RecursiveChunker(theta)
    if name == "paragraph":
        return ParagraphChunker(theta)
    if name == "mg":
        return MultiGranularChunker(theta)
    if name == "semantic":
        if embedder is None:
            raise ValueError("the semantic chunker needs an embedder")
        return SemanticChunker(embedder, theta)
    if name in NEEDS_LM:
        if scorer is None:
            raise ValueError(f"the {name} chunker needs a LogitsScorer (a causal LM)")
        cfg = lg_config or LGConfig(theta=theta)
        return (LGMGCChunker if name == "lgmgc" else LogitsGuidedChunker)(scorer, cfg)
    raise ValueError(f"unknown chunker {name!r}; choose one of {', '.join(CHUNKERS)}")


__all__ = ["CHUNKERS", "NEEDS_LM", "Chunker", "build_chunker"]
