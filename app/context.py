"""Lazily built resources shared by the CLI, the pipeline and (later) the server: one per process."""
from __future__ import annotations

import logging
from functools import cached_property

from app.settings import Settings

log = logging.getLogger(__name__)


class AppContext:
    def __init__(self, settings: Settings | None = None, *, embedder=None, scorer=None, client=None):
        self.settings = settings or Settings()
        if embedder is not None:
            self.__dict__["embedder"] = embedder
        if scorer is not None:
            self.__dict__["scorer"] = scorer
        if client is not None:
            self.__dict__["client"] = client

    @cached_property
    def client(self):
        from ingest.index import make_client

        s = self.settings
        return make_client(s.qdrant_url, s.qdrant_api_key, s.qdrant_path)

    @cached_property
    def index(self):
        from ingest.index import QdrantIndex

        return QdrantIndex(self.client, self.settings.collection_prefix)

    @cached_property
    def catalog(self):
        from ingest.catalog import Catalog

        return Catalog(self.settings.catalog_path)

    @cached_property
    def store(self):
        from ingest.catalog import DocumentStore

        return DocumentStore(self.settings.store_path)

    @cached_property
    def bm25(self):
        from retrieval.bm25 import Bm25Store

        return Bm25Store(self.settings.data_dir / "bm25", doc_of=self.catalog.docs_of_chunks)

    @cached_property
    def embedder(self):
        from ingest.embed import load_embedder

        s = self.settings
        log.info("loading embedder %s", s.embedder)
        return load_embedder(s.embedder, query_prefix=s.embed_query_prefix, passage_prefix=s.embed_passage_prefix,
                             batch_size=s.embed_batch_size)

    @cached_property
    def router(self):
        """``(RouterRuntime or None, note)`` for MGRAG_ROUTER; None means uniform weights, the note says why."""
        from router.runtime import load_runtime

        return load_runtime(self.settings.router, self.settings.data_dir)

    @cached_property
    def scorer(self):
        import torch

        from app.models import load_causal_lm
        from ingest.lm import LogitsScorer

        from ingest.lm import choose_threads

        s = self.settings
        if s.torch_threads:
            torch.set_num_threads(s.torch_threads)
        device = s.lm_device or ("cuda" if torch.cuda.is_available() else "cpu")
        log.info("loading chunker LM %s on %s", s.lm_model, device)
        tok, model = load_causal_lm(s.lm_model, s.cache_dir, load_in_8bit=s.lm_8bit, device=device)
        _, self.threads_note = choose_threads(model, s.torch_threads)
        log.info("torch threads: %s", self.threads_note)
        return LogitsScorer(tok, model, prompt=s.lg_prompt, boundary_tokens=tuple(s.lg_boundary_tokens),
                            batch_size=s.lg_batch_size, block_tokens=s.lg_block_tokens,
                            context_tokens=s.lg_context_tokens)

    def close(self) -> None:
        if "client" in self.__dict__:
            try:
                self.client.close()
            except Exception:  # pragma: no cover - closing is best effort
                pass
