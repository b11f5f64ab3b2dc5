"""Chunkers, one module each, behind :class:`ingest.chunkers.base.Chunker`.

:data:`CHUNKERS` is the registry: name → :class:`ChunkerEntry` (its line of :data:`core.components.CHUNKERS`,
what it needs, how to build it). ``build_chunker(name, theta, ...)`` is the factory used by the pipeline, the CLI
and the benchmarks.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from core import components
from ingest.chunkers.base import Chunker


@dataclass(frozen=True)
class ChunkerEntry(components.Entry):
    build: Callable[..., Chunker]  # (theta, scorer, embedder, lg_config, llm) -> Chunker

    @property
    def needs_lm(self) -> bool:
        return self.spec.needs_lm


def _recursive(theta, scorer, embedder, lg_config, llm):
    from ingest.chunkers.recursive import RecursiveChunker

    return RecursiveChunker(theta)


def _paragraph(theta, scorer, embedder, lg_config, llm):
    from ingest.chunkers.paragraph import ParagraphChunker

    return ParagraphChunker(theta)


def _mg(theta, scorer, embedder, lg_config, llm):
    from ingest.chunkers.multigranular import MultiGranularChunker

    return MultiGranularChunker(theta)


def _semantic(theta, scorer, embedder, lg_config, llm):
    from ingest.chunkers.semantic import SemanticChunker

    if embedder is None:
        raise ValueError("the semantic chunker needs an embedder")
    return SemanticChunker(embedder, theta)


def _lumber(theta, scorer, embedder, lg_config, llm):
    from ingest.chunkers.lumber import LumberChunker

    return LumberChunker(llm, max_words=theta)


def _needs_scorer(name: str, scorer) -> None:
    if scorer is None:
        raise ValueError(f"the {name} chunker needs a LogitsScorer (a causal LM)")


def _ppl(theta, scorer, embedder, lg_config, llm):
    from ingest.chunkers.perplexity import PerplexityChunker

    _needs_scorer("ppl", scorer)
    return PerplexityChunker(scorer, theta)


def _llamachunk(theta, scorer, embedder, lg_config, llm):
    from ingest.chunkers.llamachunk import LlamaChunkChunker

    _needs_scorer("llamachunk", scorer)
    return LlamaChunkChunker(scorer, theta)


def _logits(cls_name: str, name: str):
    def build(theta, scorer, embedder, lg_config, llm):
        from ingest.chunkers import logits

        _needs_scorer(name, scorer)
        return getattr(logits, cls_name)(scorer, lg_config or logits.LGConfig(theta=theta))

    return build


_BUILDERS: dict[str, Callable[..., Chunker]] = {
    "recursive": _recursive, "paragraph": _paragraph, "semantic": _semantic, "ppl": _ppl,
    "llamachunk": _llamachunk, "lg": _logits("LogitsGuidedChunker", "lg"), "mg": _mg,
    "lgmgc": _logits("LGMGCChunker", "lgmgc"), "lumber": _lumber,
}
components.check_builders("chunker", components.CHUNKERS, set(_BUILDERS))

CHUNKERS: dict[str, ChunkerEntry] = {n: ChunkerEntry(spec, _BUILDERS[n]) for n, spec in components.CHUNKERS.items()}
NEEDS_LM = frozenset(n for n, e in CHUNKERS.items() if e.needs_lm)
# chunkers a document is refined with after its quick first pass: the slow ones, that need a model (LM or LLM)
NEEDS_MODEL = frozenset(n for n, e in CHUNKERS.items() if e.spec.needs & {"lm", "llm"})


def build_chunker(name: str, theta: int = 300, *, scorer=None, embedder=None, lg_config=None, llm=None) -> Chunker:
    """A chunker by name. ``scorer`` (a LogitsScorer) is needed by lg/lgmgc/ppl/llamachunk, ``embedder`` by
    semantic, ``llm`` (an object with ``complete(messages)``, e.g. the openai backend) by lumber."""
    entry = CHUNKERS.get(name)
    if entry is None:
        raise ValueError(f"unknown chunker {name!r}; choose one of {', '.join(CHUNKERS)}")
    return entry.build(theta, scorer, embedder, lg_config, llm)


__all__ = ["CHUNKERS", "NEEDS_LM", "NEEDS_MODEL", "Chunker", "ChunkerEntry", "build_chunker"]
