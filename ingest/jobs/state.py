"""The durable ingestion queue: one row per file to ingest, in the catalog's own database (table ``jobs``).

A job goes through

    queued ─▶ extracting ─▶ searchable ─▶ refining ─▶ ready
                  │              │             │
                  └──────────────┴─────────────┴──▶ failed · cancelled        (duplicate: nothing to do)

* **queued**: the original bytes are in the spool (``DATA_DIR/spool``), waiting for the first pass;
* **extracting**: the first pass runs: text extraction (PDFs page range by page range), chunking with MG (no LM),
  embedding, writing. Its commit makes the document searchable (or ready, when there is one phase) in the same
  catalog transaction that records the chunks;
* **searchable**: the first-pass chunks are live and cited; the refinement (the configured LM chunker) waits;
* **refining**: the LM pass runs; its commit swaps the document's chunks atomically and marks the job ready.

Rows are the truth a restart resumes from. The process that holds the data dir's writer lock is the only one that
runs jobs (:class:`ingest.jobs.queue.Runner`), so on its start every row still ``extracting`` or ``refining`` belongs to
a process that died: it goes back to ``queued`` / ``searchable`` with one more attempt, or to ``failed`` after
``max_attempts`` (a file that kills the process every time must not kill it forever). Any other process (``mgrag
ingest`` beside a running ``mgrag serve``) may add rows and request cancellations: SQLite serialises them.
"""
from __future__ import annotations

import json
import logging
import os
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, fields
from enum import StrEnum
from pathlib import Path

from ingest.jobs.work import expected_s
from ingest.readers.loaders import pdf_pages_hint
from ingest.readers.sandbox import public_problem

log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    job_id INTEGER PRIMARY KEY AUTOINCREMENT, doc_id TEXT NOT NULL, name TEXT NOT NULL, owner TEXT,
    hash TEXT NOT NULL, size INTEGER, spool TEXT, state TEXT NOT NULL, stage TEXT, progress REAL, eta_s REAL,
    words INTEGER, attempts INTEGER NOT NULL DEFAULT 0, error TEXT, failed_in TEXT,
    cancel INTEGER NOT NULL DEFAULT 0, batch TEXT, source TEXT, two_phase INTEGER NOT NULL DEFAULT 1,
    claimed_by TEXT, heartbeat REAL, message TEXT, created REAL, started REAL, searchable_at REAL,
    ready_at REAL, finished REAL, updated REAL, claimed REAL, pages INTEGER, target_gen INTEGER, plan TEXT);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state, job_id);
CREATE INDEX IF NOT EXISTS jobs_doc ON jobs(doc_id, job_id);
CREATE INDEX IF NOT EXISTS jobs_batch ON jobs(batch);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
"""



class JobState(StrEnum):
    """A job's state (the drawing above); the catalog stores its value, and a member equals its value."""

    QUEUED = "queued"
    EXTRACTING = "extracting"
    SEARCHABLE = "searchable"
    REFINING = "refining"
    READY = "ready"
    FAILED = "failed"
    CANCELLED = "cancelled"
    DUPLICATE = "duplicate"


STATES = tuple(JobState)
ACTIVE = (JobState.QUEUED, JobState.EXTRACTING, JobState.SEARCHABLE, JobState.REFINING)  # work left to do
RUNNING = (JobState.EXTRACTING, JobState.REFINING)  # a worker holds it
DONE = (JobState.READY, JobState.FAILED, JobState.CANCELLED, JobState.DUPLICATE)  # nothing left to do
FOUND = (JobState.SEARCHABLE, JobState.REFINING, JobState.READY)  # its content can be found
FIRST_PASS = (JobState.QUEUED, JobState.EXTRACTING)  # its first pass is not committed yet
ENDED_BADLY = (JobState.FAILED, JobState.CANCELLED)
IN_FIRST_PASS = "state IN ({})".format(",".join(f"'{s}'" for s in FIRST_PASS))  # SQL: FIRST_PASS
LANES = {"first": FIRST_PASS, "refine": (JobState.SEARCHABLE, JobState.REFINING)}  # lane: (waiting, running)
SHORT_S = 30.0  # a job expected to take less may run beside its owner's long one (JobStore.claim)


class JobError(ValueError):
    """A request about jobs that cannot be met (unknown job, nothing to cancel): the message says why."""


@dataclass
class Job:
    job_id: int
    doc_id: str
    name: str
    owner: str | None
    hash: str
    size: int | None
    spool: str | None
    state: JobState
    stage: str | None
    progress: float | None
    eta_s: float | None
    words: int | None
    attempts: int
    error: str | None
    failed_in: str | None
    cancel: int
    batch: str | None
    source: str | None
    two_phase: int
    claimed_by: str | None
    heartbeat: float | None
    message: str | None
    created: float | None
    started: float | None
    searchable_at: float | None
    ready_at: float | None
    finished: float | None
    updated: float | None
    claimed: float | None  # when a lane last took it
    pages: int | None = None  # a PDF's pages as its page tree states them (for estimates before it is read)
    target_gen: int | None = None  # a re-ingestion's job: the generation being built it writes into (None: the live)
    plan: str | None = None  # a re-ingestion's job: {"own": the document's chunking, "reread": auto|all|none} (JSON)

    def __post_init__(self) -> None:
        self.state = JobState(self.state)

    @property
    def searchable(self) -> bool:
        """Whether this job's content can be asked about (its first pass is committed)."""
        return self.searchable_at is not None

    def to_dict(self) -> dict:
        return dict(self.__dict__)

    def describe(self) -> str:
        """One line for people: ``refining 43% · about 2 min left``, ``failed: <reason>``."""
        return describe(self.state, self.stage, self.progress, self.eta_s, self.error, self.failed_in,
                        self.message)


_COLS = [f.name for f in fields(Job)]


def eta_text(eta_s: float | None) -> str:
    if eta_s is None:
        return ""
    if eta_s >= 5400:
        return f"about {eta_s / 3600:.1f} h left"
    if eta_s >= 90:
        return f"about {eta_s / 60:.0f} min left"
    return f"about {max(eta_s, 1):.0f} s left"


def pages_read(read: dict | None) -> str:
    """What a long PDF's job says while the rest of it is read (its layout's ``read``): ``searchable (pages 1–40 of
    190)``; "" when it is read whole."""
    return f"searchable (pages 1–{read['pages']} of {read['of']})" if read else ""


def read_in_full(layout: dict | None) -> str:
    """What a long PDF's job says once every page of it is read (range by range, or found whole in the document
    store): ``read in full (190 pages)``."""
    return f"read in full ({len((layout or {}).get('pages') or ())} pages)"


def reading_rest(message: str | None) -> bool:
    """Whether a job's message is :func:`pages_read`'s: its document is searchable in its first pages only."""
    return bool(message) and str(message).startswith("searchable (pages ")


def describe(state: str, stage: str | None = None, progress: float | None = None, eta_s: float | None = None,
             error: str | None = None, failed_in: str | None = None, message: str | None = None) -> str:
    """What a document's state means, in a few words.

    >>> describe("refining", "LM pass", 0.431, 130)
    'refining 43% · LM pass · about 2 min left'
    >>> describe("extracting", "embedding", 0.39, 44)  # the first pass is named by its step once past the reading
    'embedding 39% · about 44 s left'
    >>> describe("extracting", "reading pages 4 of 40", 0.05)
    'extracting 5% · reading pages 4 of 40'
    >>> describe("refining", "reading pages 50 of 190", 0.25, message="searchable (pages 1–40 of 190)")
    'searchable (pages 1–40 of 190) · reading pages 50 of 190'
    >>> describe("searchable", message="searchable (pages 1–40 of 190)")
    'searchable (pages 1–40 of 190) · the rest queued'
    >>> describe("failed", error="is not a readable PDF", failed_in="refine")
    'failed (refinement; the first pass stays searchable): is not a readable PDF'
    """
    if state in RUNNING:
        if state == JobState.EXTRACTING and stage and not stage.startswith("reading"):
            state, stage = stage, None  # chunking, embedding, writing: not "extracting … · embedding"
        if state == JobState.REFINING and reading_rest(message):  # a long PDF's rest
            step = stage or "reading"
            if progress is not None and not step.startswith("reading"):
                step = f"{step} {progress:.0%}"
            return " · ".join(x for x in (message, step, eta_text(eta_s)) if x)
        parts = [f"{state} {progress:.0%}" if progress is not None else state]
        if stage:
            parts.append(stage)
        if eta_s is not None:
            parts.append(eta_text(eta_s))
        return " · ".join(parts)
    if state == "failed":
        where = " (refinement; the first pass stays searchable)" if failed_in == "refine" else ""
        return f"failed{where}: {public_problem(error or '') or 'unknown error'}"
    if state == "cancelled":
        return "cancelled" + (" (the first pass stays searchable)" if failed_in == "refine" else "")
    if state == "searchable":  # a long PDF's first pages: its message says which
        return f"{message} · the rest queued" if reading_rest(message) else \
            "searchable · refinement queued"
    return state + (f" · {message}" if message else "")


class JobStore:
    """The ``jobs`` table on the catalog's connection (its lock and transactions), and the spool of originals."""

    def __init__(self, catalog, spool_dir: Path, max_attempts: int = 3):
        self.catalog = catalog
        self.spool_dir = Path(spool_dir)
        self.max_attempts = max_attempts
        with catalog._lock:
            catalog.db.executescript(SCHEMA)
            cols = {r[1] for r in catalog.db.execute("PRAGMA table_info(jobs)")}
            for col, kind in (("claimed", "REAL"), ("pages", "INTEGER"), ("target_gen", "INTEGER"), ("plan", "TEXT")):
                if col not in cols:
                    catalog.db.execute(f"ALTER TABLE jobs ADD COLUMN {col} {kind}")

    # -- reading --------------------------------------------------------------------------------------------------
    def _rows(self, where: str = "", args: tuple = (), order: str = "job_id") -> list[Job]:
        with self.catalog._lock:
            rows = self.catalog.db.execute(f"SELECT {', '.join(_COLS)} FROM jobs {where} ORDER BY {order}",
                                           args).fetchall()
        jobs = [Job(*r) for r in rows]
        for j in jobs:  # rows written before errors were made public (one sentence, no path) read as if they were
            if j.error:
                j.error = public_problem(j.error)
        return jobs

    def get(self, job_id: int) -> Job | None:
        rows = self._rows("WHERE job_id=?", (job_id,))
        return rows[0] if rows else None

    def jobs(self, states: Iterable[str] | None = None, batch: str | None = None, owner: str | None = None,
             all_owners: bool = True, limit: int | None = None) -> list[Job]:
        """Jobs, oldest first; ``states`` and ``batch`` filter; ``all_owners=False`` keeps ``owner``'s."""
        cond, args = [], []
        if states is not None:
            states = list(states)
            cond.append(f"state IN ({','.join('?' * len(states))})")
            args += states
        if batch is not None:
            cond.append("batch=?")
            args.append(batch)
        if not all_owners:
            cond.append("owner IS ?")
            args.append(owner)
        where = ("WHERE " + " AND ".join(cond)) if cond else ""
        rows = self._rows(where, tuple(args))
        return rows[-limit:] if limit else rows

    def latest_by_doc(self) -> dict[str, Job]:
        """Each document's most recent job (the one its state comes from); a re-ingestion's jobs build another
        generation and say nothing of the live document's state."""
        out: dict[str, Job] = {}
        for j in self._rows("WHERE target_gen IS NULL"):
            out[j.doc_id] = j
        return out

    def counts(self) -> dict[str, int]:
        with self.catalog._lock:
            return dict(self.catalog.db.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall())

    def first_pass_pending(self) -> bool:
        """Whether any file waits for, or is in, its first pass."""
        with self.catalog._lock:
            return self.catalog.db.execute(f"SELECT 1 FROM jobs WHERE {IN_FIRST_PASS} LIMIT 1"
                                           ).fetchone() is not None

    # -- scheduling -----------------------------------------------------------------------------------------------
    def expected(self, lane: str, name: str, size: int | None, words: int | None = None,
                 pages: int | None = None) -> float:
        """Seconds a job is expected to take, at the rates measured on this machine
        (:func:`ingest.jobs.work.expected_s`)."""
        return expected_s(self.get_meta("rates", {}), lane, name, size, words, pages)

    def _waiting(self, db, lane: str, expected=None) -> list[tuple]:
        """The jobs waiting in ``lane`` in the order the lane takes them when no cap holds one back: owners take turns
        (the owner served least recently first), and each owner's files go by expected finish (queued time + expected
        seconds), so a small file never waits behind a long one queued just before it, and a long one is not
        overtaken forever. Rows: ``(job_id, owner, expected seconds)``."""
        rows = db.execute("SELECT job_id, owner, name, size, words, pages, created FROM jobs WHERE state=? AND "
                          "cancel=0 AND target_gen IS NULL", (LANES[lane][0],)).fetchall()
        served = dict(db.execute("SELECT owner, MAX(claimed) FROM jobs GROUP BY owner").fetchall())
        rates = self.get_meta("rates", {}) if expected is None else None
        est = expected or (lambda lane_, name, size, words, pages: expected_s(rates, lane_, name, size, words, pages))
        queues: dict = {}
        for job_id, owner, name, size, words, pages, created in rows:
            e = est(lane, name, size, words, pages)
            queues.setdefault(owner, []).append(((created or 0.0) + e, job_id, owner, e))
        for q in queues.values():
            q.sort()
        last = {o: (served.get(o) is not None, served.get(o) or 0.0, q[0][1]) for o, q in queues.items()}
        out, turn = [], time.time()
        while queues:
            owner = min(queues, key=lambda o: last[o])
            _, job_id, _, e = queues[owner].pop(0)
            out.append((job_id, owner, e))
            turn += 1.0
            if queues[owner]:
                last[owner] = (True, turn, queues[owner][0][1])
            else:
                del queues[owner]
        return out

    def position(self, job: Job) -> int:
        """How many jobs the lane will take before ``job`` if nothing else is queued meanwhile."""
        lane = "first" if job.state == JobState.QUEUED else "refine"
        with self.catalog._lock:
            order = self._waiting(self.catalog.db, lane)
        ids = [j for j, _, _ in order]
        return ids.index(job.job_id) if job.job_id in ids else len(ids)

    def starts_in(self, job: Job, workers: int, *, owner_cap: int | None = None,
                  range_pages: int | None = None) -> float | None:
        """About how many seconds until ``job`` starts: when the work ahead of it is done, at the measured rates.
        None: it is not waiting.

        The lane's ``workers`` are followed as :meth:`claim` fills them: each running job holds its worker for its
        time left (its row's "about N s left"; a job that has not reported yet: its expected seconds less its time so
        far); whenever a worker frees, it takes the first job of :meth:`_waiting`'s order that its owner may run,
        for that job's expected seconds; ``job`` starts when a worker takes it. ``owner_cap``
        (:meth:`ingest.jobs.queue.Runner.owner_cap`): the most jobs of one user running at once, so that a user's
        own files queue on the workers they may use (one of two by default), not on all of them (:meth:`claim`'s
        one short file more beside an owner's long ones is not followed: for it the estimate errs late).

        Only the work that must finish before it counts: ``range_pages``, a first pass that reads a PDF's first
        range of that many pages only (a job of two phases: the rest waits in the refinement lane, which yields to
        first passes), counts those pages, not the whole file."""
        lane = "first" if job.state == JobState.QUEUED else "refine" if job.state == JobState.SEARCHABLE else None
        if lane is None:
            return None
        with self.catalog._lock:
            db = self.catalog.db
            order = self._waiting(db, lane)
            rows = {r[0]: r[1:] for r in db.execute(
                "SELECT job_id, name, size, words, pages, two_phase FROM jobs WHERE state=?", (LANES[lane][0],))}
            running = db.execute("SELECT owner, eta_s, name, size, words, pages, two_phase, started FROM jobs "
                                 "WHERE state=?", (LANES[lane][1],)).fetchall()
        rates = self.get_meta("rates", {})

        def work(name, size, words, pages, two_phase) -> float:  # expected seconds of what the lane does of it
            rng = range_pages if lane == "first" and two_phase else None
            return expected_s(rates, lane, name, size, words, pages, rng)

        now = time.time()
        lanes = sorted((eta if eta is not None else max(0.0, work(*r) - (now - (st or now))), owner)
                       for owner, eta, *r, st in running)[:max(1, workers)]  # (frees in, running whose)
        lanes += [(0.0, None)] * (max(1, workers) - len(lanes))
        pending = list(order)
        while pending:
            lanes.sort(key=lambda x: x[0])
            t = lanes[0][0]
            busy = [o for f, o in lanes[1:] if f > t]  # whose jobs still run when this worker frees
            pick = next((p for p in pending if p[1] is None or not owner_cap or busy.count(p[1]) < owner_cap), None)
            if pick is None:  # every waiting owner is at its cap: this worker idles until another frees
                lanes[0] = (min(f for f, _ in lanes[1:] if f > t), None)
                continue
            if pick[0] == job.job_id:
                return t
            pending.remove(pick)
            lanes[0] = (t + work(*rows[pick[0]]), pick[1])
        return None

    # -- adding ---------------------------------------------------------------------------------------------------
    def spool_path(self, job: Job) -> Path | None:
        return self.spool_dir / job.spool if job.spool else None

    def add(self, name: str, data: bytes, h: str, owner: str | None, *, batch: str | None = None,
            source: str = "cli", two_phase: bool = True) -> tuple[Job | None, str]:
        """Queue ``data`` under ``name`` for ``owner``. Returns ``(job, "")``, or ``(None, why)`` when there is nothing
        to do: the same content is already in the owner's view of the index, or already queued."""
        self.spool_dir.mkdir(parents=True, exist_ok=True)
        spool = f"{uuid.uuid4().hex}.bin"
        tmp = self.spool_dir / f"{spool}.tmp"
        tmp.write_bytes(data)
        os.replace(tmp, self.spool_dir / spool)  # written before the row names it: a crash leaves an orphan file
        cat = self.catalog
        now = time.time()
        try:
            with cat.transaction() as db:
                live = cat.live_gen()
                dup = cat.doc_by_hash(h, live, owner) if live is not None else None
                if dup is not None:
                    (self.spool_dir / spool).unlink(missing_ok=True)
                    return None, ("unchanged; skipped" if dup == name else f"same content as {dup!r}; skipped")
                queued = db.execute(
                    f"SELECT job_id, doc_id FROM jobs WHERE hash=? AND owner IS ? AND {IN_FIRST_PASS}",
                    (h, owner)).fetchone()
                if queued is not None:
                    (self.spool_dir / spool).unlink(missing_ok=True)
                    return None, f"already queued as job {queued[0]} ({queued[1]}); skipped"
                doc_id = self._allocate(db, name, owner)
                pages = pdf_pages_hint(data) if name.lower().endswith(".pdf") else None
                cur = db.execute(
                    "INSERT INTO jobs (doc_id, name, owner, hash, size, spool, state, attempts, cancel, batch, "
                    "source, two_phase, created, updated, pages) VALUES (?,?,?,?,?,?,'queued',0,0,?,?,?,?,?,?)",
                    (doc_id, name, owner, h, len(data), spool, batch, source, int(two_phase), now, now, pages))
                job_id = int(cur.lastrowid)
        except BaseException:
            (self.spool_dir / spool).unlink(missing_ok=True)
            raise
        return self.get(job_id), ""

    def add_rebuild(self, row: dict, gen: int, plan: dict, batch: str) -> Job:
        """Queue one document of a re-ingestion (``row``: its catalog row) to be cut again into generation ``gen``,
        which is being built: a job waiting where a refinement waits, but taken only by that re-ingestion
        (:meth:`claim_job`; the lanes take jobs with no ``target_gen``)."""
        now = time.time()
        with self.catalog.transaction() as db:
            cur = db.execute(
                "INSERT INTO jobs (doc_id, name, owner, hash, size, state, attempts, cancel, batch, source, two_phase, "
                "created, updated, target_gen, plan) VALUES (?,?,?,?,?,'searchable',0,0,?,'reingest',0,?,?,?,?)",
                (row["doc_id"], row["name"], row.get("owner"), row["hash"], row.get("size"), batch, now, now, gen,
                 json.dumps(plan)))
            job_id = int(cur.lastrowid)
        job = self.get(job_id)
        assert job is not None
        return job

    def rewait(self, job_id: int) -> None:
        """A re-ingestion's job that its stopped process left running, failed or cancelled waits again, attempts
        reset, for the resumed re-ingestion to take (:meth:`claim_job`)."""
        with self.catalog.transaction() as db:
            db.execute("UPDATE jobs SET state='searchable', attempts=0, cancel=0, error=NULL, claimed_by=NULL, "
                       "stage=NULL, progress=0, eta_s=NULL, finished=NULL, updated=? WHERE job_id=? AND "
                       "target_gen IS NOT NULL", (time.time(), job_id))

    def claim_job(self, job_id: int, worker: str) -> Job | None:
        """Take one waiting job by its id (a re-ingestion takes its own); None when it is not waiting."""
        now = time.time()
        with self.catalog.transaction() as db:
            n = db.execute("UPDATE jobs SET state=CASE state WHEN 'queued' THEN 'extracting' ELSE 'refining' END, "
                           "claimed_by=?, heartbeat=?, started=COALESCE(started, ?), claimed=?, stage='starting', "
                           "progress=0, eta_s=NULL, updated=? WHERE job_id=? AND state IN ('queued', 'searchable') "
                           "AND cancel=0", (worker, now, now, now, now, job_id)).rowcount
        return self.get(job_id) if n else None

    def _allocate(self, db, name: str, owner: str | None) -> str:
        """The document id for ``name`` by ``owner`` (``Catalog.allocate_doc_id``), also keeping clear of ids that
        queued jobs of other owners hold."""
        def free(cand: str) -> bool:
            exists, current = self.catalog.owner_of(cand)
            if exists and current != owner:
                return False
            other = db.execute(f"SELECT 1 FROM jobs WHERE doc_id=? AND owner IS NOT ? AND {IN_FIRST_PASS} LIMIT 1",
                               (cand, owner)).fetchone()
            return other is None

        if free(name):
            return name
        p = Path(name)
        stem, suffix = (name[: -len(p.suffix)] if p.suffix else name), p.suffix
        n = 2
        while not free(f"{stem} ({n}){suffix}"):
            n += 1
        return f"{stem} ({n}){suffix}"

    # -- running --------------------------------------------------------------------------------------------------
    def claim(self, lane: str, worker: str, owner_cap: int | None = None, expected=None) -> Job | None:
        """The next job waiting in ``lane`` ("first" or "refine"), now marked running by ``worker``, in the order of
        :meth:`_waiting` (owners take turns, so one user's hundred files do not hold up another's one; each owner's
        shortest expected finish first). ``owner_cap``: the most jobs one owner may have running in the lane (the
        shared library's, queued by the admin or the CLI, excepted), so a user's slow files never hold every worker
        and another user's upload starts at once; beyond it, one more that is expected to be short
        (:data:`SHORT_S`) while all the owner's running ones are long, so their small file never waits behind their
        big one. ``expected(lane, name, size, words, pages)``: seconds a job is expected to take (default: the measured
        rates)."""
        waiting, running = LANES[lane]
        now = time.time()
        with self.catalog.transaction() as db:
            order = self._waiting(db, lane, expected)
            if not order:
                return None
            if expected is None:  # the measured rates read once, not once per running job
                rates = self.get_meta("rates", {})

                def est(lane_, name, size, words, pages):
                    return expected_s(rates, lane_, name, size, words, pages)
            else:
                est = expected
            busy: dict = {}
            for owner, name, size, words, pages in db.execute("SELECT owner, name, size, words, pages FROM jobs "
                                                              "WHERE state=?", (running,)).fetchall():
                n, short = busy.get(owner, (0, 0))
                busy[owner] = (n + 1, short + (est(lane, name, size, words, pages) < SHORT_S))
            pick = None
            for job_id, owner, e in order:
                n, short = busy.get(owner, (0, 0))
                if (not owner_cap or owner is None or n < owner_cap
                        or (e < SHORT_S and short == 0 and n < owner_cap + 1)):
                    pick = job_id
                    break
            if pick is None:
                return None
            db.execute("UPDATE jobs SET state=?, claimed_by=?, heartbeat=?, started=COALESCE(started, ?), claimed=?, "
                       "stage=?, progress=0, eta_s=NULL, updated=?, message=CASE WHEN message LIKE 'waiting for the "
                       "queue%' THEN NULL ELSE message END WHERE job_id=?",
                       (running, worker, now, now, now, "starting", now, pick))
        return self.get(pick)

    def report(self, job_id: int, stage: str, progress: float | None, eta_s: float | None,
               words: int | None = None) -> bool:
        """Record what a running job is doing; returns whether a cancellation was requested."""
        now = time.time()
        with self.catalog._lock:
            db = self.catalog.db
            db.execute("UPDATE jobs SET stage=?, progress=?, eta_s=?, words=COALESCE(?, words), heartbeat=?, "
                       "updated=? WHERE job_id=?", (stage, progress, eta_s, words, now, now, job_id))
            row = db.execute("SELECT cancel FROM jobs WHERE job_id=?", (job_id,)).fetchone()
        return bool(row and row[0])

    def cancel_requested(self, job_id: int) -> bool:
        with self.catalog._lock:
            row = self.catalog.db.execute("SELECT cancel FROM jobs WHERE job_id=?", (job_id,)).fetchone()
        return bool(row and row[0])

    def first_done_sql(self, db, job_id: int, *, state: str, words: int | None, message: str = "") -> None:
        """Inside the catalog transaction that records the first pass: the job is searchable (two phases) or ready
        (one), and its spool file is no longer needed (the original is in the document store)."""
        now = time.time()
        db.execute("UPDATE jobs SET state=?, stage=NULL, progress=NULL, eta_s=NULL, words=?, spool=NULL, attempts=0, "
                   "claimed_by=NULL, message=?, searchable_at=?, ready_at=?, finished=?, updated=? WHERE job_id=?",
                   (state, words, message or None, now, now if state == JobState.READY else None,
                    now if state == JobState.READY else None, now, job_id))

    def message_sql(self, db, job_id: int, message: str) -> None:
        """Inside a catalog transaction that commits more of a job's document (a long PDF's next pages)."""
        db.execute("UPDATE jobs SET message=?, updated=? WHERE job_id=?", (message, time.time(), job_id))

    def ready_sql(self, db, job_id: int, message: str = "") -> None:
        """Inside the catalog transaction that swaps in the refined chunks."""
        now = time.time()
        db.execute("UPDATE jobs SET state='ready', stage=NULL, progress=NULL, eta_s=NULL, claimed_by=NULL, "
                   "message=COALESCE(?, message), ready_at=?, finished=?, updated=? WHERE job_id=?",
                   (message or None, now, now, now, job_id))

    def finish(self, job_id: int, state: str, *, error: str | None = None, message: str | None = None) -> None:
        """End a job outside any commit: ``ready`` (nothing left to refine), ``failed``, ``cancelled`` or
        ``duplicate``; the spool file goes."""
        job = self.get(job_id)
        if job is None:
            return
        error = public_problem(error) if error else error  # one sentence, no traceback, no path of this machine
        now = time.time()
        failed_in = ("refine" if job.searchable else "first") if state in ENDED_BADLY else None
        with self.catalog.transaction() as db:
            db.execute("UPDATE jobs SET state=?, error=?, failed_in=?, message=COALESCE(?, message), stage=NULL, "
                       "progress=NULL, eta_s=NULL, claimed_by=NULL, spool=NULL, finished=?, "
                       "ready_at=CASE WHEN ?='ready' THEN ? ELSE ready_at END, updated=? WHERE job_id=?",
                       (state, error, failed_in, message, now, state, now, now, job_id))
        self._drop_spool(job)

    def retry_or_fail(self, job: Job, error: str) -> str:
        """A running job met an unexpected error (not a problem of the file): back to its lane with one more
        attempt, or failed after ``max_attempts``. Returns the new state."""
        attempts = job.attempts + 1
        error = public_problem(error)
        if attempts >= self.max_attempts:
            plural = "s" if attempts != 1 else ""
            self.finish(job.job_id, JobState.FAILED, error=f"{error} (gave up after {attempts} attempt{plural})")
            return JobState.FAILED
        back = JobState.SEARCHABLE if job.state == JobState.REFINING else JobState.QUEUED
        now = time.time()
        with self.catalog.transaction() as db:
            db.execute("UPDATE jobs SET state=?, attempts=?, error=?, stage=NULL, progress=NULL, eta_s=NULL, "
                       "claimed_by=NULL, updated=? WHERE job_id=?", (back, attempts, error, now, job.job_id))
        return back

    def release(self, job: Job, message: str | None = None) -> None:
        """Give a running job back to its lane unchanged (the runner is stopping, or the queue's Redis does not
        answer; not an attempt); ``message`` says why it waits."""
        back = JobState.SEARCHABLE if job.state == JobState.REFINING else JobState.QUEUED
        with self.catalog.transaction() as db:
            db.execute("UPDATE jobs SET state=?, stage=NULL, progress=NULL, eta_s=NULL, claimed_by=NULL, message=?, "
                       "updated=? WHERE job_id=? AND state=?",
                       (back, message, time.time(), job.job_id, job.state))

    def request_cancel(self, job_id: int) -> str:
        """Cancel a job: at once when it waits, else the worker stops at its next progress report. Returns what
        happened, for people."""
        job = self.get(job_id)
        if job is None:
            raise JobError(f"no job {job_id}; see `mgrag jobs`")
        if job.state not in ACTIVE:
            raise JobError(f"job {job_id} ({job.name}) is {job.state}; nothing to cancel")
        if job.state in (JobState.QUEUED, JobState.SEARCHABLE):
            with self.catalog.transaction() as db:
                changed = db.execute("UPDATE jobs SET cancel=1 WHERE job_id=? AND state=?",
                                     (job_id, job.state)).rowcount
            if changed:
                self.finish(job_id, JobState.CANCELLED)
                return (JobState.CANCELLED if job.state == JobState.QUEUED else
                        "refinement cancelled; the first pass stays searchable")
            return self.request_cancel(job_id)  # claimed meanwhile: cancel the running job
        with self.catalog.transaction() as db:
            db.execute("UPDATE jobs SET cancel=1, updated=? WHERE job_id=?", (time.time(), job_id))
        return "cancelling (the worker stops at its next step)"

    def recover(self) -> list[tuple[Job, str]]:
        """On the runner's start: a re-ingestion's jobs whose generation is no longer being built are cancelled (its
        process died: the next open dropped the generation); the jobs a dead process was running go back to their
        lane with one more attempt (or fail after ``max_attempts``); cancellations requested meanwhile are carried
        out; spool files no job names are removed. Returns ``(job, new state)`` per job touched."""
        out = []
        building = {g.gen for g in self.catalog.generations("building")}
        for job in self.jobs(ACTIVE):
            if job.target_gen is not None and job.target_gen not in building:
                self.finish(job.job_id, JobState.CANCELLED, message="its re-ingestion stopped before it was done")
                out.append((job, JobState.CANCELLED))
        for job in self.jobs(RUNNING):
            if job.target_gen is not None:
                continue  # its generation is still being built: by a re-ingestion of this process, which runs it
            if job.cancel:
                self.finish(job.job_id, JobState.CANCELLED)
                out.append((job, JobState.CANCELLED))
                continue
            where = JobState.EXTRACTING if job.state == JobState.EXTRACTING else JobState.REFINING
            out.append((job, self.retry_or_fail(job, f"interrupted while {where} (the process stopped or was "
                                                     f"killed; attempt {job.attempts + 1})")))
        for job in self.jobs((JobState.QUEUED, JobState.SEARCHABLE)):
            if job.cancel:
                self.finish(job.job_id, JobState.CANCELLED)
                out.append((job, JobState.CANCELLED))
        named = {j.spool for j in self.jobs((JobState.QUEUED, JobState.EXTRACTING)) if j.spool}
        if self.spool_dir.exists():
            for p in self.spool_dir.iterdir():
                if p.name not in named:
                    p.unlink(missing_ok=True)
        return out

    def _drop_spool(self, job: Job) -> None:
        p = self.spool_path(job)
        if p is not None:
            p.unlink(missing_ok=True)

    def forget_doc(self, doc_id: str) -> None:
        """The document was deleted: its waiting refinement has nothing to refine."""
        for job in self.jobs((JobState.SEARCHABLE,)):
            if job.doc_id == doc_id:
                self.finish(job.job_id, JobState.CANCELLED, message="the document was deleted")

    # -- shared values (the runner's heartbeat, measured rates) ---------------------------------------------------
    def get_meta(self, key: str, default=None):
        with self.catalog._lock:
            row = self.catalog.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def set_meta(self, key: str, value) -> None:
        with self.catalog._lock:
            self.catalog.db.execute("INSERT OR REPLACE INTO meta VALUES (?,?)", (key, json.dumps(value)))
