"""What a stage is handed: the shared resources of one data directory, as a structural type.

The stages (``ingest``, ``retrieval``, ``router``) annotate their ``ctx`` with :class:`Resources` and never import
the wiring that builds them (``app.context.AppContext``, which satisfies this protocol, as do the tests' fakes).
Each resource is built on first use by whoever implements the protocol.

The foundation imports no stage, not even for the type checker (tests/test_layers.py), so every resource is typed by
a protocol of :mod:`core.protocols` that says what the stages ask of it, and which the stages' classes satisfy (the
class is named beside each member).
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Protocol

from core.protocols import BoundaryLM, ChatLM, DocumentCatalog, JobQueue, OriginalStore, Router
from core.protocols import Embedder as Embedder
from core.protocols import Point as Point
from core.protocols import VectorStore as VectorStore
from core.settings import Settings

if TYPE_CHECKING:
    import numpy as np


class Resources(Protocol):
    settings: Settings
    write_lock: threading.Lock  # one index write at a time in this process

    @property
    def jobs(self) -> JobQueue: ...  # ingest.jobs.state.JobStore: the ingestion queue

    @property
    def catalog(self) -> DocumentCatalog: ...  # ingest.store.catalog.Catalog: documents, versions, generations

    @property
    def store(self) -> OriginalStore: ...  # ingest.store.catalog.DocumentStore: the stored originals

    @property
    def index(self) -> VectorStore: ...  # ingest.store.index.VectorIndex: the Qdrant store (Edge, local or a server)

    @property
    def embedder(self) -> Embedder: ...  # ingest.embed: a sentence-transformers model or the hashing embedder

    @property
    def scorer(self) -> BoundaryLM: ...  # ingest.text.lm.LogitsScorer: the boundary LM of the LG chunkers

    @property
    def router(self) -> tuple[Router | None, str]: ...  # (router.runtime.RouterRuntime or None: uniform weights, why)

    # (level weights, why, seconds) for one question; hits: the dense search's (retrieval.scoring.Hit) per level
    def route(self, *, embedder_name: str, n_levels: int, question: str, query_vector: np.ndarray | None = None,
              hits: Any = None) -> tuple[list[float], str, float]: ...

    @property
    def chunking_llm(self) -> ChatLM | None: ...  # the lumber chunker's OpenAI-compatible client, or None

    def loaded(self, name: str) -> bool: ...  # whether the resource ``name`` is built already (not building it)
