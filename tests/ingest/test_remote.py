"""Scale-out (ingest/jobs/remote.py): a real Redis (Debian's redis-server on 127.0.0.1) and two `mgrag worker` processes
compute the jobs; the holder writes to qdrant-client in memory (standing in for a Qdrant server). The chunk ids and
texts equal the embedded path's for the same documents and settings; a worker killed in the middle of a refinement
is noticed and its job runs again on the other one.

CI sets MGRAG_REQUIRE_SERVICES=1: there a missing redis-server fails these tests instead of skipping them."""
from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys

import pytest

from app.context import AppContext
from core.settings import Settings
from ingest.jobs.queue import Runner, enqueue, wait
from tests.conftest import TINY_LM_SETTINGS
from tests.ingest.conftest import start_redis
from tests.ingest.test_durability import ROOT
from tests.pdfgen import make_pdf
from tests.sync import eventually

TEXT = ("The cat sat on the mat. It was a sunny day.\n\nDogs bark at night. Birds sing in the morning! "
        "Qdrant stores vectors for every chunk. Chunks have parents and children.\n\n") * 20
DOCS = [("owl.md", TEXT.replace("cat", "owl").encode()), ("elk.txt", TEXT.replace("cat", "elk").encode()),
        ("yak.md", TEXT.replace("cat", "yak").encode()),
        ("report.pdf", make_pdf([["The harbour fee is 40 euros a night."] * 30,
                                 ["The lighthouse was built in 1911."] * 30,
                                 ["Pilots board at the outer buoy."] * 30])),
        ("broken.pdf", b"%PDF-1.4 this is not a PDF")]


SECRET = secrets.token_hex(32)  # the queue secret of these tests (a guessable one is refused)


@pytest.fixture
def worker_env(tiny_lm_dir, monkeypatch, redis_url):
    from redis import Redis

    Redis.from_url(redis_url).flushall()
    env = {**TINY_LM_SETTINGS, "MGRAG_LM_MODEL": str(tiny_lm_dir), "MGRAG_LG_BLOCK_TOKENS": "64",
           "MGRAG_LG_CONTEXT_TOKENS": "8", "MGRAG_LG_BATCH_SIZE": "1", "MGRAG_LG_MODE": "streaming",
           "MGRAG_CHUNKER": "lgmgc", "MGRAG_THETA": "40"}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return {**os.environ, **env, "PYTHONPATH": str(ROOT), "MGRAG_QUEUE_URL": redis_url, "MGRAG_QUEUE_SECRET": SECRET}


def _start_worker(env, tmp_path, name, stuck_in_lm=False):
    """`mgrag worker` in its own process (a data dir of its own it never uses); ``stuck_in_lm``: its first LM forward
    pass never returns, so that a refinement it takes is in its middle until the worker is killed."""
    code = ("import sys, threading\n"
            f"if {stuck_in_lm!r}:\n"
            "    import ingest.text.lm as lm\n"
            "    lm.LogitsScorer._forward = lambda s, *a, **k: threading.Event().wait()\n"
            "from cli.main import main\n"
            f"sys.exit(main(['--data-dir', {str(tmp_path / name)!r}, 'worker']))\n")
    log = open(tmp_path / f"{name}.log", "w")
    return subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)


def _stop(procs):
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()


def _chunks(ctx):
    live = ctx.catalog.live_generation()
    return sorted((p.payload["doc_id"], p.payload["level"], p.id, p.payload["text"])
                  for lv in range(live.n_levels) for p in ctx.index.points(live.gen, lv))


def test_two_workers_through_redis_give_the_embedded_path_s_chunks(tmp_path, worker_env, redis_url):
    from qdrant_client import QdrantClient
    from redis import Redis
    from rq.worker import Worker

    conn = Redis.from_url(redis_url)
    workers = [_start_worker(worker_env, tmp_path, f"w{i}") for i in range(2)]
    try:
        ctx = AppContext(Settings(data_dir=tmp_path / "holder", queue_url=redis_url, queue_secret=SECRET),
                         client=QdrantClient(":memory:"))
        # both workers listening before the first job is handed out, so that each takes some (not whichever is
        # up first all of them)
        eventually(lambda: [w.get_state() for w in Worker.all(connection=conn)] == ["idle", "idle"], 120,
                   "both workers waiting for jobs")
        ids = [q.job.job_id for q in enqueue(ctx, DOCS)]
        runner = Runner(ctx).start()
        assert runner.executor.remote and runner.n_first == ctx.settings.queue_inflight
        try:
            jobs = wait(ctx.jobs, ids, "ready", timeout_s=240)
        finally:
            runner.stop()
        done = {w.name: w.successful_job_count for w in Worker.all(connection=conn)}
    finally:
        _stop(workers)
    assert [(j.name, j.state) for j in jobs] == [(n, "ready") for n, _ in DOCS[:4]] + [("broken.pdf", "failed")]
    assert "is not a readable PDF" in jobs[-1].error and jobs[-1].attempts == 0
    assert all(j.searchable_at < j.ready_at for j in jobs[:4])  # two phases, the first pass searchable first
    assert len(done) == 2 and all(done.values()), done  # both workers took jobs
    assert conn.keys("rq:job:*") == []  # each RQ job deleted (its upload with it) once the holder took its result

    local = AppContext(Settings(data_dir=tmp_path / "embedded"))  # Qdrant Edge, the queue run in this thread
    enqueue(local, DOCS)
    Runner(local).drain()
    assert _chunks(ctx) == _chunks(local) and len(_chunks(ctx)) > 50
    ctx.close()
    local.close()


def test_a_long_pdf_s_ranges_are_read_by_a_worker_and_searchable_one_after_another(tmp_path, worker_env, redis_url,
                                                                                    monkeypatch):
    """Scaled out, a long PDF is read range by range on the workers as in the embedded path (issue 37): its first
    range is searchable before the last is read, the holder reads no page itself, and the chunks are the embedded
    path's."""
    from qdrant_client import QdrantClient
    from redis import Redis

    import ingest.jobs.queue as Q
    from ingest.jobs.remote import RedisExecutor

    def holder_reads(*a, **k):
        raise AssertionError("the holder read pages itself")

    pdf = [("harbour.pdf", make_pdf([[f"Page {i}: the harbour fee rose to {40 + i} euros a night."] * 25
                                     for i in range(4)]))]
    conn = Redis.from_url(redis_url)
    funcs, handed_out = [], RedisExecutor._run_on_redis
    monkeypatch.setattr(RedisExecutor, "_run_on_redis", lambda self, lane, func, *a: funcs.append(func) or
                        handed_out(self, lane, func, *a))
    workers = [_start_worker(worker_env, tmp_path, "w0")]
    seen = []
    try:
        ctx = AppContext(Settings(data_dir=tmp_path / "holder", queue_url=redis_url, queue_secret=SECRET,
                                  pdf_pages_per_range=1), client=QdrantClient(":memory:"))
        reads = Q.extract_ranges
        monkeypatch.setattr(Q, "extract_ranges", holder_reads)
        ids = [q.job.job_id for q in enqueue(ctx, pdf)]
        runner = Runner(ctx).start()
        try:
            def ready():
                j = ctx.jobs.get(ids[0])
                seen.append(j.message or "")
                return j.state == "ready"
            eventually(ready, 240, "the PDF ready")
            job = ctx.jobs.get(ids[0])
        finally:
            runner.stop()
    finally:
        _stop(workers)
    assert job.searchable_at < job.ready_at
    assert any(m.startswith("searchable (pages 1–") and m.endswith(" of 4)") for m in seen), seen
    assert funcs.count("ingest.jobs.remote.task_range") == 3, funcs  # pages 2, 3 and 4, one task each
    assert conn.keys("rq:job:*") == []  # each RQ job deleted (its upload with it) once the holder took its result
    monkeypatch.setattr(Q, "extract_ranges", reads)  # the embedded path reads them itself
    local = AppContext(Settings(data_dir=tmp_path / "embedded", pdf_pages_per_range=1))
    enqueue(local, pdf)
    Runner(local).drain()
    assert _chunks(ctx) == _chunks(local) and len(_chunks(ctx)) > 5
    ctx.close()
    local.close()


def test_a_worker_killed_in_a_refinement_is_noticed_and_its_job_runs_again(tmp_path, worker_env, redis_url):
    from qdrant_client import QdrantClient
    from redis import Redis
    from rq import Queue
    from rq.registry import StartedJobRegistry

    from ingest.jobs.remote import RedisExecutor

    slow = _start_worker(worker_env, tmp_path, "slow", stuck_in_lm=True)
    other = None
    try:
        ctx = AppContext(Settings(data_dir=tmp_path / "holder", queue_url=redis_url, queue_secret=SECRET),
                         client=QdrantClient(":memory:"))
        [q] = enqueue(ctx, DOCS[:1])
        runner = Runner(ctx, RedisExecutor(ctx, lost_s=3.0)).start()
        try:
            reg = StartedJobRegistry(queue=Queue("mgrag-refine", connection=Redis.from_url(redis_url)))
            eventually(reg.get_job_ids, 120, "the refinement starting on the worker")

            def in_lm_pass():  # the worker's progress reached the holder's row: the LM pass, which never ends there
                job = ctx.jobs.get(q.job.job_id)
                return job.state == "refining" and job.stage == "LM pass"

            eventually(in_lm_pass, 120, "the refinement's LM pass showing in its row")
            os.kill(slow.pid, signal.SIGKILL)
            other = _start_worker(worker_env, tmp_path, "other")
            [job] = wait(ctx.jobs, [q.job.job_id], "ready", timeout_s=120)
        finally:
            runner.stop()
    finally:
        _stop([p for p in (slow, other) if p is not None])
    assert job.state == "ready" and job.attempts == 1 and "the worker running it was lost" in job.error
    live = ctx.catalog.live_generation()
    assert ctx.catalog.phase(live.gen, "owl.md")[1] is None
    ctx.close()


def test_a_finished_task_s_beat_outlives_it_so_the_holder_does_not_call_its_worker_lost(redis_url):
    """Between a task's return and RQ marking its job finished (the result, a long document's vectors, is stored
    first) the holder polls: the beat must still be there, or a worker that just finished a refinement would be
    called lost and its job run again (seen in the workers benchmark)."""
    from redis import Redis

    from ingest.jobs.remote import _Beat

    conn = Redis.from_url(redis_url)
    with _Beat(conn, "t", "job-1", ttl_s=30):
        assert conn.exists("t:beat:job-1")
    ttl = conn.pttl("t:beat:job-1")
    assert 25_000 < ttl <= 30_000  # left to expire, not deleted


def test_jobs_and_results_are_signed_json_never_code(tmp_path):
    """The serializer alone: what anyone who can write to Redis could put there is refused before anything of it is
    read: a pickle (RQ's default, which runs code as it loads), a signed record altered, one signed with another key,
    a signed job naming a function other than the two tasks."""
    import pickle

    from ingest.jobs.remote import ForgedPayload, SignedJSON

    ser = SignedJSON(SECRET)
    job = ["ingest.jobs.remote.task_first", None, [{"data": b"%PDF-1.4", "name": "a.pdf"}], {}]
    assert ser.loads(ser.dumps(job)) == job
    marker = tmp_path / "pwned"
    evil = pickle.dumps(type("E", (), {"__reduce__": lambda self: (os.system, (f"touch {marker}",))})())
    forged = [evil, ser.dumps(job).replace(b"a.pdf", b"b.pdf"), SignedJSON(secrets.token_hex(32)).dumps(job),
              ser.dumps(["os.system", None, [f"touch {marker}"], {}])]
    for blob in forged:
        with pytest.raises(ForgedPayload):
            ser.loads(blob)
    assert not marker.exists()
    with pytest.raises(ValueError, match="MGRAG_QUEUE_SECRET is 5 characters long"):
        SignedJSON("short")


def test_a_poisoned_job_and_a_forged_result_in_redis_run_nothing(tmp_path, worker_env, redis_url, caplog):
    """A hostile run pushed a pickled job calling os.system into the queue by hand, and a forged result for the
    holder's own job: with signed JSON the worker refuses the one (and keeps serving), the holder the other."""
    import base64
    import logging
    import pickle

    from qdrant_client import QdrantClient
    from redis import Redis
    from rq import Queue

    from ingest.jobs.remote import ForgedPayload, RedisExecutor, SignedJSON

    conn = Redis.from_url(redis_url)
    marker = tmp_path / "pwned"
    Queue("mgrag-first", connection=conn).enqueue("os.system", f"touch {marker}")  # RQ's default: pickle
    Queue("mgrag-first", connection=conn, serializer=SignedJSON(secrets.token_hex(32))).enqueue(
        "os.system", f"touch {marker}")
    # then a job of the queue's own, behind them: once the worker has run it, it has been past both forged ones
    after = Queue("mgrag-first", connection=conn, serializer=SignedJSON(SECRET)).enqueue(
        "ingest.jobs.remote.task_first", {})
    worker = _start_worker(worker_env, tmp_path, "w")
    try:
        eventually(lambda: after.get_status(refresh=True).value in ("finished", "failed"), 120,
                   "the worker running the signed job queued after the forged ones")
        assert not marker.exists() and worker.poll() is None  # nothing ran; the worker still serves
        log = (tmp_path / "w.log").read_text()
        assert "refused a queue record not signed" in log, log
    finally:
        _stop([worker])

    # the holder's side: a finished job whose result was replaced by a pickle is refused when read back
    ctx = AppContext(Settings(data_dir=tmp_path / "holder", queue_url=redis_url, queue_secret=SECRET),
                     client=QdrantClient(":memory:"))
    ex = RedisExecutor(ctx)
    rq_job = ex.queues["first"].enqueue_call("ingest.jobs.remote.task_first", args=({"x": 1},), job_id="forged-1")
    evil = pickle.dumps(type("E", (), {"__reduce__": lambda self: (os.system, (f"touch {marker}",))})())
    conn.hset(rq_job.key, mapping={"status": "finished"})  # and a result as RQ stores one, its value a pickle
    conn.xadd(f"rq:results:{rq_job.id}", {"type": 1, "worker_name": "w", "return_value": base64.b64encode(evil)})
    with caplog.at_level(logging.WARNING, logger="ingest.jobs.remote"), pytest.raises(ForgedPayload):
        rq_job.return_value(refresh=True)
    assert not marker.exists() and "refused a queue record" in caplog.text
    ctx.close()


def test_the_scale_out_queue_needs_its_secret(tmp_path, redis_url):
    from ingest.jobs.remote import RedisExecutor

    ctx = AppContext(Settings(data_dir=tmp_path / "holder", queue_url=redis_url))
    with pytest.raises(ValueError, match="MGRAG_QUEUE_SECRET"):
        RedisExecutor(ctx)
    ctx.close()


def test_a_redis_outage_is_the_queue_s_not_the_file_s(tmp_path):
    """The executor's side of a Redis outage: the call fails as QueueUnavailable (the runner waits, spending no
    attempt; tests/ingest/test_queue.py), not as an error that counts against the file."""
    from types import SimpleNamespace

    from ingest.jobs.remote import RedisExecutor
    from ingest.jobs.work import QueueUnavailable, Reporter

    proc, url = start_redis(tmp_path)
    try:
        ctx = AppContext(Settings(data_dir=tmp_path / "holder", queue_url=url, queue_secret=SECRET))
        ex = RedisExecutor(ctx, poll_s=0.05)
        proc.terminate()
        proc.wait(10)
        job = SimpleNamespace(job_id=1, name="a.md", doc_id="a.md", hash="h")
        with pytest.raises(QueueUnavailable, match="does not answer"):
            ex._run("first", "ingest.jobs.remote.task_first", job, {"x": 1}, Reporter(lambda *a: False))
        ctx.close()
    finally:
        if proc.poll() is None:
            proc.kill()
