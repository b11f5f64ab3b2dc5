"""What the command line (``cli/``) does with the library beyond what the web app's parts do: ingesting files and
folders and waiting for them, the queue's jobs and its worker, the documents' states, re-ingestion, deletion, the
chunk inspector, router training and the export of the index. A part of :class:`services.service.AppService`: the
``mgrag`` commands reach the stages only through it and the names this module re-exports, as ``ui/`` and ``api/``
do (``tests/test_layers.py``), so a command and the web app run the same code (the queue's takeover
:meth:`~services.uploads.UploadsPart.ensure_runner`, the asking :meth:`~services.chat.ChatPart.ask`, the deletion
:meth:`~services.documents.DocumentsPart._delete`).
"""
from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path

from app.evaluation.cli import add_bench_parser as add_bench_parser  # `mgrag bench`'s parser and commands
from app.evaluation.harness import BenchError as BenchError
from app.inspect import inspect_text, render_html, render_png
from ingest.jobs.queue import document_states as queue_states
from ingest.jobs.queue import enqueue, runner_alive, watch
from ingest.jobs.remote import QueueSecretError as QueueSecretError
from ingest.jobs.remote import run_worker
from ingest.jobs.state import ACTIVE, FOUND, JobError
from ingest.jobs.state import ENDED_BADLY as ENDED_BADLY
from ingest.jobs.state import FIRST_PASS as FIRST_PASS
from ingest.jobs.state import JobState as JobState  # a document's states (not services.base.JobState, the admin's)
from ingest.jobs.state import reading_rest as reading_rest
from ingest.readers.layout import source_place as source_place  # where a sentence of a source is (page, lines)
from ingest.readers.loaders import load_file, read_inputs
from ingest.store.export import export_live, state_path
from ingest.store.index import ClientIndex, make_client
from ingest.types import LEVEL_NAMES as LEVEL_NAMES
from services.part import ServicePart

# the command line prints with these too: ENDED_BADLY, FIRST_PASS, JobState, reading_rest (a job's states),
# source_place, LEVEL_NAMES; and catches QueueSecretError and BenchError (router.model's RouterError is a ValueError).
# Imported where they are used, on purpose (heavy, optional or not needed by every caller): ingest.pipeline,
# router.pipeline, router.train


class CommandsPart(ServicePart):
    """The ``mgrag`` commands' operations (the caller prints; ValueError says what is wrong with a request)."""

    # -- ingesting ----------------------------------------------------------------------------------------------
    def ingest(self, paths: list[str], owner: str | None = None, *, wait: str = JobState.READY, source: str = "cli",
               started: float | None = None, on_busy: Callable[[Exception], None] | None = None,
               on_move: Callable[[dict, object, tuple[str, ...]], None] | None = None, every_s: float = 1.0) -> dict:
        """Queue files and folders (a file under a folder is named by its path relative to it) for ``owner`` (None:
        the shared library), durably before any wait, and wait until each has reached ``wait``: "ready" (read to the
        end and refined, or ended: a long PDF's pages after its first range too), "searchable" (its first pass
        committed: a long PDF's first range of pages) or "queued" (return at once). Meanwhile the queue is run by the
        process that holds the data dir (:meth:`ensure_runner`, the server's rule): this one when no other does, and
        it takes over if the holder stops meanwhile; a refinement this process leaves unfinished goes back to the
        queue. ``on_move(row, job, new)`` hears each move (``new``: "searchable" and/or "ready" when the file just got
        there); ``on_busy(DataDirBusy)`` once when another process holds the data dir without running its queue.
        Returns ``{"files": rows, "generation": live generation, "served": whether another process runs the
        queue}``, a row per file: name, status, message, job_id, doc_id, searchable_s, ready_s (seconds from
        ``started``, a :func:`time.monotonic`; default now), chunks (per level, once searchable)."""
        t0 = time.monotonic() if started is None else started
        items = read_inputs(paths, int(self.ctx.settings.max_file_mb * 2**20))
        named = [(n, d) for n, d in items if isinstance(d, bytes)]
        refused = [(n, d) for n, d in items if isinstance(d, str)]
        queued = enqueue(self.ctx, named, owner, batch=uuid.uuid4().hex, source=source)
        rows = {q.name: _row(q.name, q.status, q.message, q.job) for q in queued}
        rows.update({n: _row(n, "refused", m, None) for n, m in refused})
        ids = [q.job.job_id for q in queued if q.job]
        waiting = bool(ids) and wait != JobState.QUEUED
        said: list = []

        def busy(e: Exception) -> None:
            if not said and on_busy is not None:
                said.append(e)
                on_busy(e)

        mine = self.runner is None
        runner = self.ensure_runner(busy) if waiting else None
        try:
            for current in watch(self.ctx.jobs, ids, wait, every_s=every_s) if waiting else ():
                for job in current:
                    if job is not None:
                        new = _moved(rows[job.name], job, time.monotonic() - t0)
                        if on_move is not None:
                            on_move(rows[job.name], job, new)
                if runner is None and runner_alive(self.ctx.jobs) is None:  # the holder stopped meanwhile: take over
                    runner = self.ensure_runner(busy)
        finally:
            if mine and self.runner is not None:
                self.close()  # a refinement in flight goes back to the queue (resumed by the next runner)
        return self._ingested(rows)

    def _ingested(self, rows: dict) -> dict:
        """The rows of :meth:`ingest` as their jobs are now, with the chunks per level of the live index."""
        for row in rows.values():
            job = self.ctx.jobs.get(row["job_id"]) if row["job_id"] else None
            if job is not None:
                row.update(status=job.state, message=job.error or job.message or "")
        live = self.ctx.catalog.live_generation()
        counts = {r["doc_id"]: r for r in self.ctx.catalog.documents(live.gen)} if live else {}
        for row in rows.values():
            d = counts.get(row["doc_id"])
            row["chunks"] = ([d["n_l0"], d["n_l1"], d["n_l2"]][:live.n_levels] if live and d and d["n_l0"] is not None
                             else None)
        return {"files": list(rows.values()), "generation": live.gen if live else None,
                "served": runner_alive(self.ctx.jobs) is not None}

    # -- the queue ----------------------------------------------------------------------------------------------
    def queue_runner(self) -> dict | None:
        """The heartbeat of the process running the queue (pid, host, command, executor), or None when none does."""
        return runner_alive(self.ctx.jobs)

    def queue_jobs(self, finished: bool = False) -> list:
        """The queue's active jobs (``finished``: every job)."""
        return self.ctx.jobs.jobs(None if finished else ACTIVE)

    def clear_finished_jobs(self) -> int:
        """Remove the finished jobs from the queue's list; how many went."""
        with self.ctx.catalog.transaction() as db:
            return db.execute("DELETE FROM jobs WHERE state IN ('ready','failed','cancelled','duplicate')").rowcount

    def cancel_job(self, ref: str) -> tuple[int, str]:
        """Cancel a job by id, or the active job of a document (id or name): (job id, what happened);
        :class:`~ingest.jobs.state.JobError` (a ValueError) when there is none."""
        if ref.isdigit():
            job_id = int(ref)
        else:
            active = [j for j in self.ctx.jobs.jobs(ACTIVE) if ref in (j.doc_id, j.name)]
            if not active:
                raise JobError(f"no queued or running job for {ref!r}; see `mgrag jobs`")
            job_id = active[-1].job_id
        return job_id, self.ctx.jobs.request_cancel(job_id)

    def run_queue(self, until_idle: bool = False, on_start: Callable[[object], None] | None = None) -> int:
        """Run the queue: with ``queue_url`` (Redis) as a compute worker for the data dir's holder; else this process
        takes the data dir (:class:`core.datalock.DataDirBusy` if another holds it) and runs its queue until
        interrupted or, ``until_idle``, until nothing is left to do (:meth:`ensure_runner`, the server's rule).
        ``on_start(runner)`` is told once it runs."""
        if self.ctx.settings.queue_url:
            return run_worker(self.ctx, burst=until_idle)
        runner = self.ensure_runner()  # DataDirBusy when another process holds the data dir
        assert runner is not None  # (no on_busy: a runner, or that error)
        if on_start is not None:
            on_start(runner)
        try:
            while not (until_idle and runner.idle()):
                time.sleep(1.0)
        finally:
            self.close()
        return 0

    # -- the library --------------------------------------------------------------------------------------------
    def library_states(self) -> tuple[object, list[dict]]:
        """(the live generation or None, every document with its state: :func:`ingest.jobs.queue.document_states`).
        Reads the catalog only, safe beside a running writer."""
        return self.ctx.catalog.live_generation(), queue_states(self.ctx)

    def find_documents(self, refs: list[str] | None) -> list[str] | None:
        """The documents ``refs`` name (id, name or hash prefix), or None for none given; ValueError naming the
        unknown ones."""
        if not refs:
            return None
        ids = [self.ctx.catalog.find_document(r) for r in refs]
        unknown = [r for r, d in zip(refs, ids) if d is None]
        if unknown:
            raise ValueError(f"no document matches {', '.join(map(repr, unknown))}; see `mgrag docs`")
        return ids  # type: ignore[return-value]

    def reingest_library(self, refs: list[str] | None = None, chunker: str | None = None, theta: int | None = None,
                         allow_partial: bool = False, progress: bool = False, reread: str = "auto"):
        """Re-ingest under the data dir's writer lock (:func:`ingest.jobs.rebuild.reingest`): every document
        into a new generation, switched atomically; or, ``refs`` naming documents, only those re-chunked (with
        ``chunker``/``theta`` for them only if given) and the rest copied; ``refs`` empty (``[]``): every document
        copied, chunks and vectors as they are (an index of an earlier version gains its keywords in the store).
        ``progress``: bars on the terminal; ``reread``: which documents re-chunked are read again from their originals
        (``auto``: those an older reader read). The report; ValueError for an unknown document or a refused request."""
        from ingest.jobs.rebuild import reingest

        self.ctx.writer_lock()
        with self._writing("reingest"):
            only = None if refs is None else self.find_documents(refs) if refs else []
            return reingest(self.ctx, chunker, theta, allow_partial=allow_partial, only=only, progress=progress,
                            reread=reread)

    def resume_library(self, allow_partial: bool = False, progress: bool = False):
        """Finish an interrupted re-ingestion under the data dir's writer lock (:func:`ingest.jobs.rebuild.resume`);
        its report, or None when there is none."""
        from ingest.jobs.rebuild import resume

        self.ctx.writer_lock()
        with self._writing("reingest"):
            return resume(self.ctx, allow_partial=allow_partial, progress=progress)

    def delete_document(self, ref: str) -> str:
        """Delete one document (id, name or hash prefix) under the data dir's writer lock, the way the web app does
        (:meth:`_delete`: its evaluations' evidence and conversations' mentions go too); its id."""
        self.ctx.writer_lock()
        return self._delete([ref])[0]

    def document_text(self, ref: str) -> tuple[str, str]:
        """``(name, text)`` of an ingested document (id, name or hash prefix) or, failing that, of a readable file."""
        ctx = self.ctx
        doc_id = ctx.catalog.find_document(ref) if ctx.settings.catalog_path.exists() else None
        if doc_id is not None:
            row = next(r for r in ctx.catalog.documents(None) if r["doc_id"] == doc_id)
            return row["name"], ctx.store.text(row["hash"])
        if Path(ref).is_file():
            doc = load_file(ref, max_bytes=int(ctx.settings.max_file_mb * 2**20))
            return Path(ref).name, doc.text
        raise ValueError(f"{ref}: no ingested document has this id, name or hash prefix (see `mgrag docs`), and it is "
                         "not a readable file")

    def inspect_to(self, ref: str, out: Path, *, theta: int | None = None, question: str | None = None,
                   words: tuple[int, int] | None = None) -> tuple[dict, Path, Path]:
        """The chunk inspector (``app.inspect``) for a document or file (:meth:`document_text`), written to ``out`` as
        ``inspect-<name>.png`` and ``.html``: (its summary, the PNG, the page)."""
        name, text = self.document_text(ref)
        ins = inspect_text(self.ctx, text, name, theta=theta, question=question)
        out.mkdir(parents=True, exist_ok=True)
        stem = "inspect-" + "".join(c if c.isalnum() or c in "-_." else "_" for c in Path(name).stem)[:80]
        png, page = out / f"{stem}.png", out / f"{stem}.html"
        render_png(ins, png, words=words)
        page.write_text(render_html(ins), encoding="utf-8")
        return ins.summary(), png, page

    # -- tools --------------------------------------------------------------------------------------------------
    def train_router_on(self, questions: list[str], out: str, *, lr: float, epochs: int, patience: int, seed: int,
                        progress: bool = False, **options) -> dict:
        """Train the MoG router on question files over the live index (:func:`router.pipeline.train_from_index`,
        ``options``: its similarity, encoder, hidden, labels, inputs) under the data dir's writer lock, saved to
        ``out``; the training report. QuestionsFileError, RouterError or ValueError for a bad request."""
        from router.pipeline import train_from_index
        from router.train import TrainConfig

        self.ctx.writer_lock()
        tc = TrainConfig(lr=lr, max_epochs=epochs, patience=patience, seed=seed)
        return train_from_index(self.ctx, questions, out, train_config=tc, progress=progress, **options)

    def export_index(self, to: str, api_key: str | None = None, *, batch: int = 512, progress: bool = False,
                     client=None):
        """Copy the live generation to the Qdrant server ``to`` (:func:`ingest.store.export.export_live`, resumable)
        under the data dir's writer lock; ``client`` injects a qdrant-client. The export's report; ValueError when
        the index already lives there or the export is refused."""
        self.ctx.writer_lock()
        s = self.ctx.settings
        if s.qdrant_url and s.qdrant_url == to:
            raise ValueError("the index already lives on that server (MGRAG_QDRANT_URL)")
        target = ClientIndex(client or make_client(to, api_key, s.qdrant_path), self.ctx.catalog.live_gen,
                             s.collection_prefix, owns_client=client is None)
        try:
            return export_live(self.ctx.catalog, self.ctx.index, target, state_path(s.data_dir, to), batch=batch,
                               progress=progress)
        finally:
            target.close()


def _row(name: str, status: str, message: str | None, job) -> dict:
    return {"name": name, "status": status, "message": message, "job_id": job.job_id if job else None,
            "doc_id": job.doc_id if job else None, "searchable_s": None, "ready_s": None}


def _moved(row: dict, job, elapsed: float) -> tuple[str, ...]:
    """Record a job's moves in its row of :meth:`CommandsPart.ingest`: which of "searchable", "ready" it just got to."""
    new: tuple[str, ...] = ()
    if job.state in FOUND and row["searchable_s"] is None and job.searchable:
        row["searchable_s"] = round(elapsed, 2)
        new += ("searchable",)
    if job.state == JobState.READY and row["ready_s"] is None:
        row["ready_s"] = round(elapsed, 2)
        new += ("ready",)
    row.update(status=job.state, message=job.error or job.message or "", doc_id=job.doc_id)
    return new
