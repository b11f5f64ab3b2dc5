"""Does a router beat uniform level weights? Held-out questions, transfer to other sets, learning curves, latency.

    .venv/bin/python bench/router_eval.py                      # writes bench/results/router_eval.json, the plot and
                                                               # the "router" section of BENCHMARKS.md
    .venv/bin/python bench/router_eval.py --render-only        # the section again from the JSON

Everything runs in memory over the dev sets' chunks (chunked with ``--chunker`` at ``--theta``, the chunkers and
caches of ``bench/lg_variants.py``; MiniLM vectors from its disk cache), so no index is needed. Each question is
searched in its own document, top ``--top-k`` chunks per level (the app's ``MGRAG_TOP_K``), and its parents are ranked
by the max over children of weight × cosine, exactly as ``retrieval.scoring.rank_parents`` does at query time.

Routers (``router/``), all trained on the **train** part of the fixed split (:func:`router.data.split_of`, 60/20/20 by
a hash of set and id) of chroma, gutenqa_emma and the located LongBench questions, early-stopped on **val**, scored on
**test** (never seen):

* ``query · MoG labels``: MoG's design as shipped before (query vector → MLP → sigmoid weight per level, soft labels
  from the best BM25 snippet per level scored against the evidence) — the ablation;
* ``query · retrieval labels``: the same MLP, labels from which level *alone* ranks the evidence best (DCG@10);
* ``profile · retrieval labels`` and ``query+profile · retrieval labels``: the MLP also (or only) reads the score
  profile of each level's search (top score, margin, mean of the top 5, gap to the best level, agreement with the
  uniform ranking's top parent, question length; :mod:`router.features`);
* ``query+profile · choice``: a softmax over 7 candidate weightings (uniform, each level favoured ×0.9, each level
  alone), trained towards the weightings that rank the evidence best; uniform is kept unless another candidate is
  more probable by a margin chosen on val.

Rows without training: uniform weights, each level alone, and the per-question oracle (the best of uniform and the
single levels for that question: the room a router could use). Transfer: routers trained on chroma only, tested on
every Emma and every located LongBench question. Learning curves: held-out chroma DCG@10 against the number of
training questions (3 seeds each). Latency: profile + MLP per query on one CPU thread.
"""
from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import RESULTS_DIR, machine_info, markdown_table, write_section  # noqa: E402

log = logging.getLogger("router_eval")
RESULT = RESULTS_DIR / "router_eval.json"
PLOT = RESULTS_DIR / "plots" / "router_learning_curves.png"
SETS = ("chroma", "gutenqa_emma", "longbench")
ROUTERS = {  # name -> (inputs, head, labels)
    "query · MoG labels": (("query",), "sigmoid", "mog"),
    "query · retrieval labels": (("query",), "sigmoid", "retrieval"),
    "profile · retrieval labels": (("profile",), "sigmoid", "retrieval"),
    "query+profile · retrieval labels": (("query", "profile"), "sigmoid", "retrieval"),
    "query+profile · choice": (("query", "profile"), "choice", "retrieval"),
}
CURVES = ("query · retrieval labels", "profile · retrieval labels", "query+profile · retrieval labels")


def dcg(ex, weights, k: int = 10) -> float:
    from router.features import weighting_gains

    return float(weighting_gains(ex.hits, [tuple(weights)], ex.relevant, k)[0])


def recall(ex, weights, k: int = 10) -> float:
    from retrieval.scoring import rank_parents

    return float(any(ex.relevant(p) for p, _, _ in rank_parents(ex.hits, list(weights))[:k]))


def build(args):
    """Examples (hits, evidence spans, query vectors) of every question of every set, and MoG soft labels."""
    import torch

    torch.set_num_threads(1)
    from app.evaluation.probcache import DiskCachedEmbedder, VectorCache
    from bench import lg_variants as LV
    from core.settings import Settings
    from ingest.embed import load_embedder
    from router.data import TrainQuestion, build_examples, corpus_from_chunks, retrieval_examples
    from router.labels import make_similarity

    settings = Settings()
    cache = Path(settings.cache_dir).expanduser()
    emb = DiskCachedEmbedder(load_embedder(settings.embedder),
                             VectorCache(cache / "bench" / f"vectors-{settings.embedder}.sqlite"))
    scorers = LV.Scorers(cache, no_lm=False, threads=1)
    spec = LV.parse_variant(args.chunker)
    examples, mog, notes = {}, {}, {}
    for s in SETS:
        bench = LV.bench_set(s)
        chunks, _ = LV.chunk(bench, spec, args.theta, scorers)
        corpus = corpus_from_chunks(bench.docs, chunks)
        qs = [TrainQuestion(q.id, q.question, q.doc_id, q.answers, tuple(e.text for e in q.evidence), s)
              for q in bench.questions]
        qv = emb.embed_queries([q.question for q in qs])
        examples[s], notes[s] = retrieval_examples(corpus, qs, qv, emb.embed_passages, k=args.top_k)
        ex = build_examples(corpus, [e.question for e in examples[s]], make_similarity("encoder", emb))
        mog.update({q.id: lab for q, lab in zip(ex.questions, ex.labels)})
        log.info("%s: %d examples (%s)", s, len(examples[s]), notes[s])
    return examples, mog, notes


def train(name: str, train_ex, val_ex, mog: dict, *, seed: int = 0, hidden=(32,)):
    """One router of kind ``name`` (see ROUTERS); the choice router's margin is chosen on val."""
    from router.features import candidate_weights
    from router.model import RouterConfig
    from router.train import TrainConfig, fit_retrieval_router

    inputs, head, labels = ROUTERS[name]
    if labels == "mog":
        train_ex = [e for e in train_ex if e.question.id in mog]
        val_ex = [e for e in val_ex if e.question.id in mog]
    base = RouterConfig(encoder="all-MiniLM-L6-v2", dim=len(train_ex[0].query_vector), inputs=inputs, head=head,
                        hidden=hidden, candidates=tuple(candidate_weights(3)) if head == "choice" else ())
    y = np.stack([mog[e.question.id] for e in train_ex]) if labels == "mog" else None
    yv = np.stack([mog[e.question.id] for e in val_ex]) if labels == "mog" else None
    model, hist = fit_retrieval_router(base, train_ex, val_ex, labels=y, val_labels=yv,
                                       train_config=TrainConfig(seed=seed))
    if head == "choice":
        from dataclasses import replace

        best = max((0.0, 0.05, 0.1, 0.2, 0.5), key=lambda m: np.mean(
            [dcg(e, w) for e, w in zip(val_ex, weights_of(_with_margin(model, m, replace), val_ex))]))
        model = _with_margin(model, best, replace)
    return model, hist


def _with_margin(model, margin, replace):
    from router.model import MoGRouter

    m = MoGRouter(replace(model.config, default_margin=margin))
    m.load_state_dict(model.state_dict())
    return m.eval()


def weights_of(model, exs) -> np.ndarray:
    from router.train import example_profiles

    c = model.config
    q = np.stack([e.query_vector for e in exs]) if "query" in c.inputs else None
    p = example_profiles(exs, c.n_levels) if c.needs_hits else None
    return np.atleast_2d(model.weights(q, p))


def score(exs, weights) -> dict:
    d = [dcg(e, w) for e, w in zip(exs, weights)]
    r = [recall(e, w) for e, w in zip(exs, weights)]
    return {"n": len(exs), "dcg@10": float(np.mean(d)) if d else None, "recall@10": float(np.mean(r)) if r else None,
            "per_question": {e.question.id: x for e, x in zip(exs, d)}}


def paired(a: dict, b: dict) -> list[int]:
    diff = [a["per_question"][q] - b["per_question"][q] for q in a["per_question"]]
    return [sum(x > 1e-9 for x in diff), sum(abs(x) <= 1e-9 for x in diff), sum(x < -1e-9 for x in diff)]


def fixed_rows(exs) -> dict:
    n = 3
    rows = {"uniform weights": score(exs, [(1.0,) * n] * len(exs))}
    for j in range(n):
        w = tuple(1.0 if i == j else 0.0 for i in range(n))
        rows[f"level {j} alone ({('θ', 'θ/2', 'θ/4')[j]})"] = score(exs, [w] * len(exs))
    fixed = [(1.0,) * n] + [tuple(1.0 if i == j else 0.0 for i in range(n)) for j in range(n)]
    best = [max(fixed, key=lambda w: dcg(e, w)) for e in exs]
    rows["oracle: best of uniform and single levels, per question"] = score(exs, best)
    return rows


def latency(model, exs) -> dict:
    import torch

    from router.features import profile_features

    torch.set_num_threads(1)
    times = []
    for _ in range(3):
        for e in exs:
            t = time.perf_counter()
            prof = profile_features(e.hits, 3, n_words=len(e.question.question.split()))
            model.weights(e.query_vector if "query" in model.config.inputs else None, prof)
            times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return {"n": len(times), "p50_ms": statistics.median(times), "p95_ms": times[int(0.95 * (len(times) - 1))]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chunker", default="mg", help="the chunking the router is trained and tested on (a variant of "
                                                    "bench/lg_variants.py; default mg, the shipped chunker)")
    ap.add_argument("--theta", type=int, default=300)
    ap.add_argument("--top-k", type=int, default=10, help="hits per level (MGRAG_TOP_K)")
    ap.add_argument("--seeds", type=int, default=3, help="seeds per point of the learning curves")
    ap.add_argument("--render-only", action="store_true")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("httpx", "sentence_transformers", "transformers"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    if args.render_only:
        res = json.loads(RESULT.read_text(encoding="utf-8"))
        md = render(res)
        print(md)
        if not args.no_write:
            write_section("router", md)
        return 0
    t0 = time.perf_counter()
    examples, mog, notes = build(args)
    split = {s: {p: [e for e in examples[s] if e.split == p] for p in ("train", "val", "test")} for s in SETS}
    tr = [e for s in SETS for e in split[s]["train"]]
    va = [e for s in SETS for e in split[s]["val"]]
    res: dict = {"machine": machine_info(), "chunker": args.chunker, "theta": args.theta, "top_k": args.top_k,
                 "notes": notes, "n": {s: {p: len(v) for p, v in split[s].items()} for s in SETS},
                 "held_out": {}, "transfer": {}, "curves": {}, "training": {}}
    models = {}
    for name in ROUTERS:
        log.info("training %s", name)
        models[name], hist = train(name, tr, va, mog)
        res["training"][name] = {"best_epoch": hist.best_epoch, "best_val": hist.best_val,
                                 "margin": models[name].config.default_margin}
    for s in SETS:
        te = split[s]["test"]
        if not te:
            continue
        rows = fixed_rows(te)
        for name, m in models.items():
            rows[f"router: {name}"] = score(te, weights_of(m, te))
            rows[f"router: {name}"]["vs_uniform"] = paired(rows[f"router: {name}"], rows["uniform weights"])
            rows[f"router: {name}"]["mean_weights"] = weights_of(m, te).mean(0).round(3).tolist()
        res["held_out"][s] = rows
    # transfer: trained on chroma only
    ctr, cva = split["chroma"]["train"], split["chroma"]["val"]
    for name in ROUTERS:
        m, _ = train(name, ctr, cva, mog)
        for s in ("gutenqa_emma", "longbench"):
            exs = examples[s]
            r = res["transfer"].setdefault(s, fixed_rows(exs))
            r[f"router: {name}"] = score(exs, weights_of(m, exs))
            r[f"router: {name}"]["vs_uniform"] = paired(r[f"router: {name}"], r["uniform weights"])
    # learning curves on held-out chroma
    te = split["chroma"]["test"]
    sizes = [n for n in (25, 50, 100, 200) if n < len(tr)] + [len(tr)]
    for name in CURVES:
        pts = []
        for n in sizes:
            vals = []
            for seed in range(args.seeds if n < len(tr) else 1):
                idx = np.random.default_rng(seed).permutation(len(tr))[:n]
                m, _ = train(name, [tr[i] for i in idx], va, mog, seed=seed)
                vals.append(score(te, weights_of(m, te))["dcg@10"])
            pts.append([n, float(np.mean(vals)), float(np.std(vals))])
            log.info("curve %s n=%d: %.3f", name, n, pts[-1][1])
        res["curves"][name] = pts
    res["curves"]["uniform"] = res["held_out"]["chroma"]["uniform weights"]["dcg@10"]
    best = max(ROUTERS, key=lambda n: res["held_out"]["chroma"][f"router: {n}"]["dcg@10"])
    res["latency"] = {"router": best, **latency(models[best], examples["chroma"][:100])}
    res["seconds"] = time.perf_counter() - t0
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(res, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    plot(res)
    md = render(res)
    print(md)
    if not args.no_write:
        write_section("router", md)
    return 0


def plot(res: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    PLOT.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for name in CURVES:
        pts = np.array(res["curves"][name])
        ax.errorbar(pts[:, 0], pts[:, 1], yerr=pts[:, 2], marker="o", capsize=3, label=name)
    u = res["curves"]["uniform"]
    ax.axhline(u, color="k", ls="--", lw=1, label="uniform weights")
    ax.axhline(u + 0.02, color="grey", ls=":", lw=1, label="goal: uniform + 2 points")
    ax.set_xscale("log")
    ax.set_xlabel("training questions")
    ax.set_ylabel("held-out chroma DCG@10")
    ax.set_title(f"Router learning curves ({res['chunker']}, θ={res['theta']})")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(PLOT, dpi=100)
    plt.close(fig)


def render(res: dict) -> str:
    def table(rows: dict) -> str:
        out = []
        for name, r in rows.items():
            vs = r.get("vs_uniform")
            out.append([name, r["n"], f"{r['dcg@10']:.3f}", f"{r['recall@10']:.3f}",
                        f"{100 * (r['dcg@10'] - rows['uniform weights']['dcg@10']):+.1f}" if name != "uniform weights"
                        else "", "/".join(map(str, vs)) if vs else ""])
        return markdown_table(["ranking", "questions", "DCG@10", "Recall@10", "Δ DCG@10 vs uniform (points)",
                               "better/same/worse than uniform"], out)

    lines = ["## Level weights: routers vs uniform (`bench/router_eval.py`)", "", "```",
             ".venv/bin/python bench/router_eval.py", "```", "",
             f"Chunker {res['chunker']} at θ = {res['theta']}, MiniLM; per-document search, top {res['top_k']} per "
             "level, parents by the max over children of weight × cosine (the app's rule). Routers trained on the "
             "train split of chroma, gutenqa_emma and the located LongBench questions "
             f"({sum(v['train'] for v in res['n'].values())} questions; val "
             f"{sum(v['val'] for v in res['n'].values())} for early stopping), MLP with one hidden layer of 32. "
             "Questions whose evidence is not found verbatim in their document are left out (Emma: 3).", ""]
    for s, rows in res["held_out"].items():
        lines += [f"**Held out: {s}** (test split)", "", table(rows), ""]
    for s, rows in res["transfer"].items():
        lines += [f"**Transfer: trained on chroma only, tested on every {s} question**", "", table(rows), ""]
    lines += ["**Learning curves** (held-out chroma DCG@10 against training questions, mean ± std over seeds):", "",
              markdown_table(["router"] + [str(int(n)) for n, _, _ in res["curves"][CURVES[0]]],
                             [[name] + [f"{m:.3f} ± {s:.3f}" for _, m, s in res["curves"][name]] for name in CURVES]),
              "", f"Uniform weights: {res['curves']['uniform']:.3f}.", "",
              f"![{PLOT.relative_to(RESULTS_DIR.parents[1])}]({PLOT.relative_to(RESULTS_DIR.parents[1])})", "",
              f"Routing cost ({res['latency']['router']}: score profile + MLP, one CPU thread): p50 "
              f"{res['latency']['p50_ms']:.3f} ms, p95 {res['latency']['p95_ms']:.3f} ms per query (goal ≤ 5 ms)."]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
