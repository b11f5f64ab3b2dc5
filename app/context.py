"""Lazily built resources shared by the CLI, the pipeline and (later) the server: one per process."""
from __future__ import annotations

import logging
import threading
from functools import cached_property
from typing import TYPE_CHECKING

from app.lookup import RowIndex
from app.routing import Profiles
from app.synth import openai_client
from core.datalock import acquire, first_open
from core.models import load_causal_lm
from core.settings import Settings
from ingest.embed import load_embedder
from ingest.jobs.state import JobStore
from ingest.store.catalog import Catalog, DocumentStore
from ingest.store.consistency import ORPHAN_AGE_S, check
from ingest.store.index import open_index
from ingest.text.lm import LogitsScorer, choose_threads

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): torch and router.runtime

if TYPE_CHECKING:
    from core.resources import Embedder
    from ingest.store.index import VectorIndex

log = logging.getLogger(__name__)


class AppContext:
    def __init__(self, settings: Settings | None = None, *, embedder=None, scorer=None, client=None, index=None):
        """``client``: a qdrant-client instance to store in (e.g. ``QdrantClient(":memory:")`` standing in for a
        server); ``index``: an open index shared with another context on the same data dir (it stays theirs)."""
        self.settings = settings or Settings()
        self._client = client
        self._lock = None
        # index writes of this process (a document's commit, a deletion, a re-ingestion) one at a time; the work
        # before a commit (extraction, chunking, embedding) runs outside it
        self.write_lock = threading.Lock()
        self.runners: list = []  # ingestion queue runners working on this context (stopped by close())
        self.check_report = None
        self._caches: dict[str, dict] = {}
        self._shared_index = index is not None
        # given resources take the place of the lazily built ones (a cached_property yields to an attribute)
        if embedder is not None:
            self.embedder = embedder
        if scorer is not None:
            self.scorer = scorer
        if index is not None:
            self.index = index

    def loaded(self, name: str) -> bool:
        """Whether the lazily built resource ``name`` (``index``, ``embedder``, ``scorer``, ``router``, ...) is built
        or was given."""
        return name in vars(self)

    def forget(self, name: str) -> None:
        """Drop the built resource ``name``: the next use builds it again (e.g. the router after a training)."""
        vars(self).pop(name, None)

    def cache(self, name: str) -> dict:
        """This context's cache ``name`` (a dict, made on first use): what is built once per context and kept,
        e.g. the answer backends (``synthesizers``) and the sentence vectors (``sentence_vectors``)."""
        return self._caches.setdefault(name, {})

    @property
    def embedded(self) -> bool:
        """The store lives in the data dir (Qdrant Edge or local mode), not on a server."""
        return self._client is None and not self.settings.qdrant_url

    def writer_lock(self, open_index: bool = True):
        """Take this data dir's writer lock (once; :class:`core.datalock.DataDirBusy` if another process has it)
        and open the index, which runs the consistency check before anything is written. Writers call it before
        loading any model; opening an embedded store takes the lock too. ``open_index=False``: the lock only
        (another context of this process opens the store)."""
        self._acquire()
        if open_index:
            self.index  # noqa: B018 - opened now: the check runs before this writer changes anything
        return self._lock

    def _acquire(self) -> None:
        if self._lock is None:
            self._lock = acquire(self.settings.data_dir)

    @cached_property
    def index(self) -> VectorIndex:
        """The vector store (:mod:`ingest.store.index`). Embedded stores are opened under the writer lock; whoever holds
        the lock runs the consistency check (:mod:`ingest.store.consistency`) once on open."""
        if self.embedded:
            self._acquire()
        idx = open_index(self.settings, self.catalog.live_gen, client=self._client)
        if self._lock is not None:
            # the first opener since this process took the lock removes every unreferenced original; a later one
            # shares the lock with contexts that may be storing an upload right now: only old ones
            age = 0.0 if first_open(self.settings.data_dir) else ORPHAN_AGE_S
            self.check_report = check(self.catalog, idx, self.settings.data_dir, own_store=self.embedded,
                                      orphan_min_age_s=age)
        return idx

    @cached_property
    def catalog(self) -> Catalog:
        return Catalog(self.settings.catalog_path)

    @cached_property
    def jobs(self) -> JobStore:
        """The ingestion queue's rows (:mod:`ingest.jobs.state`), in the catalog's database; any process may add to
        it."""
        return JobStore(self.catalog, self.settings.data_dir / "spool", self.settings.ingest_max_attempts)

    @cached_property
    def store(self) -> DocumentStore:
        return DocumentStore(self.settings.store_path)

    @cached_property
    def profiles(self):
        """Documents' profiles for routing a question to the documents it names (:mod:`app.routing`)."""
        return Profiles(self.store.text)

    @cached_property
    def row_index(self):
        """Documents' table rows, for looking up a figure's statement row the search did not bring
        (:mod:`app.lookup`)."""
        return RowIndex(self.store.text)

    @cached_property
    def embedder(self) -> Embedder:
        s = self.settings
        log.info("loading embedder %s", s.embedder)
        return load_embedder(s.embedder, query_prefix=s.embed_query_prefix, passage_prefix=s.embed_passage_prefix,
                             batch_size=s.embed_batch_size, precision=s.embed_precision)

    @cached_property
    def router(self):
        """``(RouterRuntime or None, note)`` for MGRAG_ROUTER; None means uniform weights, the note says why."""
        from router.runtime import load_runtime

        return load_runtime(self.settings.router, self.settings.data_dir)

    def route(self, **kw) -> tuple[list[float], str, float]:
        """``(weights, note, seconds)`` of the configured router for one question (:func:`router.runtime.route`);
        retrieval calls this, so it never imports the router stage above it."""
        from router.runtime import route

        runtime, note = self.router
        return route(runtime, note, embedder=self.embedder if runtime is not None else None, **kw)

    @cached_property
    def scorer(self):
        import torch


        s = self.settings
        if s.torch_threads:
            torch.set_num_threads(s.torch_threads)
        device = s.lm_device or ("cuda" if torch.cuda.is_available() else "cpu")
        log.info("loading chunker LM %s on %s", s.lm_model, device)
        tok, model = load_causal_lm(s.lm_model, s.cache_dir, load_in_8bit=s.lm_8bit, device=device)
        _, self.threads_note = choose_threads(model, s.torch_threads)
        log.info("torch threads: %s", self.threads_note)
        batch = s.lg_batch_size or (4 if str(device).startswith("cuda") else 1)  # batching is slower on a CPU
        return LogitsScorer(tok, model, prompt=s.lg_prompt, boundary_tokens=tuple(s.lg_boundary_tokens),
                            batch_size=batch, block_tokens=s.lg_block_tokens,
                            context_tokens=s.lg_context_tokens)

    @property
    def chunking_llm(self):
        """The lumber chunker's OpenAI-compatible client, or None when no endpoint is set (read from the settings at
        each call, so an endpoint saved on the Admin tab is the one used)."""
        if not self.settings.openai_base_url:
            return None

        return openai_client(self.settings)

    def close(self) -> None:
        while self.runners:
            self.runners.pop().stop()
        if "lm_check" in self._caches:  # the LM check's llama-server, if this context started one
            from app.checker import stop_local

            stop_local(self._caches["lm_check"])
        if self.loaded("index") and not self._shared_index:
            idx = self.index
            self.forget("index")
            try:
                idx.close()
            except Exception:  # pragma: no cover - closing is best effort
                log.exception("closing the index failed")
        if self._lock is not None:
            self._lock.release()
            self._lock = None
