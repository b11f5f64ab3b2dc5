"""Chunkers, one module each, behind :class:`ingest.chunkers.base.Chunker`.

The registry is :data:`core.components.CHUNKERS` (re-exported here as :data:`CHUNKERS`): one entry per chunker, its
name, description, needs and class; the class marks itself ``@registered`` and builds itself
(``Chunker.build``, ``Chunker.from_description``). ``build_chunker(name, theta, ...)`` is the factory used by the
pipeline, the CLI and the benchmarks; :func:`from_description` rebuilds the chunker an index recorded.
"""
from __future__ import annotations

from core.components import CHUNKERS, lookup
from ingest.chunkers.base import Chunker

NEEDS_LM = frozenset(n for n, c in CHUNKERS.items() if c.needs_lm)
# chunkers a document is refined with after its quick first pass: the slow ones, that need a model (LM or LLM)
NEEDS_MODEL = frozenset(n for n, c in CHUNKERS.items() if c.needs & {"lm", "llm"})


def chunker_class(name: str) -> type[Chunker]:
    """The class registered as ``name`` (its module imported now)."""
    return lookup(CHUNKERS, name, "chunker").resolve()


def build_chunker(name: str, theta: int = 300, *, scorer=None, embedder=None, lg_config=None, llm=None) -> Chunker:
    """A chunker by name. ``scorer`` (a LogitsScorer) is needed by lg/lgmgc/ppl/llamachunk, ``embedder`` by
    semantic, ``llm`` (an object with ``complete(messages)``, e.g. the openai backend) by lumber: each entry's
    ``needs`` (core/components.py)."""
    return chunker_class(name).build(theta, scorer=scorer, embedder=embedder, lg_config=lg_config, llm=llm)


def from_description(desc: dict, *, scorer=None, embedder=None, llm=None) -> Chunker:
    """The chunker a ``describe()`` recorded (``desc["chunker"]`` names it): the same cut, given the same models."""
    return Chunker.from_description(desc, scorer=scorer, embedder=embedder, llm=llm)


__all__ = ["CHUNKERS", "NEEDS_LM", "NEEDS_MODEL", "Chunker", "build_chunker", "chunker_class", "from_description"]
