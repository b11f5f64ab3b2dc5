"""The consistency check run when a writer opens a data directory: make the store agree with the catalog.

The catalog is the one truth (documents, their chunks, the live generation). A process killed at any point of
an ingestion, a deletion or a re-ingestion leaves at most:

* ``pending`` rows: documents whose points were being written or deleted. Their points that no catalog row
  owns are deleted (their keywords with them: both live in the point), whether the crash came before or after
  the catalog recorded them;
* generations still ``building``: the newest one of a re-ingestion whose run is still marked running stays, its
  writes in flight undone as a live generation's are, for :func:`ingest.jobs.rebuild.resume` (``mgrag serve``
  resumes it, ``mgrag reingest --resume`` too; a new re-ingestion drops it); any other is dropped, store and rows;
* store generations the catalog does not call live (a retired generation not yet dropped): dropped;
* on a server, aliases naming another generation than the catalog: pointed back at the live one;
* texts a re-ingestion read again and staged (:meth:`ingest.store.catalog.DocumentStore.stage`): promoted when
  their generation is live (killed after the switch), dropped otherwise;
* ``*.tmp`` files of interrupted atomic writes (a full disk): removed;
* the ``bm25/`` pickles of a data dir written before keywords moved into the store: removed once the live
  generation has its keywords in the store (until ``mgrag reingest`` rebuilds an older one, its keyword search is
  off and says so);
* originals, texts and layouts in the document store that no catalog row refers to (no version of any document,
  no indexed row of any generation, no unfinished ingestion job): a deletion killed after the catalog forgot the
  document, an ingestion killed after storing the upload but before recording it. Removed when older than
  ``orphan_min_age_s``: the context that first opens the data dir since its process took the writer lock passes 0
  (no other process may write while the lock is held, and nothing in this one has yet); a later context of the
  same process shares the lock with others that may be storing an upload at this moment, so it passes
  :data:`ORPHAN_AGE_S` and leaves younger files to a later open.

Then each live level's point count is compared with the catalog's chunk count; only when they differ are the
ids compared one by one (points no row owns are deleted; rows without points are reported, their documents
need re-ingesting). Last, points stored before each point carried its document's owner (the payload searches
filter on) are given it from the catalog (:meth:`ingest.store.index.VectorIndex.backfill_owners`). Only the holder of
the writer lock runs this, so nothing else is writing meanwhile.
"""
from __future__ import annotations

import logging
import shutil
import time
from dataclasses import dataclass, field

from ingest.jobs.state import ACTIVE
from ingest.store.catalog import DocumentStore

log = logging.getLogger(__name__)

ORPHAN_AGE_S = 3600.0  # an unreferenced stored file younger than this may be an ingestion's in flight


@dataclass
class CheckReport:
    pending: list[tuple[int, str]] = field(default_factory=list)
    dropped_generations: list[int] = field(default_factory=list)
    removed_points: int = 0
    missing: dict[str, int] = field(default_factory=dict)  # doc id -> chunks recorded without points
    removed_tmp: int = 0
    removed_orphans: int = 0  # stored originals (with their text and layout) no catalog row refers to
    aliases_fixed: bool = False
    owners_backfilled: int = 0  # levels whose points were given their documents' owners (a store made before)
    readings_settled: int = 0  # staged re-readings of a re-ingestion promoted (its generation live) or dropped
    interrupted: int | None = None  # the generation of a re-ingestion kept to be resumed

    @property
    def clean(self) -> bool:
        return not (self.pending or self.dropped_generations or self.removed_points or self.missing
                    or self.removed_tmp or self.removed_orphans or self.aliases_fixed or self.readings_settled)


def check(catalog, index, data_dir=None, own_store: bool = True,
          orphan_min_age_s: float = ORPHAN_AGE_S) -> CheckReport:
    """``own_store``: the store belongs to this data dir alone (embedded), so any generation the catalog does not
    call live is dropped; on a server, only the generations this catalog made are (others may be another's).
    ``orphan_min_age_s``: unreferenced stored files younger than this stay (see the module doc)."""
    rep = CheckReport()
    if data_dir is not None:
        for tmp in data_dir.glob("originals/*/*.tmp"):
            tmp.unlink(missing_ok=True)
            rep.removed_tmp += 1
        rep.removed_orphans = remove_orphans(catalog, data_dir / "originals", orphan_min_age_s)
    live = catalog.live_generation()
    kept = catalog.interrupted_reingestion()
    rep.interrupted = kept[0].gen if kept is not None else None
    for g in catalog.generations("building"):
        if g.gen == rep.interrupted:
            continue
        rep.dropped_generations.append(g.gen)
        index.drop_generation(g.gen, g.n_levels)
        catalog.drop_generation_rows(g.gen)
        catalog.set_generation_status(g.gen, "failed")
    if data_dir is not None:
        rep.readings_settled = settle_readings(DocumentStore(data_dir / "originals"), live, rep.interrupted)
    known = {g.gen for g in catalog.generations()}
    for g in sorted(index.generations()):
        if (live is None or g != live.gen) and g != rep.interrupted and (own_store or g in known):
            rep.dropped_generations.append(g)
            index.drop_generation(g)
    old_keywords = None if data_dir is None else data_dir / "bm25"
    if old_keywords is not None and old_keywords.is_dir() and (live is None or index.has_keywords(live.gen, 0)):
        # BM25 kept in pickles beside the store, before keywords moved into it: nothing reads them once the live
        # generation has its keywords in the store (a generation written before keeps them until re-ingested)
        shutil.rmtree(old_keywords, ignore_errors=True)
        log.info("removed %s: the keywords live in the index now", old_keywords)
    rep.pending = catalog.pending()
    if live is None:
        for gen, _ in rep.pending:
            catalog.drop_pending(gen)
        return _log(rep)
    for lv in range(live.n_levels):
        if lv not in index.levels(live.gen):
            log.error("the store has no level %d of the live generation %d; creating it empty", lv, live.gen)
            index.create_level(live.gen, lv, live.dim)
    for gen, doc_id in rep.pending:
        if gen in (live.gen, rep.interrupted):
            before = sum(index.count(gen, lv, [doc_id]) for lv in index.levels(gen))
            keep = catalog.chunk_ids(gen, doc_id)
            index.delete_unowned(gen, doc_id, keep)
            rep.removed_points += before - sum(index.count(gen, lv, [doc_id]) for lv in index.levels(gen))
            index.flush(gen)
        catalog.end_pending(gen, doc_id)
    index.flush(live.gen)
    recorded = catalog.chunk_counts(live.gen)
    for lv in range(live.n_levels):
        if index.count(live.gen, lv) == recorded.get(lv, 0):
            continue
        owners = catalog.level_chunk_ids(live.gen, lv)
        stored = index.ids(live.gen, lv)
        extra = [i for i in stored if i not in owners]
        if extra:
            index.delete(live.gen, {lv: extra})
            rep.removed_points += len(extra)
        for i, doc in owners.items():
            if i not in stored:
                rep.missing[doc] = rep.missing.get(doc, 0) + 1
    rep.owners_backfilled = index.backfill_owners(live.gen, catalog.owners())
    index.flush(live.gen)
    if hasattr(index, "live_collections"):
        want = {index.alias(lv): index.collection(live.gen, lv) for lv in range(live.n_levels)}
        have = {a: c for a, c in index.live_collections().items() if a.startswith(f"{index.prefix}_L")}
        if have != want:
            index.switch(live.gen, live.n_levels)
            rep.aliases_fixed = True
    return _log(rep)


def settle_readings(store: DocumentStore, live, interrupted: int | None = None) -> int:
    """A re-ingestion killed between its generation going live and the promotion of the texts it re-read leaves them
    staged: those of the live generation become the stored texts (its chunks index into them); those of an
    ``interrupted`` re-ingestion's generation stay staged for its resumption; any other's (a re-ingestion that never
    switched) are dropped. How many were settled."""
    n = 0
    for h, gen in store.staged():
        if gen == interrupted:
            continue
        if live is not None and gen == live.gen:
            store.promote(h, gen)
        else:
            store.discard(h, gen)
        n += 1
    return n


def referenced_hashes(catalog) -> set[str]:
    """Content hashes some catalog row refers to: a version of a document, an indexed row of any generation (live,
    building or retired), or an ingestion job not finished yet."""
    db = catalog.db
    sql = "SELECT hash FROM versions UNION SELECT hash FROM indexed"
    if db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='jobs'").fetchone():
        sql += f" UNION SELECT hash FROM jobs WHERE state IN ({','.join('?' * len(ACTIVE))})"
        return {r[0] for r in db.execute(sql, ACTIVE)}
    return {r[0] for r in db.execute(sql)}


def remove_orphans(catalog, root, min_age_s: float) -> int:
    """Remove the stored files (``<hash>.orig``, ``.txt``, ``.layout.json``) under ``root`` whose hash no catalog
    row refers to and that were last written ``min_age_s`` or more ago; returns how many originals went."""
    if not root.exists():
        return 0
    keep = referenced_hashes(catalog)
    now, removed = time.time(), 0
    for path in root.glob("*/*"):
        h = path.name.split(".", 1)[0]
        if h in keep or path.name.endswith(".tmp") or not path.is_file():
            continue
        try:
            if now - path.stat().st_mtime < min_age_s:
                continue
            path.unlink()
        except FileNotFoundError:
            continue
        removed += path.name.endswith(".orig")
    if not min_age_s:  # nothing else writes: empty hash-prefix folders go too (else one may be in use)
        for d in root.iterdir():
            if d.is_dir() and not any(d.iterdir()):
                d.rmdir()
    return removed


def _log(rep: CheckReport) -> CheckReport:
    if rep.clean:
        return rep
    log.warning("consistency check: %d document write(s) interrupted, %d point(s) no catalog row owns removed, "
                "generation(s) %s dropped, %d temporary file(s) and %d original(s) no document refers to removed, "
                "%d re-read text(s) settled%s",
                len(rep.pending), rep.removed_points, rep.dropped_generations or "none", rep.removed_tmp,
                rep.removed_orphans, rep.readings_settled,
                ", aliases pointed back at the live generation" if rep.aliases_fixed else "")
    if rep.missing:
        log.error("the store lacks points of %s; re-ingest them (`mgrag reingest DOC`)", ", ".join(sorted(rep.missing)))
    return rep
