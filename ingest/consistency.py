"""The consistency check run when a writer opens a data directory: make the store agree with the catalog.

The catalog is the one truth (documents, their chunks, the live generation). A process killed at any point of
an ingestion, a deletion or a re-ingestion leaves at most:

* ``pending`` rows: documents whose points were being written or deleted. Their points that no catalog row
  owns are deleted (and their BM25 entries), whether the crash came before or after the catalog recorded them;
* generations still ``building`` (a re-ingestion that never switched): dropped, store, BM25 and rows;
* store generations the catalog does not call live (a retired generation not yet dropped): dropped;
* on a server, aliases naming another generation than the catalog: pointed back at the live one;
* ``*.tmp`` files of interrupted atomic writes (a full disk): removed.

Then each live level's point count is compared with the catalog's chunk count; only when they differ are the
ids compared one by one (points no row owns are deleted; rows without points are reported, their documents
need re-ingesting). Only the holder of the writer lock runs this, so nothing else is writing meanwhile.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

log = logging.getLogger(__name__)


@dataclass
class CheckReport:
    pending: list[tuple[int, str]] = field(default_factory=list)
    dropped_generations: list[int] = field(default_factory=list)
    removed_points: int = 0
    missing: dict[str, int] = field(default_factory=dict)  # doc id -> chunks recorded without points
    removed_tmp: int = 0
    aliases_fixed: bool = False

    @property
    def clean(self) -> bool:
        return not (self.pending or self.dropped_generations or self.removed_points or self.missing
                    or self.removed_tmp or self.aliases_fixed)


def check(catalog, index, bm25, data_dir=None, own_store: bool = True) -> CheckReport:
    """``own_store``: the store belongs to this data dir alone (embedded), so any generation the catalog does not
    call live is dropped; on a server, only the generations this catalog made are (others may be another's)."""
    rep = CheckReport()
    if data_dir is not None:
        for tmp in list(data_dir.glob("originals/*/*.tmp")) + list(data_dir.glob("bm25/*.tmp")):
            tmp.unlink(missing_ok=True)
            rep.removed_tmp += 1
    live = catalog.live_generation()
    for g in catalog.generations("building"):
        rep.dropped_generations.append(g.gen)
        index.drop_generation(g.gen, g.n_levels)
        bm25.drop(g.gen)
        catalog.drop_generation_rows(g.gen)
        catalog.set_generation_status(g.gen, "failed")
    known = {g.gen for g in catalog.generations()}
    for g in sorted(index.generations()):
        if (live is None or g != live.gen) and (own_store or g in known):
            rep.dropped_generations.append(g)
            index.drop_generation(g)
    for path in bm25.root.glob("g*_L*.pkl") if bm25.root.exists() else ():
        g = path.name[1:].split("_")[0]
        if g.isdigit() and (live is None or int(g) != live.gen):
            path.unlink(missing_ok=True)
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
        if gen == live.gen:
            before = sum(index.count(gen, lv, [doc_id]) for lv in range(live.n_levels))
            keep = catalog.chunk_ids(gen, doc_id)
            index.delete_unowned(gen, doc_id, keep)
            rep.removed_points += before - sum(index.count(gen, lv, [doc_id]) for lv in range(live.n_levels))
        catalog.end_pending(gen, doc_id)
    index.flush(live.gen)
    recorded = catalog.chunk_counts(live.gen)
    stale_bm25 = bool(rep.pending)
    for lv in range(live.n_levels):
        if index.count(live.gen, lv) == recorded.get(lv, 0):
            continue
        stale_bm25 = True
        owners = catalog.level_chunk_ids(live.gen, lv)
        stored = index.ids(live.gen, lv)
        extra = [i for i in stored if i not in owners]
        if extra:
            index.delete(live.gen, {lv: extra})
            rep.removed_points += len(extra)
        for i, doc in owners.items():
            if i not in stored:
                rep.missing[doc] = rep.missing.get(doc, 0) + 1
    if stale_bm25:
        bm25.retain(live.gen, {lv: set(catalog.level_chunk_ids(live.gen, lv)) for lv in range(live.n_levels)})
    index.flush(live.gen)
    if hasattr(index, "live_collections"):
        want = {index.alias(lv): index.collection(live.gen, lv) for lv in range(live.n_levels)}
        have = {a: c for a, c in index.live_collections().items() if a.startswith(f"{index.prefix}_L")}
        if have != want:
            index.switch(live.gen, live.n_levels)
            rep.aliases_fixed = True
    return _log(rep)


def _log(rep: CheckReport) -> CheckReport:
    if rep.clean:
        return rep
    log.warning("consistency check: %d document write(s) interrupted, %d point(s) no catalog row owns removed, "
                "generation(s) %s dropped, %d temporary file(s) removed%s",
                len(rep.pending), rep.removed_points, rep.dropped_generations or "none", rep.removed_tmp,
                ", aliases pointed back at the live generation" if rep.aliases_fixed else "")
    if rep.missing:
        log.error("the store lacks points of %s; re-ingest them (`mgrag reingest DOC`)", ", ".join(sorted(rep.missing)))
    return rep
