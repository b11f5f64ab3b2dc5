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

Anyone with the Redis password but not the queue secret can still move records around, so a signature alone is not
enough: each job's signed payload names the RQ job it is for (its id, queue and function), the document, its owner
and a hash of the content it carries (:func:`payload_hash`). A worker runs a payload only as that RQ job, only once
(a claim key per RQ job id), and sends the binding back inside its signed result; the holder takes a result only
for the RQ job it enqueued, for that document and content, and then deletes the job from Redis (its upload with it).
A worker outlives Redis outages: it waits, trying again with back-off, and serves again when Redis is back.
"""
from __future__ import annotations

import base64
import dataclasses
import functools
import hashlib
import hmac
import json
import logging
import math
import os
import signal
import socket
import string
import threading
import time
import uuid
from collections import Counter
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

CLAIM_TTL_S = JOB_TIMEOUT_S  # how long a worker's claim on an RQ job id stays (a payload older than it is refused)
WORKER_BACKOFF_S, WORKER_BACKOFF_MAX_S = 1.0, 30.0  # a worker's waits while Redis does not answer: 1, 2, 4 … 30 s

# a queue secret: at least this many characters (without surrounding spaces) and about this many bits of entropy
SECRET_MIN_CHARS, SECRET_MIN_BITS, SECRET_MIN_SHANNON = 32, 128, 2.5
MAKE_SECRET = "python -c 'import secrets; print(secrets.token_hex(32))'"

_models = None  # the worker process's models (its AppContext), set by run_worker
_dequeued_from: str | None = None  # the queue the worker took the running job from (set by its execute_job)


# the only functions a job may name
TASKS = frozenset({"ingest.jobs.remote.task_first", "ingest.jobs.remote.task_refine", "ingest.jobs.remote.task_range"})


class ForgedPayload(ValueError):
    """A job, result or progress record in Redis that the queue secret did not sign (or that names a function other
    than the two tasks): refused, never run or read."""


class QueueSecretError(ValueError):
    """``MGRAG_QUEUE_SECRET`` missing or guessable; its message is one line that says how to make one (the CLI prints
    it as it is, without a traceback)."""


def secret_bits(secret: str) -> float:
    """A rough estimate of a secret's entropy in bits: the length of its shortest repeating unit (the whole secret
    unless a unit repeats at least twice) times log2 of the character set it draws from (hex digits 16; else lower
    case 26, upper case 26, digits 10, anything else 33, added up). It catches the accidents (a word repeated, one
    key held down, digits only), not a human's clever guessable phrase.

    >>> secret_bits("0123456789abcdef" * 2), secret_bits("password1234567890" * 2) < 128
    (64.0, True)
    """
    s = secret.strip()
    n = len(s)
    unit = next((p for p in range(1, n // 2 + 1) if all(s[i] == s[i + p] for i in range(n - p))), n)
    if s and (set(s) <= set("0123456789abcdef") or set(s) <= set("0123456789ABCDEF")):
        alphabet = 16
    else:
        alphabet = sum(k for chars, k in ((string.ascii_lowercase, 26), (string.ascii_uppercase, 26),
                                          (string.digits, 10)) if any(c in chars for c in s))
        alphabet += 33 if any(not (c.isascii() and c.isalnum()) for c in s) else 0
    return unit * math.log2(alphabet) if alphabet > 1 else 0.0


def check_queue_secret(secret: str | None) -> str:
    """``secret`` if it will do as the queue's key: at least :data:`SECRET_MIN_CHARS` characters besides surrounding
    spaces, :data:`SECRET_MIN_BITS` bits by :func:`secret_bits`, and characters varied enough (Shannon entropy of
    :data:`SECRET_MIN_SHANNON` bits a character: not one character with a few others); else
    :class:`QueueSecretError`, one line naming MGRAG_QUEUE_SECRET and how to make one.

    >>> import secrets
    >>> check_queue_secret(secrets.token_hex(32)) != ""
    True
    >>> check_queue_secret("k" * 32)
    Traceback (most recent call last):
    ...
    ingest.jobs.remote.QueueSecretError: MGRAG_QUEUE_SECRET is guessable ...
    """
    s = (secret or "").strip()
    counts = Counter(s)
    shannon = -sum(c / len(s) * math.log2(c / len(s)) for c in counts.values()) if s else 0.0
    if not s:
        why = "not set" if not secret else "only spaces"
    elif len(s) < SECRET_MIN_CHARS:
        why = f"{len(s)} characters long ({SECRET_MIN_CHARS} or more needed)"
    elif shannon < SECRET_MIN_SHANNON or secret_bits(s) < SECRET_MIN_BITS:
        why = (f"guessable (a repeated pattern, too few different characters or too small a character set: about "
               f"{max(0.0, min(secret_bits(s), len(s) * shannon)):.0f} bits, {SECRET_MIN_BITS} or more needed)")
    else:
        return secret or ""
    raise QueueSecretError(f"MGRAG_QUEUE_SECRET is {why}: the scale-out queue's key (the same on the holder and every "
                           f"worker; it signs every job and result in Redis) must be random; make one with "
                           f"`{MAKE_SECRET}`")


class SignedJSON:
    """RQ's serializer for the scale-out queue: **data, not code**. RQ pickles by default, and unpickling what anyone
    who can write to Redis put there runs their code (a hostile run did, in the workers and in the holder). Here
    every job, result and progress record is JSON (bytes as base64, arrays as their bytes) signed with HMAC-SHA256
    under ``queue_secret``; :meth:`loads` refuses anything unsigned, altered or signed with another key, and a job
    naming a function other than :data:`TASKS`. A guessable secret is refused (:func:`check_queue_secret`).

    >>> import secrets
    >>> s = SignedJSON(secrets.token_hex(32))
    >>> s.loads(s.dumps({"data": b"%PDF", "n": 1}))
    {'data': b'%PDF', 'n': 1}
    """

    MAGIC = b"mgrag-v1:"

    def __init__(self, secret: str):
        self._key = check_queue_secret(secret).encode("utf-8")
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
    """The queue's serializer from ``queue_secret``; :class:`QueueSecretError` (one line) when it is not set or is
    guessable."""
    return SignedJSON(settings.queue_secret.get_secret_value() if settings.queue_secret is not None else "")


def payload_hash(payload: dict) -> str:
    """SHA-256 of what a job carries: the file's bytes (``data``) and the text so far (``text``), each with its
    length, so that the one cannot pass for the other."""
    h = hashlib.sha256()
    for key in ("data", "text"):
        v = payload.get(key)
        if v is not None:
            b = v.encode("utf-8") if isinstance(v, str) else bytes(v)
            h.update(b"%s:%d:" % (key.encode(), len(b)))
            h.update(b)
    return h.hexdigest()


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
    from redis.exceptions import ConnectionError as RedisDown
    from redis.exceptions import TimeoutError as RedisSlow

    def sink(label: str, share: float, eta: float | None) -> bool:
        rq_job.meta["progress"] = [label, share, eta, time.time()]
        try:
            rq_job.save_meta()
            return beat.cancelled()
        except (RedisDown, RedisSlow):  # Redis away for a moment: the work goes on, the next report tries again
            log.debug("progress report failed", exc_info=True)
            return False

    return Reporter(sink, rates=rates)


def _refusal(payload: dict, rq_job) -> str | None:
    """Why this worker must not run ``payload`` as ``rq_job`` (None: it may, and it is now claimed). The signature
    says the holder made the payload; the binding says for which RQ job: a payload moved onto another RQ job (HSET
    of its ``data``), copied to new ids or pushed again is refused, so nothing is computed twice or under another
    job's name."""
    b = payload.get("bind")
    if not isinstance(b, dict):
        return "it names no RQ job (made by an older holder, or by hand)"
    if b.get("rq_id") != rq_job.id:
        return f"it was signed for RQ job {str(b.get('rq_id'))[:80]!r}, not this one (moved or copied in Redis)"
    lane = _dequeued_from or rq_job.origin
    if b.get("queue") != rq_job.origin or b.get("queue") != lane or lane not in queue_names(payload.get("prefix")):
        return f"it was signed for queue {str(b.get('queue'))[:80]!r}, and came from {lane!r}"
    if b.get("func") != rq_job.func_name:
        return f"it was signed for {str(b.get('func'))[:80]!r}, not {rq_job.func_name!r}"
    if b.get("doc_id") != payload.get("doc_id"):
        return "its document is not the one it was signed for"
    if b.get("content") != payload_hash(payload):
        return "its content does not match the content hash it was signed with"
    if not isinstance(b.get("issued"), (int, float)) or time.time() - b["issued"] > CLAIM_TTL_S:
        return f"it was issued more than {CLAIM_TTL_S / 86400:g} days ago (longer than a claim on its id lasts)"
    claim = f"{payload['prefix']}:claimed:{rq_job.id}"
    if not rq_job.connection.set(claim, f"{socket.gethostname()}:{os.getpid()}", nx=True, ex=int(CLAIM_TTL_S)):
        return "this RQ job has run already (a replay)"
    return None


def _run_task(payload: dict, body) -> dict:
    """Common to both tasks: the worker's models, the binding (:func:`_refusal`), the beat, the progress sink; a
    file's problem or a cancellation is a result (``error`` / ``cancelled``), anything else fails the RQ job (the
    holder retries it, boundedly). Every result says which RQ job, document and content it is for (``bound``); a
    refused payload is not computed: its result says why (``refused``)."""
    from rq import get_current_job

    if _models is None:
        raise RuntimeError("this process is not an mgrag worker (run `mgrag worker` with MGRAG_QUEUE_URL)")
    rq_job = get_current_job()
    why = _refusal(payload, rq_job)
    if why is not None:
        log.warning("refused RQ job %s (%s): %s; nothing computed", rq_job.id[:120], rq_job.func_name, why)
        return {"refused": why, "bound": {"rq_id": rq_job.id}}
    bound = {k: payload["bind"][k] for k in ("rq_id", "doc_id", "content")}
    plan = Plan.from_json(payload["plan"])
    with _Beat(rq_job.connection, payload["prefix"], rq_job.id, payload.get("lost_s", LOST_S)) as beat:
        rep = _task_reporter(rq_job, beat, payload.get("rates") or {})
        try:
            check_models(_models, plan)
            out = body(plan, rep)
        except IngestError as e:
            out = {"error": e.problem}
        except Stopped:
            out = {"cancelled": True}
    return {**out, "bound": bound}


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
    does not pay for it. While Redis does not answer (at the start, or an outage later) it waits, trying again with
    back-off up to :data:`WORKER_BACKOFF_MAX_S`, one log line an outage, then serves again."""
    global _models
    from redis.exceptions import ConnectionError as RedisDown
    from redis.exceptions import TimeoutError as RedisSlow

    s = ctx.settings
    ser = serializer_of(s)  # before anything loads: no secret, no worker
    _models = ctx
    conn = _connect(s.queue_url)
    _ = ctx.embedder
    if needs_refinement(s.chunker) and s.chunker != "lumber":
        _ = ctx.scorer
    first, refine = queue_names(s.collection_prefix)
    worker_cls, queue_cls = _worker_classes()
    said, outage = False, None
    while True:
        if not _wait_for_redis(conn, s.queue_url, outage):
            return 0  # stopped while waiting
        worker = worker_cls([queue_cls(q, connection=conn, serializer=ser) for q in (first, refine)],
                            connection=conn, serializer=ser, queue_class=queue_cls,
                            name=f"mgrag-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}")
        if not said:
            said = True
            log.info("mgrag worker %s serving %s then %s on %s", worker.name, first, refine, _redacted(s.queue_url))
            print(f"mgrag worker: serving {first} then {refine} on {_redacted(s.queue_url)}; Ctrl-C stops", flush=True)
        try:
            worker.work(burst=burst, logging_level="WARNING")
            outage = worker.outage
        except (RedisDown, RedisSlow) as e:  # as it registered itself
            outage = e
        if outage is None or worker._stop_requested:
            return 0


def _wait_for_redis(conn, url: str, down: Exception | None = None) -> bool:
    """Return when Redis answers (True), or on a stop signal while waiting (False); one warning line when it does
    not answer (``down``: the error that ended the work loop), one when it is back."""
    from redis.exceptions import ConnectionError as RedisDown
    from redis.exceptions import TimeoutError as RedisSlow
    from rq.exceptions import StopRequested

    def stop(signum, frame):
        raise StopRequested()

    main = threading.current_thread() is threading.main_thread()
    if main:  # RQ's handlers (a worker's before the outage) would talk to Redis: these do not
        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
    wait_s, down_since = WORKER_BACKOFF_S, None

    def went(e: Exception) -> float:
        log.warning("mgrag worker: the queue at %s does not answer (%s); waiting for it, trying again every %g s at "
                    "most", _redacted(url), str(e)[:200], WORKER_BACKOFF_MAX_S)
        return time.monotonic()

    if down is not None:
        down_since = went(down)
    try:
        while True:
            try:
                conn.ping()
                if down_since is not None:
                    log.warning("mgrag worker: the queue at %s answers again after %.0f s; serving", _redacted(url),
                                time.monotonic() - down_since)
                return True
            except (RedisDown, RedisSlow) as e:
                if down_since is None:
                    down_since = went(e)
            time.sleep(wait_s)
            wait_s = min(WORKER_BACKOFF_MAX_S, 2 * wait_s)
    except StopRequested:
        return False
    finally:
        if main:  # Python's own until the next RQ worker installs its handlers
            signal.signal(signal.SIGINT, signal.default_int_handler)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


@functools.cache
def _worker_classes():
    """RQ's SimpleWorker and Queue, made to outlive a Redis outage: a Redis error anywhere in the work loop (RQ's
    own ends the process in most places: storing a result, its heartbeat, between jobs) ends the loop quietly with
    ``outage`` set, and :func:`run_worker` waits for Redis and starts a new one. RQ's command channel (pubsub: the
    ``rq`` CLI's shutdown or kill-horse) is not used: the holder stops a job through its cancellation key, and that
    channel's thread would log an error every 2 s of an outage."""
    from redis.exceptions import ConnectionError as RedisDown
    from redis.exceptions import TimeoutError as RedisSlow
    from rq import Queue
    from rq.exceptions import StopRequested
    from rq.worker import SimpleWorker

    class RedisAway(StopRequested):
        """Redis stopped answering: RQ's work loop ends as on a stop request (no traceback, no exit)."""

    class OutageSafeQueue(Queue):
        @classmethod
        def dequeue_any(cls, *a, **k):
            try:
                return super().dequeue_any(*a, **k)
            except (RedisDown, RedisSlow) as e:  # instead of RQ's retries, each one logged as an error
                raise RedisAway(str(e)) from e

    class OutageSafeWorker(SimpleWorker):
        outage: Exception | None = None

        def _guard(self, call, *a, **k):
            try:
                out = call(*a, **k)
            except RedisAway as e:
                self.outage = e
                raise
            except (RedisDown, RedisSlow) as e:
                self.outage = e
                raise RedisAway(str(e)) from e
            self.outage = None  # Redis answered: a blip inside a job is over
            return out

        def dequeue_job_and_maintain_ttl(self, *a, **k):
            return self._guard(super().dequeue_job_and_maintain_ttl, *a, **k)

        def execute_job(self, job, queue):
            global _dequeued_from
            _dequeued_from = queue.name
            try:
                return self._guard(super().execute_job, job, queue)
            finally:
                _dequeued_from = None

        def check_for_suspension(self, burst):
            return self._guard(super().check_for_suspension, burst)

        def run_maintenance_tasks(self):
            return self._guard(super().run_maintenance_tasks)

        def heartbeat(self, *a, **k):
            return self._guard(super().heartbeat, *a, **k)

        def subscribe(self):
            self.pubsub_thread = None

        def unsubscribe(self):
            pass

        def teardown(self):
            try:
                super().teardown()
            except (RedisDown, RedisSlow):
                if self.outage is None:
                    raise

    return OutageSafeWorker, OutageSafeQueue


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
        limits = dataclasses.asdict(Limits.of(self.ctx.settings.reading))
        first_range = bool(job.two_phase) and job.name.lower().endswith(".pdf")
        out = self._run("first", "ingest.jobs.remote.task_first", job,
                        self._payload(job, plan, rep, data=data, limits=limits, first_range=first_range), rep)
        return (LoadedDoc(job.name, b"", out["text"], out["kind"], out.get("warning") or "", out.get("layout")),
                Cut.from_wire(out["cut"]))

    def ranges(self, job: Job, data: bytes, so_far: LoadedDoc, plan: Plan, rep: Reporter,
               known: dict) -> Iterator[tuple[LoadedDoc, Cut]]:
        """As :meth:`ingest.jobs.queue.LocalExecutor.ranges`, each range read, cut and embedded on a worker (one task
        per range, on the refinement lane; ``known`` as it stands when the range is handed out)."""
        limits = dataclasses.asdict(Limits.of(self.ctx.settings.reading))
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
        queue = self.queues[lane]
        bind = {"rq_id": rq_id, "queue": queue.name, "func": func, "doc_id": job.doc_id,
                "owner": getattr(job, "owner", None), "content": payload_hash(payload), "issued": time.time()}
        rq_job = queue.enqueue_call(func, args=({**payload, "bind": bind},), timeout=JOB_TIMEOUT_S, result_ttl=3600,
                                    failure_ttl=24 * 3600, job_id=rq_id)
        cancel_key, beat_key = f"{self.prefix}:cancel:{rq_id}", f"{self.prefix}:beat:{rq_id}"
        last_progress, started_at, reported = None, None, 0.0
        try:
            while True:
                status = rq_job.get_status(refresh=True).value
                if status == "finished":
                    try:
                        return self._result(rq_job, job, bind)
                    finally:
                        self._forget(rq_job)
                if status in ("failed", "stopped", "canceled"):
                    res = rq_job.latest_result()
                    why = (res.exc_string or "").strip().splitlines()[-1:] if res is not None else []
                    self._forget(rq_job)
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
                        self._forget(rq_job)
                        raise RuntimeError(f"the worker running it was lost (no beat for {self.lost_s:g} s)")
                time.sleep(self.poll_s)
        except Stopped as e:
            if e.why != "cancelled":  # this process is stopping: the job goes back to the catalog's queue
                self._cancel(rq_job, cancel_key)
            raise

    def _result(self, rq_job, job: Job, bind: dict) -> dict:
        """A finished RQ job's result, taken only when the worker says it is this RQ job's, for this document and
        content (``bound``, inside the signed result): a result copied from another job is refused (ForgedPayload:
        nothing is written, the job counts a failed attempt and runs again)."""
        out = rq_job.return_value(refresh=True)
        out = out if isinstance(out, dict) else {}
        if out.get("refused"):
            raise RuntimeError(f"a worker refused the job: {str(out['refused'])[:300]}")
        want = {"rq_id": bind["rq_id"], "doc_id": bind["doc_id"], "content": bind["content"]}
        if out.get("bound") != want:
            log.warning("refused the result of RQ job %s for %s: it is bound to %r, not to this job", rq_job.id,
                        job.name, str(out.get("bound"))[:300])
            raise ForgedPayload("the result in Redis is not this job's (copied there from another job by someone "
                                "with access to Redis, or from a worker of an older version); nothing was written")
        if out.get("error"):
            raise IngestError(job.name, out["error"])
        if out.get("cancelled"):
            raise Stopped("cancelled")
        return out

    def _forget(self, rq_job) -> None:
        """Delete an RQ job whose outcome this holder has read: its hash (the payload: the upload or its text), its
        result and its registry entries leave Redis now instead of after ``result_ttl`` / ``failure_ttl``."""
        try:
            rq_job.delete()
        except Exception:  # pragma: no cover - Redis away: the TTLs remove it
            log.debug("deleting %s in RQ failed", rq_job.id, exc_info=True)

    def _cancel(self, rq_job, cancel_key: str) -> None:
        """Ask the worker to stop at its next progress report; a job no worker has taken yet is cancelled in RQ and
        deleted (its upload with it)."""
        self.conn.set(cancel_key, "1", ex=24 * 3600)
        try:
            if rq_job.get_status(refresh=True).value == "queued":
                rq_job.cancel()
                rq_job.delete()
        except Exception:  # pragma: no cover - it started meanwhile: the cancellation key stops it
            log.debug("cancelling %s in RQ failed", rq_job.id, exc_info=True)
