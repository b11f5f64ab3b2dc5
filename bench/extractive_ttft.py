"""Time to first token of the default (extractive) backend in a warm server process, as a chat user meets it.

The issue's goal: the default backend's first token within 3 s on a quiet machine. One process (what `mgrag serve`
is): an index of chroma's *state_of_the_union* and *wikitexts* (`mg` chunker, θ = 300, MiniLM; no LM, so it builds
in a minute or two), then the first ``--questions`` chroma questions on those documents asked one after the other
through `app.answer.ask` (retrieval, the grounding's context check, the extractive answer), each timed from the
question to its first token. The first question after start is reported apart (it warms the embedder up); the
sentence-vector cache works as in the server (a later question re-uses the vectors of passages seen before). The
1-minute load average is recorded, so "quiet" can be checked.

    .venv/bin/python bench/extractive_ttft.py                 # writes the "extractive-ttft" section of BENCHMARKS.md
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from ingest.jobs.queue import ingest_files

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DOCS = ("state_of_the_union", "wikitexts")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--questions", type=int, default=40)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import numpy as np

    from app.answer import AskOptions, ask
    from app.context import AppContext
    from app.evaluation.bench import RESULTS_DIR, LoadMonitor, load_set, markdown_table, write_section
    from app.grounding import sentence_vectors_of
    from core.settings import Settings

    bench = load_set("chroma", doc_ids=list(DOCS))
    questions = bench.questions[: args.questions + 1]
    with tempfile.TemporaryDirectory(prefix="mgrag-ttft-") as tmp:
        ctx = AppContext(Settings(data_dir=Path(tmp), chunker="mg", theta=300, router="none",
                                  synth_backend="extractive"))
        docs = ROOT.parent / "shared" / "bench" / "chroma" / "docs"
        ingest_files(ctx, [docs / f"{d}.md" for d in DOCS])
        monitor = LoadMonitor(interval=2)
        vectors = sentence_vectors_of(ctx)
        runs = {}
        for mode in ("cold", "served"):  # cold: every question's sentences embedded anew; served: the cache at work
            vectors._cache.clear()
            vectors._queries.clear()
            rows = []
            for q in questions:
                if mode == "cold":
                    vectors._cache.clear()
                    vectors._queries.clear()
                t0 = time.perf_counter()
                first = None
                for kind, value in ask(ctx, q.question, AskOptions(backend="extractive")):
                    if kind == "token" and first is None:
                        first = time.perf_counter() - t0
                    if kind == "done":
                        rows.append({"id": q.id, "ttft_s": first, "total_s": value.timings["total_s"],
                                     "abstained": value.abstained})
            runs[mode] = rows
        load = monitor.summary()
        monitor.stop()
        ctx.close()
    table, res = [], {"load": load, "runs": runs}
    for mode, rows in runs.items():
        t = np.array([r["ttft_s"] for r in rows[1:] if r["ttft_s"] is not None])
        tot = np.array([r["total_s"] for r in rows[1:]])
        table.append([mode, len(t), f"{np.median(t):.2f}", f"{np.percentile(t, 95):.2f}", f"{t.max():.2f}",
                      f"{np.mean(t <= 3.0):.0%}", f"{np.median(tot):.2f}", f"{np.percentile(tot, 95):.2f}"])
    (RESULTS_DIR / "extractive_ttft.json").write_text(json.dumps(res, indent=1), encoding="utf-8")
    n_abst = sum(r["ttft_s"] is None for r in runs["cold"][1:])
    md = f"""### Extractive time to first token in a warm process (bench/extractive_ttft.py)

`.venv/bin/python bench/extractive_ttft.py` — one process as `mgrag serve` is, an index of chroma's
{" and ".join(DOCS)} (`mg`, θ=300, MiniLM), {len(questions) - 1} chroma questions asked one after the other after a
first one that warms the embedder up (not counted); twice: *cold*, the sentence-vector cache emptied before every
question (each context's sentences embedded anew, the worst case), and *served*, the cache at work as in the
server. 1-minute load average {load["load1_mean"]:.2f} (max {load["load1_max"]:.2f}) on {os.cpu_count()} cores.

{markdown_table(["run", "answered", "first token p50 s", "p95 s", "max s", "within 3 s", "whole answer p50 s",
                 "p95 s"], table)}

{n_abst} of the {len(questions) - 1} questions abstained before generating (context under the floor; see
"False abstention on chroma") and have no first token; their whole-answer time is in the last columns.
"""
    print(md)
    if not args.no_write:
        write_section("extractive-ttft", md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
