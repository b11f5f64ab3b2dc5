"""Re-ingestion: the index rebuilt from the stored originals into a new generation, one queue job per document.

:func:`reingest` builds a generation beside the live one: each document it re-cuts is a job of the queue's table
(``target_gen``: the generation being built; ``plan``: the document's own chunking and whether to read its original
again), run by this re-ingestion through the runner's own pass (:meth:`ingest.jobs.queue.Runner.run_own`: the
settings' executor, so with ``queue_url`` the workers elsewhere cut; a failure that is not the file's retried as the
lanes retry it) and written by the one commit (:func:`ingest.store.write.commit_document`). The documents it does
not re-cut are copied, chunks and vectors as they are. Then the generation goes live in one catalog transaction, or
is dropped, the live index untouched. The queue's lanes never take these jobs; the Admin tab's queue shows them, each
with its stage, error or note. The caller holds the data dir's writer lock; the web app gives the write lock too
(``lock``), which the re-ingestion takes only for each commit and the switch: uploads, new versions, deletions and
hand-overs go on in the live index meanwhile, and before switching it catches up with them (:func:`_catch_up`: up to
:data:`CATCH_UP_ROUNDS` rounds beside the uploads, then one holding the lock). The CLI holds the write lock
throughout. A process killed half-way leaves a generation still ``building``, which the next open's consistency
check drops, and its jobs are cancelled when a runner next starts.
"""
from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable

import numpy as np

from core.resources import Resources
from ingest.jobs.queue import Runner, gone_meanwhile
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
             step_interval_s: float = 0.25, reread: str = "auto", lock=None,
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

    ``lock``: the write lock the other writers take (the web app's ``ctx.write_lock``). Given, the re-ingestion holds
    it only to set up, to commit each document and to switch, so uploads and deletions go on meanwhile into the live
    index; before the switch it catches up with them (:func:`_catch_up`). None: the caller holds every lock there is
    (the CLI: the data dir's writer lock).
    """
    if reread not in REREAD:
        raise ValueError(f"reread must be auto, all or none, not {reread!r}")
    lock = lock if lock is not None else _NoLock()
    with lock:
        setup = _set_up(ctx, chunker, theta, only, reread)
    bars = _Progress(len(setup[2]), progress, on_progress, on_step, step_interval_s)
    return _go(ctx, setup, bars, allow_partial, lock, _fail_hook)


def _go(ctx: Resources, setup: tuple, bars: _Progress, allow_partial: bool, lock, fail_hook,
        seen: dict[str, tuple] | None = None) -> IngestReport:
    """:func:`_build` beside the other writers, or holding ``lock`` throughout when there is no live index yet (an
    upload meanwhile would make one that this switch drops, so it waits)."""
    if setup[1] is not None:
        return _build(ctx, setup, bars, allow_partial, lock, fail_hook, seen)
    with lock:
        return _build(ctx, setup, bars, allow_partial, _NoLock(), fail_hook, seen)


def _build(ctx: Resources, setup: tuple, bars: _Progress, allow_partial: bool, lock, fail_hook,
           seen: dict[str, tuple] | None = None) -> IngestReport:
    """The jobs run, the uploads and deletions made meanwhile caught up with, the switch (or the drop). ``seen``:
    what the generation already holds of documents not in ``rows`` (a resumed re-ingestion's)."""
    gen, live, rows, jobs, selected, keep_own, reread, probe, run = setup
    report = _run(ctx, gen, live, rows, jobs, bars, fail_hook, lock)
    recut = {r["hash"] for r in rows if r["doc_id"] in jobs}  # the texts this re-ingestion may have read again
    if report.failed and not allow_partial:
        with lock:
            _drop(ctx, gen, recut, probe.n_levels, run, report)
        return report
    seen = {**(seen or {}), **{r["doc_id"]: _seen(r) for r in rows if r["n_l0"] is not None}}
    plans = (selected, keep_own, reread)
    for last in [False] * CATCH_UP_ROUNDS + [True]:
        lock.acquire()
        try:
            done = _catch_up(ctx, gen, live, seen, plans, report, recut, None if last else lock) or last
        except BaseException:
            lock.release()
            raise
        if done:
            break  # nothing changed meanwhile, or the last round ran under the lock: switch, still holding it
        lock.release()
    try:
        if report.failed and not allow_partial:  # a document uploaded meanwhile that could not be cut again
            _drop(ctx, gen, recut, probe.n_levels, run, report)
        else:
            _switch(ctx, gen, live, recut, probe.n_levels, run, report)
    finally:
        lock.release()
    return report


def _seen(row: dict) -> tuple:
    """What the catch-up compares of a live document: its version, its phase (a long PDF read further), its owner."""
    return row["hash"], row["phase"], row["owner"]


def resume(ctx: Resources, *, lock=None, progress: bool = False,
           on_progress: Callable[[int, int, str], None] | None = None, on_step: Callable[[Step], None] | None = None,
           step_interval_s: float = 0.25, allow_partial: bool = False) -> IngestReport | None:
    """Finish a re-ingestion whose process stopped before it switched (:meth:`Catalog.interrupted_reingestion`; the
    next open kept its generation): the documents it wrote stay, its other jobs run again, what changed in the live
    index since (new documents and versions, deletions) is caught up with, then the switch. None when there is none to
    resume. ``lock`` and the callbacks as for :func:`reingest`."""
    lock = lock if lock is not None else _NoLock()
    with lock:
        found = ctx.catalog.interrupted_reingestion()
        if found is None:
            return None
        setup, seen = _resumed(ctx, *found)
    log.info("resuming the re-ingestion into generation %d: %d documents left", setup[0].gen, len(setup[2]))
    return _go(ctx, setup, _Progress(len(setup[2]), progress, on_progress, on_step, step_interval_s), allow_partial,
               lock, None, seen)


def _resumed(ctx: Resources, gen: Generation, run: dict) -> tuple[tuple, dict[str, tuple]]:
    """An interrupted re-ingestion's set-up as :func:`_set_up` gives it, with the documents it wrote before it stopped
    taken out of the rows (``seen``: their versions as written; one replaced or read further since is caught up)."""
    cat, detail = ctx.catalog, run["detail"]
    live = cat.live_generation()
    rows = cat.documents(live.gen) if live is not None else []
    written = {r["doc_id"]: r for r in cat.documents(gen.gen) if r["n_l0"] is not None}
    own_jobs = {}
    for job in ctx.jobs.jobs(batch=_batch(gen.gen)):  # oldest first: the newest job of a document wins
        own_jobs[job.doc_id] = job
    by_id = {r["doc_id"]: r for r in rows}
    seen = {}
    for d, w in written.items():
        now = by_id.get(d)
        # the version written stands for the live one when it is the same (the live row's owner and all)
        seen[d] = _seen(now) if now is not None and (now["hash"], now["phase"]) == (w["hash"], w["phase"]) else ()
    left = [r for r in rows if r["doc_id"] not in written and (r["n_l0"] is not None or r["doc_id"] in own_jobs)]
    jobs = {}
    for r in left:
        job = own_jobs.get(r["doc_id"])
        if job is not None and job.hash == r["hash"]:
            ctx.jobs.rewait(job.job_id)
            jobs[r["doc_id"]] = job.job_id
        elif not detail.get("some"):  # a document new or replaced since: cut as the others were
            jobs[r["doc_id"]] = _add_job(ctx, r, gen.gen, None, bool(detail.get("keep_own")), "none")
    selected = ({d: json.loads(j.plan or "{}").get("own") for d, j in own_jobs.items()} if detail.get("some")
                else None)
    probe = chunker_for(ctx, gen.chunker, gen.theta, params=gen.params)
    return (gen, live, left, jobs, selected, bool(detail.get("keep_own")), detail.get("reread", "auto"), probe,
            run["run_id"]), seen


def _drop_interrupted(ctx: Resources) -> None:
    """A new re-ingestion replaces an interrupted one: its generation, jobs and staged readings go."""
    found = ctx.catalog.interrupted_reingestion()
    if found is None:
        return
    gen, run = found
    log.info("dropping the re-ingestion interrupted in generation %d: a new one starts", gen.gen)
    for job in ctx.jobs.jobs(batch=_batch(gen.gen)):
        if job.state not in DONE:
            ctx.jobs.finish(job.job_id, JobState.CANCELLED, message="a new re-ingestion replaced its own")
    _discard(ctx, gen, {h for h, g in ctx.store.staged() if g == gen.gen}, gen.n_levels)
    ctx.catalog.finish_run(run["run_id"], "dropped", 0, 0)


# how many times the re-ingestion catches up with the uploads and deletions made meanwhile without holding the write
# lock; the next round holds it (uploads wait for that round's documents only)
CATCH_UP_ROUNDS = 2


class _NoLock:
    """The lock of a caller that holds every lock itself (the CLI's data-dir writer lock)."""

    def acquire(self) -> bool:
        return True

    def release(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


def _set_up(ctx: Resources, chunker, theta, only, reread: str):
    """The generation being built, its run and one job per document it re-cuts (under the write lock): ``(gen, live,
    rows, jobs by document id, selected plans, keep_own, reread, probe chunker, run id)``."""
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
    _drop_interrupted(ctx)
    gen_id = cat.new_generation(chunker, theta, {**probe.describe(), **keep}, s.embedder, ctx.embedder.dim,
                                probe.n_levels)
    gen = cat.generation(gen_id)
    made_here = {g.gen for g in cat.generations()} - {g.gen for g in cat.generations("live")} - {gen_id}
    for orphan in index.generations() & made_here:
        index.drop_generation(orphan)  # left by a failed earlier re-ingestion (never another data dir's)
    index.create_generation(gen_id, ctx.embedder.dim, probe.n_levels)
    run = cat.start_run("reingest", gen_id, {"some": selected is not None, "keep_own": keep_own, "reread": reread})
    rows = cat.documents(live.gen if live else None)
    if selected is not None:  # a document outside the live index (left out by a partial run) stays out
        rows = [r for r in rows if r["n_l0"] is not None or r["doc_id"] in selected]
    copied = {r["doc_id"] for r in rows if selected is not None and r["doc_id"] not in selected}
    shared = {r["hash"] for r in rows if r["doc_id"] in copied}  # a text a copied document indexes into stays
    jobs = {r["doc_id"]: _add_job(ctx, r, gen_id, selected, keep_own, "none" if r["hash"] in shared else reread)
            for r in rows if r["doc_id"] not in copied}
    return gen, live, rows, jobs, selected, keep_own, reread, probe, run


def _drop(ctx: Resources, gen: Generation, recut: set[str], n_levels: int, run: int, report: IngestReport) -> None:
    _discard(ctx, gen, recut, n_levels)
    ctx.catalog.finish_run(run, "failed", len(report.ok), len(report.failed),
                           {"failed": {r.name: r.message for r in report.failed}})


def _discard(ctx: Resources, gen: Generation, staged: set[str], n_levels: int) -> None:
    """A generation that will not go live: the readings staged for it, its points and rows; marked failed."""
    for h in staged:
        ctx.store.discard(h, gen.gen)
    ctx.index.drop_generation(gen.gen, n_levels)
    ctx.catalog.drop_generation_rows(gen.gen)
    ctx.catalog.set_generation_status(gen.gen, "failed")


def _batch(gen: int) -> str:
    """The queue batch of a re-ingestion's jobs (how the Admin's queue and a resumption find them)."""
    return f"reingest-{gen}"


def _add_job(ctx: Resources, row: dict, gen: int, selected: dict | None, keep_own: bool, reread: str) -> int:
    """Queue ``row``'s document to be cut again into ``gen``: with the plan asked for it (``selected``), else its own
    chunking when the documents keep theirs, else the generation's."""
    own = selected.get(row["doc_id"]) if selected is not None else row.get("chunking") if keep_own else None
    return ctx.jobs.add_rebuild(row, gen, {"own": own, "reread": reread}, batch=_batch(gen)).job_id


def _switch(ctx: Resources, gen: Generation, live: Generation | None, recut: set[str], n_levels: int, run: int,
            report: IngestReport) -> None:
    cat, index = ctx.catalog, ctx.index
    index.optimize(gen.gen)
    index.flush(gen.gen)
    index.switch(gen.gen, n_levels, live.n_levels if live else 3)
    cat.set_generation_status(gen.gen, "live")
    for h in recut:  # the live chunks index into their new readings now (a text not read again stays)
        ctx.store.promote(h, gen.gen)
    if live:
        index.drop_generation(live.gen, live.n_levels)
        cat.drop_generation_rows(live.gen)
    cat.finish_run(run, "done" if not report.failed else "partial", len(report.ok), len(report.failed))


def _catch_up(ctx: Resources, gen: Generation, live: Generation | None, seen: dict[str, tuple], plans: tuple,
              report: IngestReport, recut: set[str], lock) -> bool:
    """The uploads and deletions made in the live index since ``seen`` (document id → :func:`_seen` as this
    re-ingestion last saw it) brought into the generation being built: a document gone is taken out; a new one, a
    new version or one whose reading went on (a long PDF read to its end) is cut again by a job as the others were
    (or, when only some documents are re-cut, copied). Called holding the write lock; with ``lock`` the jobs run with
    it released (taken again for each commit). True when nothing had changed."""
    if live is None:
        return True
    rows = {r["doc_id"]: r for r in ctx.catalog.documents(live.gen) if r["n_l0"] is not None}
    gone = [d for d in seen if d not in rows]
    changed = [r for d, r in rows.items() if seen.get(d) != _seen(r)]
    if not gone and not changed:
        return True
    for d in gone:  # deleted meanwhile: its catalog rows went with it, its points here go now
        ctx.index.delete_unowned(gen.gen, d, {})
        seen.pop(d)
    if gone:
        ctx.index.flush(gen.gen)
    handed = {r["doc_id"] for r in changed if r["doc_id"] in seen and seen[r["doc_id"]][:2] == _seen(r)[:2]}
    selected, keep_own, _ = plans
    jobs = {}
    for r in changed:
        seen[r["doc_id"]] = _seen(r)
        if r["doc_id"] in handed:  # only its owner changed (a hand-over): the points' owner, what searches filter on
            ctx.index.set_owner(gen.gen, r["doc_id"], r["owner"])
        elif selected is None or r["doc_id"] in selected:  # else copied below, as every document not re-cut was
            jobs[r["doc_id"]] = _add_job(ctx, r, gen.gen, selected, keep_own, "none")
            recut.add(r["hash"])
    changed = [r for r in changed if r["doc_id"] not in handed]
    log.info("re-ingestion: %d documents changed and %d deleted meanwhile; bringing them in", len(changed), len(gone))
    if lock is not None:
        lock.release()
    try:
        more = _run(ctx, gen, live, changed, jobs, _Progress(len(changed), False, None, None, 1.0), None,
                    lock or _NoLock())
    finally:
        if lock is not None:
            lock.acquire()
    report.results += more.results
    return False


def _run(ctx: Resources, gen: Generation, live: Generation | None, rows: list[dict], jobs: dict[str, int],
         bars: _Progress, fail_hook: Callable[[str], None] | None, lock) -> IngestReport:
    """Each document in turn: its job run (``jobs``: by document id) or, without one, its live chunks copied, each
    commit under ``lock``. Jobs not run when this stops early are cancelled."""
    runner = Runner(ctx)  # the settings' executor: with a queue_url, the cutting is done by the workers
    runner.commit_lock = lock
    runner.on_report = lambda job, label, share: bars.track(label, share)
    report = IngestReport(generation=gen.gen)
    try:
        for i, row in enumerate(rows):
            t0 = time.time()
            bars.file(i, row["name"])
            report.results.append(_one(ctx, gen, live, row, jobs.get(row["doc_id"]), runner, fail_hook, t0, lock))
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
         fail_hook: Callable[[str], None] | None, t0: float, lock) -> FileResult:
    """One document of the re-ingestion, as its line of the report."""
    name, doc_id = row["name"], row["doc_id"]
    try:
        if fail_hook:
            fail_hook(doc_id)
        if job_id is None:  # not selected: the live chunks (their text included) and vectors, copied
            with lock:
                why = gone_meanwhile(ctx.catalog, doc_id, row["hash"])
                if why:
                    return FileResult(name, "skipped", why, doc_id)
                chunks, vectors = _copy(ctx, live, doc_id, row["hash"])
                commit_document(ctx, gen, LoadedDoc(name, b"", "", row["kind"]), doc_id, row["hash"], chunks, vectors,
                                t0, row.get("chunking"), size=row["size"], phase=row.get("phase"))
            return FileResult(name, "copied", "unchanged, copied", doc_id, _counts(ctx, gen, doc_id),
                              time.time() - t0)
    except Exception as e:
        log.warning("re-ingesting %s failed: %s", name, e)
        if job_id is not None:
            ctx.jobs.finish(job_id, JobState.FAILED, error=f"{e.__class__.__name__}: {e}")
        return FileResult(name, "failed", f"{e.__class__.__name__}: {e}", doc_id)
    job = runner.run_own(job_id)
    why = gone_meanwhile(ctx.catalog, doc_id, row["hash"]) if job is None or job.state != JobState.READY else ""
    if why:  # deleted or replaced while it ran (its reading may have failed as it went): no failure
        return FileResult(name, "skipped", why, doc_id)
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
