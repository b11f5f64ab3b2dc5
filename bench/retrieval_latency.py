"""Retrieval latency (query embedding + search of every level + max-over-children scoring + context assembly,
no generation) on the chroma corpus and on a synthetic 100k-chunk index; time to first token and tokens/s of the
offline synthesizer with a full 1500-word context; peak memory of the serving process.

    .venv/bin/python bench/retrieval_latency.py [--chroma-data data/bench-chroma] [--synthetic 100000]

The chroma index is built once with the `mg` chunker if the data dir has none (the chunker does not change
the search cost; the LGMGC index from `mgrag ingest ../shared/bench/chroma/docs` can be passed instead).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import BENCH_DIR, load_set, machine_info, markdown_table, peak_rss_mb, write_json  # noqa: E402
from ingest.jobs.queue import ingest_files


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def time_queries(ctx, questions, retriever, repeats=1):
    from retrieval.search import retrieve

    retrieve(ctx, questions[0], retriever=retriever)  # warm-up (loads the BM25 matrix, JIT paths)
    lat = []
    for _ in range(repeats):
        for q in questions:
            t = time.perf_counter()
            retrieve(ctx, q, retriever=retriever)
            lat.append((time.perf_counter() - t) * 1000)
    return {"n": len(lat), "p50_ms": pct(lat, 50), "p95_ms": pct(lat, 95), "mean_ms": statistics.mean(lat)}


def chroma_ctx(data_dir: Path):
    from app.context import AppContext
    from core.settings import Settings

    ctx = AppContext(Settings(data_dir=data_dir, chunker="mg"))
    if ctx.catalog.live_generation() is None:
        ingest_files(ctx, [BENCH_DIR / "chroma" / "docs"])
    return ctx


def synthetic_ctx(data_dir: Path, n_chunks: int, dim: int):
    """An index of ``n_chunks`` random unit vectors split 1:2:4 over three levels, with text payloads (their keywords
    written with them by the store)."""
    from app.context import AppContext
    from core.settings import Settings
    from ingest.store.index import StoredPoint

    ctx = AppContext(Settings(data_dir=data_dir, chunker="mg"))
    cat, index = ctx.catalog, ctx.index
    if cat.live_generation() is None:
        emb = ctx.embedder
        gen = cat.new_generation("mg", 300, {"synthetic": n_chunks}, emb.name, emb.dim, 3)
        index.create_generation(gen, emb.dim, 3)
        rng = np.random.default_rng(0)
        vocab = [f"w{i}" for i in range(20_000)]
        n_par = n_chunks // 7
        sizes = [n_par, 2 * n_par, n_chunks - 3 * n_par]

        rows: list[tuple] = []
        parent_ids = [str(uuid.uuid5(uuid.NAMESPACE_URL, f"p{i}")) for i in range(n_par)]
        for level, n in enumerate(sizes):
            words = 300 >> level
            batch = []
            vecs = rng.standard_normal((n, emb.dim)).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            for i in range(n):
                pid = parent_ids[min(i // (2 ** level), n_par - 1)]
                cid = pid if level == 0 else str(uuid.uuid5(uuid.NAMESPACE_URL, f"{level}:{i}"))
                text = " ".join(rng.choice(vocab, size=words // 4))
                batch.append(StoredPoint(cid, {
                    "doc_id": f"doc{i // 500}", "doc_hash": "x", "doc_version": 1, "level": level, "parent_id": pid,
                    "start": 0, "end": len(text), "text": text}, vector=vecs[i]))
                if len(batch) == 1000:
                    index.upsert_points(gen, level, batch)
                    rows += [(gen, p.id, p.payload["doc_id"], level, 0, p.payload["end"], p.payload["parent_id"])
                             for p in batch]
                    batch = []
            if batch:
                index.upsert_points(gen, level, batch)
                rows += [(gen, p.id, p.payload["doc_id"], level, 0, p.payload["end"], p.payload["parent_id"])
                         for p in batch]
        with cat.transaction() as db:  # the catalog owns the points (the consistency check on open keeps them)
            db.executemany("INSERT OR REPLACE INTO chunks VALUES (?,?,?,?,?,?,?)", rows)
        index.flush(gen)
        index.switch(gen, 3)
        cat.set_generation_status(gen, "live")
    return ctx


def synth_speed(ctx, questions):
    """Offline synthesizer with a full 1500-word context: time to first token and decode tokens/s."""
    from app.synth import make_synthesizer
    from retrieval.search import retrieve

    synth = make_synthesizer("offline", ctx)
    rows = []
    for q in questions:
        r = retrieve(ctx, q, budget_words=1500)
        words = sum(len(s.text.split()) for s in r.sources)
        t0 = time.perf_counter()
        first, pieces = None, []
        for p in synth.stream(q, r.sources):
            if first is None:
                first = time.perf_counter() - t0
            pieces.append(p)
        total = time.perf_counter() - t0
        n_tok = len(synth.tokenizer("".join(pieces), add_special_tokens=False)["input_ids"])
        prompt_tok = synth.prompt_ids(q, r.sources).shape[1]
        rows.append({"context_words": words, "prompt_tokens": int(prompt_tok), "ttft_s": first, "new_tokens": n_tok,
                     "decode_tok_s": (n_tok - 1) / (total - first) if first and n_tok > 1 and total > first else None})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chroma-data", default="data/bench-chroma")
    ap.add_argument("--synthetic-data", default="data/bench-synthetic")
    ap.add_argument("--synthetic", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=100)
    args = ap.parse_args()
    import torch

    torch.set_num_threads(2)
    bench = load_set("chroma")
    questions = [q.question for q in bench.questions][: args.queries]
    results = {"machine": machine_info()}

    ctx = chroma_ctx(Path(args.chroma_data))
    live = ctx.catalog.live_generation()
    n_chroma = sum(ctx.index.count(live.gen, lv) for lv in range(live.n_levels))
    results["chroma"] = {"chunks": n_chroma,
                         **{r: time_queries(ctx, questions, r) for r in ("dense", "bm25", "hybrid")}}
    results["synth"] = synth_speed(ctx, questions[:5])
    ctx.close()
    write_json("retrieval_latency.json", results)  # partial, in case the synthetic part fails

    ctx = synthetic_ctx(Path(args.synthetic_data), args.synthetic, 384)
    live = ctx.catalog.live_generation()
    n_syn = sum(ctx.index.count(live.gen, lv) for lv in range(3))
    results["synthetic"] = {"chunks": n_syn,
                            **{r: time_queries(ctx, questions, r) for r in ("dense", "bm25", "hybrid")}}
    results["peak_rss_mb"] = peak_rss_mb()
    ctx.close()

    rows = []
    for name in ("chroma", "synthetic"):
        for r in ("dense", "bm25", "hybrid"):
            x = results[name][r]
            rows.append([name, results[name]["chunks"], r, x["n"], f"{x['p50_ms']:.1f}", f"{x['p95_ms']:.1f}"])
    print(markdown_table(["index", "chunks", "retriever", "queries", "p50 ms", "p95 ms"], rows))
    s = results["synth"]
    print(markdown_table(["context words", "prompt tokens", "TTFT s", "new tokens", "decode tok/s"],
                         [[x["context_words"], x["prompt_tokens"], f"{x['ttft_s']:.2f}", x["new_tokens"],
                           "-" if x["decode_tok_s"] is None else f"{x['decode_tok_s']:.1f}"] for x in s]))
    print(f"peak RSS of the serving process: {results['peak_rss_mb']:.0f} MB")
    write_json("retrieval_latency.json", results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
