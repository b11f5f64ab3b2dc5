"""The resources a stage is handed, as structural types: what the stages ask of each member of
:class:`core.resources.Resources`, written here because the foundation imports no stage (tests/test_layers.py).

Each protocol holds what the callers use, not the whole class: the stages' calls through their ``ctx`` (``ingest``,
``retrieval``, ``router``) and the chunkers' calls on the models a context hands them. The stages' classes satisfy
them (tests/test_protocols.py checks each member against its class, names and parameters), and mypy checks
:class:`app.context.AppContext` against :class:`~core.resources.Resources` wherever the services hand it to a stage.

The records the stages pass back and forth (a generation, a job, a chunk, an LM's tokenized document) are ``Any``:
their classes live in the stages, and a protocol parameter narrower than ``Any`` would refuse the real classes.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Texts to unit vectors (``ingest.embed``: the sentence-transformers models, the hashing embedder of the
    tests)."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...


@runtime_checkable
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


@runtime_checkable
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

    def keyword_search(self, level: int, tokens: Sequence[str], limit: int, doc_ids: Sequence[str] | None = None,
                       visible_to: str | None = None) -> Sequence[Point]: ...

    def has_keywords(self, gen: int, level: int) -> bool: ...

    def retrieve(self, level: int, ids: Sequence[str], *, gen: int | None = None, with_vectors: bool = False
                 ) -> Sequence[Point]: ...

    def points(self, gen: int, level: int, with_vectors: bool = False, limit: int = 2048) -> Iterator[Point]: ...


@runtime_checkable
class DocumentCatalog(Protocol):
    """The catalog (``ingest.store.catalog.Catalog``, SQLite): index generations and runs, documents and their
    versions, the chunk ids of each document, who may read what. A generation is ``ingest.store.catalog.Generation``
    (``gen``, ``n_levels``, ``embedder``, ``chunker``, …)."""

    # generations and runs
    def live_generation(self) -> Any: ...  # Generation | None

    def generation(self, gen: int) -> Any: ...  # Generation | None

    def generations(self, status: str | None = None) -> list[Any]: ...  # list[Generation]

    def new_generation(self, chunker: str, theta: int, params: dict, embedder: str, dim: int, n_levels: int
                       ) -> int: ...

    def set_generation_status(self, gen: int, status: str) -> None: ...

    def drop_generation_rows(self, gen: int) -> None: ...

    def start_run(self, kind: str, gen: int | None, detail: dict | None = None) -> int: ...

    def interrupted_reingestion(self) -> Any: ...  # (Generation, run row) of a re-ingestion to resume, or None

    def finish_run(self, run_id: int, status: str, n_ok: int, n_failed: int, detail: dict | None = None) -> None: ...

    # documents and their versions
    def documents(self, gen: int | None) -> list[dict]: ...

    def find_document(self, ref: str) -> str | None: ...

    def doc_by_hash(self, h: str, gen: int, owner: str | None = None) -> str | None: ...

    def indexed_doc(self, gen: int, doc_id: str) -> Any: ...  # (version, hash) of the document in ``gen``, or None

    def version_for(self, doc_id: str, h: str) -> int: ...

    def version_of(self, doc_id: str, h: str) -> dict | None: ...

    def owner_of(self, doc_id: str) -> tuple[bool, str | None]: ...

    def current_hash(self, doc_id: str) -> str | None: ...

    def chunking(self, gen: int, doc_id: str) -> dict | None: ...

    def phase(self, gen: int, doc_id: str) -> tuple[str | None, str | None] | None: ...

    # chunks: ingest.types.Chunk; on_commit(db) runs inside the catalog's transaction
    def record_indexed(self, gen: int, doc_id: str, name: str, h: str, size: int, kind: str, chunks: Iterable[Any],
                       seconds: float, chunking: dict | None = None, owner: str | None = None,
                       phase: str | None = None, on_commit: Callable[[Any], object] | None = None) -> int: ...

    def begin_pending(self, gen: int, doc_id: str) -> None: ...

    def end_pending(self, gen: int, doc_id: str) -> None: ...

    def remove_document(self, doc_id: str) -> list[str]: ...

    # chunks and readers
    def chunk_ids(self, gen: int, doc_id: str) -> dict[int, list[str]]: ...

    def chunk_spans(self, gen: int, doc_id: str, level: int) -> list[tuple[str, int, int]]: ...

    def known_ids(self, gen: int, ids: Iterable[str]) -> set[str]: ...

    def chunks_under(self, gen: int, parent_ids: Iterable[str]) -> list[tuple[str, str, int, int, int, str]]: ...

    def labels(self, visible_to: str | None, doc_ids: Iterable[str] | None = None) -> dict[str, str]: ...

    def label_of(self, doc_id: str, name: str, visible_to: str | None) -> str: ...


@runtime_checkable
class OriginalStore(Protocol):
    """The stored originals by content hash (``ingest.store.catalog.DocumentStore``): the file, its text, its
    layout."""

    def put(self, h: str, data: bytes, text: str, layout: dict | None = None) -> None: ...

    def extend(self, h: str, text: str, layout: dict | None) -> None: ...

    def original(self, h: str) -> bytes: ...

    def text(self, h: str) -> str: ...

    def layout(self, h: str) -> dict | None: ...

    def remove(self, h: str) -> None: ...

    def stage(self, h: str, gen: int, text: str, layout: dict | None) -> None: ...

    def promote(self, h: str, gen: int) -> None: ...

    def discard(self, h: str, gen: int) -> None: ...

    def staged(self) -> list[tuple[str, int]]: ...


@runtime_checkable
class JobQueue(Protocol):
    """The ingestion queue (``ingest.jobs.state.JobStore``), as the stages outside the runner ask it: a job is an
    ``ingest.jobs.state.Job`` (``job_id``, ``state``, ``doc_id``, …)."""

    def add(self, name: str, data: bytes, h: str, owner: str | None, *, batch: str | None = None,
            source: str = "cli", two_phase: bool = True) -> tuple[Any, str]: ...  # (Job | None, why not)

    def get(self, job_id: int) -> Any: ...  # Job | None

    def position(self, job: Any) -> int: ...

    def starts_in(self, job: Any, workers: int, *, owner_cap: int | None = None,
                  range_pages: int | None = None) -> float | None: ...

    def latest_by_doc(self) -> dict[str, Any]: ...  # each document's latest Job

    def forget_doc(self, doc_id: str) -> None: ...


@runtime_checkable
class BoundaryLM(Protocol):
    """The boundary LM of the LM chunkers (``ingest.text.lm.LogitsScorer``): the probability of a boundary token
    after each sentence. A tokenized document is an ``ingest.text.lm.DocumentTokens``."""

    @property
    def tokenizer(self) -> Any: ...  # a Hugging Face tokenizer

    @property
    def model(self) -> Any: ...  # a Hugging Face causal LM

    @property
    def prompt(self) -> str: ...

    @property
    def boundary_tokens(self) -> Sequence[str]: ...

    @property
    def prompt_ids(self) -> list[int]: ...

    @property
    def tokens_processed(self) -> int: ...

    def tokenize(self, text: str, sentences: Sequence[tuple[int, int]]) -> Any: ...

    def window_ids(self, doc: Any, i: int, j: int) -> tuple[list[int], list[int]]: ...

    def window_probs(self, doc: Any, i: int, j: int) -> np.ndarray: ...

    def stream_probs(self, doc: Any, on_progress: Callable[[int, int], object] | None = None) -> np.ndarray: ...


@runtime_checkable
class Router(Protocol):
    """A loaded level router (``router.runtime.RouterRuntime``): the level weights of one question."""

    @property
    def explicit(self) -> bool: ...  # named by the settings (a misfit is an error, not uniform weights)

    @property
    def config(self) -> Any: ...  # router.model.RouterConfig

    def describe(self) -> str: ...

    def fits(self, embedder: str, n_levels: int) -> str | None: ...  # None, or why not

    def uses_index_embedder(self) -> bool: ...

    def query_vector(self, question: str, embedder: Any = None) -> np.ndarray: ...

    def weights(self, query_vector: Any, hits: Any = None, question: str = "") -> list[float]: ...


@runtime_checkable
class ChatLM(Protocol):
    """An OpenAI-compatible chat client (``app.synth.openai_compat.OpenAICompatSynthesizer``), as the lumber
    chunker asks it."""

    @property
    def model(self) -> str: ...

    def complete(self, messages: list[dict], max_tokens: int | None = None) -> str: ...
