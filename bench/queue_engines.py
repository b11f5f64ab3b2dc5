"""Redis-backed job-queue engines side by side (RQ, Huey, Dramatiq, Celery) for scale-out ingestion workers.

    pip install rq huey "dramatiq[redis]" "celery[redis]"   # in some venv (not the project's); + Debian's redis-server
    /tmp/qenv/bin/python bench/queue_engines.py [--runs 2] [--engines rq,celery] [--kill-cap 120]

It starts its own ``redis-server`` (127.0.0.1, a free port, ``--save '' --appendonly no``) and stops it at the end;
each engine is measured by a child process of its own (fresh imports, FLUSHALL before). One task module goes to a
temp dir on the workers' PYTHONPATH: ``noop(x)`` returns x; ``sleepy(seconds, tag)`` appends "<time> <pid>" to
``<marks>/<tag>.start``, sleeps, appends to ``<tag>.end``, returns tag. Workers are the engines' CLIs, each in its own
process group, one job at a time: RQ ``rq worker -w rq.worker.SimpleWorker high low`` (no fork per job); Huey
``huey_consumer -w 1 -k thread``; Dramatiq ``--processes 1 --threads 1`` (supervisor + one forked worker); Celery
``-P solo -c 1 -Q high,low``, acks_late, reject_on_worker_lost, prefetch 1. Results are read with each engine's own
blocking API (RQ XREAD, Huey notify_result BLPOP, Dramatiq Results BRPOPLPUSH, Celery pub/sub). Per engine:

1. ready/footprint (worker A alone): seconds from spawning A to the first noop result; VmRSS of its process group
   after 1 s idle.
2. strict priority (A alone): A busy on sleepy(2); 10 sleepy(0.05) to the low lane, then 1 to the high lane; the
   0-based position at which the high job started among the 11.
3. cancel (A alone): A busy on sleepy(2); a job queued behind it is cancelled/revoked with the engine's API, then a
   sentinel job runs; did the cancelled job never start?
4. worker B starts. Latency: 100 sequential noop (after 5 warm-up), enqueue -> result read, p50/p95 ms.
5. throughput: 500 noop enqueued at once; seconds until every result has been read; jobs/s.
6. kill -9: one sleepy(4) with the engine's bounded retry (max 2) and its dead-worker recovery knobs as short as it
   allows (constants below); when it starts, SIGKILL the process group of the worker running it (Dramatiq: the
   supervisor and its child; a child's death makes the supervisor exit anyway), the other worker stays up. Recorded:
   completed by the survivor?, seconds from the kill to its end mark (cap --kill-cap), how many times it started, the
   engine's status for the job meanwhile (Dramatiq has no status API: its Redis keys are inspected).

Results: bench/results/queue_engines.json (every run); a Markdown table (runs separated by ';') is printed. An engine
whose library does not import is reported as skipped. Nothing from the project is imported.
"""
from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

LOG = logging.getLogger("queue_engines")
RESULTS = Path(__file__).resolve().parent / "results" / "queue_engines.json"
PY = sys.executable
ENGINES = ("rq", "huey", "dramatiq", "celery")
RQ_KILL_JOB_TIMEOUT = 6  # s; a SimpleWorker's started-registry entry expires job_timeout + 60 s after the job starts
DQ_HEARTBEAT_MS = 5000  # a live Dramatiq worker heartbeats on every fetch, at least every worker_timeout (1 s)
CELERY_VISIBILITY_S = 10  # must exceed the longest job, or a running job is handed to another worker too

FILES = {
    "benchtasks.py": '''import os, time
def _mark(tag, kind):
    with open(os.path.join(os.environ["QBENCH_MARKS"], f"{tag}.{kind}"), "a") as f:
        f.write(f"{time.time():.6f} {os.getpid()}\\n")
def noop(x):
    return x
def sleepy(seconds, tag):
    _mark(tag, "start")
    time.sleep(seconds)
    _mark(tag, "end")
    return tag
''',
    "qb_rq.py": '''import os
from redis import Redis
from rq import Queue, Retry
conn = Redis.from_url(os.environ["QBENCH_URL"])
queues = {n: Queue(n, connection=conn) for n in ("high", "low")}
''',
    "qb_huey.py": '''import os, benchtasks
from huey import PriorityRedisHuey
huey = PriorityRedisHuey("qbench", url=os.environ["QBENCH_URL"], notify_result=True)
noop = huey.task(name="noop")(benchtasks.noop)
sleepy = huey.task(name="sleepy", retries=2)(benchtasks.sleepy)
''',
    "qb_dramatiq.py": f'''import os, dramatiq, benchtasks
from dramatiq.brokers.redis import RedisBroker
from dramatiq.results import Results, ResultMissing
from dramatiq.results.backends.redis import RedisBackend
URL = os.environ["QBENCH_URL"]
broker = RedisBroker(url=URL, heartbeat_timeout={DQ_HEARTBEAT_MS}, dead_message_ttl=60000, maintenance_chance=1000000)
broker.add_middleware(Results(backend=RedisBackend(url=URL)))
dramatiq.set_broker(broker)
def _actor(name, queue, priority, retries):
    return dramatiq.actor(getattr(benchtasks, name.split("_")[0]), actor_name=name, queue_name=queue,
                          priority=priority, store_results=True, max_retries=retries)
noop, sleepy = _actor("noop", "low", 10, 0), _actor("sleepy", "low", 10, 2)
sleepy_hi = _actor("sleepy_hi", "high", 0, 2)
''',
    "qb_celery.py": f'''import os, benchtasks
from celery import Celery
URL = os.environ["QBENCH_URL"]
app = Celery("qbench", broker=URL, backend=URL)
app.conf.update(task_acks_late=True, task_reject_on_worker_lost=True, task_track_started=True,
                worker_prefetch_multiplier=1, task_default_queue="low", broker_connection_retry_on_startup=True,
                broker_transport_options=dict(visibility_timeout={CELERY_VISIBILITY_S}, unacked_restore_interval=1,
                                              unacked_restore_throttle=1, queue_order_strategy="priority"))
noop = app.task(name="noop")(benchtasks.noop)
sleepy = app.task(name="sleepy", max_retries=2)(benchtasks.sleepy)
''',
}


class Engine:
    """Producer side of one engine: send a task, read its result, its status, cancel it; the worker command line."""
    name = worker = ""
    cmd: list[str] = []
    settings: dict = {}

    def __init__(self, url: str):
        self.url, self.m = url, importlib.import_module(f"qb_{self.name}")

    def argv(self, idx: int) -> list[str]:
        return [PY, *(a.format(url=self.url, idx=idx) for a in self.cmd)]

    def cancel(self, h) -> str:
        raise NotImplementedError(f"{self.name} has no API to cancel a queued job")


class RQ(Engine):
    name, worker = "rq", "rq worker -w rq.worker.SimpleWorker high low (CLI; the job runs in the worker process)"
    cmd = ["-m", "rq.cli", "worker", "-w", "rq.worker.SimpleWorker", "--url", "{url}", "--worker-ttl", "16",
           "--maintenance-interval", "1", "high", "low"]
    settings = {"worker_ttl_s": 16, "maintenance_interval_s": 1, "kill_job_timeout_s": RQ_KILL_JOB_TIMEOUT,
                "retry": "Retry(max=2)", "priority": "worker lists queues high before low"}

    def send(self, task, *args, lane="low", kill=False):
        kw = {"timeout": RQ_KILL_JOB_TIMEOUT, "retry": self.m.Retry(max=2)} if kill else {}
        return self.m.queues[lane].enqueue_call(f"benchtasks.{task}", args=args, **kw)

    def result(self, h, timeout):
        r = h.latest_result(timeout=max(1, round(timeout)))
        if r is None or r.type != r.Type.SUCCESSFUL:
            raise RuntimeError(f"job {h.id}: no successful result within {timeout} s ({r and r.exc_string})")
        return r.return_value

    def status(self, h):
        return h.get_status(refresh=True).value

    def cancel(self, h):
        h.cancel()
        return self.status(h)


class Huey(Engine):
    name, worker = "huey", "huey_consumer qb_huey.huey -w 1 -k thread (one process: scheduler + 1 worker thread)"
    cmd = ["-m", "huey.bin.huey_consumer", "qb_huey.huey", "-w", "1", "-k", "thread"]
    settings = {"storage": "PriorityRedisHuey(notify_result=True)", "retries": 2,
                "priority": "priority=10 (high) vs 0 (low) in one sorted set, BZPOPMIN",
                "recovery_knobs": "none: a task is popped from Redis, no ack / in-flight record"}

    def send(self, task, *args, lane="low", kill=False):
        return getattr(self.m, task)(*args, priority=10 if lane == "high" else 0)

    def result(self, h, timeout):
        return h.get(blocking=True, timeout=timeout)

    def status(self, h):  # no per-task status: revoke flag, queue membership, result presence
        queued = any(t.id == h.id for t in self.m.huey.pending())
        return ("revoked" if h.is_revoked() else "queued" if queued else
                "result ready" if h.is_ready() else "not queued, no result")

    def cancel(self, h):
        h.revoke()
        return self.status(h)


class Dramatiq(Engine):
    name, worker = "dramatiq", "dramatiq qb_dramatiq --processes 1 --threads 1 (supervisor + 1 forked worker)"
    cmd = ["-m", "dramatiq", "qb_dramatiq", "--processes", "1", "--threads", "1"]
    settings = {"heartbeat_timeout_ms": DQ_HEARTBEAT_MS, "maintenance_chance": "1000000/1000000 (every command)",
                "dead_message_ttl_ms": 60000, "max_retries": 2, "results": "Results(RedisBackend)",
                "priority": "actor sleepy_hi on queue 'high' priority 0; noop, sleepy on 'low' priority 10"}

    def send(self, task, *args, lane="low", kill=False):
        return getattr(self.m, task + ("_hi" if lane == "high" else "")).send(*args)

    def result(self, h, timeout):
        return h.get_result(block=True, timeout=int(timeout * 1000))

    def status(self, h):  # no status API: the broker's Redis keys
        r, rid, pre, suf = self.m.broker.client, h.options["redis_message_id"], "dramatiq:__acks__.", f".{h.queue_name}"
        if rid.encode() in r.lrange(f"dramatiq:{h.queue_name}", 0, -1):
            return "queued"
        for key in (k for k in r.scan_iter(match=f"{pre}*{suf}") if r.sismember(k, rid)):
            beat = r.zscore("dramatiq:__heartbeats__", key.decode()[len(pre):-len(suf)]) or 0
            return f"unacked by a {'live' if time.time() * 1000 - beat < DQ_HEARTBEAT_MS else 'dead'} worker"
        try:
            h.get_result()
        except self.m.ResultMissing:
            return "no trace"
        return "result stored"


class Celery(Engine):
    name, worker = "celery", "celery -A qb_celery worker -P solo -c 1 -Q high,low (one process)"
    cmd = ["-m", "celery", "-A", "qb_celery", "worker", "-P", "solo", "-c", "1", "-Q", "high,low", "-n", "w{idx}@%h",
           "-l", "INFO"]
    settings = {"task_acks_late": True, "task_reject_on_worker_lost": True, "task_track_started": True,
                "worker_prefetch_multiplier": 1, "visibility_timeout_s": CELERY_VISIBILITY_S,
                "unacked_restore_interval_s": 1, "unacked_restore_throttle": 1,
                "queue_order_strategy": "priority", "max_retries": 2, "priority": "-Q high,low"}

    def send(self, task, *args, lane="low", kill=False):
        return getattr(self.m, task).apply_async(args, queue=lane)

    def result(self, h, timeout):
        return h.get(timeout=timeout)

    def status(self, h):
        return self.m.app.AsyncResult(h.id).state

    def cancel(self, h):
        h.revoke()
        return self.status(h)


def group_pids(pgid: int) -> list[int]:
    pids = []
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and int((d / "stat").read_text().rsplit(")", 1)[1].split()[2]) == pgid:
                pids.append(int(d.name))
        except (OSError, IndexError, ValueError):
            pass
    return pids


def rss_mb(pids: list[int]) -> float:
    kb = 0
    for pid in pids:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
        kb += next(int(ln.split()[1]) for ln in lines if ln.startswith("VmRSS:"))
    return kb / 1024


class Worker:
    """An engine's worker CLI in its own process group (so the whole worker can be SIGKILLed at once)."""

    def __init__(self, argv: list[str], env: dict, cwd: Path, log: Path):
        self.log = log
        with open(log, "wb") as f:
            self.p = subprocess.Popen(argv, env=env, cwd=cwd, stdout=f, stderr=subprocess.STDOUT,
                                      start_new_session=True)
        self.pid = self.p.pid

    def stop(self):
        for sig, wait in ((signal.SIGTERM, 8), (signal.SIGKILL, 5), (signal.SIGKILL, 0)):  # last: leftover children
            try:
                os.killpg(self.pid, sig)
                self.p.wait(wait)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass

    def tail(self, n=15) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])


def marks(d: Path, tag: str, kind: str) -> list[tuple[float, int]]:
    p = d / f"{tag}.{kind}"
    lines = p.read_text().split("\n") if p.exists() else []
    return [(float(ln.split()[0]), int(ln.split()[1])) for ln in lines if ln.strip()]


def wait_for(pred, timeout: float, step: float = 0.02):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if v := pred():
            return v
        time.sleep(step)
    return None


def guarded(fn, *a) -> dict:
    try:
        return fn(*a)
    except Exception as e:  # recorded in the results, not hidden
        LOG.exception("%s failed", fn.__name__)
        return {"error": f"{type(e).__name__}: {e}"}


def occupy(eng: Engine, d: Path, tag: str):
    eng.send("sleepy", 2, tag)
    if not wait_for(lambda: marks(d, tag, "start"), 30):
        raise TimeoutError(f"{tag} never started")


def priority(eng: Engine, d: Path) -> dict:
    occupy(eng, d, "prio-busy")
    tags = [f"prio-lo{i}" for i in range(10)] + ["prio-hi"]
    for t in tags:
        eng.send("sleepy", 0.05, t, lane="high" if t == "prio-hi" else "low")
    if not wait_for(lambda: all(marks(d, t, "end") for t in tags), 60, 0.1):
        raise TimeoutError("the 11 jobs did not all run within 60 s")
    order = sorted(tags, key=lambda t: marks(d, t, "start")[0][0])
    return {"high_position": order.index("prio-hi"), "order": [t[5:] for t in order]}


def cancel(eng: Engine, d: Path) -> dict:
    occupy(eng, d, "cancel-busy")
    h = eng.send("sleepy", 0.05, "cancel-victim")
    try:
        st = eng.cancel(h)
    except NotImplementedError as e:
        wait_for(lambda: marks(d, "cancel-victim", "end"), 30, 0.1)  # let it drain before the next test
        return {"supported": False, "note": str(e), "victim_ran": bool(marks(d, "cancel-victim", "start"))}
    eng.send("sleepy", 0.05, "cancel-after")
    if not wait_for(lambda: marks(d, "cancel-after", "end"), 30, 0.05):
        raise TimeoutError("the sentinel job after the cancelled one never ran")
    time.sleep(0.5)
    return {"supported": True, "never_ran": not marks(d, "cancel-victim", "start"), "status_after_cancel": st,
            "status_at_end": eng.status(h)}


def latency(eng: Engine, n: int) -> dict:
    for i in range(5):
        eng.result(eng.send("noop", i), 30)
    lat = []
    for i in range(n):
        t = time.perf_counter()
        if eng.result(eng.send("noop", i), 30) != i:
            raise ValueError(f"noop({i}) returned something else")
        lat.append((time.perf_counter() - t) * 1000)
    return {"n": n, "p50_ms": statistics.median(lat), "p95_ms": statistics.quantiles(lat, n=20)[18],
            "max_ms": max(lat)}


def throughput(eng: Engine, n: int) -> dict:
    t0 = time.perf_counter()
    hs = [eng.send("noop", i) for i in range(n)]
    t_enq = time.perf_counter() - t0
    if [eng.result(h, 120) for h in hs] != list(range(n)):
        raise ValueError("wrong results")
    total = time.perf_counter() - t0
    return {"n": n, "enqueue_s": t_enq, "total_s": total, "jobs_per_s": n / total}


def kill(eng: Engine, d: Path, workers: list[Worker], cap: float) -> dict:
    h = eng.send("sleepy", 4, "kill", kill=True)
    if not (first := wait_for(lambda: marks(d, "kill", "start"), 30)):
        raise TimeoutError("sleepy(4) never started")
    victim = next(w for w in workers if first[0][1] in group_pids(w.pid))
    survivor = next(w for w in workers if w is not victim)
    trail = [(0.0, eng.status(h))]
    t_kill = time.time()
    os.killpg(victim.pid, signal.SIGKILL)
    victim.p.wait()
    LOG.info("%s: SIGKILLed worker group %d %.2f s after the job started", eng.name, victim.pid, t_kill - first[0][0])
    ends: list = []
    while time.time() - t_kill < cap and not ends:
        try:
            s = eng.status(h)
        except Exception as e:
            s = f"error: {type(e).__name__}: {e}"
        if s != trail[-1][1]:
            trail.append((round(time.time() - t_kill, 1), s))
        ends = marks(d, "kill", "end")
        time.sleep(0.25)
    res = {"completed": bool(ends), "starts": len(marks(d, "kill", "start")), "cap_s": cap,
           "started_to_kill_s": t_kill - first[0][0], "status_trail": trail}
    if ends:
        res.update(kill_to_done_s=ends[0][0] - t_kill, by_survivor=ends[0][1] in group_pids(survivor.pid))
        res["result"] = guarded(eng.result, h, 10)
        res["status_final"] = eng.status(h)
    return res


def measure(eng: Engine, work: Path, d: Path, args) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(work), os.environ.get("PYTHONPATH")])))
    out, workers = {}, []

    def start(idx):
        workers.append(Worker(eng.argv(idx), env, work, work / f"worker{idx}.log"))
        LOG.info("%s: worker %d started, pid %d", eng.name, idx, workers[-1].pid)
        return workers[-1]

    try:
        t0 = time.perf_counter()
        a = start(0)
        if eng.result(eng.send("noop", -1), 120) != -1:
            raise ValueError("noop(-1) returned something else")
        out["ready_s"] = time.perf_counter() - t0
        time.sleep(1.0)
        out["procs"], out["idle_rss_mb"] = len(group_pids(a.pid)), rss_mb(group_pids(a.pid))
        out["priority"] = guarded(priority, eng, d)
        out["cancel"] = guarded(cancel, eng, d)
        b = start(1)
        time.sleep(max(3.0, 2 * out["ready_s"]))  # B has no way to announce readiness common to all engines
        if b.p.poll() is not None:
            raise RuntimeError(f"second worker exited: {b.tail()}")
        out["latency"] = guarded(latency, eng, args.latency_n)
        out["throughput"] = guarded(throughput, eng, args.throughput_n)
        out["kill"] = guarded(kill, eng, d, workers, args.kill_cap)
    except Exception as e:
        LOG.exception("%s: measurement aborted", eng.name)
        out["error"] = f"{type(e).__name__}: {e}"
    finally:
        for w in workers:
            if w.p.poll() not in (None, 0, -signal.SIGKILL):
                LOG.warning("%s worker %d exited %s:\n%s", eng.name, w.pid, w.p.returncode, w.tail())
            w.stop()
    return out


def child(args) -> int:
    work, res = Path(args.workdir), {"engine": args.child}
    (d := work / "marks").mkdir(parents=True)
    for name, src in FILES.items():
        (work / name).write_text(src)
    sys.path.insert(0, str(work))
    os.environ.update(QBENCH_URL=args.url, QBENCH_MARKS=str(d))
    try:
        importlib.import_module(args.child)
        res["version"] = metadata.version(args.child)
    except Exception as e:
        res["skipped"] = f"{type(e).__name__}: {e}"
    if "skipped" not in res:
        try:
            eng = {c.name: c for c in (RQ, Huey, Dramatiq, Celery)}[args.child](args.url)
            res.update(worker=eng.worker, settings=eng.settings, **measure(eng, work, d, args))
        except Exception as e:
            LOG.exception("%s: setup failed", args.child)
            res["error"] = f"{type(e).__name__}: {e}"
    Path(args.out).write_text(json.dumps(res, indent=1, default=str))
    return 0


def fmt_kill(k: dict) -> str:
    if not k["completed"]:
        return f"no: lost ({k['starts']} start, waited {k['cap_s']:.0f} s)"
    return f"{'yes' if k['by_survivor'] else 'not by survivor'}, {k['kill_to_done_s']:.1f} s ({k['starts']} starts)"


def fmt_cancel(c: dict) -> str:
    if not c["supported"]:
        return f"no API (job {'ran' if c['victim_ran'] else 'did not run'})"
    return f"{'yes' if c['never_ran'] else 'NO, it ran'} ({c['status_after_cancel']} -> {c['status_at_end']})"


ROWS = [
    ("version", lambda r: r["version"]),
    ("ready: spawn -> first noop served, s", lambda r: f"{r['ready_s']:.2f}"),
    ("idle worker RSS MB (processes)", lambda r: f"{r['idle_rss_mb']:.0f} ({r['procs']})"),
    ("latency p50 / p95 ms (sequential noop)", lambda r: "{p50_ms:.1f} / {p95_ms:.1f}".format(**r["latency"])),
    ("throughput jobs/s (noop, 2 workers)", lambda r: f"{r['throughput']['jobs_per_s']:.0f}"),
    ("kill -9 mid-job: done by survivor?, kill -> done", lambda r: fmt_kill(r["kill"])),
    ("strict priority: position of the high job (0 = first)", lambda r: str(r["priority"]["high_position"])),
    ("cancel before start: never ran? (status)", lambda r: fmt_cancel(r["cancel"])),
]


def cell(r: dict, fn) -> str:
    if "skipped" in r:
        return "skipped"
    try:
        return fn(r)
    except (KeyError, TypeError):  # a failed measurement: show its error
        err = next((v["error"] for v in [*r.values(), r] if isinstance(v, dict) and "error" in v), "missing")
        return f"error: {err[:80]}"


def table(runs: list[dict], engines: list[str]) -> str:
    lines = ["| metric | " + " | ".join(engines) + " |", "|---" * (len(engines) + 1) + "|"]
    for label, fn in ROWS:
        lines.append(f"| {label} | " + " | ".join(" ; ".join(cell(run[e], fn) for run in runs) for e in engines) + " |")
    lines.append("")
    for e in engines:
        for i, run in enumerate(runs):
            if trail := run[e].get("kill", {}).get("status_trail"):
                lines.append(f"- {e} run {i + 1}, kill -9 status: " + ", ".join(f"+{t:g} s {s}" for t, s in trail))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engines", default=",".join(ENGINES), help="comma-separated subset of " + ",".join(ENGINES))
    ap.add_argument("--runs", type=int, default=1, help="repeat the whole measurement (stability check)")
    ap.add_argument("--latency-n", type=int, default=100)
    ap.add_argument("--throughput-n", type=int, default=500)
    ap.add_argument("--kill-cap", type=float, default=120.0, help="seconds to wait for a killed job to complete")
    ap.add_argument("--redis-server", default="/usr/bin/redis-server")
    ap.add_argument("--out", default=str(RESULTS))
    for hidden in ("--child", "--url", "--workdir"):  # the parent runs each engine as `--child ENGINE`
        ap.add_argument(hidden, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.child:
        return child(args)
    engines = [e for e in args.engines.split(",") if e]
    if unknown := set(engines) - set(ENGINES):
        ap.error(f"unknown engines: {sorted(unknown)}")
    import redis  # every engine here depends on redis-py

    tmp, port, load0 = Path(tempfile.mkdtemp(prefix="qbench-")), 0, os.getloadavg()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([args.redis_server, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no", "--dir", str(tmp), "--logfile", str(tmp / "redis.log")])
    url = f"redis://127.0.0.1:{port}/0"
    client, runs, info = redis.Redis.from_url(url), [], {}

    def up() -> bool:
        try:
            return client.ping()
        except redis.ConnectionError:
            return False

    try:
        if not wait_for(up, 10, 0.1):
            raise RuntimeError(f"redis-server did not answer on port {port}")
        info = client.info("server")
        LOG.info("redis-server %s on port %d, work dir %s", info["redis_version"], port, tmp)
        for run in range(args.runs):
            runs.append({})
            for e in engines:
                client.flushall()
                LOG.info("run %d/%d: %s", run + 1, args.runs, e)
                out = tmp / f"run{run}-{e}.json"
                cmd = [PY, __file__, "--child", e, "--url", url, "--workdir", str(tmp / f"run{run}-{e}"), "--out",
                       str(out), "--latency-n", str(args.latency_n), "--throughput-n", str(args.throughput_n),
                       "--kill-cap", str(args.kill_cap)]
                try:
                    rc = subprocess.run(cmd, timeout=1800).returncode
                except subprocess.TimeoutExpired:
                    rc = "timeout (1800 s)"
                runs[-1][e] = json.loads(out.read_text()) if out.exists() else {"error": f"child exited {rc}"}
    finally:
        server.terminate()
        server.wait(10)
    res = {"generated": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "redis_server": info.get("redis_version"),
           "machine": {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count(),
                       "loadavg_start": load0, "loadavg_end": os.getloadavg()},
           "config": {k: v for k, v in vars(args).items() if k not in ("child", "url", "workdir")}, "runs": runs}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=1, default=str) + "\n")
    LOG.info("wrote %s (worker logs and marks under %s)", args.out, tmp)
    print(table(runs, engines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
