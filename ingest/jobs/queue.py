"""Running the ingestion queue (:mod:`ingest.jobs.state`): the data dir's holder takes jobs, has them computed and
commits them, so that a document is searchable within seconds and refined in the background.

:class:`Runner` runs in the process that holds the data dir's writer lock (``mgrag serve``, ``mgrag worker``, or
``mgrag ingest`` when neither runs). It has two lanes of threads:

* **first pass** (``ingest_workers`` threads): a queued file is extracted, cut with MG (no LM), embedded and written
  in one commit that also marks its job searchable. Where the configured chunker needs no LM, or the ``first_pass``
  setting is off, this pass uses the configured chunker and the job is ready.
* **refinement** (``refine_workers`` threads): a searchable document is cut with the configured chunker (the LM
  pass) and its chunks are swapped in one commit that marks the job ready. Refinements yield the CPU to first
  passes: they wait while any file is queued for its first pass, and pause between LM batches while one is.

The computing is an executor's: :class:`LocalExecutor` here, in this process, or
:class:`ingest.jobs.remote.RedisExecutor`, which hands it to ``mgrag worker`` processes through Redis. The commits are
always this process's, under ``ctx.write_lock``, so the catalog has one writer.

Failures stay with their file: a file that cannot be read fails at once with the reason; an unexpected error (a
worker lost, out of memory) is retried up to ``ingest_max_attempts`` times; a kill of this process leaves rows that
the next start resumes (:meth:`ingest.jobs.state.JobStore.recover`). A cancellation is seen at the next progress report.
"""
from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import logging
import os
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ingest.jobs.remote import RedisExecutor
from ingest.jobs.state import (
    ACTIVE,
    DONE,
    FIRST_PASS,
    FOUND,
    LANES,
    RUNNING,
    Job,
    JobState,
    JobStore,
    pages_read,
    read_in_full,
    reading_rest,
)
from ingest.jobs.work import (
    Cut,
    Plan,
    QueueUnavailable,
    Reporter,
    Stopped,
    cut,
    extract,
    extract_ranges,
    first_pass_stages,
    needs_refinement,
    plan_for,
    read_again,
    updated_rates,
    wants_reread,
)
from ingest.pipeline import FileResult, IngestReport, live_generation
from ingest.readers.loaders import IngestError, Limits, LoadedDoc, check_input, clean_name, read_inputs
from ingest.readers.sandbox import public_problem
from ingest.store.write import commit_document
from ingest.text.chunk_context import indexed_text
from ingest.text.words import count_words
from ingest.types import content_hash

log = logging.getLogger(__name__)

RUNNER_KEY = "runner"  # meta key of the running runner's heartbeat
HEARTBEAT_S = 2.0
# a re-ingestion's job whose document was deleted, or replaced by a new version, while it ran (the re-ingestion
# catches up with the new version before it switches)
DELETED_MEANWHILE = "deleted during its re-ingestion"
REPLACED_MEANWHILE = "a new version came during its re-ingestion"


def gone_meanwhile(cat, doc_id: str, h: str) -> str:
    """Why a re-ingestion must not write version ``h`` of ``doc_id`` (checked under the write lock): deleted, or
    replaced by a newer version; "" when it is still the current one."""
    now = cat.current_hash(doc_id)
    return DELETED_MEANWHILE if now is None else REPLACED_MEANWHILE if now != h else ""


class _Stale(Exception):
    """The index changed under a job (a re-ingestion switched generations): it goes back to its lane as it was."""


# -- queueing (any process) -----------------------------------------------------------------------------------------
@dataclass
class Queued:
    """What became of one file handed to :func:`enqueue`: a job, or why there is none (refused, duplicate)."""

    name: str
    job: Job | None = None
    status: str = "queued"  # queued, refused, duplicate
    message: str = ""


def enqueue(ctx, named: Iterable[tuple[str, bytes]], owner: str | None = None, *, batch: str | None = None,
            source: str = "cli") -> list[Queued]:
    """Queue files (name, bytes) for ``owner`` (None: the shared library). A file of an unsupported type, too large or
    empty is refused at once; content the owner already has is reported as a duplicate; the rest are jobs. Names
    lose bidirectional and control characters (:func:`ingest.readers.loaders.clean_name`)."""
    limits = Limits.of(ctx.settings.reading)
    out = []
    for name, data in named:
        name = clean_name(name)  # no bidi or control characters in a document's name
        try:
            check_input(name, data, limits)
        except IngestError as e:
            out.append(Queued(name, None, "refused", e.problem))
            continue
        job, why = ctx.jobs.add(name, data, content_hash(data), owner, batch=batch, source=source,
                                two_phase=ctx.settings.first_pass)
        out.append(Queued(name, job, "queued", "") if job else Queued(name, None, "duplicate", why))
    return out


def starts_in(ctx, job: Job) -> float | None:
    """About how many seconds until a waiting ``job`` starts, with this data dir's settings: the lane's workers (this
    process's, or the jobs the scale-out queue hands out at once), the most of them one user's files may hold
    (:meth:`Runner.owner_cap`) and the pages a first pass reads of a long PDF
    (:meth:`ingest.jobs.state.JobStore.starts_in`)."""
    s = ctx.settings
    lane = "first" if job.state == JobState.QUEUED else "refine"
    workers = s.queue_inflight if s.queue_url else s.ingest_workers if lane == "first" else s.refine_workers
    return ctx.jobs.starts_in(job, workers, owner_cap=owner_cap(s, workers), range_pages=s.pdf_pages_per_range)


def owner_cap(settings, workers: int) -> int:
    """The most jobs of one user (an owner other than the shared library) running at once in a lane of ``workers``:
    every worker but one (``owner_workers``, 0: that default), so one worker is always left for another user's
    upload; a single worker is everyone's in turn."""
    return max(1, min(settings.owner_workers or workers - 1, workers))


STARTS_SHOWN_FROM_S = 5  # a queued row shows no start estimate under this: it says "next" or its place only
STARTS_IN_MINUTES_FROM_S = 90  # from this wait on, the row says it in minutes


def queued_text(ctx, job: Job) -> str:
    """A queued file's row for people: its place and about when it starts ("queued (2 ahead) · starts in about
    3 min"): when the work ahead of it is done, the running jobs' time left and the expected seconds of the files
    ahead of it (a long PDF at the first range of pages its first pass reads), on the workers its owner may use
    (:func:`starts_in`)."""
    ahead = ctx.jobs.position(job)
    start = starts_in(ctx, job)
    when = ""
    if start is not None and start >= STARTS_SHOWN_FROM_S:
        when = " · starts in about " + (f"{start / 60:.0f} min" if start >= STARTS_IN_MINUTES_FROM_S
                                       else f"{start:.0f} s")
    return f"queued ({f'{ahead} ahead' if ahead else 'next'}){when}"


def runner_alive(jobs: JobStore, max_age_s: float = 4 * HEARTBEAT_S) -> dict | None:
    """The running runner's heartbeat (pid, host, command, executor) when one beat lately, else None."""
    beat = jobs.get_meta(RUNNER_KEY)
    if beat and time.time() - float(beat.get("at", 0)) <= max_age_s:
        return beat
    return None


# -- executing ------------------------------------------------------------------------------------------------------
QUEUE_BACKOFF_S, QUEUE_BACKOFF_MAX_S = 2.0, 60.0  # waits while the queue's Redis does not answer: 2, 4 … 60 s


class LocalExecutor:
    """The work of a job, computed in this process with its models."""

    remote = False

    def __init__(self, ctx):
        self.ctx = ctx

    def first(self, job: Job, data: bytes, plan: Plan, rep: Reporter) -> tuple[LoadedDoc, Cut]:
        """Read the file and cut it; a PDF in a job of two phases only up to its first range of pages that has text
        (when more follow, its layout's ``read`` says so and the refinement lane reads the rest,
        :meth:`Runner._read_rest`; not by the page count its page tree states: a compressed tree states none)."""
        t = time.perf_counter()
        limits = Limits.of(self.ctx.settings.reading)
        if job.two_phase and job.name.lower().endswith(".pdf"):
            doc = next(extract_ranges(job.name, data, limits, rep))
        else:
            doc = extract(job.name, data, limits, rep)
        read_s = time.perf_counter() - t
        c = cut(self.ctx, doc.text, job.doc_id, job.hash, plan, rep, job.name, layout=doc.layout)
        c.timings.update(read_s=read_s, pages=len((doc.layout or {}).get("pages") or ()))
        return doc, c

    def ranges(self, job: Job, data: bytes, so_far: LoadedDoc, plan: Plan, rep: Reporter,
               known: dict) -> Iterator[tuple[LoadedDoc, Cut]]:
        """A long PDF's ranges of pages after ``so_far`` (the document read up to its layout's ``read``), one after
        another: each the document to the end of the range and its cut (``known``: the vectors to reuse, as the
        caller has them when the range is cut)."""
        for doc in extract_ranges(job.name, data, Limits.of(self.ctx.settings.reading), rep, resume=so_far):
            yield doc, cut(self.ctx, doc.text, job.doc_id, job.hash, plan, rep, job.name, known, doc.layout)

    def refine(self, job: Job, text: str, plan: Plan, rep: Reporter, known=None, layout=None) -> Cut:
        return cut(self.ctx, text, job.doc_id, job.hash, plan, rep, job.name, known, layout)

    def close(self) -> None:
        pass


class Runner:
    """The queue's worker threads in the process that holds the data dir (see the module's docstring)."""

    def __init__(self, ctx, executor=None, *, poll_s: float = 0.5, first_workers: int | None = None,
                 refine_workers: int | None = None, clock: Callable[[], float] = time.monotonic):
        self.ctx = ctx
        self.clock = clock  # what the first pass's time budget and the progress estimates are measured with
        self.jobs: JobStore = ctx.jobs
        s = ctx.settings.queue  # what the runner reads, and nothing else
        if executor is None and s.queue_url:
            executor = RedisExecutor(ctx)
        self.executor = executor or LocalExecutor(ctx)
        self.poll_s = poll_s
        # in this process: as many lanes as it has cores for; with workers elsewhere: as many jobs as may be handed out
        lanes_first, lanes_refine = ((s.queue_inflight, s.queue_inflight) if self.executor.remote
                                     else (s.ingest_workers, s.refine_workers))
        self.n_first = lanes_first if first_workers is None else first_workers
        self.n_refine = lanes_refine if refine_workers is None else refine_workers  # 0: first passes only
        self._stop = threading.Event()
        self._queue_down_s = 0.0  # the back-off while the queue's Redis does not answer
        self._cv = threading.Condition()
        self._first_running = 0
        self._threads: list[threading.Thread] = []
        self.name = f"{socket.gethostname()}:{os.getpid()}"
        self.recovered: list = []
        self.on_report: Callable[[Job, str, float], None] | None = None  # each progress report (a re-ingestion's bars)
        self.commit_lock = contextlib.nullcontext()  # what a re-ingestion's commits take (its caller's write lock)

    # -- lifecycle ----------------------------------------------------------------------------------------------
    def start(self) -> "Runner":
        """Take the data dir (the writer lock; the store's consistency check runs on open), resume what a dead
        process left running, then start the lanes."""
        self.ctx.writer_lock()
        self.recovered = self.jobs.recover()
        runners = getattr(self.ctx, "runners", None)
        if runners is not None:
            runners.append(self)
        for job, state in self.recovered:
            log.warning("job %d (%s) was %s when the last run stopped: now %s", job.job_id, job.name, job.state, state)
        self._beat()
        lanes = [("first", i) for i in range(self.n_first)] + [("refine", i) for i in range(self.n_refine)]
        for lane, i in lanes:
            t = threading.Thread(target=self._loop, args=(lane,), name=f"mgrag-{lane}-{i}", daemon=True)
            t.start()
            self._threads.append(t)
        hb = threading.Thread(target=self._heartbeat, name="mgrag-runner-heartbeat", daemon=True)
        hb.start()
        self._threads.append(hb)
        return self

    def stop(self, timeout_s: float = 60.0) -> None:
        """Stop taking jobs; running ones stop at their next progress report and go back to their lane unchanged
        (not counted as an attempt)."""
        if self._stop.is_set():
            return
        self._stop.set()
        runners = getattr(self.ctx, "runners", None)
        if runners is not None and self in runners:
            runners.remove(self)
        self.wake()
        deadline = time.monotonic() + timeout_s
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        try:
            self.jobs.set_meta(RUNNER_KEY, {"at": 0})
        except Exception:  # pragma: no cover - best effort on the way out
            pass
        self.executor.close()

    def wake(self) -> None:
        """New work was queued (by this process): the lanes look now instead of at their next poll."""
        with self._cv:
            self._cv.notify_all()

    def _beat(self) -> None:
        cmd = " ".join(Path(a).name if i == 0 else a for i, a in enumerate(sys.argv))[:80]
        self.jobs.set_meta(RUNNER_KEY, {"at": time.time(), "pid": os.getpid(), "host": socket.gethostname(),
                                        "cmd": cmd, "executor": "redis" if self.executor.remote else "local"})

    def _heartbeat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                self._beat()
            except Exception:  # pragma: no cover - a busy database: try again at the next beat
                log.debug("runner heartbeat failed", exc_info=True)

    def idle(self) -> bool:
        """Nothing queued, running or waiting for refinement."""
        return not self.jobs.jobs(ACTIVE)

    def drain(self, until: str = JobState.READY) -> None:
        """Run every job there is to take in the caller's thread, first passes before refinements (``until``
        "searchable": first passes only), until none is left: no lane threads, no polling, so the jobs are done when
        it returns. As :meth:`start`, it first gives back to their lanes the jobs a dead process left running, unless
        a runner of this process is running them."""
        self.ctx.writer_lock()
        if not getattr(self.ctx, "runners", None):
            self.recovered = self.jobs.recover()
        worked = False
        while not self._stop.is_set():
            lane, job = "first", self.jobs.claim("first", f"{self.name}:drain")
            if job is None and until == "ready":
                lane, job = "refine", self.jobs.claim("refine", f"{self.name}:drain")
            if job is None:
                break
            worked = True
            self._run(lane, job)
        if worked:
            self._optimize()

    # -- lanes --------------------------------------------------------------------------------------------------
    def owner_cap(self, lane: str) -> int:
        """The most jobs of one user (an owner other than the shared library) running at once in ``lane``: every
        worker but one (``owner_workers``, 0: that default), so one worker is always left for another user's upload;
        a single worker is everyone's in turn."""
        return owner_cap(self.ctx.settings.queue, self.n_first if lane == "first" else self.n_refine)

    def _first_pending(self) -> bool:
        """Whether first passes are running or waiting (then refinements give way to them). Read from the catalog
        each time: a job claimed a moment ago is already ``extracting`` there."""
        return self._first_running > 0 or self.jobs.first_pass_pending()

    def _loop(self, lane: str) -> None:
        worked = False
        while not self._stop.is_set():
            job = None
            try:
                if lane == "refine" and not self.executor.remote and self._first_pending():
                    pass  # first passes before refinements
                else:
                    job = self.jobs.claim(lane, f"{self.name}:{threading.current_thread().name}",
                                          owner_cap=self.owner_cap(lane))
            except Exception:  # a busy database: try again at the next poll
                log.exception("claiming a %s job failed", lane)
            if job is None:
                if worked:
                    worked = False
                    self._optimize()
                with self._cv:
                    self._cv.wait(self.poll_s)
                continue
            worked = True
            if lane == "first":
                with self._cv:
                    self._first_running += 1
            try:
                self._run(lane, job)
            finally:
                if lane == "first":
                    with self._cv:
                        self._first_running -= 1
                        self._cv.notify_all()

    def _optimize(self) -> None:
        """After a burst of writes: an HNSW graph for the levels that grew past ``hnsw_min_points``."""
        try:
            live = self.ctx.catalog.live_generation()
            if live is not None:
                with self.ctx.write_lock:
                    self.ctx.index.optimize(live.gen)
        except Exception:  # pragma: no cover - searching stays exact; the next burst tries again
            log.exception("optimising the index failed")

    def _run(self, lane: str, job: Job) -> None:
        try:
            {"first": self._first, "refine": self._refine, "reingest": self._rebuild}[lane](job)
            self._queue_down_s = 0.0
        except QueueUnavailable as e:  # Redis down: the job waits, its attempts are not spent; back off, then retry
            self._queue_down_s = min(QUEUE_BACKOFF_MAX_S, max(QUEUE_BACKOFF_S, 2 * self._queue_down_s))
            self.jobs.release(job, "waiting for the queue (Redis does not answer)")
            log.warning("job %d (%s) waits: %s; trying again in %.0f s", job.job_id, job.name, e, self._queue_down_s)
            self._stop.wait(self._queue_down_s)
        except Stopped as e:
            if e.why == "cancelled":
                self.jobs.finish(job.job_id, JobState.CANCELLED)
                log.info("job %d (%s) cancelled", job.job_id, job.name)
            else:
                self.jobs.release(job)
        except _Stale:
            self.jobs.release(job)
        except IngestError as e:
            self.jobs.finish(job.job_id, JobState.FAILED, error=e.problem)
            log.warning("%s: %s", job.name, e.problem)
        except Exception as e:  # not the file's fault (a worker lost, memory, the store): retried, boundedly
            if isinstance(e, OSError) and e.errno == errno.ENOSPC:  # a full disk stays full: no retry, no traceback
                self.jobs.finish(job.job_id, JobState.FAILED, error=f"{e.__class__.__name__}: {e}")
                log.error("%s failed: %s", job.name, e)
                return
            log.exception("job %d (%s) failed", job.job_id, job.name)
            said = public_problem(f"{e.__class__.__name__}: {e}")
            if said == e.__class__.__name__:  # nothing but a traceback: the log has it
                said = f"an unexpected error ({said}); the details are in the server's log"
            state = self.jobs.retry_or_fail(job, said)
            log.warning("job %d (%s): %s", job.job_id, job.name,
                        "given up" if state == JobState.FAILED else "will retry")

    def _reporter(self, job: Job, lane: str) -> Reporter:
        budget = self.ctx.settings.queue.first_pass_timeout_s if lane == "first" else None
        t0 = self.clock()

        def sink(label: str, share: float, eta: float | None) -> bool:
            if self._stop.is_set():
                raise Stopped("stopping")
            if budget is not None and self.clock() - t0 > budget:  # one file never holds a worker for good
                raise IngestError(job.name, f"its first pass took longer than {budget:.0f} s "
                                            "(MGRAG_FIRST_PASS_TIMEOUT_S): split the file, or raise that limit")
            if lane == "refine" and not self.executor.remote and self._first_pending():
                self.jobs.report(job.job_id, "paused for new uploads", share, None)
                while self._first_pending() and not self._stop.is_set():
                    time.sleep(0.25)
                if self._stop.is_set():
                    raise Stopped("stopping")
            if self.on_report is not None:
                self.on_report(job, label, share)
            return self.jobs.report(job.job_id, label, share, eta)

        return Reporter(sink, rates=self.jobs.get_meta("rates", {}), clock=self.clock)

    def _learn(self, timings: dict) -> None:
        try:
            self.jobs.set_meta("rates", updated_rates(self.jobs.get_meta("rates", {}), timings))
        except Exception:  # pragma: no cover - estimates only
            log.debug("updating the measured rates failed", exc_info=True)

    # -- the two passes -----------------------------------------------------------------------------------------
    def _first(self, job: Job) -> None:
        ctx, cat = self.ctx, self.ctx.catalog
        t0 = time.time()
        spool = self.jobs.spool_path(job)
        if spool is None or not spool.exists():
            raise IngestError(job.name, "the queued file is gone from the spool (removed by hand?); upload it again")
        data = spool.read_bytes()
        with ctx.write_lock:
            gen = live_generation(ctx)
        prev = cat.indexed_doc(gen.gen, job.doc_id)
        own = cat.chunking(gen.gen, job.doc_id) if prev else None
        two = bool(job.two_phase) and needs_refinement(own["chunker"] if own else gen.chunker)
        plan = plan_for(ctx, gen, own, first_pass=two)
        rep = self._reporter(job, "first")
        rep.begin(first_pass_stages(rep.rates, job.name, len(data), job.pages,
                                    ctx.settings.pdf_pages_per_range if job.two_phase else None))
        doc, c = self.executor.first(job, data, plan, rep)
        read = (doc.layout or {}).get("read")  # a long PDF's first pages: the rest is read in the refinement lane
        two = two or bool(read)
        with ctx.write_lock:
            self._still_wanted(job, gen.gen)
            dup = cat.doc_by_hash(job.hash, gen.gen, job.owner)
            if dup is not None:
                self.jobs.finish(job.job_id, JobState.DUPLICATE,
                                 message="unchanged; skipped" if dup == job.doc_id else f"same content as {dup!r}")
                return
            ctx.store.put(job.hash, data, doc.text, doc.layout)
            chunks = c.chunks(doc.text, job.doc_id, job.hash, doc.layout, first_pass=two, context=plan.context)
            state = JobState.SEARCHABLE if two else JobState.READY
            version = f"new version {cat.version_for(job.doc_id, job.hash)}" if prev else ""
            renamed = job.doc_id != job.name and cat.label_of(job.doc_id, job.name, job.owner) != job.name
            msg = "; ".join(x for x in (pages_read(read), version, doc.warning,
                                        f"stored as {job.doc_id!r}" if renamed else "") if x)
            words = c.timings.get("words")
            commit_document(ctx, gen, LoadedDoc(job.name, data, doc.text, doc.kind), job.doc_id, job.hash, chunks,
                            c.vectors, t0, own, owner=job.owner, phase="first" if two else None,
                            on_commit=lambda db: self.jobs.first_done_sql(db, job.job_id, state=state, words=words,
                                                                          message=msg))
        if spool is not None:
            spool.unlink(missing_ok=True)
        log.info("%s: %s in %.1f s (%s)", job.name, state, time.time() - t0, plan.cut_by)
        self._learn(c.timings)
        self.wake()  # a refinement may start

    def _read_rest(self, job: Job, gen, own: dict | None, plan: Plan) -> bool:
        """The pages of a long PDF after its first range, range by range, each range's document committed as it is
        read (its text extends the last, :meth:`ingest.store.catalog.DocumentStore.extend`): a kill leaves whole
        ranges searchable and the job resumes here. True when the job is done (ready, or ended otherwise); False
        when the whole text is in and an LM refinement follows."""
        ctx, cat = self.ctx, self.ctx.catalog
        lm = needs_refinement(plan.chunker)
        by = dataclasses.replace(plan, first_pass=True) if lm else plan
        known = self._known_vectors(gen, job)
        rep = self._reporter(job, "refine")
        data = ctx.store.original(job.hash)
        so_far = LoadedDoc(job.name, data, ctx.store.text(job.hash), "pdf", "", ctx.store.layout(job.hash))
        pages = ((so_far.layout or {}).get("read") or {}).get("of") or job.pages or 1  # as the reader counted them
        rep.begin([("reading", pages / rep.rates["pdf_pages_s"])])
        t0 = time.time()
        for doc, c in self.executor.ranges(job, data, so_far, by, rep, known):
            read = (doc.layout or {}).get("read")
            phase = "first" if (read or lm) else None
            with ctx.write_lock:
                self._still_wanted(job, gen.gen)
                why = self._nothing_to_refine(job, cat.phase(gen.gen, job.doc_id))
                if why:
                    self.jobs.finish(job.job_id, why[0], message=why[1])
                    return True
                ctx.store.extend(job.hash, doc.text, doc.layout)
                chunks = c.chunks(doc.text, job.doc_id, job.hash, doc.layout, first_pass=phase == "first",
                                  context=plan.context)
                known.update(zip((indexed_text(x.meta.get("context", ""), x.text) for x in chunks), c.vectors))
                v = cat.version_of(job.doc_id, job.hash) or {}
                msg = pages_read(read) or read_in_full(doc.layout)
                done_sql = self.jobs.message_sql if phase else self.jobs.ready_sql
                commit_document(ctx, gen, LoadedDoc(v.get("name", job.name), b"", doc.text, v.get("kind", "pdf")),
                                job.doc_id, job.hash, chunks, c.vectors, t0, own, size=job.size, owner=job.owner,
                                phase=phase, on_commit=lambda db, f=done_sql, m=msg: f(db, job.job_id, m))
            log.info("%s: %s in %.1f s", job.name, msg, time.time() - t0)
            t0 = time.time()
        return not lm

    def _refine(self, job: Job) -> None:
        ctx, cat = self.ctx, self.ctx.catalog
        t0 = time.time()
        gen = cat.live_generation()
        here = cat.phase(gen.gen, job.doc_id) if gen is not None else None
        why = self._nothing_to_refine(job, here)
        if why:
            self.jobs.finish(job.job_id, why[0], message=why[1])
            return
        own = cat.chunking(gen.gen, job.doc_id)
        plan = plan_for(ctx, gen, own, first_pass=False)
        if (ctx.store.layout(job.hash) or {}).get("read") and self._read_rest(job, gen, own, plan):
            return
        text, layout = ctx.store.text(job.hash), ctx.store.layout(job.hash)
        # the store holds the whole of a long PDF whose first pass read its first pages only when the same bytes were
        # read in full before (another browser's upload; content is stored by its hash): nothing is left to read, and
        # the job ends saying so, as one read range by range does (not at its first pass's "pages 1–40 of N")
        whole = read_in_full(layout) if reading_rest(job.message) else ""
        c = self.executor.refine(job, text, plan, self._reporter(job, "refine"), self._known_vectors(gen, job),
                                 layout)
        with ctx.write_lock:
            self._still_wanted(job, gen.gen)
            why = self._nothing_to_refine(job, cat.phase(gen.gen, job.doc_id))
            if why:
                self.jobs.finish(job.job_id, why[0], message=why[1])
                return
            v = cat.version_of(job.doc_id, job.hash) or {}
            chunks = c.chunks(text, job.doc_id, job.hash, layout, first_pass=False, context=plan.context)
            commit_document(ctx, gen, LoadedDoc(v.get("name", job.name), b"", text, v.get("kind", "text")),
                            job.doc_id, job.hash, chunks, c.vectors, t0, own, size=job.size, owner=job.owner,
                            phase=None, on_commit=lambda db: self.jobs.ready_sql(db, job.job_id, whole))
        log.info("%s: refined in %.1f s (%s)", job.name, time.time() - t0, plan.cut_by)
        self._learn(c.timings)

    def run_own(self, job_id: int) -> Job | None:
        """Run one of a re-ingestion's jobs by its id in the caller's thread until it ends (a failure that is not the
        file's is retried up to ``max_attempts``, as in the lanes; :mod:`ingest.jobs.rebuild`). The job as it
        ended."""
        while not self._stop.is_set():
            job = self.jobs.claim_job(job_id, f"{self.name}:reingest")
            if job is None:
                break
            self._run("reingest", job)
        return self.jobs.get(job_id)

    def _rebuild(self, job: Job) -> None:
        """A re-ingestion's job: the document cut again into the generation being built (``job.target_gen``), from its
        stored text or, as the job's plan says (:func:`ingest.jobs.work.wants_reread`), read again from its original;
        a new reading is staged and replaces the stored text when that generation goes live. Run by the re-ingestion
        that queued it, under :attr:`commit_lock` (:func:`ingest.jobs.rebuild.reingest`); a document deleted
        or replaced meanwhile is not written (the job ends cancelled: :func:`gone_meanwhile`)."""
        ctx, cat = self.ctx, self.ctx.catalog
        t0 = time.time()
        gen = cat.generation(job.target_gen)
        if gen is None or gen.status != "building":
            self.jobs.finish(job.job_id, JobState.CANCELLED, message="its re-ingestion ended")
            return
        why = gone_meanwhile(cat, job.doc_id, job.hash)  # while the re-ingestion ran (checked again at the commit)
        if why:
            self.jobs.finish(job.job_id, JobState.CANCELLED, message=why)
            return
        plan_of = json.loads(job.plan or "{}")
        own = plan_of.get("own")
        plan = plan_for(ctx, gen, own, first_pass=False)
        v = cat.version_of(job.doc_id, job.hash) or {}
        doc = LoadedDoc(job.name, b"", ctx.store.text(job.hash), v.get("kind", "text"),
                        layout=ctx.store.layout(job.hash))  # the original is read only to be read again
        rep = self._reporter(job, "reingest")
        said = ""
        if wants_reread(plan_of.get("reread", "none"), doc):
            doc = dataclasses.replace(doc, data=ctx.store.original(job.hash))
            fresh = read_again(doc, Limits.of(ctx.settings.reading), rep)
            if fresh is not None:
                ctx.store.stage(job.hash, gen.gen, fresh.text, fresh.layout)
                doc, said = fresh, f"read again by today's reader ({count_words(fresh.text):,} words)"
        c = self.executor.refine(job, doc.text, plan, rep, None, doc.layout)
        if self.jobs.cancel_requested(job.job_id):
            raise Stopped("cancelled")
        chunks = c.chunks(doc.text, job.doc_id, job.hash, doc.layout, first_pass=False, context=plan.context)
        partial = bool((doc.layout or {}).get("read"))  # a long PDF still being read: the queue refines it after
        size = job.size if job.size is not None else len(ctx.store.original(job.hash))
        with self.commit_lock:  # the write lock, when the re-ingestion runs beside uploads and deletions
            why = gone_meanwhile(cat, job.doc_id, job.hash)
            if why:
                self.jobs.finish(job.job_id, JobState.CANCELLED, message=why)
                return
            commit_document(ctx, gen, doc, job.doc_id, job.hash, chunks, c.vectors, t0, own, size=size,
                            phase="first" if partial else None,
                            on_commit=lambda db: self.jobs.ready_sql(db, job.job_id, said))
        self._learn(c.timings)

    def _still_wanted(self, job: Job, gen: int) -> None:
        """Under the write lock, before a job's commit: a cancellation requested meanwhile stops it (``Stopped``); a
        re-ingestion that switched the live generation sends it back to its lane (``_Stale``)."""
        if self.jobs.cancel_requested(job.job_id):
            raise Stopped("cancelled")
        live = self.ctx.catalog.live_generation()
        if live is None or live.gen != gen:
            raise _Stale()

    def _known_vectors(self, gen, job: Job) -> dict:
        """The first pass's vectors of ``job``'s document by chunk text: the refinement reuses those of the chunks
        it cuts the same way."""
        ids = self.ctx.catalog.chunk_ids(gen.gen, job.doc_id)
        out = {}
        for lv, chunk_ids in ids.items():
            for p in self.ctx.index.retrieve(lv, chunk_ids, gen=gen.gen, with_vectors=True):
                if p.payload.get("doc_hash") == job.hash:  # by the text that was embedded (context and all)
                    out[indexed_text(p.payload.get("context", ""), p.payload["text"])] = p.vector
        return out

    @staticmethod
    def _nothing_to_refine(job: Job, here) -> tuple[str, str] | None:
        if here is None:
            return JobState.CANCELLED, "the document was deleted"
        h, phase = here
        if h != job.hash:
            return JobState.CANCELLED, "a newer version replaced this one"
        if phase != "first":
            return JobState.READY, "already refined (re-ingested)"
        return None


def reached(job: Job | None, until: str) -> bool:
    """Whether ``job`` is as far as ``until``: "searchable" (its first pass is committed, or it ended) or "ready"
    (it ended)."""
    return job is None or job.state in DONE or (until == JobState.SEARCHABLE and job.state in LANES["refine"])


def watch(jobs: JobStore, job_ids: list[int], until: str = JobState.SEARCHABLE, *, timeout_s: float | None = None,
          poll_s: float = 0.25, every_s: float | None = None) -> Iterator[list[Job | None]]:
    """The one way to wait for jobs: yields the jobs as they are now, then again whenever one of them moved (its
    state, stage or progress) or, with ``every_s``, at least that often; it ends once every job has reached ``until``
    (:func:`reached`; the last list yielded shows them so) or ``timeout_s`` passed. Other processes' runners are
    seen through the catalog, so it polls every ``poll_s``."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    seen, said = None, time.monotonic()
    while True:
        current = [jobs.get(i) for i in job_ids]
        key = [None if j is None else (j.state, j.stage, None if j.progress is None else round(j.progress, 2))
               for j in current]
        done = all(reached(j, until) for j in current) or (deadline is not None and time.monotonic() > deadline)
        if key != seen or done or (every_s is not None and time.monotonic() - said >= every_s):
            seen, said = key, time.monotonic()
            yield current
        if done:
            return
        time.sleep(poll_s)


def wait(jobs: JobStore, job_ids: list[int], until: str = JobState.SEARCHABLE, timeout_s: float | None = None,
         poll_s: float = 0.25) -> list[Job | None]:
    """:func:`watch` to its end: the jobs once every one has reached ``until`` (or ``timeout_s`` passed)."""
    last: list[Job | None] = []
    for now in watch(jobs, job_ids, until, timeout_s=timeout_s, poll_s=poll_s):
        last = now
    return last


def document_states(ctx, owner: str | None = None, everyone: bool = True) -> list[dict]:
    """Every document with its state (``queued``, ``extracting``, ``searchable``, ``refining``, ``ready``, ``failed``,
    ``cancelled``), merged from the catalog (what is live) and the queue (what is being done): one row per document
    id, the catalog's fields plus ``state``, ``searchable`` (its chunks can be found now), ``detail`` (for people),
    ``progress``, ``eta_s``, ``error`` and ``job_id``. Files whose first pass never committed (queued, extracting,
    failed, cancelled) appear too, until a later job of the same name succeeds. ``everyone=False`` keeps the shared
    library and ``owner``'s own."""
    cat = ctx.catalog
    live = cat.live_generation()
    docs = {r["doc_id"]: r for r in cat.documents(live.gen if live else None)}
    latest = ctx.jobs.latest_by_doc()
    out = []
    for doc_id in sorted(set(docs) | set(latest)):
        r, j = docs.get(doc_id), latest.get(doc_id)
        owner_of = r["owner"] if r else j.owner
        if not everyone and owner_of is not None and owner_of != owner:
            continue
        indexed = bool(r and r["n_l0"] is not None)
        if r is None and j.state in (*FOUND, JobState.CANCELLED, JobState.DUPLICATE):
            continue  # nothing of it exists (never made, or deleted since its job ended)
        if j is None or (j.state in (JobState.READY, JobState.DUPLICATE, JobState.CANCELLED) and indexed):
            state = (JobState.SEARCHABLE if indexed and r.get("phase") == "first" else JobState.READY if indexed
                     else JobState.FAILED)
            detail = ("searchable · first pass (refinement cancelled or not queued)" if state == JobState.SEARCHABLE
                      else state)
        else:
            state, detail = j.state, j.describe()
            if j.state in FIRST_PASS and indexed:
                detail += f" (version {r['version']} stays searchable meanwhile)"
            elif j.state == JobState.FAILED and indexed and j.failed_in != "refine":
                detail += f" (version {r['version']} stays searchable)"
        row = dict(r) if r else {"doc_id": doc_id, "name": j.name, "version": None, "hash": j.hash, "size": j.size,
                                 "kind": None, "updated": j.created, "n_l0": None, "n_l1": None, "n_l2": None,
                                 "seconds": None, "indexed_at": None, "chunking": None, "owner": j.owner,
                                 "phase": None}
        row.update(state=state, searchable=indexed, detail=detail, job_id=j.job_id if j else None,
                   progress=j.progress if j and j.state in RUNNING else None,
                   eta_s=j.eta_s if j and j.state in RUNNING else None,
                   error=j.error if j and j.state == JobState.FAILED else None)
        out.append(row)
    return out


def ingest_now(ctx, named: Iterable[tuple[str, bytes]], owner: str | None = None, *, until: str = JobState.READY,
               source: str = "cli") -> IngestReport:
    """Queue ``named`` (name, bytes) for ``owner`` and run the jobs in this thread (:meth:`Runner.drain`) until each
    has reached ``until``: the one way a document gets in (:func:`enqueue`, the queue's passes), for callers that
    want the result before they go on (benchmarks, evaluations, tests). Jobs already waiting run first. A file is
    reported ``ingested``, ``updated`` (a new version of a document the owner had), ``duplicate`` or ``failed``
    (refused, or its job failed or was cancelled), in the order given, with its chunks per level."""
    cat = ctx.catalog
    runner = Runner(ctx, LocalExecutor(ctx))
    runner.drain(until)  # what was queued before (or left by a dead process) first, as a starting runner would
    live = cat.live_generation()
    queued = enqueue(ctx, named, owner, batch=uuid.uuid4().hex, source=source)
    had = {q.job.doc_id for q in queued if q.job and live is not None and cat.indexed_doc(live.gen, q.job.doc_id)}
    runner.drain(until)
    live = cat.live_generation()
    counts = {d["doc_id"]: d for d in cat.documents(live.gen)} if live is not None else {}
    report = IngestReport(generation=live.gen if live is not None else None)
    for q in queued:
        job = ctx.jobs.get(q.job.job_id) if q.job else None
        if job is None:
            report.results.append(FileResult(q.name, "failed" if q.status == "refused" else q.status, q.message))
        elif job.state in FOUND:
            d = counts.get(job.doc_id) or {}
            n = tuple(d.get(f"n_l{lv}") or 0 for lv in range(live.n_levels)) if live is not None else ()
            report.results.append(FileResult(q.name, "updated" if job.doc_id in had else "ingested",
                                             job.message or "", job.doc_id, n, float(d.get("seconds") or 0.0)))
        elif job.state == JobState.DUPLICATE:
            report.results.append(FileResult(q.name, "duplicate", job.message or "", job.doc_id))
        else:
            report.results.append(FileResult(q.name, "failed", job.error or job.message or job.state, job.doc_id))
    return report


def ingest_files(ctx, paths: Iterable[str | Path], owner: str | None = None, **kw) -> IngestReport:
    """:func:`ingest_now` of files and folders (a file under a folder is named by its path relative to that folder);
    a path that cannot be read is ``failed`` with the reason, in its place among the others."""
    items = read_inputs(paths, int(ctx.settings.max_file_mb * 2**20))
    report = ingest_now(ctx, [(n, d) for n, d in items if isinstance(d, bytes)], owner, **kw)
    done = iter(report.results)
    report.results = [next(done) if isinstance(d, bytes) else FileResult(n, "failed", d) for n, d in items]
    return report
