"""Why LGMGC trails MG on chroma: parent size, and children sized by θ rather than by the parents LG makes.

LG cuts each window at its most likely boundary, so its parents average about 0.6 θ, while recursive parents
fill to about 0.9 θ. MG's children are θ/2 and θ/4 words; under LG parents of ~0.6 θ a θ/2 child is most of
its parent, so the middle level adds little. This diagnostic (not part of `make bench`) reads the cached
chunkings of `make bench` (standard profile) and scores, on the same questions and with the same embedder:

* ``mg`` and ``lgmgc`` as `make bench` does;
* ``lgmgc, children of the mean parent``: LG's parents with children of m/2 and m/4 words, m = LG's mean parent
  length at that θ (the same rule as MG, applied to the parents' real size);
* per-question DCG@5 of each LGMGC variant against MG at the same θ and against MG with parents of the same
  mean size (wins / ties / losses), since the means hide how many questions move.

    .venv/bin/python bench/lgmgc_children.py          # writes BENCHMARKS.md section "lgmgc-children"
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

METRICS = ("dcg@1", "dcg@5", "dcg@10", "recall@5", "recall@10", "evidence_recall@1500w")


def _mean_words(chunks_by_doc) -> float:
    from ingest.text.sentences import count_words

    return float(np.mean([count_words(c.text) for cs in chunks_by_doc.values() for c in cs if c.level == 0]))


def _paired(a: dict, b: dict, metric: str = "dcg@5") -> tuple[int, int, int]:
    """(wins, ties, losses) of run ``a`` against run ``b`` per question."""
    pb = {r["id"]: r[metric] for r in b["per_question"]}
    d = [r[metric] - pb[r["id"]] for r in a["per_question"]]
    return sum(x > 1e-9 for x in d), sum(abs(x) <= 1e-9 for x in d), sum(x < -1e-9 for x in d)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--theta", default="200,300,500")
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from app.evaluation import bench as B
    from app.evaluation import harness as H
    from core.settings import Settings
    from ingest.chunkers.multigranular import with_children

    t0 = time.perf_counter()
    ctx = H.bench_context(Settings())
    bench, note = H.profiled_set("chroma", "standard")
    thetas = [int(t) for t in args.theta.split(",")]
    runs, sizes = {}, {}
    for theta in thetas:
        mg = H.chunk_documents(bench, "mg", theta, ctx)
        lgmgc = H.chunk_documents(bench, "lgmgc", theta, ctx)
        m = _mean_words(lgmgc.chunks)
        child = max(4, int(round(m)))
        parents = {d: [(c.start, c.end) for c in cs if c.level == 0] for d, cs in lgmgc.chunks.items()}
        adaptive = {d: with_children(bench.docs[d], parents[d], child) for d in parents}
        for name, chunks in (("mg", mg.chunks), ("lgmgc", lgmgc.chunks),
                             ("lgmgc, children of the mean parent", adaptive)):
            print(f"θ={theta}: {name}", flush=True)
            runs[(name, theta)] = B.evaluate_retrieval(bench, chunks, ctx.embedder, keep_per_question=True)
            sizes[(name, theta)] = (_mean_words(chunks), child if name.startswith("lgmgc, children") else theta)

    rows = []
    for (name, theta), r in runs.items():
        mean, child = sizes[(name, theta)]
        rows.append([name, theta, f"{mean:.0f}", f"{child // 2} / {child // 4}",
                     *(f"{r[k]:.3f}" for k in METRICS)])
    table = B.markdown_table(["chunker", "θ", "mean parent words", "children ≤ words", *METRICS], rows)

    # paired: each LGMGC variant vs MG at the same θ, and vs the MG whose parents are closest in mean size
    prow = []
    mg_sizes = {t: sizes[("mg", t)][0] for t in thetas}
    for (name, theta), r in runs.items():
        if name == "mg":
            continue
        w, t_, l_ = _paired(r, runs[("mg", theta)])
        near = min(thetas, key=lambda t: abs(mg_sizes[t] - sizes[(name, theta)][0]))
        w2, t2, l2 = _paired(r, runs[("mg", near)])
        prow.append([name, theta, f"{w} / {t_} / {l_}", f"mg θ={near} ({mg_sizes[near]:.0f} words)",
                     f"{runs[('mg', near)]['dcg@5']:.3f} vs {r['dcg@5']:.3f}", f"{w2} / {t2} / {l2}"])
    paired = B.markdown_table(["LGMGC variant", "θ", "DCG@5 vs mg, same θ (wins / ties / losses)",
                               "mg with the nearest mean parent size", "DCG@5 (mg vs variant)",
                               "wins / ties / losses vs that mg"], prow)
    minutes = (time.perf_counter() - t0) / 60
    md = "\n".join([
        "### Why LGMGC trails MG on chroma: parent size and child size (`bench/lgmgc_children.py`)", "",
        "```", ".venv/bin/python bench/lgmgc_children.py", "```", "",
        f"chroma, {note}; {len(bench.questions)} questions; the cached chunkings of `make bench`; MiniLM; "
        f"{minutes:.1f} min. *Children ≤ words*: the θ/2 and θ/4 sizes of MG's rule, or m/2 and m/4 with m the mean "
        "LG parent at that θ.", "",
        table, "", paired, ""])
    print(md)
    if not args.no_write:
        B.write_section("lgmgc-children", md)
        B.write_json("lgmgc_children.json", {
            "set": "chroma", "subset": note, "thetas": thetas,
            "runs": {f"{n} θ={t}": {k: r[k] for k in METRICS} | {"mean_parent_words": sizes[(n, t)][0],
                                                                "child_theta": sizes[(n, t)][1]}
                     for (n, t), r in runs.items()},
            "paired_dcg@5": [dict(zip(["variant", "theta", "vs_mg_same_theta", "nearest_mg", "dcg5", "vs_nearest"], p))
                             for p in prow],
            "seconds": minutes * 60})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
