"""How right the upload rows' "about N left" is: each file is ingested through the product's queue (a `Runner` with
the shipped settings and models, on a fresh data dir, so the estimate starts from the built-in rates exactly as a
newcomer's first upload does), its job row read every 0.25 s, and every estimate shown compared with the time the
job really had left then.

Reported per file: the first pass's seconds, and the estimate's error at 10%, 25% and 50% of that time (shown /
true time left; 1.0 is right, 0.2 says "a fifth of what it took"), and the median absolute log-ratio over the whole
first pass. Files run one after another (one queue, nothing else on it); ``--warm`` runs them twice on one data
dir, the second time with the rates the first run measured (what a returning user sees).

    python bench/eta_accuracy.py --files DOCS/"2023 Q3 AAPL.pdf" REPORTS/2016-annual-performance-report.pdf \
        --out bench/results/eta_accuracy.json

``--queued``: how right the queued rows' "starts in about N" is (issue 48). All the files are queued at once, so that
all but the first ``ingest_workers`` wait; every waiting row is read every 0.5 s and each start estimate it shows
(:func:`ingest.jobs.queue.starts_in`, what the row's text says) compared with the time until that job really
started (its row's ``started``). Beside it, on the same polls, the estimate as it was before issue 48
(:func:`old_starts_in`), so one run measures both. Once for the shared library (the CLI's files, on every worker)
and once for a browser user (on the workers one user may use), each on a fresh data dir, ``--rounds`` times.
Reported per file and overall: the median |log(shown / true)| (0.69: a factor of 2).

    python bench/eta_accuracy.py --queued --files DOCS/"2023 Q3 AAPL.pdf" DOCS/"2023 Q3 NVDA.pdf" \
        DOCS/"2022 Q3 INTC.pdf" DOCS/"2023 Q3 MSFT.pdf" REPORTS/2016-annual-performance-report.pdf \
        --out bench/results/eta_accuracy_queued.json
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import tempfile
import time
from pathlib import Path

import common as B  # noqa: F401  (project root on sys.path, offline flags)


def watch(ctx, job_id: int, poll_s: float = 0.25) -> list[tuple[float, float | None, str]]:
    """(seconds since queued, eta shown, stage) of every poll until the job is searchable or ended."""
    from ingest.jobs.queue import reached

    t0, seen = time.monotonic(), []
    while True:
        j = ctx.jobs.get(job_id)
        seen.append((time.monotonic() - t0, j.eta_s if j.state == "extracting" else None, j.stage or j.state))
        if reached(j, "searchable"):
            return seen
        time.sleep(poll_s)


def errors(seen: list[tuple[float, float | None, str]]) -> dict:
    total = seen[-1][0]
    shown = [(t, eta) for t, eta, _ in seen if eta is not None and t < total]

    def at(frac: float) -> float | None:
        cands = [(t, eta) for t, eta in shown if t >= frac * total]
        if not cands:
            return None
        t, eta = cands[0]
        return round(eta / max(total - t, 0.1), 2)

    logs = [abs(math.log(max(eta, 0.1) / max(total - t, 0.1))) for t, eta in shown]
    return {"seconds": round(total, 1), "ratio_at_10pct": at(0.10), "ratio_at_25pct": at(0.25),
            "ratio_at_50pct": at(0.50), "median_abs_log_ratio": round(statistics.median(logs), 3) if logs else None,
            "estimates": len(shown)}


def run(files: list[Path], data_dir: Path, rounds: int) -> list[dict]:
    from app.context import AppContext
    from core.settings import Settings
    from ingest.jobs.queue import Runner, enqueue

    ctx = AppContext(Settings(data_dir=data_dir))
    runner = Runner(ctx).start()
    rows = []
    try:
        for r in range(rounds):
            for f in files:
                name = f.name if r == 0 else f"again-{f.name}"
                data = f.read_bytes() + b"\n%% round %d\n" % (r + 1)  # new bytes: not a duplicate
                [q] = enqueue(ctx, [(name, data)])
                runner.wake()
                seen = watch(ctx, q.job.job_id)
                job = ctx.jobs.get(q.job.job_id)
                rows.append({"file": f.name, "round": r + 1, "pages": getattr(job, "pages", None), "words": job.words,
                             **errors(seen),
                             "trace": [[round(t, 2), None if e is None else round(e, 1), s] for t, e, s in seen]})
                print(json.dumps({k: v for k, v in rows[-1].items() if k != "trace"}), flush=True)
    finally:
        runner.stop()
        ctx.close()
    return rows


# -- queued rows: "starts in about N" against the time the job really started --------------------------------------
def old_starts_in(jobs, job, workers: int) -> float | None:
    """The estimate queued rows showed before issue 48 (kept here to measure it beside today's on the same run): the
    running jobs' time left, then the jobs ahead at their expected seconds (a long PDF at all its pages), each on the
    lane that frees first, as if every lane had the machine to itself."""
    from ingest.jobs.state import LANES

    with jobs.catalog._lock:
        db = jobs.catalog.db
        order = jobs._waiting(db, "first")
        running = db.execute("SELECT eta_s, name, size, words, pages, started FROM jobs WHERE state=?",
                             (LANES["first"][1],)).fetchall()
    now = time.time()
    free = sorted(eta if eta is not None else max(0.0, jobs.expected("first", n, sz, w, pg) - (now - (st or now)))
                  for eta, n, sz, w, pg, st in running)[:max(1, workers)]
    free += [0.0] * (max(1, workers) - len(free))
    for job_id, _, e in order:
        free.sort()
        if job_id == job.job_id:
            return free[0]
        free[0] += e
    return None


def watch_queue(ctx, ids: list[int], poll_s: float = 0.5) -> list[dict]:
    """Every poll until none of ``ids`` is queued: for each queued one, the estimate its row shows (the product's
    :meth:`JobStore.starts_in`, as :func:`ingest.jobs.queue.queued_text` asks it) and the old one, with the
    wall-clock time of the poll; the true start is read from the row once it started."""
    from ingest.jobs.queue import starts_in

    s = ctx.settings
    workers = s.queue_inflight if s.queue_url else s.ingest_workers
    polls = []
    while True:
        now = time.time()
        rows = [ctx.jobs.get(i) for i in ids]
        waiting = [j for j in rows if j.state == "queued"]
        if not waiting:
            return polls
        polls.append({"at": now, "rows": [{"job": j.job_id, "shown": starts_in(ctx, j),
                                           "old": old_starts_in(ctx.jobs, j, workers)} for j in waiting],
                      "running": [[j.job_id, j.eta_s] for j in rows if j.state == "extracting"]})
        time.sleep(poll_s)


def _mlr(pairs: list[tuple[float, float]]) -> float | None:
    """Median |log(shown / true)| over (shown, true) pairs, both floored at 1 s (a row shows no estimate under 5 s)."""
    logs = [abs(math.log(max(a, 1.0) / max(b, 1.0))) for a, b in pairs]
    return round(statistics.median(logs), 3) if logs else None


def queued_errors(ctx, ids: list[int], polls: list[dict]) -> list[dict]:
    """Per job that waited: its true wait, and shown / old against the time it really had until it started."""
    started = {i: ctx.jobs.get(i).started for i in ids}
    per: dict[int, dict] = {}
    for p in polls:
        for r in p["rows"]:
            true = started[r["job"]] - p["at"]
            d = per.setdefault(r["job"], {"shown": [], "old": [], "first": None})
            if d["first"] is None:
                d["first"] = {"shown": r["shown"], "old": r["old"], "true": round(true, 1)}
            if r["shown"] is not None:
                d["shown"].append((r["shown"], true))
            if r["old"] is not None:
                d["old"].append((r["old"], true))
    out = []
    for i in ids:
        if i not in per:
            continue
        j, d = ctx.jobs.get(i), per[i]
        f = d["first"]
        out.append({"file": j.name, "pages": j.pages, "size": j.size, "waited_s": round(started[i] - j.created, 1),
                    "first_shown_s": None if f["shown"] is None else round(f["shown"], 1),
                    "first_old_s": None if f["old"] is None else round(f["old"], 1), "first_true_s": f["true"],
                    "median_abs_log_ratio": _mlr(d["shown"]), "median_abs_log_ratio_old": _mlr(d["old"]),
                    "estimates": len(d["shown"])})
    return out


def run_queued(files: list[Path], data_dir: Path, rounds: int, owner: str | None) -> dict:
    """Each round enqueues all ``files`` at once for ``owner`` (None: the shared library, as ``mgrag ingest`` does;
    "browser:…": a user's uploads, which run on the workers one user may use) with new bytes each round, on one
    runner with the shipped settings, so that most of them wait; polls every waiting row until the last one started,
    then waits for the round's first passes before the next (round 2: the rates round 1 measured)."""
    from app.context import AppContext
    from core.settings import Settings
    from ingest.jobs.queue import Runner, enqueue, wait

    ctx = AppContext(Settings(data_dir=data_dir))
    runner = Runner(ctx).start()
    out_rounds = []
    try:
        for r in range(rounds):
            named = [(f.name if r == 0 else f"again-{f.name}", f.read_bytes() + b"\n%% round %d\n" % (r + 1))
                     for f in files]
            rates = ctx.jobs.get_meta("rates", {})
            ids = [q.job.job_id for q in enqueue(ctx, named, owner)]
            runner.wake()
            polls = watch_queue(ctx, ids)
            wait(ctx.jobs, ids, "searchable", timeout_s=3600)
            rows = queued_errors(ctx, ids, polls)
            for row in rows:
                print(json.dumps({"owner": owner, "round": r + 1, **row}), flush=True)
            pairs = {k: [] for k in ("shown", "old")}
            for p in polls:
                for x in p["rows"]:
                    for k in pairs:
                        if x[k] is not None:
                            pairs[k].append((x[k], ctx.jobs.get(x["job"]).started - p["at"]))
            out_rounds.append({"round": r + 1, "rates": rates,
                               "rows": rows, "median_abs_log_ratio": _mlr(pairs["shown"]),
                               "median_abs_log_ratio_old": _mlr(pairs["old"]), "estimates": len(pairs["shown"]),
                               "polls": [{"at": round(p["at"] - polls[0]["at"], 2),
                                          "rows": [[x["job"], None if x["shown"] is None else round(x["shown"], 1),
                                                    None if x["old"] is None else round(x["old"], 1)]
                                                   for x in p["rows"]],
                                          "running": p["running"]} for p in polls]})
            summary = {k: v for k, v in out_rounds[-1].items() if k not in ("rows", "polls")}
            print(json.dumps({"owner": owner, **summary}), flush=True)
    finally:
        runner.stop()
        ctx.close()
    return {"owner": owner, "rounds": out_rounds}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", nargs="+", required=True)
    ap.add_argument("--rounds", type=int, default=2, help="1: a fresh install only; 2: then again with the rates "
                                                          "the first round measured")
    ap.add_argument("--queued", action="store_true", help="queued rows' start estimates: all files queued at once")
    ap.add_argument("--owners", nargs="+", default=["", "browser:newcomer"],
                    help="with --queued: whose files, one fresh data dir each ('': the shared library, as the CLI)")
    ap.add_argument("--out", default=None, help="default: bench/results/eta_accuracy.json, "
                                               "eta_accuracy_queued.json with --queued")
    a = ap.parse_args()
    a.out = a.out or f"bench/results/eta_accuracy{'_queued' if a.queued else ''}.json"
    with tempfile.TemporaryDirectory(prefix="mgrag-eta-") as tmp:
        if a.queued:
            res = {"benchmark": "eta_accuracy_queued",
                   "sessions": [run_queued([Path(f) for f in a.files], Path(tmp) / f"data{i}", a.rounds, o or None)
                                for i, o in enumerate(a.owners)]}
        else:
            res = {"benchmark": "eta_accuracy", "rows": run([Path(f) for f in a.files], Path(tmp) / "data", a.rounds)}
    owners = (" --owners " + " ".join(f'"{o}"' for o in a.owners)) if a.queued else ""
    res |= {"machine": B.machine_info(),
            "command": "python bench/eta_accuracy.py " + ("--queued " if a.queued else "") + "--files "
            + " ".join(f'"{f}"' for f in a.files) + f" --rounds {a.rounds}{owners} --out {a.out}"}
    Path(a.out).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
