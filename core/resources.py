"""What a stage is handed: the shared resources of one data directory, as a structural type.

The stages (``ingest``, ``retrieval``, ``router``) annotate their ``ctx`` with :class:`Resources` and never import
the wiring that builds them (``app.context.AppContext``, which satisfies this protocol, as do the tests' fakes).
Each resource is built on first use by whoever implements the protocol.
"""
from __future__ import annotations

from typing import Any, Protocol

from core.settings import Settings


class Resources(Protocol):
    settings: Settings
    write_lock: Any  # threading.Lock: one index write at a time in this process

    @property
    def jobs(self) -> Any: ...  # ingest.jobs.state.JobStore: the ingestion queue

    @property
    def catalog(self) -> Any: ...  # ingest.store.catalog.Catalog: documents, versions, generations

    @property
    def store(self) -> Any: ...  # ingest.store.catalog.DocumentStore: the stored originals

    @property
    def index(self) -> Any: ...  # ingest.store.index.VectorIndex: the Qdrant store (Edge, local or a server)

    @property
    def bm25(self) -> Any: ...  # retrieval.bm25.Bm25Store

    @property
    def embedder(self) -> Any: ...  # ingest.embed.Embedder

    @property
    def scorer(self) -> Any: ...  # ingest.text.lm.LogitsScorer: the boundary LM of the LG chunkers

    @property
    def router(self) -> Any: ...  # router.runtime.RouterRuntime or None (uniform weights)

    def route(self, *, embedder_name: str, n_levels: int, question: str, query_vector=None,
              hits=None) -> tuple[list[float], str, float]: ...  # (level weights, why, seconds) for one question

    @property
    def chunking_llm(self) -> Any: ...  # the OpenAI-compatible client of the lumber chunker, or None

    def loaded(self, name: str) -> bool: ...  # whether the resource ``name`` is built already (not building it)
