"""Scale-out: the queue's computing on ``mgrag worker`` processes anywhere, through Redis with RQ.

The data dir's holder (``mgrag serve``) keeps the queue's truth in its catalog (:mod:`ingest.jobs.state`) and stays the
one writer of the catalog and the store; with ``queue_url`` set its runner (:class:`ingest.jobs.queue.Runner`) hands
each job's computing to a :class:`RedisExecutor` instead of doing it itself. The executor puts one RQ job on one of two
queues, ``{prefix}-first`` and ``{prefix}-refine``; workers (:func:`run_worker`, an RQ ``SimpleWorker``: the models load
once per process, no fork per job) take first passes before refinements, run the very functions the embedded path runs
(:mod:`ingest.jobs.work`) and return the text and the chunk spans and vectors, which the holder writes. So the same
document gives the same chunk ids and texts either way.

RQ was chosen by measurement (``bench/queue_engines.py``, BENCHMARKS.md "Queue engines"): of RQ, Huey, Dramatiq and
Celery it alone served a high lane strictly before a low one, cancelled a queued job that never ran, and retried a
killed worker's job boundedly; it keeps each job's result and metadata (our progress) in Redis. Its own detection of
a dead worker takes ``job_timeout`` + 60 s, too long for refinements of tens of minutes, so workers also beat
(``{prefix}:beat:<job>`` with a 30 s expiry, every 10 s) and the holder treats a started job without a beat as lost:
the job counts an attempt in the catalog and is handed out again (bounded by ``ingest_max_attempts``).
"""
from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator

import numpy as np

from ingest.jobs.state import Job
from ingest.jobs.work import (
    Cut,
    Plan,
    QueueUnavailable,
    Reporter,
    Stopped,
    check_models,
    cut,
    extract,
    extract_ranges,
    first_pass_stages,
    needs_refinement,
)
from ingest.readers.loaders import IngestError, Limits, LoadedDoc

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): redis, rq

log = logging.getLogger(__name__)

LOST_S = 30.0  # a started job without a beat this long is lost (its worker died); workers beat every third of it
JOB_TIMEOUT_S = 7 * 24 * 3600  # RQ's own limit: effectively none (the beats decide)

_models = None  # the worker process's models (its AppContext), set by run_worker


# the only functions a job may name
TASKS = frozenset({"ingest.jobs.remote.task_first", "ingest.jobs.remote.task_refine", "ingest.jobs.remote.task_range"})


class ForgedPayload(ValueError):
    """A job, result or progress record in Redis that the queue secret did not sign (or that names a function other
    than the two tasks): refused, never run or read."""


class SignedJSON:
    """RQ's serializer for the scale-out queue: **data, not code**. RQ pickles by default, and unpickling what anyone
    who can write to Redis put there runs their code (a hostile run did, in the workers and in the holder). Here
    every job, result and progress record is JSON (bytes as base64, arrays as their bytes) signed with HMAC-SHA256
    under ``queue_secret``; :meth:`loads` refuses anything unsigned, altered or signed with another key, and a job
    naming a function other than :data:`TASKS`.

    >>> s = SignedJSON("k" * 32)
    >>> s.loads(s.dumps({"data": b"%PDF", "n": 1}))
    {'data': b'%PDF', 'n': 1}
    """

    MAGIC = b"mgrag-v1:"

    def __init__(self, secret: str):
        if not secret or len(secret) < 16:
            raise ValueError("the queue secret (MGRAG_QUEUE_SECRET) must be 16 characters or more")
        self._key = secret.encode("utf-8")
        self.__qualname__ = type(self).__qualname__  # RQ's worker names its serializer (for a spawned horse)

    def _mac(self, body: bytes) -> bytes:
        return hmac.new(self._key, body, hashlib.sha256).hexdigest().encode()

    def dumps(self, obj) -> bytes:
        body = json.dumps(obj, default=_to_json, separators=(",", ":")).encode("utf-8")
        return self.MAGIC + self._mac(body) + b":" + body

    def loads(self, data):
        raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        mac, _, body = raw[len(self.MAGIC):].partition(b":") if raw.startswith(self.MAGIC) else (b"", b"", b"")
        if not body or not hmac.compare_digest(mac, self._mac(body)):
            log.warning("refused a queue record not signed with this queue's secret (%d bytes): forged, altered, or "
                        "from a holder or worker with another MGRAG_QUEUE_SECRET", len(raw))
            raise ForgedPayload("a queue record not signed with this queue's secret")
        obj = json.loads(body, object_hook=_from_json)
        if isinstance(obj, list) and len(obj) == 4 and isinstance(obj[0], str) and obj[0] not in TASKS:
            log.warning("refused a signed job naming %r (only %s run)", obj[0][:80], ", ".join(sorted(TASKS)))
            raise ForgedPayload("a job naming a function that is not one of the queue's tasks")
        return obj


def _to_json(o):
    if isinstance(o, (bytes, bytearray, memoryview)):
        return {"__b64__": base64.b64encode(bytes(o)).decode("ascii")}
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, (tuple, set, frozenset)):
        return list(o)
    raise TypeError(f"a {type(o).__name__} cannot go through the queue (JSON only)")


def _from_json(d: dict):
    return base64.b64decode(d["__b64__"]) if len(d) == 1 and "__b64__" in d else d


def serializer_of(settings) -> SignedJSON:
    """The queue's serializer from ``queue_secret``; a clear error when it is not set."""
    secret = settings.queue_secret.get_secret_value() if settings.queue_secret is not None else ""
    if not secret:
        raise ValueError("the scale-out queue needs MGRAG_QUEUE_SECRET (the same on the holder and every worker: it "
                         "signs every job and result in Redis); make one with "
                         "`python -c 'import secrets; print(secrets.token_hex(32))'`")
    return SignedJSON(secret)


def _connect(url: str):
    from redis import Redis

    return Redis.from_url(url)


def queue_names(prefix: str) -> tuple[str, str]:
    return f"{prefix}-first", f"{prefix}-refine"


# -- worker side ----------------------------------------------------------------------------------------------------
class _Beat:
    """While a task runs: a beat key that expires unless renewed (``ttl_s``, renewed every third of it), and the
    cancellation key the holder may set."""

    def __init__(self, conn, prefix: str, job_id: str, ttl_s: float = LOST_S):
        self.conn, self.key, self.cancel_key = conn, f"{prefix}:beat:{job_id}", f"{prefix}:cancel:{job_id}"
        self.ttl_ms, self.every_s = max(int(ttl_s * 1000), 300), max(ttl_s / 3, 0.1)
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True, name="mgrag-beat")

    def _beat(self) -> None:
        try:
            self.conn.set(self.key, str(time.time()), px=self.ttl_ms)
        except Exception:  # pragma: no cover - Redis away for a moment: the next beat tries again
            log.debug("beat failed", exc_info=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self._beat()

    def __enter__(self):
        self._beat()  # the first one before the task starts
        self._t.start()
        return self

    def __exit__(self, *exc):
        # One last beat, left to expire: between the task's return and RQ marking the job finished (it stores the
        # result first, which for a long document's vectors takes a while) the holder must still see a beat, or
        # it would call a worker that just finished lost and run the job again.
        self._stop.set()
        self._t.join(2)
        self._beat()

    def cancelled(self) -> bool:
        return bool(self.conn.exists(self.cancel_key))


def _task_reporter(rq_job, beat: _Beat, rates: dict) -> Reporter:
    def sink(label: str, share: float, eta: float | None) -> bool:
        rq_job.meta["progress"] = [label, share, eta, time.time()]
        rq_job.save_meta()
        return beat.cancelled()

    return Reporter(sink, rates=rates)


def _run_task(payload: dict, body) -> dict:
    """Common to both tasks: the worker's models, the beat, the progress sink; a file's problem or a cancellation is
    a result (``error`` / ``cancelled``), anything else fails the RQ job (the holder retries it, boundedly)."""
    from rq import get_current_job

    if _models is None:
        raise RuntimeError("this process is not an mgrag worker (run `mgrag worker` with MGRAG_QUEUE_URL)")
    rq_job = get_current_job()
    plan = Plan.from_json(payload["plan"])
    with _Beat(rq_job.connection, payload["prefix"], rq_job.id, payload.get("lost_s", LOST_S)) as beat:
        rep = _task_reporter(rq_job, beat, payload.get("rates") or {})
        try:
            check_models(_models, plan)
            return body(plan, rep)
        except IngestError as e:
            return {"error": e.problem}
        except Stopped:
            return {"cancelled": True}


def _known(payload: dict) -> dict:
    k = payload.get("known") or {"texts": [], "vectors": b"", "dim": 0}
    vecs = np.frombuffer(k["vectors"], dtype=np.float32).reshape(len(k["texts"]), -1) if k["texts"] else []
    return dict(zip(k["texts"], vecs))


def _known_payload(known: dict | None) -> dict:
    texts = list(known or {})
    return {"texts": texts,
            "vectors": np.asarray([known[t] for t in texts], dtype=np.float32).tobytes() if texts else b""}


def task_first(payload: dict) -> dict:
    """A first pass: extract the file (``first_range``: a PDF's first range of pages that has text, the rest read by
    :func:`task_range`), cut it by the plan, embed."""
    def body(plan: Plan, rep: Reporter) -> dict:
        limits = Limits(**payload["limits"])
        rep.begin(first_pass_stages(rep.rates, payload["name"], len(payload["data"])))
        t = time.perf_counter()
        if payload.get("first_range"):
            doc = next(extract_ranges(payload["name"], payload["data"], limits, rep))
        else:
            doc = extract(payload["name"], payload["data"], limits, rep)
        read_s = time.perf_counter() - t
        c = cut(_models, doc.text, payload["doc_id"], payload["hash"], plan, rep, payload["name"], layout=doc.layout)
        c.timings.update(read_s=read_s, pages=len((doc.layout or {}).get("pages") or ()))
        return {"text": doc.text, "layout": doc.layout, "kind": doc.kind, "warning": doc.warning, "cut": c.to_wire()}

    return _run_task(payload, body)


def task_refine(payload: dict) -> dict:
    """A refinement: cut the stored text by the plan (the LM pass), embed."""
    def body(plan: Plan, rep: Reporter) -> dict:
        c = cut(_models, payload["text"], payload["doc_id"], payload["hash"], plan, rep, payload["name"],
                _known(payload), payload.get("layout"))
        return {"cut": c.to_wire()}

    return _run_task(payload, body)


def task_range(payload: dict) -> dict:
    """The next range of a long PDF's pages after the document so far (``text``, ``layout``): read, the document to
    the end of it cut by the plan and embedded, the vectors of the chunks it had before (``known``) reused."""
    def body(plan: Plan, rep: Reporter) -> dict:
        so_far = LoadedDoc(payload["name"], b"", payload["text"], "pdf", "", payload["layout"])
        doc = next(extract_ranges(payload["name"], payload["data"], Limits(**payload["limits"]), rep, resume=so_far))
        c = cut(_models, doc.text, payload["doc_id"], payload["hash"], plan, rep, payload["name"], _known(payload),
                doc.layout)
        return {"text": doc.text, "layout": doc.layout, "cut": c.to_wire()}

    return _run_task(payload, body)


def run_worker(ctx, burst: bool = False) -> int:
    """``mgrag worker`` with ``queue_url``: serve both queues (first passes first) until stopped (``burst``: until
    they are empty). Loads the embedder now and the chunker LM when the settings' chunker needs one, so the first job
    does not pay for it."""
    global _models
    from rq import Queue
    from rq.worker import SimpleWorker


    s = ctx.settings
    ser = serializer_of(s)  # before anything loads: no secret, no worker
    _models = ctx
    conn = _connect(s.queue_url)
    conn.ping()
    _ = ctx.embedder
    if needs_refinement(s.chunker) and s.chunker != "lumber":
        _ = ctx.scorer
    first, refine = queue_names(s.collection_prefix)
    worker = SimpleWorker([Queue(q, connection=conn, serializer=ser) for q in (first, refine)],
                          connection=conn, serializer=ser,
                          name=f"mgrag-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}")
    log.info("mgrag worker %s serving %s then %s on %s", worker.name, first, refine, _redacted(s.queue_url))
    print(f"mgrag worker: serving {first} then {refine} on {_redacted(s.queue_url)}; Ctrl-C stops", flush=True)
    worker.work(burst=burst, logging_level="WARNING")
    return 0


def _redacted(url: str) -> str:
    """The URL without its password, for logs."""
    if "@" not in url:
        return url
    head, tail = url.split("@", 1)
    scheme = head.split("://", 1)[0]
    return f"{scheme}://***@{tail}"


# -- holder side ----------------------------------------------------------------------------------------------------
class RedisExecutor:
    """The :class:`ingest.jobs.queue.LocalExecutor` interface, computed by workers through Redis (see the module)."""

    remote = True

    def __init__(self, ctx, poll_s: float = 0.25, lost_s: float = LOST_S):
        from rq import Queue

        s = ctx.settings
        if not s.queue_url:
            raise ValueError("RedisExecutor needs MGRAG_QUEUE_URL (e.g. redis://127.0.0.1:6379/0)")
        self.ctx, self.poll_s, self.lost_s, self.prefix = ctx, poll_s, lost_s, s.collection_prefix
        ser = serializer_of(s)
        self.conn = _connect(s.queue_url)
        try:
            self.conn.ping()
        except Exception as e:
            raise ConnectionError(f"the queue at {_redacted(s.queue_url)} (MGRAG_QUEUE_URL) does not answer: {e}; "
                                  "start Redis or unset MGRAG_QUEUE_URL to ingest in this process") from e
        first, refine = queue_names(self.prefix)
        self.queues = {"first": Queue(first, connection=self.conn, serializer=ser),
                       "refine": Queue(refine, connection=self.conn, serializer=ser)}

    def close(self) -> None:
        try:
            self.conn.close()
        except Exception:  # pragma: no cover
            pass

    def _payload(self, job: Job, plan: Plan, rep: Reporter, **extra) -> dict:
        return {"prefix": self.prefix, "plan": plan.to_json(), "rates": rep.rates, "name": job.name,
                "lost_s": self.lost_s,
                "doc_id": job.doc_id, "hash": job.hash, **extra}

    def first(self, job: Job, data: bytes, plan: Plan, rep: Reporter) -> tuple[LoadedDoc, Cut]:
        """As :meth:`ingest.jobs.queue.LocalExecutor.first`, on a worker: a PDF in a job of two phases only up to its
        first range of pages that has text (the rest by :meth:`ranges`)."""
        limits = dataclasses.asdict(Limits.of(self.ctx.settings))
        first_range = bool(job.two_phase) and job.name.lower().endswith(".pdf")
        out = self._run("first", "ingest.jobs.remote.task_first", job,
                        self._payload(job, plan, rep, data=data, limits=limits, first_range=first_range), rep)
        return (LoadedDoc(job.name, b"", out["text"], out["kind"], out.get("warning") or "", out.get("layout")),
                Cut.from_wire(out["cut"]))

    def ranges(self, job: Job, data: bytes, so_far: LoadedDoc, plan: Plan, rep: Reporter,
               known: dict) -> Iterator[tuple[LoadedDoc, Cut]]:
        """As :meth:`ingest.jobs.queue.LocalExecutor.ranges`, each range read, cut and embedded on a worker (one task
        per range, on the refinement lane; ``known`` as it stands when the range is handed out)."""
        limits = dataclasses.asdict(Limits.of(self.ctx.settings))
        while (so_far.layout or {}).get("read"):
            out = self._run("refine", "ingest.jobs.remote.task_range", job,
                            self._payload(job, plan, rep, data=data, limits=limits, text=so_far.text,
                                          layout=so_far.layout, known=_known_payload(known)), rep)
            so_far = LoadedDoc(job.name, b"", out["text"], "pdf", "", out["layout"])
            yield so_far, Cut.from_wire(out["cut"])

    def refine(self, job: Job, text: str, plan: Plan, rep: Reporter, known=None, layout=None) -> Cut:
        out = self._run("refine", "ingest.jobs.remote.task_refine", job,
                        self._payload(job, plan, rep, text=text, known=_known_payload(known), layout=layout), rep)
        return Cut.from_wire(out["cut"])

    def _run(self, lane: str, func: str, job: Job, payload: dict, rep: Reporter) -> dict:
        from redis.exceptions import ConnectionError as RedisDown
        from redis.exceptions import TimeoutError as RedisSlow

        try:
            return self._run_on_redis(lane, func, job, payload, rep)
        except (RedisDown, RedisSlow) as e:  # not the file's fault: the runner waits and tries again
            raise QueueUnavailable(f"the queue at {_redacted(self.ctx.settings.queue_url)} does not answer "
                                   f"({e.__class__.__name__})") from e

    def _run_on_redis(self, lane: str, func: str, job: Job, payload: dict, rep: Reporter) -> dict:
        rq_id = f"{self.prefix}-{job.job_id}-{lane}-{uuid.uuid4().hex[:8]}"
        rq_job = self.queues[lane].enqueue_call(func, args=(payload,), timeout=JOB_TIMEOUT_S, result_ttl=3600,
                                                failure_ttl=24 * 3600, job_id=rq_id)
        cancel_key, beat_key = f"{self.prefix}:cancel:{rq_id}", f"{self.prefix}:beat:{rq_id}"
        last_progress, started_at, reported = None, None, 0.0
        try:
            while True:
                status = rq_job.get_status(refresh=True).value
                if status == "finished":
                    out = rq_job.return_value(refresh=True) or {}
                    if out.get("error"):
                        raise IngestError(job.name, out["error"])
                    if out.get("cancelled"):
                        raise Stopped("cancelled")
                    return out
                if status in ("failed", "stopped", "canceled"):
                    res = rq_job.latest_result()
                    why = (res.exc_string or "").strip().splitlines()[-1:] if res is not None else []
                    raise RuntimeError(f"a worker failed: {why[0] if why else status}")
                progress = (rq_job.get_meta(refresh=True) or {}).get("progress")
                now = time.monotonic()
                if (progress and progress != last_progress) or now - reported > 2.0:
                    # the catalog's row follows the worker's; the sink says whether the job is to stop
                    reported = now
                    last_progress = progress or last_progress
                    shown = (last_progress[:3] if last_progress else
                             ("waiting for a worker" if status == "queued" else "starting", 0.0, None))
                    if rep.sink(*shown):
                        self._cancel(rq_job, cancel_key)
                        if status == "queued":
                            raise Stopped("cancelled")
                if status == "started":
                    started_at = started_at or now
                    if (now - started_at > self.lost_s and not self.conn.exists(beat_key)
                            and rq_job.get_status(refresh=True).value == "started"):  # not just finished
                        self._cancel(rq_job, cancel_key)
                        raise RuntimeError(f"the worker running it was lost (no beat for {self.lost_s:g} s)")
                time.sleep(self.poll_s)
        except Stopped as e:
            if e.why != "cancelled":  # this process is stopping: the job goes back to the catalog's queue
                self._cancel(rq_job, cancel_key)
            raise

    def _cancel(self, rq_job, cancel_key: str) -> None:
        """Ask the worker to stop at its next progress report; a job no worker has taken yet is cancelled in RQ."""
        self.conn.set(cancel_key, "1", ex=24 * 3600)
        try:
            if rq_job.get_status(refresh=True).value == "queued":
                rq_job.cancel()
        except Exception:  # pragma: no cover - it started meanwhile: the cancellation key stops it
            log.debug("cancelling %s in RQ failed", rq_job.id, exc_info=True)
