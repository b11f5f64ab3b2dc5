"""Chunkers, one module each, behind :class:`ingest.chunkers.base.Chunker`.

``build_chunker(name, theta, ...)`` is the factory used by the pipeline, the CLI and the benchmarks.
"""
from __future__ import annotations

from ingest.chunkers.base import Chunker

CHUNKERS = ("recursive", "paragraph", "semantic", "lg", "mg", "lgmgc", "ppl", "llamachunk", "lumber")
NEEDS_LM = frozenset({"lg", "lgmgc", "ppl", "llamachunk"})


def build_chunker(name: str, theta: int = 300, *, scorer=None, embedder=None, lg_config=None, llm=None) -> Chunker:
    """A chunker by name. ``scorer`` (a LogitsScorer) is needed by lg/lgmgc/ppl/llamachunk, ``embedder`` by
    semantic, ``llm`` (an object with ``complete(messages)``, e.g. the openai backend) by lumber."""
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
    if name == "lumber":
        from ingest.chunkers.lumber import LumberChunker

        return LumberChunker(llm, max_words=theta)
    if name in ("ppl", "llamachunk"):
        if scorer is None:
            raise ValueError(f"the {name} chunker needs a LogitsScorer (a causal LM)")
        from ingest.chunkers.llamachunk import LlamaChunkChunker
        from ingest.chunkers.perplexity import PerplexityChunker

        return (PerplexityChunker if name == "ppl" else LlamaChunkChunker)(scorer, theta)
    if name in NEEDS_LM:
        if scorer is None:
            raise ValueError(f"the {name} chunker needs a LogitsScorer (a causal LM)")
        cfg = lg_config or LGConfig(theta=theta)
        return (LGMGCChunker if name == "lgmgc" else LogitsGuidedChunker)(scorer, cfg)
    raise ValueError(f"unknown chunker {name!r}; choose one of {', '.join(CHUNKERS)}")


__all__ = ["CHUNKERS", "NEEDS_LM", "Chunker", "build_chunker"]
