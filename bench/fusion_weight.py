"""How much the keywords weigh in the hybrid search: the BM25 ranking's weight in the reciprocal-rank fusion,
chosen on the six dev sets (issue 48: "hybrid never measurably below dense alone on any kind of document").

On the six dev sets of ``bench/level_scoring.py`` (quick profile: MiniLM, θ = 300, contextual text, MG; each
question searched within its document, top 20 chunks of each level, DCG@10 and evidence recall in a 1500-word
context) as ``bench/retrieval_variants.py`` runs them, with BM25 scored **as the store scores it**: each chunk's
length against the fixed reference length of its level (:func:`ingest.text.keywords.avg_len`, what the ``bm25``
sparse vectors in Qdrant carry) rather than the running mean. Fused: ``1 / (k + rank_dense) + w / (k + rank_bm25)``,
k = 60, for w in :data:`WEIGHTS` (w = 0 is dense alone). For each w, per set: the paired difference against dense
alone with a bootstrap 95% CI (2000 resamples, seed 0).

The choice: the w with the best mean DCG@10 over the sets among those where no set's CI against dense lies
wholly below 0 (ties: the higher evidence recall). The product's ``bm25_weight`` setting ships the chosen w.

    .venv/bin/python bench/fusion_weight.py          # bench/results/fusion_weight.json + BENCHMARKS.md section
    .venv/bin/python bench/fusion_weight.py --render
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench.level_scoring as LS  # noqa: E402
import bench.retrieval_variants as RV  # noqa: E402

WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
OUT = Path(__file__).resolve().parent / "results" / "fusion_weight.json"
SECTION = "fusion-weight"
COMMAND = ".venv/bin/python bench/fusion_weight.py"


def store_bm25(chunks, texts):
    """BM25 over one document's chunks of every level, each level's lengths normalised by its fixed reference
    length as the store's sparse vectors are (not by the running mean)."""
    from collections import Counter

    from ingest.text.keywords import avg_len
    from retrieval.bm25 import Bm25Level, tokenize

    return Bm25Level([str(i) for i in range(len(chunks))], [Counter(tokenize(t)) for t in texts],
                     avg_lens=[avg_len(LS.THETA, c.level) for c in chunks])


def run(args) -> dict:
    from app.evaluation import bench as B
    from app.evaluation import harness as H
    from app.evaluation.bench import question_metrics
    from core.settings import Settings
    from retrieval.bm25 import tokenize
    from retrieval.scoring import level_hits

    t0 = time.perf_counter()
    ctx = H.bench_context(Settings(embedder="all-MiniLM-L6-v2", theta=LS.THETA))
    vectors = LS.DiskVectors(ctx.embedder, Path(ctx.settings.cache_dir) / "bench" / "level_scoring_vectors.npy")
    sets, notes = LS.load_sets(args.sets, quick=True)
    per: dict[float, dict[str, dict[str, np.ndarray]]] = {w: {} for w in WEIGHTS}
    for name, b in sets.items():
        qvecs = dict(zip([q.question for q in b.questions], ctx.embedder.embed_queries([q.question
                                                                                        for q in b.questions])))
        run_ = H.chunk_documents(b, "mg", LS.THETA, ctx)
        prepared = {}
        for d, chunks in run_.chunks.items():
            texts = RV.contextual_texts(d, b.docs[d], chunks)
            prepared[d] = (chunks, vectors.passages(texts), store_bm25(chunks, texts),
                           sorted({c.parent_span for c in chunks}))
        vectors.save()
        rows: dict[float, list] = {w: [] for w in WEIGHTS}
        for q in b.questions:
            if q.doc_id not in prepared:
                continue
            chunks, vecs, bm25, parents = prepared[q.doc_id]
            q2 = LS._relabel(q, b.docs[q.doc_id], parents)
            dense = RV._spans(level_hits(chunks, vecs @ qvecs[q.question], LS.TOP_K))
            sparse = RV._spans(level_hits(chunks, bm25.scores(tokenize(q.question)), LS.TOP_K))
            for w in WEIGHTS:
                spans = dense if w == 0 else RV._rrf([dense, sparse], [1.0, w])
                rows[w].append(question_metrics(q2, b.docs[q.doc_id], spans, parents, budget_words=LS.BUDGET)[0])
        for w in WEIGHTS:
            per[w][name] = {m: np.array([r[m] for r in rows[w]]) for m in LS.METRICS}
        print(f"{name}: done ({time.perf_counter() - t0:.0f}s)", flush=True)
    out = {}
    for w in WEIGHTS:
        r = {"per_set": {s: {m: float(v[m].mean()) for m in LS.METRICS} for s, v in per[w].items()},
             "mean": {m: float(np.mean([v[m].mean() for v in per[w].values()])) for m in LS.METRICS}}
        if w:
            r["vs_dense"] = {m: LS.boot({s: per[w][s][m] - per[0.0][s][m] for s in per[w]}) for m in LS.METRICS}
        out[f"{w:g}"] = r
    m10, er = LS.METRICS
    safe = [k for k, r in out.items() if k != "0" and all(r["vs_dense"][m][s][2] >= 0 for m in LS.METRICS
                                                           for s in sets)]
    chosen = max(safe, key=lambda k: (out[k]["mean"][m10], out[k]["mean"][er])) if safe else "0"
    meta = {name: {"docs": len(b.docs), "questions": len(b.questions), "words": b.words, "subset": notes[name]}
            for name, b in sets.items()}
    return {"command": COMMAND, "sets": meta, "weights": out, "safe": safe, "chosen": chosen, "rrf_k": RV.RRF_K,
            "n_boot": LS.N_BOOT, "theta": LS.THETA, "machine": B.machine_info(),
            "seconds": time.perf_counter() - t0}


def render(res: dict) -> str:
    m10, er = LS.METRICS
    sets = list(res["sets"])
    head = ["BM25 weight w", *[LS.SHORT[s] for s in sets], "mean", "Δ DCG@10 vs dense (mean over sets)",
            "sets with DCG@10 or recall CI wholly below dense"]
    out = ["```", res["command"], "```", "",
           f"MG, contextual text, θ = {res['theta']}, each question within its document; BM25 with the store's fixed "
           f"reference lengths; fused 1/(k + rank dense) + w/(k + rank BM25), k = {res['rrf_k']}; w = 0 is dense "
           f"alone. Cells: DCG@10 / evidence recall @1500 w. CIs: paired bootstrap, {res['n_boot']} resamples. "
           f"{res['seconds'] / 60:.0f} min on {res['machine'].get('affinity', '?')} cores.", "",
           "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for k, r in res["weights"].items():
        below = ([LS.SHORT[s] for s in sets if any(r["vs_dense"][m][s][2] < 0 for m in LS.METRICS)]
                 if "vs_dense" in r else [])
        cells = [f"{r['per_set'][s][m10]:.3f} / {r['per_set'][s][er]:.3f}" for s in sets]
        name = f"**{k}** (shipped)" if k == res["chosen"] else k
        out.append("| " + " | ".join([name, *cells, f"{r['mean'][m10]:.3f} / {r['mean'][er]:.3f}",
                                      LS._ci(r["vs_dense"][m10]["mean"]) if "vs_dense" in r else "–",
                                      (", ".join(below) or "none") if "vs_dense" in r else "–"]) + " |")
    return "\n".join(out)


def main(argv=None) -> int:
    from app.evaluation import bench as B

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", type=lambda s: s.split(","), default=None)
    ap.add_argument("--render", action="store_true", help="only render the section from the results file")
    a = ap.parse_args(argv)
    if not a.render:
        res = run(a)
        OUT.write_text(json.dumps(res, indent=1))
        print("chosen", res["chosen"], "safe", res["safe"])
    res = json.loads(OUT.read_text())
    B.write_section(SECTION, render(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
