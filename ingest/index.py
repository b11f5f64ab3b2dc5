"""Qdrant adapter. One collection per granularity level and index generation, reached through aliases.

Layout: collection ``{prefix}_g{gen}_L{level}``, alias ``{prefix}_L{level}`` → the live generation. Queries go
to the alias of each level with no payload filter (the hot path stays unfiltered, which matters in embedded
mode where filters are evaluated in Python). Re-ingestion fills a new generation beside the live one and then
moves every alias in one ``update_collection_aliases`` call, so readers see the old index or the new one,
never a mix.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ingest.types import Chunk

log = logging.getLogger(__name__)


def make_client(url: str | None, api_key: str | None, path: Path, timeout: int = 30, check_compatibility: bool = True):
    """Server mode when ``url`` is set (MGRAG_QDRANT_URL), otherwise embedded local mode under ``path``."""
    from qdrant_client import QdrantClient

    if url:
        return QdrantClient(url=url, api_key=api_key, timeout=timeout, check_compatibility=check_compatibility)
    path.mkdir(parents=True, exist_ok=True)
    return QdrantClient(path=str(path))


class QdrantIndex:
    def __init__(self, client, prefix: str = "mgrag", batch: int = 256):
        self.client = client
        self.prefix = prefix
        self.batch = batch

    # -- names --------------------------------------------------------------------------------------
    def alias(self, level: int) -> str:
        return f"{self.prefix}_L{level}"

    def collection(self, gen: int, level: int) -> str:
        return f"{self.prefix}_g{gen}_L{level}"

    # -- lifecycle ----------------------------------------------------------------------------------
    def create_generation(self, gen: int, dim: int, n_levels: int) -> None:
        from qdrant_client import models

        for level in range(n_levels):
            name = self.collection(gen, level)
            if self.client.collection_exists(name):
                self.client.delete_collection(name)
            self.client.create_collection(
                name, vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE))

    def drop_generation(self, gen: int, n_levels: int = 3) -> None:
        for level in range(n_levels):
            name = self.collection(gen, level)
            if self.client.collection_exists(name):
                self.client.delete_collection(name)

    def switch(self, gen: int, n_levels: int, old_levels: int = 3) -> None:
        """Point every level's alias at generation ``gen``, atomically (one aliases request)."""
        from qdrant_client import models

        current = {a.alias_name for a in self.client.get_aliases().aliases}
        ops = []
        for level in range(max(n_levels, old_levels)):
            alias = self.alias(level)
            if alias in current:
                ops.append(models.DeleteAliasOperation(delete_alias=models.DeleteAlias(alias_name=alias)))
            if level < n_levels:
                ops.append(models.CreateAliasOperation(create_alias=models.CreateAlias(
                    collection_name=self.collection(gen, level), alias_name=alias)))
        self.client.update_collection_aliases(change_aliases_operations=ops)

    def live_collections(self) -> dict[str, str]:
        return {a.alias_name: a.collection_name for a in self.client.get_aliases().aliases}

    def orphan_collections(self, keep_gens: Sequence[int]) -> list[str]:
        keep = {self.collection(g, lv) for g in keep_gens for lv in range(3)}
        names = [c.name for c in self.client.get_collections().collections]
        return [n for n in names if n.startswith(f"{self.prefix}_g") and n not in keep]

    # -- points -------------------------------------------------------------------------------------
    def upsert(self, gen: int, chunks: Sequence[Chunk], vectors: np.ndarray, doc_version: int) -> None:
        from qdrant_client import models

        by_level: dict[int, list] = {}
        for c, v in zip(chunks, vectors):
            by_level.setdefault(c.level, []).append(models.PointStruct(
                id=c.id,
                vector=v.tolist(),
                payload={
                    "doc_id": c.doc_id, "doc_hash": c.doc_hash, "doc_version": doc_version, "level": c.level,
                    "parent_id": c.parent_id, "start": c.start, "end": c.end, "text": c.text,
                    **{k: c.meta[k] for k in ("pages", "headings") if k in c.meta},  # ingest/layout.py
                },
            ))
        for level, points in by_level.items():
            for i in range(0, len(points), self.batch):
                self.client.upsert(self.collection(gen, level), points=points[i:i + self.batch], wait=True)

    def delete(self, gen: int, ids_by_level: dict[int, list[str]]) -> None:
        from qdrant_client import models

        for level, ids in ids_by_level.items():
            name = self.collection(gen, level)
            if ids and self.client.collection_exists(name):
                for i in range(0, len(ids), 1000):
                    self.client.delete(name, points_selector=models.PointIdsList(points=ids[i:i + 1000]), wait=True)

    def count(self, gen: int, level: int) -> int:
        name = self.collection(gen, level)
        if not self.client.collection_exists(name):
            return 0
        return self.client.count(name, exact=True).count

    def search(self, level: int, vector: np.ndarray, limit: int, doc_ids=None):
        """Nearest points of one level (through its alias), among the documents ``doc_ids`` if given."""
        from qdrant_client import models

        flt = None
        if doc_ids is not None:
            doc_ids = list(doc_ids)
            if not doc_ids:
                return []
            flt = models.Filter(must=[models.FieldCondition(key="doc_id", match=models.MatchAny(any=doc_ids))])
        return self.client.query_points(
            self.alias(level), query=np.asarray(vector, dtype=np.float32).tolist(), limit=limit, with_payload=True,
            query_filter=flt).points

    def retrieve(self, level: int, ids: Sequence[str]):
        return self.client.retrieve(self.alias(level), ids=list(ids), with_payload=True)
