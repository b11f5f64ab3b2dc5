"""The one write path of the index: :func:`commit_document` puts one document's chunks into a generation (the queue's
first passes, a long PDF's ranges, refinements and re-ingestion all commit through it) and :func:`delete_document`
takes one out. Both run under the caller's write lock (``ctx.write_lock``, or the data dir's writer lock for a
re-ingestion), so the catalog has one writer.

Guarantees:
* a write that fails half-way is rolled back (the points written are deleted from the vector index and BM25) and the
  catalog is untouched;
* points are flushed before the catalog records them, under a ``pending`` row: a process killed anywhere leaves
  nothing the next writer's consistency check does not repair (:mod:`ingest.store.consistency`), the old chunks or
  the new ones, never both, never neither;
* searches show only chunks the catalog records (``Catalog.known_ids``), so the swap is atomic for readers too.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from core.resources import Resources
from ingest.readers.loaders import LoadedDoc
from ingest.store.catalog import Generation
from ingest.types import Chunk

log = logging.getLogger(__name__)


def commit_document(ctx: Resources, gen: Generation, doc: LoadedDoc, doc_id: str, h: str, chunks: Sequence[Chunk],
                    vectors: Any, started: float, chunking: dict | None = None, *, size: int | None = None,
                    owner: str | None = None, phase: str | None = None,
                    on_commit: Callable[[Any], None] | None = None) -> None:
    """Write ``chunks`` (one vector each, ``vectors``) of version ``h`` of ``doc_id`` into generation ``gen``, flush
    them, then record the document in the catalog; on failure delete what was written and re-raise. The points of the
    version before (or of the first pass, or of the ranges read before) go last.

    ``doc`` gives the name, kind and (unless ``size``) the size recorded; ``started``: when the work on this write
    began (``time.time()``), its seconds are added to those recorded before for the same version (the next range of a
    long PDF, the refinement: :meth:`Catalog.record_indexed`). ``chunking``: the document's own chunking parameters
    (None: the generation's). ``owner`` is used only for a document the catalog does not know yet (the catalog's owner
    wins: a re-ingestion passes none). ``phase`` ("first": a first pass, or a PDF still being read) and ``on_commit``
    (called with the database inside the catalog's transaction: the queue marks its job there) go to
    :meth:`Catalog.record_indexed`."""
    cat, index = ctx.catalog, ctx.index
    old = cat.chunk_ids(gen.gen, doc_id)
    exists, recorded = cat.owner_of(doc_id)
    owner = recorded if exists else owner
    new_ids: dict[int, list[str]] = {}
    for c in chunks:
        new_ids.setdefault(c.level, []).append(c.id)
    cat.begin_pending(gen.gen, doc_id)
    try:
        index.upsert(gen.gen, chunks, vectors, cat.version_for(doc_id, h), owner)  # dense vectors and keywords
        index.flush(gen.gen)
        size = len(doc.data) if size is None else size
        cat.record_indexed(gen.gen, doc_id, doc.name, h, size, doc.kind, chunks, time.time() - started, chunking,
                           owner=owner, phase=phase, on_commit=on_commit)
    except BaseException:
        stale = {lv: [i for i in ids if i not in set(old.get(lv, []))] for lv, ids in new_ids.items()}
        try:
            index.delete(gen.gen, stale)
            index.flush(gen.gen)
            cat.end_pending(gen.gen, doc_id)
        except Exception:  # the pending row stays: the next open's consistency check finishes the rollback
            log.exception("rollback of %s failed; the next start removes its points", doc.name)
        raise
    keep = {i for ids in new_ids.values() for i in ids}
    obsolete = {lv: [i for i in ids if i not in keep] for lv, ids in old.items()}
    index.delete(gen.gen, obsolete)
    index.flush(gen.gen)
    cat.end_pending(gen.gen, doc_id)


def delete_document(ctx: Resources, ref: str) -> str:
    """Delete the document ``ref`` names (id, name or hash prefix) everywhere the index keeps it: its queued jobs'
    memory of it, its points (dense vectors and keywords) in the live generation, its catalog rows and the originals
    no other document shares. Its id; ValueError when nothing matches. The catalog forgets it first, under a
    ``pending`` row: a crash after that leaves ghost points that the next open's consistency check removes."""
    cat = ctx.catalog
    doc_id = cat.find_document(ref)
    if doc_id is None:
        raise ValueError(f"no document matches {ref!r}; see `mgrag docs`")
    live = cat.live_generation()
    if live is None:
        for h in cat.remove_document(doc_id):  # originals no other document shares
            ctx.store.remove(h)
        return doc_id
    jobs = getattr(ctx, "jobs", None)
    if jobs is not None:
        jobs.forget_doc(doc_id)
    ids = cat.chunk_ids(live.gen, doc_id)
    cat.begin_pending(live.gen, doc_id)
    unshared = cat.remove_document(doc_id)
    ctx.index.delete(live.gen, ids)
    ctx.index.flush(live.gen)
    cat.end_pending(live.gen, doc_id)
    for h in unshared:  # originals no other document shares
        ctx.store.remove(h)
    return doc_id
