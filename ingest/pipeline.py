"""Ingestion: files -> text -> chunks (all levels) -> embeddings -> the vector store, recorded in the catalog.

A document gets in only through the queue (:mod:`ingest.jobs.queue`: ``enqueue`` and the runner's passes, or
``ingest_now`` that runs them in the caller's thread). Every write of a document's chunks goes through one commit,
:func:`ingest.store.write.commit_document`, and every cut through the queue's work (:func:`ingest.jobs.work.cut`);
this module holds what rebuilds the index from the stored originals (:func:`reingest`), the live generation
(:func:`live_generation`, made on the first write) and the reports and progress of a batch.

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

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from core.resources import Resources
from ingest.jobs.work import Reporter, chunker_for, cut, extract, plan_for
from ingest.readers.base import READER_VERSIONS, Limits, reader_version
from ingest.readers.loaders import IngestError, LoadedDoc
from ingest.store.catalog import Generation
from ingest.store.index import PAYLOAD_META
from ingest.store.write import commit_document
from ingest.text.chunk_context import CONTEXT_KEY, chunker_params, generation_params, uses_context
from ingest.text.words import count_words
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


def live_generation(ctx: Resources, create: bool = True) -> Generation | None:
    """The live index generation; with ``create``, an empty index gets one now, with the settings' chunker, θ and
    context rule (recorded by the chunker's ``describe()``; the LM is not loaded for it)."""
    cat, index = ctx.catalog, ctx.index  # the index first: its consistency check runs on open
    live = cat.live_generation()
    if live is not None or not create:
        return live
    s = ctx.settings
    ch = chunker_for(ctx, s.chunker, s.theta, describe_only=True)  # the first pass needs no LM loaded
    gen = cat.new_generation(s.chunker, s.theta, {**ch.describe(), **generation_params(s)}, s.embedder,
                             ctx.embedder.dim, ch.n_levels)
    index.create_generation(gen, ctx.embedder.dim, ch.n_levels)
    index.switch(gen, ch.n_levels)
    cat.set_generation_status(gen, "live")
    return cat.live_generation()


# what the re-ingestion's progress calls the stages of the queue's work (ingest.jobs.work.cut_stages)
_PHASES = {"LM pass": "chunking (LM windows)"}


class _Progress:
    """A batch's progress: per document (``on_progress(done, total, name)``, or tqdm bars with ``progress``) and
    within each file (``on_step(step)``, through a :class:`_Tracker`)."""

    def __init__(self, total: int, progress: bool, on_progress: Callable[[int, int, str], None] | None,
                 on_step: Callable[[Step], None] | None, step_interval_s: float):
        self.tracker = _Tracker(total, on_step, step_interval_s) if on_step is not None else None
        self.docs, self.within = None, None
        if on_progress is not None:
            self.docs = _CallbackBar(total, on_progress)
        elif progress:
            from tqdm.auto import tqdm

            self.docs = tqdm(total=total, desc="ingest", unit="document", position=0)
            within = tqdm(total=100, desc="file", unit="%", position=1, leave=False,
                          bar_format="{desc} {bar} {n:.0f}%")

            def show(step: Step) -> None:
                within.n = round(step.file_fraction * 100)
                within.set_description_str(f"{step.name[:30]}: {step.phase}")

            self.within, self.tracker = within, _Tracker(total, show)

    def file(self, index: int, name: str) -> None:
        if self.tracker is not None:
            self.tracker.file(index, name)
        if self.docs is not None:
            self.docs.set_postfix_str(name[:40])

    def reporter(self) -> Reporter:
        """A :class:`ingest.jobs.work.Reporter` of the work on the current file, feeding its tracker."""
        def sink(label: str, share: float, eta: float | None) -> bool:
            if self.tracker is not None:
                self.tracker.report(_PHASES.get(label, label), share)
            return False

        return Reporter(sink, interval_s=0)

    def done(self) -> None:
        if self.docs is not None:
            self.docs.update(1)

    def close(self) -> None:
        self.tracker = None
        for b in (self.docs, self.within):
            if b is not None:
                b.close()


# -- re-ingestion -------------------------------------------------------------------------------------------------
def reingest(ctx: Resources, chunker: str | None = None, theta: int | None = None, allow_partial: bool = False,
             only: Iterable[str] | None = None, *, progress: bool = False,
             on_progress: Callable[[int, int, str], None] | None = None, on_step: Callable[[Step], None] | None = None,
             step_interval_s: float = 0.25, reread: str = "auto",
             _fail_hook: Callable[[str], None] | None = None) -> IngestReport:
    """Rebuild the index from stored originals into a new generation, then switch atomically.

    Every document is re-chunked. With a ``chunker`` or ``theta`` the whole index takes those parameters; with
    neither, each document keeps its own (those given to it alone) and the rest take the live index's.
    With ``only`` (document ids), just those are re-chunked, with ``chunker``/``theta`` recorded for them
    alone if given (else their own parameters); the other documents' chunks and vectors are copied into the
    new generation unchanged, so nothing is re-embedded for them; ``only=[]`` copies every document (the store
    computes the keywords of what it is given: an index of an earlier version gains them).
    If any document fails, the new generation is dropped and the live index is left as it was, unless
    ``allow_partial`` (then the failed documents are left out of the new index).

    A document re-chunked is cut from its stored text, unless ``reread`` says to read its original again: ``"auto"``
    (the default) when an older reader read it (:data:`ingest.readers.base.READER_VERSIONS`: a reader mended since,
    such as the .docx one that missed a Word template's content controls), ``"all"`` always, ``"none"`` never. A new
    reading is staged beside the stored text and replaces it only once the new generation is live (a crash in
    between is settled by the next open's consistency check); a file the reader now refuses keeps its stored text.
    A PDF still being read range by range, and a text a copied document shares, are not read again.

    Each document is cut as the queue cuts it (:func:`ingest.jobs.work.plan_for` and :func:`ingest.jobs.work.cut`)
    and written by the one commit (:func:`ingest.store.write.commit_document`). The caller holds the data dir's
    writer lock. ``progress``: tqdm bars (the CLI); ``on_progress(done, total, name)``: per document;
    ``on_step(step)``: progress within each file (chunking, embedding, writing) with an estimate (the web app), at
    most one call per ``step_interval_s`` within a phase.
    """
    if reread not in ("auto", "all", "none"):
        raise ValueError(f"reread must be auto, all or none, not {reread!r}")
    s, cat, index = ctx.settings, ctx.catalog, ctx.index
    live = live_generation(ctx, create=False)
    selected: dict[str, dict | None] | None = None
    if only is not None:
        if live is None:
            raise ValueError("the index is empty; nothing to re-ingest")
        selected = _plans(ctx, live, list(only), chunker, theta)
        chunker, theta = None, None  # the generation keeps the live parameters
    keep_own = chunker is None and theta is None
    chunker = chunker or (live.chunker if live else s.chunker)
    theta = theta or (live.theta if live else s.theta)
    probe = chunker_for(ctx, chunker, theta, params=live.params if live and selected is not None else None)
    # a re-ingestion of some documents keeps the live index's context rule (the others' vectors are copied)
    keep = {CONTEXT_KEY: live.params[CONTEXT_KEY]} if live and selected is not None and uses_context(live.params) \
        else ({} if live and selected is not None else generation_params(s))
    gen_id = cat.new_generation(chunker, theta, {**probe.describe(), **keep}, s.embedder, ctx.embedder.dim,
                                probe.n_levels)
    gen = cat.generation(gen_id)
    made_here = {g.gen for g in cat.generations()} - {g.gen for g in cat.generations("live")} - {gen_id}
    for orphan in index.generations() & made_here:
        index.drop_generation(orphan)  # left by a failed earlier re-ingestion (never another data dir's)
    index.create_generation(gen_id, ctx.embedder.dim, probe.n_levels)
    run = cat.start_run("reingest", gen_id)
    report = IngestReport(generation=gen_id)
    rows = cat.documents(live.gen if live else None)
    if selected is not None:  # a document outside the live index (left out by a partial run) stays out
        rows = [r for r in rows if r["n_l0"] is not None or r["doc_id"] in selected]
    bars = _Progress(len(rows), progress, on_progress, on_step, step_interval_s)
    copied_hashes = {r["hash"] for r in rows if selected is not None and r["doc_id"] not in selected}
    readings: dict[str, LoadedDoc | None] = {}  # by hash: the new reading staged for this generation (None: kept)
    for i, row in enumerate(rows):
        t0 = time.time()
        bars.file(i, row["name"])
        try:
            if _fail_hook:
                _fail_hook(row["doc_id"])
            copied = selected is not None and row["doc_id"] not in selected
            if copied:  # not selected: the live chunks (their text included) and vectors, copied
                own = row.get("chunking")
                doc = LoadedDoc(row["name"], b"", "", row["kind"])
                chunks, vectors = _copy(ctx, live, row["doc_id"], row["hash"])
            else:
                h = row["hash"]
                doc = LoadedDoc(row["name"], ctx.store.original(h), ctx.store.text(h), row["kind"],
                                layout=ctx.store.layout(h))
                if _should_reread(reread, doc) and h not in copied_hashes:
                    doc = _reread(ctx, gen_id, doc, h, readings, bars.reporter())
                own = selected[row["doc_id"]] if selected is not None else row.get("chunking") if keep_own else None
                plan = plan_for(ctx, gen, own, first_pass=False)
                c = cut(ctx, doc.text, row["doc_id"], h, plan, bars.reporter(), row["name"], layout=doc.layout)
                chunks = c.chunks(doc.text, row["doc_id"], h, doc.layout, first_pass=False, context=plan.context)
                vectors = c.vectors
            partial = not copied and bool((doc.layout or {}).get("read"))  # a long PDF still being read
            commit_document(ctx, gen, doc, row["doc_id"], row["hash"], chunks, vectors, t0, own,
                            size=row["size"] if copied else None,  # a copied first pass is still to refine
                            phase=row.get("phase") if copied else "first" if partial else None)
            counts = tuple(sum(1 for c in chunks if c.level == lv) for lv in range(gen.n_levels))
            said = "unchanged, copied" if copied else _reread_note(readings.get(row["hash"]), doc)
            report.results.append(FileResult(row["name"], "copied" if copied else "ingested", said, row["doc_id"],
                                             counts, time.time() - t0))
        except Exception as e:
            log.warning("re-ingesting %s failed: %s", row["name"], e)
            report.results.append(FileResult(row["name"], "failed", f"{e.__class__.__name__}: {e}", row["doc_id"]))
        bars.done()
    bars.close()
    if report.failed and not allow_partial:
        for h, fresh in readings.items():
            if fresh is not None:
                ctx.store.discard(h, gen_id)
        index.drop_generation(gen_id, probe.n_levels)
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
    for h, fresh in readings.items():  # the live chunks index into the new readings now
        if fresh is not None:
            ctx.store.promote(h, gen_id)
    if live:
        index.drop_generation(live.gen, live.n_levels)
        cat.drop_generation_rows(live.gen)
    cat.finish_run(run, "done" if not report.failed else "partial", len(report.ok), len(report.failed))
    return report


def _should_reread(reread: str, doc: LoadedDoc) -> bool:
    if reread == "none" or (doc.layout or {}).get("read"):  # a PDF still being read: the queue reads the rest
        return False
    return reread == "all" or reader_version(doc.layout) < READER_VERSIONS.get(doc.kind, 1)


def _reread(ctx: Resources, gen: int, doc: LoadedDoc, h: str, readings: dict[str, LoadedDoc | None],
            rep: Reporter) -> LoadedDoc:
    """``doc`` read again from its original by today's reader and staged for generation ``gen``
    (:meth:`ingest.store.catalog.DocumentStore.stage`); ``doc`` itself when the reader refuses it now (logged: the
    stored text stays what it was)."""
    if h not in readings:
        try:
            fresh = extract(doc.name, doc.data, Limits.of(ctx.settings), rep)
        except IngestError as e:
            log.warning("re-reading %s failed (%s); its stored text is kept", doc.name, e.problem)
            readings[h] = None
            return doc
        ctx.store.stage(h, gen, fresh.text, fresh.layout)
        readings[h] = fresh
    fresh = readings[h]
    return doc if fresh is None else LoadedDoc(doc.name, doc.data, fresh.text, doc.kind, layout=fresh.layout)


def _reread_note(fresh: LoadedDoc | None, doc: LoadedDoc) -> str:
    if fresh is None or fresh.text is not doc.text:
        return ""
    return f"read again by today's reader ({count_words(fresh.text):,} words)"


def _plans(ctx: Resources, live: Generation, doc_ids: list[str], chunker: str | None, theta: int | None
           ) -> dict[str, dict | None]:
    """Each document's own chunking parameters after a re-ingestion of just these documents with ``chunker``
    and/or ``theta`` (None: the index's own). Unknown documents, a bad θ and a chunker with more levels than
    the index are refused here, before anything is written."""
    rows = {r["doc_id"]: r for r in ctx.catalog.documents(live.gen)}
    missing = [d for d in doc_ids if d not in rows]
    if missing:
        raise ValueError(f"no such documents: {', '.join(missing)}; see `mgrag docs`")
    if not doc_ids and (chunker is not None or theta is not None):
        raise ValueError("no documents selected")  # none selected, none re-chunked: every document is copied
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
        probe = chunker_for(ctx, name, th)
        if probe.n_levels > live.n_levels:
            raise ValueError(f"chunker {name} gives {probe.n_levels} levels, the index has {live.n_levels}; "
                             "re-ingest all documents to change the level set")
        same = name == live.chunker and th == live.theta and probe.describe() == chunker_params(live.params)
        out[d] = None if same else {"chunker": name, "theta": th, "params": probe.describe()}
    return out


def _copy(ctx: Resources, live: Generation, doc_id: str, h: str) -> tuple[list[Chunk], np.ndarray]:
    """A document's chunks and vectors as they are in the live generation (for a re-ingestion of others)."""
    ids = ctx.catalog.chunk_ids(live.gen, doc_id)
    points = [p for lv in sorted(ids) for p in ctx.index.retrieve(lv, ids[lv], gen=live.gen, with_vectors=True)]
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

