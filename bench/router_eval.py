"""Held-out evaluation of the MoG router: trained router vs uniform weights vs each level alone vs MoG's selection.

    .venv/bin/python bench/router_eval.py --data-dir data/router-dev --router router/default

The index in ``--data-dir`` must hold the bench documents (LGMGC θ=300, as `mgrag ingest` builds it; see the
README for the exact commands); its chunks (catalog offsets) and vectors (Qdrant) are read back, so nothing is
re-chunked or re-embedded, and the router is scored on exactly the chunks it was trained on. Questions are the
**test** part of the fixed split (:func:`router.data.split_of`, 60/20/20 by a hash of set and id), never seen in
training or early stopping. Retrieval is :func:`app.evaluation.bench.evaluate_retrieval` (per-document search,
top ``k`` per level, parents ranked by max over children), so the numbers compare with the chunker tables.

Also: train on chroma only → test on every *Emma* question (a different kind of text and question), an
"oracle" that uses each test question's own soft label as its weights (what perfect routing *to the labels*
would give), and the router's added latency per query. Writes ``bench/results/router_eval.json`` and the
``router`` section of BENCHMARKS.md.
"""
from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import (  # noqa: E402
    BENCH_DIR,
    BenchSet,
    evaluate_retrieval,
    load_set,
    machine_info,
    markdown_table,
    write_json,
    write_section,
)

log = logging.getLogger("router_eval")
SETS = ("chroma", "gutenqa_emma")
METRICS = ("dcg@10", "recall@10", "evidence_recall@1500w")


class VectorEmbedder:
    """Passage vectors looked up by text (read back from the index), queries embedded by the real embedder."""

    def __init__(self, inner, vectors: dict[str, np.ndarray]):
        self.inner, self.vectors = inner, vectors
        self.name, self.dim = inner.name, inner.dim
        self.missed = 0

    def embed_passages(self, texts):
        missing = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if missing:
            self.missed += len(missing)
            self.vectors.update(zip(missing, np.asarray(self.inner.embed_passages(missing), dtype=np.float32)))
        return np.stack([self.vectors[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def embed_queries(self, texts):
        return self.inner.embed_queries(texts)


def index_vectors(ctx) -> dict[str, np.ndarray]:
    """text -> vector for every chunk of the live generation (Qdrant scroll)."""
    live = ctx.catalog.live_generation()
    out: dict[str, np.ndarray] = {}
    for level in range(live.n_levels):
        for p in ctx.index.points(live.gen, level, with_vectors=True):
            out[p.payload["text"]] = p.vector
    return out


def bench_chunks(bench: BenchSet, corpus) -> dict[str, list]:
    out = {}
    for d, text in bench.docs.items():
        cd = corpus.resolve(d)
        if cd is None:
            raise SystemExit(f"document {d!r} of {bench.name} is not in the index; ingest {BENCH_DIR / bench.name}/docs")
        if corpus.docs[cd] != text:
            raise SystemExit(f"the indexed text of {cd!r} differs from {bench.name}/{d}: offsets would not match")
        out[d] = corpus.chunks[cd]
    return out


def subset(bench: BenchSet, split: str | None) -> BenchSet:
    from router.data import split_of

    qs = [q for q in bench.questions if split is None or split_of(q.id, bench.name) == split]
    return BenchSet(bench.name, bench.docs, qs)


def soft_label_fn(bench: BenchSet, corpus, similarity):
    """question -> its soft label over the index (the oracle's weights), as in training."""
    from router.labels import label_text, question_soft_labels

    def f(q):
        label = label_text([e.text for e in q.evidence], q.question, q.answers)
        got = question_soft_labels(q.question, label, corpus.searchers(corpus.resolve(q.doc_id)), similarity)
        return got[1] if got else [1.0] * corpus.n_levels
    return f


def variants(bench: BenchSet, chunks: dict, emb, router, oracle, top_k: int) -> dict[str, dict]:
    """Every row of the table for one question set."""
    n_levels = 1 + max(c.level for cs in chunks.values() for c in cs)
    kw = dict(top_k=top_k, keep_per_question=True)
    rw = (lambda q, qv: router.weights(qv)) if router is not None else None
    rows = {"uniform weights": evaluate_retrieval(bench, chunks, emb, weights=[1.0] * n_levels, **kw)}
    if rw is not None:
        rows["trained router (max over children)"] = evaluate_retrieval(bench, chunks, emb, weights_fn=rw, **kw)
    for j in range(n_levels):
        only = {d: [c for c in cs if c.level == j] for d, cs in chunks.items()}
        rows[f"level {j} alone ({('θ', 'θ/2', 'θ/4')[j] if j < 3 else j})"] = evaluate_retrieval(bench, only, emb, **kw)
    if rw is not None:
        rows["MoG selection, trained router"] = evaluate_retrieval(bench, chunks, emb, weights_fn=rw, selection="mog",
                                                                   **kw)
    if oracle is not None:
        rows["oracle: the question's own soft label"] = evaluate_retrieval(
            bench, chunks, emb, weights_fn=lambda q, qv: oracle(q), **kw)
    return rows


def ceiling(rows: dict, names, key: str = "dcg@10") -> float:
    """Mean over questions of the best of ``names``' rankings for that question: what choosing among those fixed
    weightings per question, perfectly, could reach."""
    per = [{r["id"]: r[key] for r in rows[n]["per_question"]} for n in names]
    return float(np.mean([max(p[i] for p in per) for i in per[0]]))


def retrieval_labels(bench: BenchSet, chunks: dict, emb, top_k: int) -> dict[str, list[float]]:
    """Diagnostic labels tied to the retrieval objective: each level alone ranks the parents; the level(s) with
    the best DCG@10 for the question get 0.8, the next best 0.2 (ties share the label)."""
    n_levels = 1 + max(c.level for cs in chunks.values() for c in cs)
    per = []
    for j in range(n_levels):
        only = {d: [c for c in cs if c.level == j] for d, cs in chunks.items()}
        r = evaluate_retrieval(bench, only, emb, top_k=top_k, keep_per_question=True)
        per.append({row["id"]: row["dcg@10"] for row in r["per_question"]})
    out = {}
    for qid in per[0]:
        v = [p[qid] for p in per]
        vals = sorted(set(v), reverse=True)
        out[qid] = [0.8 if x == vals[0] else 0.2 if len(vals) > 1 and x == vals[1] else 0.0 for x in v]
    return out


def paired(a: dict, b: dict, key: str = "dcg@10") -> dict:
    """How many questions ``a`` beats / ties / loses to ``b`` on ``key``."""
    ra = {r["id"]: r[key] for r in a["per_question"]}
    rb = {r["id"]: r[key] for r in b["per_question"]}
    diff = [ra[i] - rb[i] for i in ra]
    return {"better": sum(d > 1e-9 for d in diff), "same": sum(abs(d) <= 1e-9 for d in diff),
            "worse": sum(d < -1e-9 for d in diff)}


def latency(router, qvecs: np.ndarray, embedder_name: str, n_levels: int) -> dict:
    """Router time per query on CPU through the app's path (`route` with the dense search's query vector)."""
    import torch

    from router.runtime import RouterRuntime, route

    torch.set_num_threads(1)
    rt = RouterRuntime(router, Path("router"), explicit=True)
    for v in qvecs[:5]:
        route(rt, "", embedder_name=embedder_name, n_levels=n_levels, question="q", query_vector=v)
    times = []
    for _ in range(5):
        for v in qvecs:
            _, _, s = route(rt, "", embedder_name=embedder_name, n_levels=n_levels, question="q", query_vector=v)
            times.append(s * 1000)
    times.sort()
    return {"n": len(times), "p50_ms": statistics.median(times), "p95_ms": times[int(0.95 * (len(times) - 1))],
            "max_ms": times[-1], "torch_threads": 1, "encoding_ms": 0.0}


def summary_row(name: str, r: dict) -> list:
    return [name, r["n_questions"], *(r[m] for m in METRICS)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default="data/router-dev", help="the index holding the bench documents")
    ap.add_argument("--router", default="router/default", help="the trained router folder to evaluate")
    ap.add_argument("--top-k", type=int, default=10, help="hits per level (MGRAG_TOP_K)")
    ap.add_argument("--no-cross", action="store_true", help="skip the train-on-chroma, test-on-Emma run")
    ap.add_argument("--no-write", action="store_true", help="print only; leave BENCHMARKS.md and results alone")
    ap.add_argument("--render-only", action="store_true",
                    help="rewrite the BENCHMARKS.md section from bench/results/router_eval.json without re-running")
    args = ap.parse_args(argv)
    if args.render_only:
        from bench.common import RESULTS_DIR

        md = render(json.loads((RESULTS_DIR / "router_eval.json").read_text(encoding="utf-8")))
        print(md)
        if not args.no_write:
            write_section("router", md)
        return 0
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    for noisy in ("httpx", "sentence_transformers", "transformers"):
        logging.getLogger(noisy).setLevel(logging.WARNING)

    import torch

    from app.context import AppContext
    from app.settings import Settings
    from router.data import build_examples, corpus_from_index, load_questions
    from router.labels import make_similarity
    from router.model import RouterConfig, load_router
    from router.train import TrainConfig, train_router

    torch.set_num_threads(2)
    t0 = time.perf_counter()
    ctx = AppContext(Settings(data_dir=Path(args.data_dir), router="none"))
    live = ctx.catalog.live_generation()
    corpus = corpus_from_index(ctx)
    router = load_router(args.router, embedder=live.embedder, n_levels=live.n_levels)
    log.info("reading chunk vectors back from the index")
    emb = VectorEmbedder(ctx.embedder, index_vectors(ctx))
    sim = make_similarity(router.config.meta.get("label_similarity", "encoder"), ctx.embedder)

    result = {"machine": machine_info(), "index": {"data_dir": args.data_dir, "generation": live.gen,
              "chunker": live.chunker, "theta": live.theta, "embedder": live.embedder},
              "router": {"path": args.router, "config": router.config.to_dict()}, "top_k_per_level": args.top_k,
              "sets": {}}
    benches = {}
    for name in SETS:
        bench = load_set(name)
        chunks = bench_chunks(bench, corpus)
        benches[name] = (bench, chunks)
        test = subset(bench, "test")
        log.info("%s: %d test questions of %d", name, len(test.questions), len(bench.questions))
        rows = variants(test, chunks, emb, router, soft_label_fn(test, corpus, sim), args.top_k)
        rw = rows["trained router (max over children)"]
        weights = np.array([r["weights"] for r in rw["per_question"]])
        labels_best = Counter(int(np.argmax(soft_label_fn(test, corpus, sim)(q))) for q in test.questions)
        result["sets"][name] = {
            "n_test": len(test.questions),
            "rows": {k: {m: v for m, v in r.items() if m != "per_question"} for k, r in rows.items()},
            "router_vs_uniform_dcg@10": paired(rw, rows["uniform weights"]),
            "router_mean_weights": weights.mean(0).round(3).tolist(),
            "router_argmax_level": dict(Counter(int(i) for i in weights.argmax(1))),
            "label_best_level": dict(labels_best),
            "per_question": {k: r["per_question"] for k, r in rows.items()},
        }
        fixed = ["uniform weights", *[k for k in rows if k.startswith("level ")]]
        result["sets"][name]["ceiling_dcg@10_best_fixed_weighting_per_question"] = ceiling(rows, fixed)

    # diagnostic: a router trained on retrieval-aware labels (which level alone ranks the evidence best)
    log.info("diagnostic: router on retrieval-aware labels")
    xs, ys, xvs, yvs = [], [], [], []
    for name in SETS:
        bench, chunks = benches[name]
        for split, (X, Y) in (("train", (xs, ys)), ("val", (xvs, yvs))):
            part = subset(bench, split)
            lab = retrieval_labels(part, chunks, emb, args.top_k)
            X.extend(ctx.embedder.embed_queries([q.question for q in part.questions]))
            Y.extend(lab[q.id] for q in part.questions)
    cfg = RouterConfig(encoder=live.embedder, dim=len(xs[0]), levels=router.config.levels,
                       hidden=router.config.hidden, dropout=router.config.dropout)
    rr, rhist = train_router(cfg, np.array(xs), np.array(ys), np.array(xvs), np.array(yvs),
                             train_config=TrainConfig(seed=0))
    diag = {"n_train": len(xs), "best_epoch": rhist.best_epoch, "best_val": rhist.best_val,
            "train_label_best_level": dict(Counter(int(np.argmax(y)) for y in ys)), "sets": {}}
    for name in SETS:
        bench, chunks = benches[name]
        test = subset(bench, "test")
        r = evaluate_retrieval(test, chunks, emb, top_k=args.top_k, keep_per_question=True,
                               weights_fn=lambda q, qv: rr.weights(qv))
        lab = retrieval_labels(test, chunks, emb, args.top_k)
        o = evaluate_retrieval(test, chunks, emb, top_k=args.top_k, keep_per_question=True,
                               weights_fn=lambda q, qv: lab[q.id])
        diag["sets"][name] = {"router": {m: r[m] for m in METRICS}, "oracle": {m: o[m] for m in METRICS},
                              "router_mean_weights": np.array([x["weights"] for x in r["per_question"]]).mean(0)
                              .round(3).tolist()}
    result["diagnostic_retrieval_labels"] = diag

    # MoG App. E's other label similarities: same questions, splits and MLP, TF-IDF and hit-rate soft labels
    log.info("label variants: TF-IDF and hit-rate soft labels")
    qs = [q for name in SETS for q in load_questions(BENCH_DIR / name / "questions.jsonl")]
    variants_out = {}
    for method in ("tfidf", "hitrate"):
        ex = build_examples(corpus, qs, make_similarity(method))
        tr, va = ex.subset("train"), ex.subset("val")
        x = ctx.embedder.embed_queries([q.question for q in tr.questions])
        xv = ctx.embedder.embed_queries([q.question for q in va.questions])
        vr, vh = train_router(cfg, x, tr.labels, xv, va.labels, train_config=TrainConfig(seed=0))
        test = subset(benches["chroma"][0], "test")
        r = evaluate_retrieval(test, benches["chroma"][1], emb, top_k=args.top_k, keep_per_question=True,
                               weights_fn=lambda q, qv: vr.weights(qv))
        variants_out[method] = {
            "train_label_best_level": dict(Counter(int(i) for i in tr.labels.argmax(1))),
            "best_epoch": vh.best_epoch, "val_bce": vh.best_val,
            "chroma_test": {m: r[m] for m in METRICS},
            "router_mean_weights": np.array([x["weights"] for x in r["per_question"]]).mean(0).round(3).tolist()}
    result["label_variants"] = variants_out

    cross = None
    if not args.no_cross:
        log.info("cross-set: training on chroma (train+val), testing on every Emma question")
        qs = load_questions(BENCH_DIR / "chroma" / "questions.jsonl")
        ex = build_examples(corpus, qs, sim)
        fit, val = ex.subset(("train", "test")), ex.subset("val")
        x = ctx.embedder.embed_queries([q.question for q in fit.questions])
        xv = ctx.embedder.embed_queries([q.question for q in val.questions])
        cfg = RouterConfig(encoder=live.embedder, dim=x.shape[1], levels=router.config.levels,
                           hidden=router.config.hidden, dropout=router.config.dropout)
        cr, hist = train_router(cfg, x, fit.labels, xv, val.labels, train_config=TrainConfig(seed=0))
        bench, chunks = benches["gutenqa_emma"]
        rows = variants(bench, chunks, emb, cr, soft_label_fn(bench, corpus, sim), args.top_k)
        rw = rows["trained router (max over children)"]
        cross = {"n_train": len(fit), "best_epoch": hist.best_epoch,
                 "rows": {k: {m: v for m, v in r.items() if m != "per_question"} for k, r in rows.items()},
                 "router_vs_uniform_dcg@10": paired(rw, rows["uniform weights"]),
                 "router_mean_weights": np.array([r["weights"] for r in rw["per_question"]]).mean(0).round(3).tolist()}
        result["cross_chroma_to_emma"] = cross

    qv = ctx.embedder.embed_queries([q.question for q in benches["chroma"][0].questions[:100]])
    result["latency"] = latency(router, np.asarray(qv), live.embedder, live.n_levels)
    result["vectors_embedded_not_in_index"] = emb.missed
    result["seconds"] = time.perf_counter() - t0

    train_json = Path(args.router) / "training.json"
    if train_json.is_file():
        tr = json.loads(train_json.read_text(encoding="utf-8"))
        result["router"]["training"] = {"val_bce": tr["history"]["best_val"], "best_epoch": tr["history"]["best_epoch"],
                                        "val_bce_of_label_prior": tr.get("val_bce_of_label_prior")}
    md = render(result)
    print(md)
    if not args.no_write:
        write_json("router_eval.json", result)
        write_section("router", md)
    return 0


def render(result: dict) -> str:
    cfg = result["router"]["config"]
    lat = result["latency"]
    meta = cfg.get("meta", {})
    out = [
        "## Mix-of-Granularity router (held-out questions)",
        "",
        f"`.venv/bin/python bench/router_eval.py --data-dir {result['index']['data_dir']} --router "
        f"{result['router']['path']}` (index: {result['index']['chunker']} θ={result['index']['theta']}, "
        f"{result['index']['embedder']}; router: {cfg['encoder']} query vectors → MLP {cfg['hidden']} → "
        f"{len(cfg['levels'])} sigmoid weights, {meta.get('label_similarity', '?')} soft labels, trained on the train "
        f"split of {', '.join(meta.get('trained_on', []))}). Test split = 20% of each set by a fixed hash of the "
        f"question id, never seen in training or early stopping. Per-document search, top {result['top_k_per_level']} "
        "per level, parents ranked by the max over children of weight × cosine; evidence recall within 1,500 words.",
        "",
    ]
    names = ("parent", "θ/2", "θ/4")
    tables = [(name, d["n_test"], d["rows"]) for name, d in result["sets"].items()]
    if result.get("cross_chroma_to_emma"):
        c = result["cross_chroma_to_emma"]
        tables.append(("chroma → gutenqa_emma (all questions)", c["rows"]["uniform weights"]["n_questions"],
                       c["rows"]))
    for name, n, rows in tables:
        out.append(f"**{name}** ({n} questions)")
        out.append("")
        out.append(markdown_table(["ranking", "questions", *METRICS], [summary_row(k, r) for k, r in rows.items()]))
        out.append("")
        info = result["sets"].get(name) or (result.get("cross_chroma_to_emma") if "→" in name else None)
        if info:
            p = info["router_vs_uniform_dcg@10"]
            mw = ", ".join(f"{names[i]} {w:.2f}" for i, w in enumerate(info["router_mean_weights"]))
            line = (f"Router vs uniform, per question (DCG@10): better {p['better']}, same {p['same']}, worse "
                    f"{p['worse']}. Mean router weights: {mw}.")
            if "label_best_level" in info:
                lb = ", ".join(f"{names[int(k)]} {v}" for k, v in sorted(info["label_best_level"].items()))
                am = ", ".join(f"{names[int(k)]} {v}" for k, v in sorted(info["router_argmax_level"].items()))
                line += (f" Best level by the soft labels: {lb}; the router's top level: {am}. Choosing per question "
                         f"the best of uniform and the single levels (a perfect selector) would reach DCG@10 "
                         f"{info['ceiling_dcg@10_best_fixed_weighting_per_question']:.3f}.")
            out += [line, ""]
    diag = result.get("diagnostic_retrieval_labels")
    if diag:
        rows = []
        for name, d in diag["sets"].items():
            rows.append([f"{name}: router on retrieval-aware labels", *(d["router"][m] for m in METRICS)])
            rows.append([f"{name}: oracle of those labels", *(d["oracle"][m] for m in METRICS)])
        for method, v in result.get("label_variants", {}).items():
            rows.append([f"chroma: router on {method} soft labels (MoG App. E)",
                         *(v["chroma_test"][m] for m in METRICS)])
        out += ["**Diagnostics: labels tied to the retrieval objective, and MoG App. E's other label "
                "similarities.** Instead of MoG's soft labels, each training question's label says which level "
                "*alone* ranks its evidence parent best (DCG@10; 0.8 to the best level(s), 0.2 to the next). Same "
                "MLP, same splits, test questions as above. The TF-IDF and hit-rate rows train the same router on MoG "
                "soft labels scored with those similarities instead of MiniLM's cosine.", "",
                markdown_table(["ranking", *METRICS], rows), ""]
    out.append(f"Router latency per query (CPU, 1 thread, MLP on the dense search's query vector, no extra "
               f"encoding): p50 {lat['p50_ms']:.3f} ms, p95 {lat['p95_ms']:.3f} ms (goal ≤ 5 ms).")
    out += ["", reading(result)]
    return "\n".join(out)


def reading(result: dict) -> str:
    """What the numbers say, with the numbers (regenerated with the tables)."""
    ch = result["sets"]["chroma"]
    r = ch["rows"]
    u, t, o = r["uniform weights"], r["trained router (max over children)"], r["oracle: the question's own soft label"]
    single = max(v["dcg@10"] for k, v in r.items() if k.startswith("level "))
    p = ch["router_vs_uniform_dcg@10"]
    helps = t["dcg@10"] > u["dcg@10"] + 0.01 and p["better"] > 2 * p["worse"]
    text = [f"**Reading.** The trained router {'helps' if helps else 'does not help'} on held-out chroma questions: "
            f"DCG@10 {t['dcg@10']:.3f} vs {u['dcg@10']:.3f} for uniform weights, Recall@10 {t['recall@10']:.3f} vs "
            f"{u['recall@10']:.3f}, evidence recall {t['evidence_recall@1500w']:.3f} vs "
            f"{u['evidence_recall@1500w']:.3f}; per question it wins {p['better']} and loses {p['worse']}."]
    c = result.get("cross_chroma_to_emma")
    if c:
        cu, ct = c["rows"]["uniform weights"], c["rows"]["trained router (max over children)"]
        text.append(f"Trained on chroma and tested on *Emma* it lowers DCG@10 from {cu['dcg@10']:.3f} to "
                    f"{ct['dcg@10']:.3f} ({c['router_vs_uniform_dcg@10']['worse']} questions worse, "
                    f"{c['router_vs_uniform_dcg@10']['better']} better): the tilt it learned does not transfer to a "
                    "novel. Emma's own test split has 4 questions, too few to read.")
    tr = result["router"].get("training") or {}
    why = ["Why:"]
    why.append(f"(1) *labels* — MoG's soft labels used directly as each test question's weights give DCG@10 "
               f"{o['dcg@10']:.3f}, no better than uniform: the level whose best BM25 snippet is most similar to the "
               "evidence is not the level that ranks the evidence's parent first in our max-over-children retrieval")
    lv = result.get("label_variants", {})
    if lv:
        why[-1] += (f". MoG's other similarities do no better: TF-IDF labels give DCG@10 "
                    f"{lv['tfidf']['chroma_test']['dcg@10']:.3f}; hit-rate labels give "
                    f"{lv['hitrate']['chroma_test']['dcg@10']:.3f}, the parent level alone, because the coarsest "
                    "snippet always holds the most label words, so the router learns to weight parents")
    why[-1] += ";"
    d = result.get("diagnostic_retrieval_labels", {}).get("sets", {}).get("chroma")
    if d:
        why.append(f"(2) *encoder and data* — with labels tied to the objective (oracle DCG@10 {d['oracle']['dcg@10']:.3f}, "
                   f"the room a router could use) the trained router still scores {d['router']['dcg@10']:.3f}: the "
                   "MiniLM query vector of ~300 training questions does not predict which level retrieves best")
        if tr.get("val_bce_of_label_prior") is not None:
            why[-1] += (f"; the shipped router's best validation BCE ({tr['val_bce']:.4f}) is no better than that of a "
                        f"constant router predicting the mean training label ({tr['val_bce_of_label_prior']:.4f}): it "
                        "learned the label prior (θ/4 first), not a function of the question")
        why[-1] += ";"
    why.append(f"(3) *level set* — uniform weights already beat every single level (best single level DCG@10 "
               f"{single:.3f}), because the max over children lets each parent be found by whichever level matches; "
               "a weighting can only win by re-ordering close calls. MoG's own selection returns θ/4 chunks for most "
               f"questions: DCG@10 {r['MoG selection, trained router']['dcg@10']:.3f} and evidence recall "
               f"{r['MoG selection, trained router']['evidence_recall@1500w']:.3f}, but Recall@10 "
               f"{r['MoG selection, trained router']['recall@10']:.3f}, since ten small chunks cover less than ten "
               "parents.")
    text.append(" ".join(why))
    text.append("A RoBERTa query encoder (MoG's choice, `--encoder roberta-base`) is implemented but not measured: "
                "the model is not available offline here.")
    return "\n\n".join(text)


if __name__ == "__main__":
    sys.exit(main())
