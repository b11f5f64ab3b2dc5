"""Ingestion: files -> text -> chunks (all levels) -> embeddings -> the vector store, recorded in the catalog.

A document gets in only through the queue (:mod:`ingest.jobs.queue`: ``enqueue`` and the runner's passes, or
``ingest_now`` that runs them in the caller's thread); :class:`Ingestor` is what those passes write with, and it
rebuilds (``reingest``) and deletes.

Guarantees:
* a file is read, chunked and embedded completely **before** anything is written; a failure at any step is
  reported for that file only and the batch goes on;
* a write that fails half-way is rolled back (the points written are deleted) and the catalog is untouched;
* ingesting the same content twice is a no-op (reported as a duplicate); a changed file of the same name
  becomes a new version that replaces the old one's chunks;
* re-ingestion builds a new index generation beside the live one and switches atomically (the catalog's
  transaction names the live generation); if anything fails the live index stays as it was;
* a process killed anywhere leaves nothing the next writer's consistency check does not repair
  (:mod:`ingest.store.consistency`): points are flushed before the catalog records them, under a ``pending`` row.
"""
from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from core.resources import Resources
from ingest.chunkers import NEEDS_LM
from ingest.jobs.work import chunker_for, embed_chunks
from ingest.readers.layout import Layout, chunk_meta
from ingest.readers.loaders import IngestError, LoadedDoc
from ingest.store.catalog import Generation
from ingest.store.index import PAYLOAD_META
from ingest.text.chunk_context import (
    CONTEXT_KEY,
    chunk_contexts,
    chunker_params,
    generation_params,
    indexed_text,
    uses_context,
)
from ingest.types import Chunk

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): tqdm

log = logging.getLogger(__name__)


@dataclass
class FileResult:
    name: str
    status: str  # "ingested", "updated", "duplicate", "failed"
    message: str = ""
    doc_id: str = ""
    chunks_per_level: tuple[int, ...] = ()
    seconds: float = 0.0


@dataclass
class IngestReport:
    results: list[FileResult] = field(default_factory=list)
    generation: int | None = None

    @property
    def failed(self) -> list[FileResult]:
        return [r for r in self.results if r.status == "failed"]

    @property
    def ok(self) -> list[FileResult]:
        return [r for r in self.results if r.status in ("ingested", "updated")]

    def totals(self) -> tuple[int, ...]:
        n = max((len(r.chunks_per_level) for r in self.results), default=0)
        return tuple(sum(r.chunks_per_level[i] for r in self.results if len(r.chunks_per_level) > i) for i in range(n))


@dataclass(frozen=True)
class Step:
    """Where a batch stands, for progress displays: file ``index`` (0-based) of ``total``, its current phase, the
    share of that file and of the whole batch done, and an estimate of the time left (None until there is one)."""

    name: str
    index: int
    total: int
    phase: str
    file_fraction: float
    fraction: float
    eta_s: float | None

    def message(self) -> str:
        eta = "" if self.eta_s is None else (f" · about {self.eta_s / 60:.0f} min left" if self.eta_s >= 90
                                             else f" · about {max(self.eta_s, 1):.0f} s left")
        of = f" (file {self.index + 1} of {self.total})" if self.total > 1 else ""
        return f"{self.name}: {self.phase} {self.file_fraction:.0%}{of}{eta}"


class _Tracker:
    """Turns phase reports within a file into :class:`Step` s (files weigh the same; the estimate extrapolates the
    time spent so far)."""

    def __init__(self, total: int, fn: Callable[[Step], None], min_interval_s: float = 0.25):
        self.total, self.fn, self.t0, self.min_interval_s = max(total, 1), fn, time.monotonic(), min_interval_s
        self.index, self.name, self._phase, self._last = 0, "", "", 0.0

    def file(self, index: int, name: str) -> None:
        self.index, self.name = index, name
        self.report("reading", 0.0)

    def report(self, phase: str, file_fraction: float) -> None:
        now = time.monotonic()
        if phase == self._phase and now - self._last < self.min_interval_s and 0 < file_fraction < 1:
            return  # a few updates a second within one phase at most
        self._phase, self._last = phase, now
        ff = min(max(file_fraction, 0.0), 1.0)
        fraction = (self.index + ff) / self.total
        elapsed = now - self.t0
        eta = elapsed * (1 - fraction) / fraction if fraction > 0.02 and elapsed > 1 else None
        self.fn(Step(self.name, self.index, self.total, phase, ff, fraction, eta))


class Ingestor:
    def __init__(self, ctx: Resources, progress: bool = False,
                 on_progress: Callable[[int, int, str], None] | None = None,
                 on_step: Callable[[Step], None] | None = None, step_interval_s: float = 0.25):
        """``progress``: tqdm bars (the CLI); ``on_progress(done, total, name)``: per-document callback;
        ``on_step(step)``: progress within each file (chunking, embedding, writing) with an estimate (the web app),
        at most one call per ``step_interval_s`` within a phase."""
        self.ctx = ctx
        self.progress = progress
        self.on_progress = on_progress
        self.on_step = on_step
        self.step_interval_s = step_interval_s
        self._tracker: _Tracker | None = None
        self._warned = False

    def _report(self, phase: str, file_fraction: float) -> None:
        if self._tracker is not None:
            self._tracker.report(phase, file_fraction)

    # -- generation & chunker ---------------------------------------------------------------------------
    def _chunker_for(self, chunker: str, theta: int, on_window: Callable[[int], None] | None = None,
                     params: dict | None = None, on_fraction: Callable[[float], None] | None = None,
                     describe_only: bool = False):
        """The chunker of a generation: ``params`` (the generation's recorded ones) win over the settings."""
        return chunker_for(self.ctx, chunker, theta, params, on_window, on_fraction, describe_only)

    def live_generation(self, create: bool = True) -> Generation | None:
        cat, index = self.ctx.catalog, self.ctx.index  # the index first: its consistency check runs on open
        live = cat.live_generation()
        if live is not None or not create:
            return live
        s = self.ctx.settings
        ch = self._chunker_for(s.chunker, s.theta, describe_only=True)  # the first pass needs no LM loaded
        gen = cat.new_generation(s.chunker, s.theta, {**ch.describe(), **generation_params(s)}, s.embedder,
                                 self.ctx.embedder.dim, ch.n_levels)
        index.create_generation(gen, self.ctx.embedder.dim, ch.n_levels)
        index.switch(gen, ch.n_levels)
        cat.set_generation_status(gen, "live")
        return cat.live_generation()

    # -- one document -------------------------------------------------------------------------------
    def _build(self, doc: LoadedDoc, doc_id: str, h: str, gen: Generation, on_window=None,
               chunking: dict | None = None) -> tuple[list[Chunk], object]:
        """Chunks and vectors of one document, cut with its own ``chunking`` parameters if it has them, else with
        the generation's."""
        name = chunking["chunker"] if chunking else gen.chunker
        lm = name in NEEDS_LM
        embed_from = 0.8 if lm else 0.1  # the share of a file's time its chunking takes, roughly

        def chunked(f: float) -> None:
            self._report("chunking (LM windows)", f * embed_from)

        if chunking:
            chunker = self._chunker_for(chunking["chunker"], chunking["theta"], on_window, chunking.get("params"),
                                        on_fraction=chunked)
        else:
            chunker = self._chunker_for(gen.chunker, gen.theta, on_window, gen.params, on_fraction=chunked)
        self._report("chunking (LM windows)" if lm else "chunking", 0.0)
        if not chunking and chunker.describe() != chunker_params(gen.params) and not self._warned:
            self._warned = True
            log.warning("current settings %s differ from the live index's chunking parameters %s; new documents "
                        "use the index's mode and θ, and `mgrag reingest` applies the new settings to all",
                        chunker.describe(), gen.params)
        chunks = chunker.chunk_document(doc.text, doc_id, h)
        if not chunks:
            raise IngestError(doc.name, "produced no chunks (no words in the text)")
        layout = Layout.from_json(doc.layout)
        if layout:  # pages and heading path of every chunk, into its payload
            chunks = [dataclasses.replace(c, meta={**c.meta, **chunk_meta(layout, c.start, c.end)}) for c in chunks]
        if uses_context(gen.params):  # the context line is embedded and indexed before the chunk's text
            lines = chunk_contexts(doc.text, doc_id, doc.layout, [c.start for c in chunks])
            chunks = [dataclasses.replace(c, meta={**c.meta, "context": x}) if x else c for c, x in zip(chunks, lines)]
        texts = [indexed_text(c.meta.get("context", ""), c.text) for c in chunks]
        vectors, _ = embed_chunks(self.ctx.embedder, chunks, texts, {}, self.ctx.settings.late_quarters,
                                  lambda f: self._report("embedding", embed_from + (0.97 - embed_from) * f))
        self._report("writing", 0.97)
        return chunks, vectors

    def _write(self, gen: Generation, doc: LoadedDoc, doc_id: str, h: str, chunks, vectors, t0: float,
               chunking: dict | None = None, size: int | None = None, owner: str | None = None,
               phase: str | None = None, on_commit=None) -> None:
        """Write points, flush them, then record the document in the catalog; on failure delete what was written.
        The old version's (or the first pass's) points go last. A ``pending`` row brackets the store writes, so that
        the consistency check on the next open removes the points of a write a crash interrupted
        (:mod:`ingest.store.consistency`): a kill at any moment leaves the old chunks or the new ones, never both, never
        neither. Searches show only chunks the catalog records (``Catalog.known_ids``), so the swap is atomic for
        readers too. ``phase`` and ``on_commit`` go to :meth:`Catalog.record_indexed`."""
        cat, index = self.ctx.catalog, self.ctx.index
        old = cat.chunk_ids(gen.gen, doc_id)
        exists, recorded = cat.owner_of(doc_id)  # the catalog's owner wins: a re-ingestion passes none
        owner = recorded if exists else owner
        new_ids: dict[int, list[str]] = {}
        for c in chunks:
            new_ids.setdefault(c.level, []).append(c.id)
        bm25 = self.ctx.bm25
        cat.begin_pending(gen.gen, doc_id)
        try:
            index.upsert(gen.gen, chunks, vectors, cat.version_for(doc_id, h), owner)
            bm25.update(gen.gen, chunks)
            index.flush(gen.gen)
            size = len(doc.data) if size is None else size
            cat.record_indexed(gen.gen, doc_id, doc.name, h, size, doc.kind, chunks, time.time() - t0, chunking,
                               owner=owner, phase=phase, on_commit=on_commit)
        except BaseException:
            stale = {lv: [i for i in ids if i not in set(old.get(lv, []))] for lv, ids in new_ids.items()}
            try:
                index.delete(gen.gen, stale)
                bm25.update(gen.gen, [], remove=stale)
                index.flush(gen.gen)
                cat.end_pending(gen.gen, doc_id)
            except Exception:  # the pending row stays: the next open's consistency check finishes the rollback
                log.exception("rollback of %s failed; the next start removes its points", doc.name)
            raise
        keep = {i for ids in new_ids.values() for i in ids}
        obsolete = {lv: [i for i in ids if i not in keep] for lv, ids in old.items()}
        index.delete(gen.gen, obsolete)
        bm25.update(gen.gen, [], remove=obsolete)
        index.flush(gen.gen)
        cat.end_pending(gen.gen, doc_id)

    def _bars(self, total: int, unit: str):
        """(documents bar, None); the bar within the current file is fed by the tracker (:meth:`_report`)."""
        self._tracker = _Tracker(total, self.on_step, self.step_interval_s) if self.on_step is not None else None
        if self.on_progress is not None:
            return _CallbackBar(total, self.on_progress), None
        if not self.progress:
            return None, None
        from tqdm.auto import tqdm

        docs = tqdm(total=total, desc="ingest", unit=unit.rstrip("s"), position=0)
        within = tqdm(total=100, desc="file", unit="%", position=1, leave=False, bar_format="{desc} {bar} {n:.0f}%")

        def show(step: Step) -> None:
            within.n = round(step.file_fraction * 100)
            within.set_description_str(f"{step.name[:30]}: {step.phase}")

        self._tracker = _Tracker(total, show)
        return docs, within

    def _close_bars(self, *bars) -> None:
        self._tracker = None
        for b in bars:
            if b is not None:
                b.close()

    # -- re-ingestion -------------------------------------------------------------------------------
    def reingest(self, chunker: str | None = None, theta: int | None = None, allow_partial: bool = False,
                 _fail_hook: Callable[[str], None] | None = None, only: Iterable[str] | None = None) -> IngestReport:
        """Rebuild the index from stored originals into a new generation, then switch atomically.

        Every document is re-chunked. With a ``chunker`` or ``theta`` the whole index takes those parameters; with
        neither, each document keeps its own (those given to it alone) and the rest take the live index's.
        With ``only`` (document ids), just those are re-chunked, with ``chunker``/``theta`` recorded for them
        alone if given (else their own parameters); the other documents' chunks and vectors are copied into the
        new generation unchanged, so nothing is re-embedded for them.
        If any document fails, the new generation is dropped and the live index is left as it was, unless
        ``allow_partial`` (then the failed documents are left out of the new index).
        """
        s, cat, index = self.ctx.settings, self.ctx.catalog, self.ctx.index
        live = self.live_generation(create=False)
        selected: dict[str, dict | None] | None = None
        if only is not None:
            if live is None:
                raise ValueError("the index is empty; nothing to re-ingest")
            selected = self._plans(live, list(only), chunker, theta)
            chunker, theta = None, None  # the generation keeps the live parameters
        keep_own = chunker is None and theta is None
        chunker = chunker or (live.chunker if live else s.chunker)
        theta = theta or (live.theta if live else s.theta)
        probe = self._chunker_for(chunker, theta, params=live.params if live and selected is not None else None)
        # a re-ingestion of some documents keeps the live index's context rule (the others' vectors are copied)
        keep = {CONTEXT_KEY: live.params[CONTEXT_KEY]} if live and selected is not None and uses_context(live.params) \
            else ({} if live and selected is not None else generation_params(s))
        gen_id = cat.new_generation(chunker, theta, {**probe.describe(), **keep}, s.embedder, self.ctx.embedder.dim,
                                    probe.n_levels)
        gen = cat.generation(gen_id)
        made_here = {g.gen for g in cat.generations()} - {g.gen for g in cat.generations("live")} - {gen_id}
        for orphan in index.generations() & made_here:
            index.drop_generation(orphan)  # left by a failed earlier re-ingestion (never another data dir's)
        index.create_generation(gen_id, self.ctx.embedder.dim, probe.n_levels)
        run = cat.start_run("reingest", gen_id)
        report = IngestReport(generation=gen_id)
        rows = cat.documents(live.gen if live else None)
        if selected is not None:  # a document outside the live index (left out by a partial run) stays out
            rows = [r for r in rows if r["n_l0"] is not None or r["doc_id"] in selected]
        bar, wbar = self._bars(len(rows), "documents")
        for i, row in enumerate(rows):
            t0 = time.time()
            if self._tracker is not None:
                self._tracker.file(i, row["name"])
            if bar is not None:
                bar.set_postfix_str(row["name"][:40])
            try:
                if _fail_hook:
                    _fail_hook(row["doc_id"])
                copied = selected is not None and row["doc_id"] not in selected
                if copied:  # not selected: the live chunks (their text included) and vectors, copied
                    own = row.get("chunking")
                    doc = LoadedDoc(row["name"], b"", "", row["kind"])
                    chunks, vectors = self._copy(live, row["doc_id"], row["hash"])
                else:
                    text, data = self.ctx.store.text(row["hash"]), self.ctx.store.original(row["hash"])
                    doc = LoadedDoc(row["name"], data, text, row["kind"], layout=self.ctx.store.layout(row["hash"]))
                    own = selected[row["doc_id"]] if selected is not None else row.get("chunking") if keep_own else None
                    chunks, vectors = self._build(doc, row["doc_id"], row["hash"], gen, None, own)
                partial = not copied and bool((doc.layout or {}).get("read"))  # a long PDF still being read
                self._write(gen, doc, row["doc_id"], row["hash"], chunks, vectors, t0, own,
                            size=row["size"] if copied else None,  # a copied first pass is still to refine
                            phase=row.get("phase") if copied else "first" if partial else None)
                counts = tuple(sum(1 for c in chunks if c.level == lv) for lv in range(gen.n_levels))
                report.results.append(FileResult(row["name"], "copied" if copied else "ingested",
                                                 "unchanged, copied" if copied else "", row["doc_id"], counts,
                                                 time.time() - t0))
            except Exception as e:
                log.warning("re-ingesting %s failed: %s", row["name"], e)
                report.results.append(FileResult(row["name"], "failed", f"{e.__class__.__name__}: {e}", row["doc_id"]))
            if bar is not None:
                bar.update(1)
        self._close_bars(bar, wbar)
        if report.failed and not allow_partial:
            index.drop_generation(gen_id, probe.n_levels)
            self.ctx.bm25.drop(gen_id)
            cat.drop_generation_rows(gen_id)
            cat.set_generation_status(gen_id, "failed")
            cat.finish_run(run, "failed", len(report.ok), len(report.failed),
                           {"failed": {r.name: r.message for r in report.failed}})
            return report
        index.optimize(gen_id)
        index.flush(gen_id)
        old_levels = live.n_levels if live else 3
        index.switch(gen_id, probe.n_levels, old_levels)
        cat.set_generation_status(gen_id, "live")
        if live:
            index.drop_generation(live.gen, live.n_levels)
            self.ctx.bm25.drop(live.gen)
            cat.drop_generation_rows(live.gen)
        cat.finish_run(run, "done" if not report.failed else "partial", len(report.ok), len(report.failed))
        return report

    def _plans(self, live: Generation, doc_ids: list[str], chunker: str | None, theta: int | None
               ) -> dict[str, dict | None]:
        """Each document's own chunking parameters after a re-ingestion of just these documents with ``chunker``
        and/or ``theta`` (None: the index's own). Unknown documents, a bad θ and a chunker with more levels than
        the index are refused here, before anything is written."""
        rows = {r["doc_id"]: r for r in self.ctx.catalog.documents(live.gen)}
        missing = [d for d in doc_ids if d not in rows]
        if missing:
            raise ValueError(f"no such documents: {', '.join(missing)}; see `mgrag docs`")
        if not doc_ids:
            raise ValueError("no documents selected")
        if theta is not None and theta < 4:
            raise ValueError(f"θ must be at least 4 words, got {theta}")
        out = {}
        for d in doc_ids:
            row = rows[d]
            if chunker is None and theta is None:
                out[d] = row["chunking"]
                continue
            base = row["chunking"] or {"chunker": live.chunker, "theta": live.theta}
            name, th = chunker or base["chunker"], theta or base["theta"]
            probe = self._chunker_for(name, th)
            if probe.n_levels > live.n_levels:
                raise ValueError(f"chunker {name} gives {probe.n_levels} levels, the index has {live.n_levels}; "
                                 "re-ingest all documents to change the level set")
            same = name == live.chunker and th == live.theta and probe.describe() == chunker_params(live.params)
            out[d] = None if same else {"chunker": name, "theta": th, "params": probe.describe()}
        return out

    def _copy(self, live: Generation, doc_id: str, h: str) -> tuple[list[Chunk], np.ndarray]:
        """A document's chunks and vectors as they are in the live generation (for a re-ingestion of others)."""
        ids = self.ctx.catalog.chunk_ids(live.gen, doc_id)
        points = [p for lv in sorted(ids)
                  for p in self.ctx.index.retrieve(lv, ids[lv], gen=live.gen, with_vectors=True)]
        spans = {p.id: (p.payload["start"], p.payload["end"]) for p in points if p.payload["level"] == 0}
        chunks, vectors = [], []
        for p in points:
            pl = p.payload
            ps, pe = spans[pl["parent_id"]]
            meta = {k: pl[k] for k in PAYLOAD_META if k in pl}
            chunks.append(Chunk(pl["text"], pl["start"], pl["end"], pl["level"], ps, pe, doc_id, h, meta))
            vectors.append(p.vector)
        if not chunks:
            raise IngestError(doc_id, "has no chunks in the live index to copy")
        return chunks, np.asarray(vectors, dtype=np.float32)

    # -- deletion -----------------------------------------------------------------------------------
    def delete(self, ref: str) -> str:
        cat = self.ctx.catalog
        doc_id = cat.find_document(ref)
        if doc_id is None:
            raise ValueError(f"no document matches {ref!r}; see `mgrag docs`")
        live = cat.live_generation()
        if live is None:
            for h in cat.remove_document(doc_id):  # originals no other document shares
                self.ctx.store.remove(h)
            return doc_id
        jobs = getattr(self.ctx, "jobs", None)
        if jobs is not None:
            jobs.forget_doc(doc_id)
        ids = cat.chunk_ids(live.gen, doc_id)
        cat.begin_pending(live.gen, doc_id)  # the catalog forgets it first; a crash after that leaves ghost points
        unshared = cat.remove_document(doc_id)  # that the next open's consistency check removes
        self.ctx.index.delete(live.gen, ids)
        self.ctx.bm25.update(live.gen, [], remove=ids)
        self.ctx.index.flush(live.gen)
        cat.end_pending(live.gen, doc_id)
        for h in unshared:  # originals no other document shares
            self.ctx.store.remove(h)
        return doc_id


class _CallbackBar:
    """The two calls of a tqdm bar the batches make, reported to ``fn(done, total, name)``."""

    def __init__(self, total: int, fn: Callable[[int, int, str], None]):
        self.total, self.n, self.name, self.fn = total, 0, "", fn

    def set_postfix_str(self, name: str) -> None:
        self.name = name
        self.fn(self.n, self.total, name)

    def update(self, k: int = 1) -> None:
        self.n += k
        self.fn(self.n, self.total, self.name)

    def close(self) -> None:
        pass

