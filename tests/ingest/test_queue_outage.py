"""`mgrag worker` outlives a Redis outage (issue 47): Redis stops while the worker is in the middle of a job (RQ's own
worker then quit for good when it went to store the result), comes back on the same address, and the next job is run
by the same worker process, which said once that Redis was away and once that it was back."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import threading
from types import SimpleNamespace

from app.context import AppContext
from core.settings import Settings
from tests.ingest.conftest import start_redis
from tests.ingest.test_durability import ROOT
from tests.ingest.test_remote import SECRET
from tests.sync import eventually

SLOW_S = 2.0  # the worker's reading of a file takes this long, so that Redis can stop in the middle of a job


def _redis_on(port: int, d) -> subprocess.Popen:
    exe = shutil.which("redis-server") or "/usr/bin/redis-server"
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(d)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    from redis import Redis

    def up():
        try:
            return Redis(host="127.0.0.1", port=port).ping()
        except Exception:
            return False
    eventually(up, 30, "redis-server answering", poll_s=0.05)
    return proc


def _worker(tmp_path, url) -> subprocess.Popen:
    code = ("import sys, time\n"
            "import ingest.jobs.remote as R\n"
            "real = R.extract\n"
            f"R.extract = lambda *a, **k: time.sleep({SLOW_S}) or real(*a, **k)\n"
            "from cli.main import main\n"
            f"sys.exit(main(['--data-dir', {str(tmp_path / 'worker')!r}, 'worker']))\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MGRAG_QUEUE_URL": url, "MGRAG_QUEUE_SECRET": SECRET,
           "MGRAG_EMBEDDER": "hashing"}
    log = open(tmp_path / "worker.log", "w")
    return subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)


def test_a_worker_waits_through_a_redis_outage_and_serves_again(tmp_path):
    from qdrant_client import QdrantClient
    from redis import Redis

    from ingest.jobs.queue import plan_for
    from ingest.jobs.remote import RedisExecutor
    from ingest.jobs.work import QueueUnavailable, Reporter
    from ingest.pipeline import live_generation

    redis, url = start_redis(tmp_path)
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    holder = AppContext(Settings(data_dir=tmp_path / "holder", queue_url=url, queue_secret=SECRET, embedder="hashing"),
                        client=QdrantClient(":memory:"))
    plan = plan_for(holder, live_generation(holder), None, first_pass=False)
    worker = _worker(tmp_path, url)
    log = (tmp_path / "worker.log").read_text

    def first(n: int, text: str, out: dict) -> threading.Thread:
        """The holder hands a document to the workers (a fresh executor: its own connections to this Redis)."""
        def run():
            ex = RedisExecutor(holder, poll_s=0.05)
            job = SimpleNamespace(job_id=n, name=f"d{n}.md", doc_id=f"d{n}.md", owner=None, two_phase=0,
                                  hash=hashlib.sha256(text.encode()).hexdigest())
            try:
                out["doc"], _ = ex.first(job, text.encode(), plan, Reporter(lambda *_: False))
            except Exception as e:
                out["error"] = e
            finally:
                ex.close()
        t = threading.Thread(target=run)
        t.start()
        return t

    try:
        before, after = {}, {}
        t = first(1, "The ferry leaves at nine.\n\n" * 20, before)
        eventually(lambda: Redis.from_url(url).keys("mgrag:beat:*"), 60, "the worker in the middle of the job")
        redis.terminate()
        redis.wait(10)
        t.join(60)
        assert isinstance(before.get("error"), QueueUnavailable)  # the holder's side: the queue's, not the file's
        eventually(lambda: "does not answer" in log() or worker.poll() is not None, 60, "the worker seeing the outage")
        assert worker.poll() is None, log()[-3000:]  # it waits instead of exiting
        redis = _redis_on(port, tmp_path)  # back, on the same address (and empty: no persistence)
        text = "The harbour fee is 40 euros a night.\n\n" * 20
        first(2, text, after).join(120)
        assert after.get("doc") is not None and after["doc"].text == text, (after, log()[-3000:])
        said = log()
        assert said.count("does not answer") == 1 and said.count("answers again") == 1, said[-3000:]
        assert "Traceback" not in said, said[-3000:]
    finally:
        if worker.poll() is None:
            worker.terminate()
            worker.wait(20)
        if redis.poll() is None:
            redis.terminate()
            redis.wait(10)
        holder.close()
