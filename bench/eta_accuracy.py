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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", nargs="+", required=True)
    ap.add_argument("--rounds", type=int, default=2, help="1: a fresh install only; 2: then again with the rates "
                                                          "the first round measured")
    ap.add_argument("--out", default="bench/results/eta_accuracy.json")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="mgrag-eta-") as tmp:
        rows = run([Path(f) for f in a.files], Path(tmp) / "data", a.rounds)
    res = {"benchmark": "eta_accuracy", "rows": rows, "machine": B.machine_info(),
           "command": "python bench/eta_accuracy.py --files " + " ".join(f'"{f}"' for f in a.files)
           + f" --rounds {a.rounds} --out {a.out}"}
    Path(a.out).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
