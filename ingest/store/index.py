"""The vector store behind one interface, :class:`VectorIndex`, with two implementations.

* :class:`EdgeIndex` (the embedded default): Qdrant Edge (``qdrant-edge-py``), Qdrant's own engine in-process.
  One shard directory per generation and level, ``data/edge/g{gen}/L{level}``. Edge has no aliases: the
  catalog's live generation names the live shards, so the switch to a new generation is the catalog's one
  transaction and readers follow it on their next search.
* :class:`ClientIndex`: qdrant-client, for a Qdrant server (``MGRAG_QDRANT_URL``) or its local mode
  (``MGRAG_QDRANT_ENGINE=local``, a pure-Python emulation kept selectable until Edge reaches 1.0). One
  collection per generation and level (``{prefix}_g{gen}_L{level}``); the aliases ``{prefix}_L{level}`` are
  kept pointing at the live generation for other readers of the server, but searches here go to the
  collection the catalog names, so the catalog stays the one truth on both backends.

Every point carries doc id, hash, version, level, parent id, offsets, text and ``owner`` (its document's owner, or
:data:`SHARED` for the shared library); point ids are the chunks' uuid5 strings. Keyword payload indexes on
``doc_id`` and ``owner`` keep searches scoped to some documents, and to what one reader may see, on the fast path:
a reader's search carries one condition, ``owner`` is the reader or :data:`SHARED` (:func:`visibility`), however
many documents there are. Points written before ``owner`` was stored are given it from the catalog when the store
is opened (:meth:`VectorIndex.backfill_owners`, run by the consistency check); until then no reader's search
matches them (only unrestricted ones do). Results come back as :class:`StoredPoint` (``id`` always a ``str``,
whatever the engine returns).
"""
from __future__ import annotations

import errno
import json
import logging
import shutil
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ingest.text.chunk_context import indexed_text
from ingest.text.keywords import KEYWORDS, avg_len, document_weights, query_weights, tokenize
from ingest.types import Chunk

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): qdrant_client, qdrant_edge

log = logging.getLogger(__name__)

LiveGen = Callable[[], "int | None"]


# chunk fields that travel in the payload: pages (and their unit), heading path and table/heading blocks
# (ingest/readers/layout.py), the context line embedded before the chunk's text (ingest/text/chunk_context.py), and the
# mark of a first-pass chunk whose document is still being refined (ingest/jobs/queue.py)
PAYLOAD_META = ("pages", "unit", "headings", "blocks", "first_pass", "context")

# the ``owner`` payload of the shared library's points (the catalog's owner None): visible to every reader
SHARED = "*"


@dataclass
class StoredPoint:
    id: str
    payload: dict
    score: float = 0.0
    vector: np.ndarray | None = None


def owner_payload(owner: str | None) -> str:
    """The ``owner`` payload of a document of ``owner`` (None: the shared library)."""
    if owner == SHARED:
        raise ValueError(f"{SHARED!r} names the shared library in the index; it cannot be an owner")
    return SHARED if owner is None else owner


def _payload(c: Chunk, doc_version: int, owner: str | None = None) -> dict:
    return {"doc_id": c.doc_id, "doc_hash": c.doc_hash, "doc_version": doc_version, "level": c.level,
            "parent_id": c.parent_id, "start": c.start, "end": c.end, "text": c.text, "owner": owner_payload(owner),
            **{k: c.meta[k] for k in PAYLOAD_META if k in c.meta}}


def visibility(visible_to: str | None) -> list[str] | None:
    """The ``owner`` values a search for reader ``visible_to`` may match: its own and the shared library's (None:
    every document, no condition)."""
    return None if visible_to is None else [owner_payload(visible_to), SHARED]


def _group_by_owner(owners: dict[str, str | None]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for doc_id, owner in owners.items():
        out.setdefault(owner_payload(owner), []).append(doc_id)
    return out


def _dense(vector) -> np.ndarray:
    """A stored point's dense vector (a store with keywords returns its named vectors: the dense one is "")."""
    return np.asarray(vector[""] if isinstance(vector, dict) else vector, dtype=np.float32)


def _by_level(chunks: Sequence[Chunk], vectors: np.ndarray) -> dict[int, list[tuple[Chunk, np.ndarray]]]:
    out: dict[int, list[tuple[Chunk, np.ndarray]]] = {}
    for c, v in zip(chunks, vectors):
        out.setdefault(c.level, []).append((c, v))
    return out


class VectorIndex:
    """What the pipeline, retrieval and the export need from a store. Levels are searched in the live
    generation (``live()``, read from the catalog); everything else names its generation.

    Each point holds its dense vector and its keywords (:mod:`ingest.text.keywords`: BM25 as a sparse vector the
    store weighs by idf), computed here from the chunk's indexed text, so that every write, copy and import carries
    both. A level created before keywords lived in the store has none (:meth:`has_keywords`): its keyword search
    returns nothing and says once to run ``mgrag reingest``, which builds a generation that has them."""

    batch = 256

    def __init__(self, live: LiveGen, theta: int = 300):
        self.live = live
        self.theta = theta  # the chunk bound the keywords' length normalisation refers to (keywords.avg_len)
        self._warned_no_keywords = False

    def _keywords(self, level: int, text: str, context: str = "") -> tuple[list[int], list[float]]:
        return document_weights(tokenize(indexed_text(context, text)), avg_len(self.theta, level))

    def _keywords_of(self, level: int, payload: dict) -> tuple[list[int], list[float]]:
        return self._keywords(level, payload.get("text", ""), payload.get("context", ""))

    def _sparse(self, indices: list[int], values: list[float]):
        """The engine's sparse-vector object."""
        raise NotImplementedError

    def _vectors(self, gen: int, level: int, dense, payload: dict):
        """A point's vectors as the engine takes them: the dense one alone on a level without keywords, else the
        dense one (named "") and its keywords."""
        v = _dense(dense).tolist()
        if not self.has_keywords(gen, level):
            return v
        return {"": v, KEYWORDS: self._sparse(*self._keywords_of(level, payload))}

    def has_keywords(self, gen: int, level: int) -> bool:
        """Whether ``gen``'s ``level`` stores keywords (a level created before they moved into the store does not)."""
        raise NotImplementedError

    def _no_keywords(self, gen: int) -> list[StoredPoint]:
        if not self._warned_no_keywords:
            self._warned_no_keywords = True
            log.warning("generation %d was written before keywords were stored in the index: keyword search is off "
                        "(dense search alone) until `mgrag reingest --copy` rebuilds it (minutes: no chunking, no "
                        "embedding)", gen)
        return []

    def keyword_search(self, level: int, tokens: Sequence[str], limit: int, doc_ids: Sequence[str] | None = None,
                       visible_to: str | None = None) -> list[StoredPoint]:
        """The ``limit`` best points of one level of the live generation by BM25 over ``tokens`` (score > 0), within
        the same limits as :meth:`search`."""
        raise NotImplementedError

    # lifecycle
    def create_generation(self, gen: int, dim: int, n_levels: int) -> None:
        """Empty levels ``0..n_levels-1`` of ``gen`` (whatever ``gen`` held before is dropped)."""
        self.drop_generation(gen)
        for level in range(n_levels):
            self.create_level(gen, level, dim)

    def create_level(self, gen: int, level: int, dim: int) -> None: raise NotImplementedError
    def drop_generation(self, gen: int, n_levels: int = 3) -> None: raise NotImplementedError
    def generations(self) -> set[int]: raise NotImplementedError
    def levels(self, gen: int) -> list[int]: raise NotImplementedError
    def switch(self, gen: int, n_levels: int, old_levels: int = 3) -> None: raise NotImplementedError
    def flush(self, gen: int | None = None) -> None: raise NotImplementedError
    def optimize(self, gen: int) -> None: pass
    def close(self) -> None: pass

    # points
    def _upsert_level(self, gen: int, level: int, items: list[tuple[Chunk, np.ndarray]], doc_version: int,
                      owner: str | None) -> None:
        raise NotImplementedError

    def upsert(self, gen: int, chunks: Sequence[Chunk], vectors: np.ndarray, doc_version: int,
               owner: str | None = None) -> None:
        """Write the chunks' points (of one document of ``owner``, None: the shared library), in batches of
        ``batch`` per level (each batch one store write)."""
        for level, items in _by_level(chunks, vectors).items():
            for i in range(0, len(items), self.batch):
                self._upsert_level(gen, level, items[i:i + self.batch], doc_version, owner)

    def upsert_points(self, gen: int, level: int, points: Sequence[StoredPoint]) -> None:
        """Write stored points as they are (ids, vectors, payloads): the export and copies between stores."""
        raise NotImplementedError

    def delete(self, gen: int, ids_by_level: dict[int, list[str]]) -> None: raise NotImplementedError

    def delete_unowned(self, gen: int, doc_id: str, keep: dict[int, list[str]]) -> None:
        """Delete the points of ``doc_id`` in ``gen`` whose ids are not in ``keep`` (the consistency check)."""
        raise NotImplementedError

    def set_owner(self, gen: int, doc_id: str, owner: str | None) -> None:
        """Make ``doc_id``'s points in ``gen`` the document of ``owner`` (None: the shared library)."""
        self._set_owners(gen, {owner_payload(owner): [doc_id]}, self.levels(gen))

    def backfill_owners(self, gen: int, owners: dict[str, str | None]) -> int:
        """Give the points of ``gen`` stored without an ``owner`` their document's (``owners``: the catalog's
        ``{doc id: owner}``) and make sure ``owner`` has its payload index: a store written before visibility was a
        payload condition. Returns how many levels needed it (0 once done; safe to repeat after a crash)."""
        levels = [lv for lv in self.levels(gen) if self._lacks_owner(gen, lv)]
        if levels:
            log.info("giving the points of generation %d levels %s their documents' owners", gen, levels)
            self._set_owners(gen, _group_by_owner(owners), levels)
        for lv in self.levels(gen):
            self._ensure_owner_index(gen, lv)
        return len(levels)

    def _lacks_owner(self, gen: int, level: int) -> bool: raise NotImplementedError
    def _set_owners(self, gen: int, docs_by_owner: dict[str, list[str]], levels: list[int]) -> None:
        raise NotImplementedError
    def _ensure_owner_index(self, gen: int, level: int) -> None: raise NotImplementedError

    def count(self, gen: int, level: int, doc_ids: Sequence[str] | None = None) -> int: raise NotImplementedError

    def search(self, level: int, vector: np.ndarray, limit: int, doc_ids: Sequence[str] | None = None,
               visible_to: str | None = None) -> list[StoredPoint]:
        """Nearest points of one level of the live generation; ``doc_ids`` restricts them to those documents,
        ``visible_to`` to what that reader may see: its own documents and the shared library's (None: all). The
        reader's restriction is one payload condition (:func:`visibility`), never a list of documents."""
        raise NotImplementedError

    def retrieve(self, level: int, ids: Sequence[str], *, gen: int | None = None, with_vectors: bool = False
                 ) -> list[StoredPoint]:
        raise NotImplementedError

    def page(self, gen: int, level: int, offset=None, limit: int = 1024, with_vectors: bool = False
             ) -> tuple[list[StoredPoint], object]:
        """One page of a level in id order and the offset of the next (None at the end)."""
        raise NotImplementedError

    def points(self, gen: int, level: int, with_vectors: bool = False, limit: int = 2048) -> Iterator[StoredPoint]:
        offset = None
        while True:
            pts, offset = self.page(gen, level, offset, limit, with_vectors)
            yield from pts
            if offset is None:
                return

    def ids(self, gen: int, level: int) -> set[str]:
        return {p.id for p in self.points(gen, level)}


# ---- Qdrant Edge ---------------------------------------------------------------------------------------------

class _RWLock:
    """Many searches at once, or one lifecycle change (closing and removing a shard) alone."""

    def __init__(self):
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False

    def read(self):
        return _Held(self, False)

    def write(self):
        return _Held(self, True)


class _Held:
    def __init__(self, lock: _RWLock, write: bool):
        self.lock, self.write = lock, write

    def __enter__(self):
        c = self.lock._cond
        with c:
            if self.write:
                c.wait_for(lambda: not self.lock._writer and self.lock._readers == 0)
                self.lock._writer = True
            else:
                c.wait_for(lambda: not self.lock._writer)
                self.lock._readers += 1

    def __exit__(self, *exc):
        c = self.lock._cond
        with c:
            if self.write:
                self.lock._writer = False
            else:
                self.lock._readers -= 1
            c.notify_all()


class EdgeIndex(VectorIndex):
    """Qdrant Edge shards under ``root``: ``g{gen}/L{level}``, one :class:`qdrant_edge.EdgeShard` each, opened
    lazily and kept open. Searches are exact (a full scan with Qdrant's SIMD kernels) until a level holds more
    than ``hnsw_min_points`` points; :meth:`optimize` then builds an HNSW graph for it, searched with
    ``hnsw_ef`` (chosen by measuring recall on MiniLM embeddings, see BENCHMARKS.md)."""

    def __init__(self, root: Path, live: LiveGen, hnsw_min_points: int = 250_000, hnsw_ef: int = 256,
                 theta: int = 300):
        super().__init__(live, theta)
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.hnsw_min_points = hnsw_min_points
        self.hnsw_ef = hnsw_ef
        self._shards: dict[tuple[int, int], object] = {}
        self._keyword_levels: dict[tuple[int, int], bool] = {}
        self._lock = _RWLock()
        self._open_lock = threading.Lock()

    # -- shards ------------------------------------------------------------------------------------------------
    def path(self, gen: int, level: int) -> Path:
        return self.root / f"g{gen}" / f"L{level}"

    def _config(self, dim: int):
        from qdrant_edge import Distance, EdgeConfig, EdgeOptimizersConfig, EdgeVectorParams, HnswIndexConfig

        # optimize() leaves about default_segment_number (2) segments; each above this many KB of vectors gets HNSW
        kb = max(1, self.hnsw_min_points * dim * 4 // 1024 // 2)
        from qdrant_edge import EdgeSparseVectorParams, Modifier

        return EdgeConfig(vectors=EdgeVectorParams(size=dim, distance=Distance.Cosine),
                          sparse_vectors={KEYWORDS: EdgeSparseVectorParams(modifier=Modifier.Idf)},
                          hnsw_config=HnswIndexConfig(m=16, ef_construct=128, full_scan_threshold=10_000),
                          optimizers=EdgeOptimizersConfig(indexing_threshold=kb, default_segment_number=2))

    def _shard(self, gen: int, level: int, must_exist: bool = True):
        key = (gen, level)
        sh = self._shards.get(key)
        if sh is not None:
            return sh
        with self._open_lock:
            sh = self._shards.get(key)
            if sh is None:
                p = self.path(gen, level)
                if not (p / "edge_config.json").exists():
                    if must_exist:
                        raise KeyError(f"no shard for generation {gen} level {level} under {self.root}")
                    return None
                from qdrant_edge import EdgeShard

                self._check_space(0)
                sh = self._shards[key] = EdgeShard.load(str(p))
        return sh

    def create_level(self, gen: int, level: int, dim: int) -> None:
        from qdrant_edge import EdgeShard, PayloadSchemaType, UpdateOperation

        p = self.path(gen, level)
        shutil.rmtree(p, ignore_errors=True)
        self._keyword_levels.pop((gen, level), None)
        self._check_space(0)
        p.parent.mkdir(parents=True, exist_ok=True)
        sh = EdgeShard.create(str(p), self._config(dim))
        for key in ("doc_id", "owner"):
            sh.update(UpdateOperation.create_field_index(key, PayloadSchemaType.Keyword))
        sh.flush()
        self._shards[(gen, level)] = sh

    def drop_generation(self, gen: int, n_levels: int = 3) -> None:
        with self._lock.write():
            for key in [k for k in self._shards if k[0] == gen]:
                self._shards.pop(key).close()
            for key in [k for k in self._keyword_levels if k[0] == gen]:
                del self._keyword_levels[key]
            shutil.rmtree(self.root / f"g{gen}", ignore_errors=True)

    def generations(self) -> set[int]:
        out = set()
        for p in self.root.glob("g*"):
            if p.is_dir() and p.name[1:].isdigit():
                out.add(int(p.name[1:]))
        return out

    def levels(self, gen: int) -> list[int]:
        d = self.root / f"g{gen}"
        return sorted(int(p.name[1:]) for p in d.glob("L*") if (p / "edge_config.json").exists()) if d.is_dir() else []

    def switch(self, gen: int, n_levels: int, old_levels: int = 3) -> None:
        """Nothing to move: the catalog's live generation names the shards (its transaction is the switch)."""

    def flush(self, gen: int | None = None) -> None:
        for (g, _), sh in list(self._shards.items()):
            if gen is None or g == gen:
                sh.flush()

    def optimize(self, gen: int) -> None:
        """Merge segments and build HNSW for the levels above ``hnsw_min_points`` (blocking)."""
        for level in self.levels(gen):
            if self.count(gen, level) > self.hnsw_min_points:
                log.info("building the HNSW graph of generation %d level %d", gen, level)
                self._shard(gen, level).optimize()

    def close(self) -> None:
        with self._lock.write():
            for sh in self._shards.values():
                try:
                    sh.flush()
                    sh.close()
                except Exception:  # pragma: no cover - closing is best effort
                    log.exception("closing an Edge shard failed")
            self._shards.clear()

    # -- points ------------------------------------------------------------------------------------------------
    reserve_bytes = 64 * 2**20

    def _check_space(self, n_bytes: int) -> None:
        """Refuse a write the disk cannot take. Edge writes through memory maps of sparse files: on a full disk a
        write does not fail, the process dies of SIGBUS (and opening a shard fills in its 32 MiB vector map on
        some file systems, tmpfs for one). So the room for the write (vectors and payloads land in the WAL and
        in a segment; three times their size) plus a 64 MiB reserve is checked before a shard is created, opened
        or written to."""
        need = 3 * n_bytes + self.reserve_bytes
        free = shutil.disk_usage(self.root).free
        if free < need:
            raise OSError(errno.ENOSPC, f"not enough free disk space for the index under {self.root}: "
                                        f"{free / 2**20:.1f} MiB free, this write needs about {need / 2**20:.1f} MiB; "
                                        "free some space and ingest again (nothing was written)")

    def upsert(self, gen, chunks, vectors, doc_version, owner=None) -> None:
        size = sum(len(json.dumps(_payload(c, doc_version, owner))) for c in chunks) + 4 * int(np.size(vectors))
        self._check_space(size)
        super().upsert(gen, chunks, vectors, doc_version, owner)

    def _sparse(self, indices, values):
        from qdrant_edge import SparseVector

        return SparseVector(indices=indices, values=values)

    def _upsert_level(self, gen, level, items, doc_version, owner) -> None:
        from qdrant_edge import Point, UpdateOperation

        pts = []
        for c, v in items:
            payload = _payload(c, doc_version, owner)
            pts.append(Point(c.id, self._vectors(gen, level, v, payload), payload))
        self._shard(gen, level).update(UpdateOperation.upsert_points(pts))

    def upsert_points(self, gen, level, points) -> None:
        from qdrant_edge import Point, UpdateOperation

        pts = [Point(p.id, self._vectors(gen, level, p.vector, p.payload), p.payload) for p in points]
        if pts:
            self._check_space(sum(len(json.dumps(p.payload)) + 4 * len(_dense(p.vector)) for p in points))
            self._shard(gen, level).update(UpdateOperation.upsert_points(pts))

    def delete(self, gen, ids_by_level) -> None:
        from qdrant_edge import UpdateOperation

        for level, ids in ids_by_level.items():
            sh = self._shard(gen, level, must_exist=False) if ids else None
            if sh is not None:
                for i in range(0, len(ids), 1000):
                    sh.update(UpdateOperation.delete_points(list(ids[i:i + 1000])))

    def delete_unowned(self, gen, doc_id, keep) -> None:
        from qdrant_edge import FieldCondition, Filter, HasIdCondition, MatchValue, UpdateOperation

        for level in self.levels(gen):
            must_not = [HasIdCondition(set(keep[level]))] if keep.get(level) else None
            self._shard(gen, level).update(UpdateOperation.delete_points_by_filter(
                Filter(must=[FieldCondition("doc_id", match=MatchValue(doc_id))], must_not=must_not)))

    @staticmethod
    def _doc_filter(doc_ids, visible_to=None):
        from qdrant_edge import FieldCondition, Filter, MatchAny

        must = [] if doc_ids is None else [FieldCondition("doc_id", match=MatchAny(list(doc_ids)))]
        owners = visibility(visible_to)
        if owners is not None:
            must.append(FieldCondition("owner", match=MatchAny(owners)))
        return Filter(must=must) if must else None

    def _lacks_owner(self, gen, level) -> bool:
        from qdrant_edge import CountRequest, Filter, IsEmptyCondition

        missing = Filter(must=[IsEmptyCondition("owner")])
        return self._shard(gen, level).count(CountRequest(exact=True, filter=missing)) > 0

    def _set_owners(self, gen, docs_by_owner, levels) -> None:
        from qdrant_edge import FieldCondition, Filter, MatchAny, UpdateOperation

        for level in levels:
            sh = self._shard(gen, level)
            for owner, docs in docs_by_owner.items():
                for i in range(0, len(docs), 1000):
                    sh.update(UpdateOperation.set_payload_by_filter(
                        Filter(must=[FieldCondition("doc_id", match=MatchAny(docs[i:i + 1000]))]), {"owner": owner}))
            sh.flush()

    def _ensure_owner_index(self, gen, level) -> None:
        from qdrant_edge import PayloadSchemaType, UpdateOperation

        sh = self._shard(gen, level)
        if "owner" not in sh.info().payload_schema:
            sh.update(UpdateOperation.create_field_index("owner", PayloadSchemaType.Keyword))
            sh.flush()

    def count(self, gen, level, doc_ids=None) -> int:
        from qdrant_edge import CountRequest

        sh = self._shard(gen, level, must_exist=False)
        return 0 if sh is None else sh.count(CountRequest(exact=True, filter=self._doc_filter(doc_ids)))

    def search(self, level, vector, limit, doc_ids=None, visible_to=None) -> list[StoredPoint]:
        from qdrant_edge import Query, QueryRequest, SearchParams

        gen = self.live()
        if gen is None or (doc_ids is not None and not doc_ids):
            return []
        with self._lock.read():
            sh = self._shard(gen, level, must_exist=False)
            if sh is None:
                return []
            res = sh.query(QueryRequest(
                limit=limit, query=Query.Nearest(np.asarray(vector, dtype=np.float32).tolist()), with_payload=True,
                with_vector=False, filter=self._doc_filter(doc_ids, visible_to),
                params=SearchParams(hnsw_ef=self.hnsw_ef)))
        return [StoredPoint(str(p.id), p.payload, float(p.score)) for p in res]

    def has_keywords(self, gen, level) -> bool:
        key = (gen, level)
        if key not in self._keyword_levels:
            try:
                config = json.loads((self.path(gen, level) / "edge_config.json").read_text())
            except (OSError, ValueError):
                return False
            self._keyword_levels[key] = KEYWORDS in (config.get("sparse_vectors") or {})
        return self._keyword_levels[key]

    def keyword_search(self, level, tokens, limit, doc_ids=None, visible_to=None) -> list[StoredPoint]:
        from qdrant_edge import Query, QueryRequest, SparseVector

        gen = self.live()
        if gen is None or not tokens or (doc_ids is not None and not doc_ids):
            return []
        if not self.has_keywords(gen, level):
            return self._no_keywords(gen)
        idx, val = query_weights(tokens)
        with self._lock.read():
            sh = self._shard(gen, level, must_exist=False)
            if sh is None:
                return []
            res = sh.query(QueryRequest(limit=limit, query=Query.Nearest(SparseVector(indices=idx, values=val),
                                                                         using=KEYWORDS),
                                        with_payload=True, with_vector=False,
                                        filter=self._doc_filter(doc_ids, visible_to)))
        return [StoredPoint(str(p.id), p.payload, float(p.score)) for p in res if p.score > 0]

    def retrieve(self, level, ids, *, gen=None, with_vectors=False) -> list[StoredPoint]:
        gen = self.live() if gen is None else gen
        if gen is None or not ids:
            return []
        with self._lock.read():
            sh = self._shard(gen, level, must_exist=False)
            recs = [] if sh is None else sh.retrieve(list(ids), with_payload=True, with_vector=with_vectors)
        return [StoredPoint(str(r.id), r.payload, 0.0, _dense(r.vector) if with_vectors else None) for r in recs]

    def page(self, gen, level, offset=None, limit=1024, with_vectors=False):
        from qdrant_edge import ScrollRequest

        sh = self._shard(gen, level, must_exist=False)
        if sh is None:
            return [], None
        recs, nxt = sh.scroll(ScrollRequest(offset=offset, limit=limit, with_payload=True, with_vector=with_vectors))
        pts = [StoredPoint(str(r.id), r.payload, 0.0, _dense(r.vector) if with_vectors else None) for r in recs]
        return pts, (str(nxt) if nxt is not None else None)

    def ids(self, gen, level) -> set[str]:
        from qdrant_edge import ScrollRequest

        sh = self._shard(gen, level, must_exist=False)
        out: set[str] = set()
        offset = None
        while sh is not None:
            recs, offset = sh.scroll(ScrollRequest(offset=offset, limit=10_000, with_payload=False, with_vector=False))
            out.update(str(r.id) for r in recs)
            if offset is None:
                break
        return out


# ---- qdrant-client (server, or local mode) ---------------------------------------------------------------------

def make_client(url: str | None, api_key: str | None, path: Path, timeout: int = 30, check_compatibility: bool = True):
    """Server mode when ``url`` is set (MGRAG_QDRANT_URL), otherwise qdrant-client's local mode under ``path``
    (``:memory:`` keeps it in memory, as the tests' stand-in for a server)."""
    from qdrant_client import QdrantClient

    if url == ":memory:":
        return QdrantClient(":memory:")
    if url:
        return QdrantClient(url=url, api_key=api_key, timeout=timeout, check_compatibility=check_compatibility)
    path.mkdir(parents=True, exist_ok=True)
    return QdrantClient(path=str(path))


class ClientIndex(VectorIndex):
    def __init__(self, client, live: LiveGen, prefix: str = "mgrag", batch: int = 256, owns_client: bool = True,
                 theta: int = 300):
        super().__init__(live, theta)
        self._keyword_levels: dict[str, bool] = {}
        self.client = client
        self.prefix = prefix
        self.batch = batch
        self.owns_client = owns_client

    # -- names --------------------------------------------------------------------------------------------------
    def alias(self, level: int) -> str:
        return f"{self.prefix}_L{level}"

    def collection(self, gen: int, level: int) -> str:
        return f"{self.prefix}_g{gen}_L{level}"

    def _exists(self, name: str) -> bool:
        return self.client.collection_exists(name)

    # -- lifecycle ----------------------------------------------------------------------------------------------
    def create_level(self, gen: int, level: int, dim: int) -> None:
        from qdrant_client import models

        name = self.collection(gen, level)
        if self._exists(name):
            return
        self.client.create_collection(
            name, vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE),
            sparse_vectors_config={KEYWORDS: models.SparseVectorParams(modifier=models.Modifier.IDF)})
        with warnings.catch_warnings():  # local mode: "payload indexes have no effect" is expected
            warnings.simplefilter("ignore")
            for key in ("doc_id", "owner"):
                self.client.create_payload_index(name, key, field_schema=models.PayloadSchemaType.KEYWORD)

    def drop_generation(self, gen: int, n_levels: int = 3) -> None:
        for level in self.levels(gen):
            self._keyword_levels.pop(self.collection(gen, level), None)
            self.client.delete_collection(self.collection(gen, level))

    def _names(self) -> list[str]:
        return [c.name for c in self.client.get_collections().collections]

    def generations(self) -> set[int]:
        out = set()
        head = f"{self.prefix}_g"
        for n in self._names():
            if n.startswith(head) and "_L" in n[len(head):]:
                g = n[len(head):].split("_L")[0]
                if g.isdigit():
                    out.add(int(g))
        return out

    def levels(self, gen: int) -> list[int]:
        head = f"{self.prefix}_g{gen}_L"
        return sorted(int(n[len(head):]) for n in self._names() if n.startswith(head) and n[len(head):].isdigit())

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

    def flush(self, gen: int | None = None) -> None:
        """Writes are acknowledged with ``wait=True``: the server (or local mode's SQLite) has them."""

    def close(self) -> None:
        if self.owns_client:
            try:
                self.client.close()
            except Exception:  # pragma: no cover - closing is best effort
                pass

    # -- points -------------------------------------------------------------------------------------------------
    def has_keywords(self, gen, level) -> bool:
        name = self.collection(gen, level)
        if name not in self._keyword_levels:
            if not self._exists(name):
                return False
            sparse = self.client.get_collection(name).config.params.sparse_vectors or {}
            self._keyword_levels[name] = KEYWORDS in sparse
        return self._keyword_levels[name]

    def _sparse(self, indices, values):
        from qdrant_client import models

        return models.SparseVector(indices=indices, values=values)

    def _upsert_level(self, gen, level, items, doc_version, owner) -> None:
        from qdrant_client import models

        pts = []
        for c, v in items:
            payload = _payload(c, doc_version, owner)
            pts.append(models.PointStruct(id=c.id, vector=self._vectors(gen, level, v, payload), payload=payload))
        self.client.upsert(self.collection(gen, level), points=pts, wait=True)

    def upsert_points(self, gen, level, points) -> None:
        from qdrant_client import models

        pts = [models.PointStruct(id=p.id, vector=self._vectors(gen, level, p.vector, p.payload), payload=p.payload)
               for p in points]
        if pts:
            self.client.upsert(self.collection(gen, level), points=pts, wait=True)

    def delete(self, gen, ids_by_level) -> None:
        from qdrant_client import models

        for level, ids in ids_by_level.items():
            name = self.collection(gen, level)
            if ids and self._exists(name):
                for i in range(0, len(ids), 1000):
                    self.client.delete(name, points_selector=models.PointIdsList(points=list(ids[i:i + 1000])),
                                       wait=True)

    def delete_unowned(self, gen, doc_id, keep) -> None:
        from qdrant_client import models

        for level in self.levels(gen):
            must_not = [models.HasIdCondition(has_id=list(keep[level]))] if keep.get(level) else None
            self.client.delete(self.collection(gen, level), points_selector=models.FilterSelector(filter=models.Filter(
                must=[models.FieldCondition(key="doc_id", match=models.MatchValue(value=doc_id))], must_not=must_not)),
                wait=True)

    @staticmethod
    def _doc_filter(doc_ids, visible_to=None):
        from qdrant_client import models

        must = [] if doc_ids is None else [
            models.FieldCondition(key="doc_id", match=models.MatchAny(any=list(doc_ids)))]
        owners = visibility(visible_to)
        if owners is not None:
            must.append(models.FieldCondition(key="owner", match=models.MatchAny(any=owners)))
        return models.Filter(must=must) if must else None

    def _lacks_owner(self, gen, level) -> bool:
        from qdrant_client import models

        missing = models.Filter(must=[models.IsEmptyCondition(is_empty=models.PayloadField(key="owner"))])
        return self.client.count(self.collection(gen, level), count_filter=missing, exact=True).count > 0

    def _set_owners(self, gen, docs_by_owner, levels) -> None:
        from qdrant_client import models

        for level in levels:
            for owner, docs in docs_by_owner.items():
                for i in range(0, len(docs), 1000):
                    self.client.set_payload(self.collection(gen, level), payload={"owner": owner}, wait=True,
                                            points=models.Filter(must=[models.FieldCondition(
                                                key="doc_id", match=models.MatchAny(any=docs[i:i + 1000]))]))

    def _ensure_owner_index(self, gen, level) -> None:
        from qdrant_client import models

        name = self.collection(gen, level)
        if "owner" not in (self.client.get_collection(name).payload_schema or {}):
            with warnings.catch_warnings():  # local mode keeps no payload index (and says so)
                warnings.simplefilter("ignore")
                self.client.create_payload_index(name, "owner", field_schema=models.PayloadSchemaType.KEYWORD)

    def count(self, gen, level, doc_ids=None) -> int:
        name = self.collection(gen, level)
        if not self._exists(name):
            return 0
        return self.client.count(name, count_filter=self._doc_filter(doc_ids), exact=True).count

    def search(self, level, vector, limit, doc_ids=None, visible_to=None) -> list[StoredPoint]:
        gen = self.live()
        if gen is None or (doc_ids is not None and not doc_ids):
            return []
        res = self.client.query_points(self.collection(gen, level), query=np.asarray(vector, dtype=np.float32).tolist(),
                                       limit=limit, with_payload=True,
                                       query_filter=self._doc_filter(doc_ids, visible_to)).points
        return [StoredPoint(str(p.id), p.payload, float(p.score)) for p in res]

    def keyword_search(self, level, tokens, limit, doc_ids=None, visible_to=None) -> list[StoredPoint]:
        from qdrant_client import models

        gen = self.live()
        if gen is None or not tokens or (doc_ids is not None and not doc_ids):
            return []
        if not self.has_keywords(gen, level):
            return self._no_keywords(gen) if self._exists(self.collection(gen, level)) else []
        idx, val = query_weights(tokens)
        res = self.client.query_points(self.collection(gen, level), query=models.SparseVector(indices=idx, values=val),
                                       using=KEYWORDS, limit=limit, with_payload=True,
                                       query_filter=self._doc_filter(doc_ids, visible_to)).points
        return [StoredPoint(str(p.id), p.payload, float(p.score)) for p in res if p.score > 0]

    def retrieve(self, level, ids, *, gen=None, with_vectors=False) -> list[StoredPoint]:
        gen = self.live() if gen is None else gen
        if gen is None or not ids:
            return []
        recs = self.client.retrieve(self.collection(gen, level), ids=list(ids), with_payload=True,
                                    with_vectors=with_vectors)
        return [StoredPoint(str(r.id), r.payload, 0.0, _dense(r.vector) if with_vectors else None) for r in recs]

    def page(self, gen, level, offset=None, limit=1024, with_vectors=False):
        name = self.collection(gen, level)
        if not self._exists(name):
            return [], None
        recs, nxt = self.client.scroll(name, offset=offset, limit=limit, with_payload=True, with_vectors=with_vectors)
        pts = [StoredPoint(str(r.id), r.payload, 0.0, _dense(r.vector) if with_vectors else None) for r in recs]
        return pts, (str(nxt) if nxt is not None else None)


def open_index(settings, live: LiveGen, client=None) -> VectorIndex:
    """The index the settings name: a Qdrant server (``qdrant_url``), else the embedded engine
    (``qdrant_engine``: ``edge``, the default, or ``local``). ``client`` injects a qdrant-client instance."""
    s = settings
    if client is not None:
        return ClientIndex(client, live, s.collection_prefix, owns_client=False, theta=s.theta)
    if s.qdrant_url:
        return ClientIndex(make_client(s.qdrant_url, s.qdrant_api_key, s.qdrant_path), live, s.collection_prefix,
                           theta=s.theta)
    if s.qdrant_engine == "local":
        return ClientIndex(make_client(None, None, s.qdrant_path), live, s.collection_prefix, theta=s.theta)
    return EdgeIndex(s.edge_path, live, hnsw_min_points=s.hnsw_min_points, hnsw_ef=s.hnsw_ef, theta=s.theta)
