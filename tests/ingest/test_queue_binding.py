"""Scale-out queue under attack by someone with the Redis password but not the queue secret (issue 47): a signed job
or result is bound to the RQ job it was made for. Moved onto another user's job, copied to new ids, pushed again, or
a result copied onto another job: nothing is computed under another job's name, nothing runs twice, and the holder
writes nothing it did not ask for. A real redis-server (as tests/ingest/test_remote.py) and a worker in burst mode in
this process."""
from __future__ import annotations

import hashlib
import signal
import threading
from types import SimpleNamespace

import pytest

from app.context import AppContext
from core.settings import Settings
from ingest.jobs.queue import Runner, enqueue
from tests.ingest.test_remote import SECRET
from tests.sync import eventually

ALICE = ("Alice's private note. The biopsy result is benign; tell nobody at work about the zebrafinch plan.\n\n" * 8)
BOB = "Bob's shopping list. Apples, bread and lamp oil for the cabin by the lake.\n\n" * 8


@pytest.fixture
def conn(redis_url):
    from redis import Redis

    c = Redis.from_url(redis_url)
    c.flushall()
    return c


def _settings(d, url) -> Settings:
    return Settings(data_dir=d, queue_url=url, queue_secret=SECRET, embedder="hashing")


def _holder(tmp_path, url) -> AppContext:
    from qdrant_client import QdrantClient

    return AppContext(_settings(tmp_path / "holder", url), client=QdrantClient(":memory:"))


def _burst(worker_ctx) -> None:
    """`mgrag worker --until-idle` in this thread: every job queued now, then back (RQ's signal handlers undone)."""
    from ingest.jobs.remote import run_worker

    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        run_worker(worker_ctx, burst=True)
    finally:
        for s, h in saved.items():
            signal.signal(s, h)


def _queued(conn, lane: str = "first") -> dict[int, str]:
    """The RQ ids queued on a lane by the catalog's job id (``{prefix}-{job_id}-{lane}-{random}``)."""
    return {int(i.decode().split("-")[1]): i.decode() for i in conn.lrange(f"rq:queue:mgrag-{lane}", 0, -1)}


def _counting_cuts(monkeypatch) -> list:
    """The documents the worker cuts (computes) text for, in order."""
    import ingest.jobs.remote as remote

    cut_for: list = []
    real_cut = remote.cut
    monkeypatch.setattr(remote, "cut", lambda *a, **k: cut_for.append(a[2]) or real_cut(*a, **k))
    return cut_for


def _work_until_done(holder, worker, queued) -> None:
    eventually(lambda: _burst(worker) or all(holder.jobs.get(q.job.job_id).state in ("ready", "failed")
                                             for q in queued), 120, "the jobs done", poll_s=0.3)


def test_a_job_moved_onto_another_user_s_job_computes_nothing(tmp_path, conn, redis_url, caplog, monkeypatch):
    """Alice's signed job data copied onto Bob's queued job (HSET rq:job:<bob's id> data <alice's data>): the worker
    refuses it, Bob's job runs again with his own file, and Bob's document is his text, not Alice's."""
    import logging

    cut_for = _counting_cuts(monkeypatch)
    holder = _holder(tmp_path, redis_url)
    worker = AppContext(_settings(tmp_path / "worker", redis_url))
    [alice] = enqueue(holder, [("notes.md", ALICE.encode())], owner="alice")
    [bob] = enqueue(holder, [("list.md", BOB.encode())], owner="bob")
    runner = Runner(holder).start()
    try:
        queued = eventually(lambda: len(_queued(conn)) == 2 and _queued(conn), 60, "both jobs handed to Redis")
        alice_rq, bob_rq = queued[alice.job.job_id], queued[bob.job.job_id]
        conn.hset(f"rq:job:{bob_rq}", "data", conn.hget(f"rq:job:{alice_rq}", "data"))
        with caplog.at_level(logging.WARNING, logger="ingest.jobs.remote"):
            _work_until_done(holder, worker, [alice, bob])
        a_job, b_job = holder.jobs.get(alice.job.job_id), holder.jobs.get(bob.job.job_id)
        assert (a_job.state, b_job.state) == ("ready", "ready"), (a_job.error, b_job.error)
        assert holder.store.text(b_job.hash) == BOB and holder.store.text(a_job.hash) == ALICE
        live = holder.catalog.live_generation()
        bob_chunks = [p.payload["text"] for lv in range(live.n_levels) for p in holder.index.points(live.gen, lv)
                      if p.payload["doc_id"] == b_job.doc_id]
        assert bob_chunks and not any("zebrafinch" in t or "biopsy" in t for t in bob_chunks)
        assert f"refused RQ job {bob_rq}" in caplog.text and "signed for RQ job" in caplog.text  # then run again
        assert cut_for.count(b_job.doc_id) == 1  # computed once: with his own file
    finally:
        runner.stop()
        holder.close()
        worker.close()


def test_a_finished_job_copied_to_new_ids_or_pushed_again_computes_nothing(tmp_path, conn, redis_url, caplog,
                                                                           monkeypatch):
    """Alice's job as it sat in the queue, kept by the attacker: once it has run, copied to three new ids and pushed,
    and pushed again under its own id: the worker takes all four and computes none."""
    import logging

    cut_for = _counting_cuts(monkeypatch)
    holder = _holder(tmp_path, redis_url)
    worker = AppContext(_settings(tmp_path / "worker", redis_url))
    [alice] = enqueue(holder, [("notes.md", ALICE.encode())], owner="alice")
    runner = Runner(holder).start()
    try:
        alice_rq = eventually(lambda: _queued(conn).get(alice.job.job_id), 60, "the job handed to Redis")
        kept = conn.hgetall(f"rq:job:{alice_rq}")
        _work_until_done(holder, worker, [alice])
        assert holder.jobs.get(alice.job.job_id).state == "ready" and cut_for == [alice.job.doc_id]
        for rq_id in ("mgrag-91-first-replay1", "mgrag-92-first-replay2", "mgrag-93-first-replay3", alice_rq):
            conn.delete(f"rq:job:{rq_id}")
            conn.hset(f"rq:job:{rq_id}", mapping=kept)
            conn.rpush("rq:queue:mgrag-first", rq_id)
        with caplog.at_level(logging.WARNING, logger="ingest.jobs.remote"):
            _burst(worker)
        assert conn.llen("rq:queue:mgrag-first") == 0  # the worker took all four
        assert cut_for == [alice.job.doc_id]  # and computed none of them
        assert caplog.text.count("refused RQ job") == 4 and "has run already (a replay)" in caplog.text
    finally:
        runner.stop()
        holder.close()
        worker.close()


def test_a_finished_result_copied_onto_another_job_is_refused_by_the_holder(tmp_path, conn, redis_url):
    """Alice's finished job's signed result copied onto Bob's queued job (its result stream, its status set to
    finished): the holder refuses it instead of taking Alice's text for Bob's document."""
    from ingest.jobs.queue import plan_for
    from ingest.jobs.remote import ForgedPayload, RedisExecutor
    from ingest.jobs.work import Reporter
    from ingest.pipeline import live_generation

    holder = _holder(tmp_path, redis_url)
    worker = AppContext(_settings(tmp_path / "worker", redis_url))
    ex = RedisExecutor(holder, poll_s=0.05)
    plan = plan_for(holder, live_generation(holder), None, first_pass=False)

    def job(job_id, name, owner, text):
        return SimpleNamespace(job_id=job_id, name=name, doc_id=name, owner=owner, two_phase=0,
                               hash=hashlib.sha256(text.encode()).hexdigest())

    def run(j, text, sink, out):
        try:
            out["doc"], out["cut"] = ex.first(j, text.encode(), plan, Reporter(sink))
        except Exception as e:  # what the holder's runner would count as a failed attempt
            out["error"] = e

    gate, a_out, b_out = threading.Event(), {}, {}
    # Alice's holder waits in its first progress report, so that her finished result stays in Redis to be copied
    a = threading.Thread(target=run, args=(job(1, "notes.md", "alice", ALICE), ALICE,
                                           lambda *_: not gate.wait(60), a_out))
    a.start()
    try:
        alice_rq = eventually(lambda: _queued(conn).get(1), 60, "Alice's job handed to Redis")
        _burst(worker)
        alice_result = eventually(lambda: conn.xrange(f"rq:results:{alice_rq}"), 30, "Alice's result in Redis")
    finally:
        gate.set()
        a.join(60)
    assert ALICE in a_out["doc"].text  # her own result is hers

    b = threading.Thread(target=run, args=(job(2, "list.md", "bob", BOB), BOB, lambda *_: False, b_out))
    b.start()
    bob_rq = eventually(lambda: _queued(conn).get(2), 60, "Bob's job handed to Redis")
    conn.lrem("rq:queue:mgrag-first", 0, bob_rq)
    _, fields = alice_result[-1]
    conn.xadd(f"rq:results:{bob_rq}", fields)
    conn.hset(f"rq:job:{bob_rq}", "status", "finished")
    b.join(60)
    assert "doc" not in b_out, b_out["doc"].text[:80]  # Alice's text did not come back as Bob's document
    assert isinstance(b_out.get("error"), ForgedPayload) and "not this job's" in str(b_out["error"])
    ex.close()
    holder.close()
    worker.close()


def test_a_worker_checks_the_binding_before_it_computes(conn):
    """The worker's checks alone: a payload runs only as the RQ job, queue and function it was signed for, with the
    content it was signed with, and only once."""
    import time

    from ingest.jobs.remote import _refusal, payload_hash

    payload = {"prefix": "mgrag", "doc_id": "a.md", "data": b"%PDF-1.4 alice"}
    payload["bind"] = {"rq_id": "mgrag-1-first-ab", "queue": "mgrag-first", "func": "ingest.jobs.remote.task_first",
                       "doc_id": "a.md", "owner": "alice", "content": payload_hash(payload), "issued": time.time()}

    def as_job(rq_id="mgrag-1-first-ab", origin="mgrag-first", func="ingest.jobs.remote.task_first"):
        return SimpleNamespace(id=rq_id, origin=origin, func_name=func, connection=conn)

    assert "signed for RQ job" in _refusal(payload, as_job(rq_id="mgrag-2-first-cd"))
    assert "signed for queue" in _refusal(payload, as_job(origin="mgrag-refine"))
    assert "signed for" in _refusal(payload, as_job(func="ingest.jobs.remote.task_refine"))
    assert "content does not match" in _refusal({**payload, "data": b"%PDF-1.4 bob"}, as_job())
    assert "issued more than" in _refusal({**payload, "bind": {**payload["bind"], "issued": 0}}, as_job())
    assert "names no RQ job" in _refusal({k: v for k, v in payload.items() if k != "bind"}, as_job())
    assert not conn.exists("mgrag:claimed:mgrag-1-first-ab")  # none of the refused ones claimed the id
    assert _refusal(payload, as_job()) is None  # the right one runs, once
    assert 0 < conn.ttl("mgrag:claimed:mgrag-1-first-ab")
    assert "has run already" in _refusal(payload, as_job())
