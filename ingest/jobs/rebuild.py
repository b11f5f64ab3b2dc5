"""Re-ingestion: the index rebuilt from the stored originals into a new generation, one queue job per document.

:func:`reingest` builds a generation beside the live one: each document it re-cuts is a job of the queue's table
(``target_gen``: the generation being built; ``plan``: the document's own chunking and whether to read its original
again), run by this re-ingestion through the runner's own pass (:meth:`ingest.jobs.queue.Runner.run_own`: the
settings' executor, so with ``queue_url`` the workers elsewhere cut; a failure that is not the file's retried as the
lanes retry it) and written by the one commit (:func:`ingest.store.write.commit_document`). The documents it does
not re-cut are copied, chunks and vectors as they are. Then the generation goes live in one catalog transaction, or
is dropped, the live index untouched. The queue's lanes never take these jobs; the Admin tab's queue shows them, each
with its stage, error or note. The caller holds the data dir's writer lock and the write lock (uploads queue
meanwhile and commit after the switch); a process killed half-way leaves a generation still ``building``, which the
next open's consistency check drops, and its jobs are cancelled when a runner next starts.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable

import numpy as np

from core.resources import Resources
from ingest.jobs.queue import Runner
from ingest.jobs.state import DONE, JobState
from ingest.jobs.work import chunker_for
from ingest.pipeline import FileResult, IngestReport, Step, _Progress, live_generation
from ingest.readers.loaders import IngestError, LoadedDoc
from ingest.store.catalog import Generation
from ingest.store.index import PAYLOAD_META
from ingest.store.write import commit_document
from ingest.text.chunk_context import CONTEXT_KEY, chunker_params, generation_params, uses_context
from ingest.types import Chunk

log = logging.getLogger(__name__)

REREAD = ("auto", "all", "none")


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

    ``progress``: tqdm bars (the CLI); ``on_progress(done, total, name)``: per document; ``on_step(step)``: progress
    within each file (chunking, embedding, writing) with an estimate (the web app), at most one call per
    ``step_interval_s`` within a phase. ``_fail_hook(doc_id)``: a test's way to make a document fail.
    """
    if reread not in REREAD:
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
    rows = cat.documents(live.gen if live else None)
    if selected is not None:  # a document outside the live index (left out by a partial run) stays out
        rows = [r for r in rows if r["n_l0"] is not None or r["doc_id"] in selected]
    copied = {r["doc_id"] for r in rows if selected is not None and r["doc_id"] not in selected}
    shared = {r["hash"] for r in rows if r["doc_id"] in copied}  # a text a copied document indexes into stays
    jobs = {r["doc_id"]: ctx.jobs.add_rebuild(r, gen_id, {
        "own": selected[r["doc_id"]] if selected is not None else r.get("chunking") if keep_own else None,
        "reread": "none" if r["hash"] in shared else reread}, batch=f"reingest-{gen_id}").job_id
        for r in rows if r["doc_id"] not in copied}
    report = _run(ctx, gen, live, rows, jobs, _Progress(len(rows), progress, on_progress, on_step, step_interval_s),
                  _fail_hook)
    recut = {r["hash"] for r in rows if r["doc_id"] in jobs}  # the texts this re-ingestion may have read again
    if report.failed and not allow_partial:
        for h in recut:
            ctx.store.discard(h, gen_id)
        index.drop_generation(gen_id, probe.n_levels)
        cat.drop_generation_rows(gen_id)
        cat.set_generation_status(gen_id, "failed")
        cat.finish_run(run, "failed", len(report.ok), len(report.failed),
                       {"failed": {r.name: r.message for r in report.failed}})
        return report
    index.optimize(gen_id)
    index.flush(gen_id)
    index.switch(gen_id, probe.n_levels, live.n_levels if live else 3)
    cat.set_generation_status(gen_id, "live")
    for h in recut:  # the live chunks index into their new readings now (a text not read again stays)
        ctx.store.promote(h, gen_id)
    if live:
        index.drop_generation(live.gen, live.n_levels)
        cat.drop_generation_rows(live.gen)
    cat.finish_run(run, "done" if not report.failed else "partial", len(report.ok), len(report.failed))
    return report


def _run(ctx: Resources, gen: Generation, live: Generation | None, rows: list[dict], jobs: dict[str, int],
         bars: _Progress, fail_hook: Callable[[str], None] | None) -> IngestReport:
    """Each document in turn: its job run (``jobs``: by document id) or, without one, its live chunks copied. Jobs
    not run when this stops early are cancelled."""
    runner = Runner(ctx)  # the settings' executor: with a queue_url, the cutting is done by the workers
    runner.on_report = lambda job, label, share: bars.track(label, share)
    report = IngestReport(generation=gen.gen)
    try:
        for i, row in enumerate(rows):
            t0 = time.time()
            bars.file(i, row["name"])
            report.results.append(_one(ctx, gen, live, row, jobs.get(row["doc_id"]), runner, fail_hook, t0))
            bars.done()
    finally:
        bars.close()
        runner.executor.close()
        for job_id in jobs.values():
            job = ctx.jobs.get(job_id)
            if job is not None and job.state not in DONE:
                ctx.jobs.finish(job_id, JobState.CANCELLED, message="its re-ingestion stopped before it was done")
    return report


def _one(ctx: Resources, gen: Generation, live: Generation | None, row: dict, job_id: int | None, runner: Runner,
         fail_hook: Callable[[str], None] | None, t0: float) -> FileResult:
    """One document of the re-ingestion, as its line of the report."""
    name, doc_id = row["name"], row["doc_id"]
    try:
        if fail_hook:
            fail_hook(doc_id)
        if job_id is None:  # not selected: the live chunks (their text included) and vectors, copied
            chunks, vectors = _copy(ctx, live, doc_id, row["hash"])
            commit_document(ctx, gen, LoadedDoc(name, b"", "", row["kind"]), doc_id, row["hash"], chunks, vectors, t0,
                            row.get("chunking"), size=row["size"], phase=row.get("phase"))
            return FileResult(name, "copied", "unchanged, copied", doc_id, _counts(ctx, gen, doc_id),
                              time.time() - t0)
    except Exception as e:
        log.warning("re-ingesting %s failed: %s", name, e)
        if job_id is not None:
            ctx.jobs.finish(job_id, JobState.FAILED, error=f"{e.__class__.__name__}: {e}")
        return FileResult(name, "failed", f"{e.__class__.__name__}: {e}", doc_id)
    job = runner.run_own(job_id)
    if job is None or job.state != JobState.READY:
        why = (job.error or job.message or job.state) if job is not None else "its job is gone"
        log.warning("re-ingesting %s failed: %s", name, why)
        return FileResult(name, "failed", why, doc_id)
    return FileResult(name, "ingested", job.message or "", doc_id, _counts(ctx, gen, doc_id), time.time() - t0)


def _counts(ctx: Resources, gen: Generation, doc_id: str) -> tuple[int, ...]:
    ids = ctx.catalog.chunk_ids(gen.gen, doc_id)
    return tuple(len(ids.get(lv, ())) for lv in range(gen.n_levels))


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
