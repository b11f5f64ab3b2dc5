"""Uploads: the file name and folder checks, the upload cache's cleaning, and the ingestion queue the Chat tab's
upload panel feeds (enqueue, the rows as they move, cancelling). A part of :class:`services.service.AppService` (it uses
``self.ctx``, ``self.upload_root``, ``self.runner``)."""
from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from core.datalock import DataDirBusy
from ingest.jobs.queue import Runner, enqueue, queued_text, reached, runner_alive, wait, watch
from ingest.jobs.state import ACTIVE as ACTIVE
from ingest.jobs.state import ENDED_BADLY, JobError, JobState
from ingest.jobs.state import FOUND as FOUND
from ingest.jobs.state import reading_rest as reading_rest
from ingest.readers.loaders import SUPPORTED, IngestError, clean_name, read_regular_file
from services.base import ADMIN
from services.part import ServicePart

# the doors (ui/, api/) read an upload's rows with these too: ACTIVE (queued or running), FOUND (searchable or
# further), reading_rest (a long PDF's rest being read), JobState (each state) and SUPPORTED (the file types)

log = logging.getLogger("services.service")  # the name it always had (log filters, tests)

_BAD_NAME = re.compile(r"[\x00-\x1f\x7f]")
UPLOAD_MAX_AGE_S = 3600.0  # an upload cache file not submitted within this is removed
UPLOAD_EMPTY_S = 60.0  # an empty file in the upload cache this old is no upload in progress


class UploadRefused(ValueError):
    def __init__(self, name: str, problem: str):
        super().__init__(f"{name}: {problem}")
        self.name, self.problem = name, problem


def check_upload_name(name: str) -> str:
    """The plain file name to store ``name`` under (bidirectional and invisible characters removed), or
    :class:`UploadRefused` for a path-like or odd name."""
    raw = name or ""
    if not _BAD_NAME.search(raw):  # a name with C0 controls is refused below, as before
        raw = clean_name(raw)
    if not raw.strip():
        raise UploadRefused("(unnamed)", "the file has no name")
    if "/" in raw or "\\" in raw or raw in (".", "..") or raw.startswith(".") or _BAD_NAME.search(raw):
        raise UploadRefused(raw, "the file name looks like a path or a hidden file; upload it under a plain name "
                                 "such as notes.md")
    if len(raw) > 255:
        raise UploadRefused(raw[:40] + "…", "the file name is over 255 characters; rename it")
    suffix = Path(raw).suffix.lower()
    if suffix not in SUPPORTED:
        raise UploadRefused(raw, f"unsupported file type {suffix or '(no extension)'!r}; supported: "
                                 f"{', '.join(sorted(SUPPORTED))}")
    return raw


class UploadsPart(ServicePart):
    """Reading, queueing and following uploads."""

    def _read_upload(self, path: Path, name: str) -> bytes:
        """The bytes of an uploaded file, which must lie inside the upload folder once every symlink is resolved."""
        try:
            real = Path(path).resolve(strict=True)
        except (OSError, RuntimeError) as e:
            raise UploadRefused(name, "cannot be read (the upload is gone)") from e
        if not real.is_relative_to(self.upload_root):
            log.warning("refused an upload outside the upload folder %s: %s", self.upload_root, path)
            raise UploadRefused(name, "is not a file uploaded to this server; refused")
        try:
            return read_regular_file(real, int(self.ctx.settings.max_file_mb * 2**20))
        except IngestError as e:
            raise UploadRefused(name, e.problem) from e

    def clean_uploads(self, max_age_s: float = UPLOAD_MAX_AGE_S, empty_after_s: float = UPLOAD_EMPTY_S) -> int:
        """Remove from the upload folder what no upload needs any more (the app calls it on start and on each
        upload): files not written for ``max_age_s`` (uploaded but never submitted, or cut off by a stop), empty
        files not written for ``empty_after_s`` (Gradio's File component leaves one per upload; an upload in
        progress writes to its file), and then-empty folders. Only when the upload folder is a data dir's own cache (the
        default): a ``GRADIO_TEMP_DIR`` elsewhere may hold other files. Returns how many files went."""
        root = self.upload_root
        # a data dir's own upload cache (data_dir/tmp/gradio: this one's, or another MGRAG data dir's when two apps
        # share a process and Gradio's one upload folder); never a GRADIO_TEMP_DIR the user pointed elsewhere
        ours = root.is_relative_to(self.ctx.settings.data_dir.resolve()) or (
            root.name == "gradio" and root.parent.name == "tmp" and (root.parent.parent / "catalog.sqlite").is_file())
        if not root.is_dir() or not ours:
            return 0
        now, removed = time.time(), 0
        for folder, _, files in os.walk(root, topdown=False):
            emptied = False
            for name in files:
                p = Path(folder) / name
                try:
                    st = p.lstat()
                    age = now - st.st_mtime
                    if age >= max_age_s or (st.st_size == 0 and age >= empty_after_s):
                        p.unlink()
                        removed += 1
                        emptied = True
                except OSError:
                    continue
            d = Path(folder)
            try:  # an empty folder goes when this emptied it or it is old (a fresh one may be about to be filled)
                if d != root and (emptied or now - d.stat().st_mtime >= empty_after_s):
                    d.rmdir()  # only an empty one (else OSError)
            except OSError:
                continue
        return removed

    def ensure_runner(self, on_busy: Callable[[Exception], None] | None = None):
        """The queue's runner in this process, started once (it resumes what a stopped process left queued). The one
        rule of who runs a data dir's queue, for the server and the command line alike: the process that holds the
        data dir's writer lock (``mgrag serve`` holds it from its start; ``mgrag ingest`` takes it when it is free,
        and takes over when the holder stops). While another process holds it: with ``on_busy`` (a command waiting
        for its files) None, as that one runs the queue or will (``on_busy(DataDirBusy)`` hears it when no runner
        beats there now: the holder is a command that runs none); without, :class:`~core.datalock.DataDirBusy` (a
        server must hold its data dir, and says so at once when it cannot)."""
        with self._runner_lock:
            if self.runner is None:  # with MGRAG_QUEUE_URL, its jobs are computed by `mgrag worker` processes
                try:
                    self.ctx.writer_lock()
                except DataDirBusy as e:
                    if on_busy is None:
                        raise
                    if runner_alive(self.ctx.jobs) is None:
                        on_busy(e)
                    return None
                self.runner = Runner(self.ctx).start()
            return self.runner

    def close(self, context: bool = False) -> None:
        """Stop the queue's runner (a refinement in flight goes back to the queue; the next start resumes it);
        ``context``: close the context's stores too (a service that made its context:
        :func:`services.service.start_service`)."""
        with self._runner_lock:
            if self.runner is not None:
                self.runner.stop()
                self.runner = None
        if context:
            self.ctx.close()

    def enqueue_files(self, paths: list[str | Path], names: list[str] | None = None, owner: str | None = None
                      ) -> tuple[list[dict], list[int]]:
        """Queue uploaded files (in the upload folder: Gradio's upload cache) for ``owner`` (a browser or user; None:
        the shared library) and return at once: one row per file (refused and duplicate files say why) and the ids
        of the jobs made. The queue's runner extracts them in a child process with limits, outside the write lock,
        so one slow or hostile file holds up no one else's upload."""
        rows: dict[int, dict] = {}
        named: list[tuple[int, str, bytes]] = []
        for i, p in enumerate(paths):
            p = Path(p)
            name = names[i] if names else p.name
            try:
                name = check_upload_name(name)
                named.append((i, name, self._read_upload(p, name)))
            except UploadRefused as e:
                rows[i] = {"name": e.name, "status": "refused", "message": e.problem, "chunks": "", "job_id": None}
        runner = self.ensure_runner() if named else None
        queued = enqueue(self.ctx, [(n, d) for _, n, d in named], owner, source="upload")
        for (i, _, _), q in zip(named, queued):
            rows[i] = {"name": q.name, "status": q.status, "message": q.message, "chunks": "",
                       "job_id": q.job.job_id if q.job else None}
        if runner is not None:
            runner.wake()
        out = [rows[i] for i in sorted(rows)]
        return out, [r["job_id"] for r in out if r["job_id"] is not None]

    def upload_rows(self, rows: list[dict]) -> list[dict]:
        """``rows`` of :meth:`enqueue_files` with their jobs' states now: the state, what is being done (with the
        progress and the time left), the chunks per level once the document is searchable."""
        live = self.ctx.catalog.live_generation()
        out = []
        for r in rows:
            job = self.ctx.jobs.get(r["job_id"]) if r.get("job_id") else None
            if job is None:
                out.append(dict(r))
                continue
            chunks = ""
            if job.searchable and live is not None:
                d = self.ctx.catalog.indexed_doc(live.gen, job.doc_id)
                if d is not None:
                    counts = self.ctx.catalog.chunk_counts_of(live.gen, job.doc_id)
                    chunks = "/".join(str(counts.get(lv, 0)) for lv in range(live.n_levels))
            message = job.describe() if job.state != JobState.READY else (job.message or "")
            if job.state == "queued":
                message = queued_text(self.ctx, job)
            shown = (self.ctx.catalog.label_of(job.doc_id, job.name, job.owner) if job.doc_id != job.name
                     else job.name)
            stored = f"stored as {job.doc_id!r}"
            if shown != job.name and job.state not in ENDED_BADLY and stored not in message:
                message = "; ".join(x for x in (message, stored) if x and x != job.state)
            out.append({**r, "status": job.state, "message": message, "chunks": chunks})
        return out

    def ingest_files(self, paths: list[str | Path], names: list[str] | None = None, owner: str | None = None,
                     until: str = JobState.SEARCHABLE, timeout_s: float = 3600.0) -> list[dict]:
        """:meth:`enqueue_files`, then wait until every file is searchable (``until="ready"``: refined too) or ended;
        the rows as they are then (the API's upload and the tests use it; the Chat tab shows the rows as they move)."""
        rows, ids = self.enqueue_files(paths, names, owner)
        if ids:
            wait(self.ctx.jobs, ids, until, timeout_s=timeout_s)
        return self.upload_rows(rows)

    def watch_searchable(self, job_ids: list[int], poll_s: float = 0.5) -> Iterator[int]:
        """How many of the jobs ``job_ids`` are searchable (or ended), again whenever one of them moves, until every
        one is (:func:`ingest.jobs.queue.watch`): the Chat tab's upload panel shows each file as it gets there."""
        for jobs in watch(self.ctx.jobs, job_ids, JobState.SEARCHABLE, poll_s=poll_s) if job_ids else ():
            yield sum(reached(j, JobState.SEARCHABLE) for j in jobs)

    def all_searchable(self, job_ids: list[int]) -> bool:
        """Whether every job of ``job_ids`` is searchable or has ended (:func:`ingest.jobs.queue.reached`)."""
        return all(reached(self.ctx.jobs.get(i), JobState.SEARCHABLE) for i in job_ids)

    def upload_label(self, row: dict, owner) -> str | None:
        """The name ``owner`` knows the document of an upload's row (:meth:`enqueue_files`) by (the API's id of it:
        a private upload keeps its file's name even when another user's file of that name gave it an internal id);
        None for a file that made no job."""
        job = self.ctx.jobs.get(row["job_id"]) if row.get("job_id") else None
        return self.ctx.catalog.label_of(job.doc_id, job.name, owner) if job else None

    def cancel_jobs(self, owner, job_ids: list[int]) -> list[str]:
        """Cancel queued or running ingestion jobs: ``owner``'s own (the admin: any). What happened, per job."""
        out = []
        for i in job_ids:
            job = self.ctx.jobs.get(int(i))
            if job is None or (owner is not ADMIN and job.owner != owner):
                out.append(f"job {i}: not one of your uploads")
                continue
            try:
                out.append(f"{job.name}: {self.ctx.jobs.request_cancel(job.job_id)}")
            except JobError as e:
                out.append(f"{job.name}: {e}")
        return out
