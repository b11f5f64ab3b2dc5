"""What a stage is handed: the shared resources of one data directory, as a structural type.

The stages (``ingest``, ``retrieval``, ``router``) annotate their ``ctx`` with :class:`Resources` and never import
the wiring that builds them (``app.context.AppContext``, which satisfies this protocol, as do the tests' fakes).
Each resource is built on first use by whoever implements the protocol.

The foundation imports no stage, not even for the type checker (tests/test_layers.py), so the resources with a small
interface are typed by protocols here, which the stages' classes satisfy: :class:`Embedder`, :class:`VectorStore`
(with its :class:`Point`). The others (the catalog's nearly forty methods, the document store, BM25, the queue, the
boundary LM) stay ``Any``, their class named beside them.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from core.settings import Settings

if TYPE_CHECKING:
    import numpy as np


class Embedder(Protocol):
    """Texts to unit vectors (``ingest.embed``: the sentence-transformers models, the hashing embedder of the
    tests)."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...


class Point(Protocol):
    """A point of the vector store (``ingest.store.index.StoredPoint``): a chunk's id, payload, score, vector."""

    @property
    def id(self) -> str: ...

    @property
    def payload(self) -> dict: ...

    @property
    def score(self) -> float: ...

    @property
    def vector(self) -> np.ndarray | None: ...


class VectorStore(Protocol):
    """What the stages ask of the vector index (``ingest.store.index.VectorIndex``: Qdrant Edge, local or a server):
    one collection per generation and level; searches read the live generation."""

    def create_generation(self, gen: int, dim: int, n_levels: int) -> None: ...

    def drop_generation(self, gen: int, n_levels: int = 3) -> None: ...

    def generations(self) -> set[int]: ...

    def switch(self, gen: int, n_levels: int, old_levels: int = 3) -> None: ...

    def flush(self, gen: int | None = None) -> None: ...

    def optimize(self, gen: int) -> None: ...

    # chunks: ingest.types.Chunk, one per vector
    def upsert(self, gen: int, chunks: Sequence[Any], vectors: np.ndarray, doc_version: int,
               owner: str | None = None) -> None: ...

    def delete(self, gen: int, ids_by_level: dict[int, list[str]]) -> None: ...

    def count(self, gen: int, level: int, doc_ids: Sequence[str] | None = None) -> int: ...

    def search(self, level: int, vector: np.ndarray, limit: int, doc_ids: Sequence[str] | None = None,
               visible_to: str | None = None) -> Sequence[Point]: ...

    def retrieve(self, level: int, ids: Sequence[str], *, gen: int | None = None, with_vectors: bool = False
                 ) -> Sequence[Point]: ...

    def points(self, gen: int, level: int, with_vectors: bool = False, limit: int = 2048) -> Iterator[Point]: ...


class Resources(Protocol):
    settings: Settings
    write_lock: threading.Lock  # one index write at a time in this process

    @property
    def jobs(self) -> Any: ...  # ingest.jobs.state.JobStore: the ingestion queue

    @property
    def catalog(self) -> Any: ...  # ingest.store.catalog.Catalog: documents, versions, generations

    @property
    def store(self) -> Any: ...  # ingest.store.catalog.DocumentStore: the stored originals

    @property
    def index(self) -> VectorStore: ...  # the Qdrant store (Edge, local or a server)

    @property
    def bm25(self) -> Any: ...  # retrieval.bm25.Bm25Store

    @property
    def embedder(self) -> Embedder: ...

    @property
    def scorer(self) -> Any: ...  # ingest.text.lm.LogitsScorer: the boundary LM of the LG chunkers

    @property
    def router(self) -> Any: ...  # router.runtime.RouterRuntime or None (uniform weights)

    def route(self, *, embedder_name: str, n_levels: int, question: str, query_vector=None,
              hits=None) -> tuple[list[float], str, float]: ...  # (level weights, why, seconds) for one question

    @property
    def chunking_llm(self) -> Any: ...  # the OpenAI-compatible client of the lumber chunker, or None

    def loaded(self, name: str) -> bool: ...  # whether the resource ``name`` is built already (not building it)
