"""Keywords inside the store against BM25 in pickles beside it (issue 48), on 2 cores, side by side in one run.

``scale``: a level of N chunks (their texts cycled from the sentences of ../shared/bench's documents, windows of 20
to 60 words, random unit dense vectors of 384 dimensions) in a Qdrant Edge shard with keywords; then

* the keyword search's p50 / p95 (30 questions of the bench sets, top 20) and the dense search's beside it;
* the write of one more document of 2 pages (~1,000 words: 7 parents, 14 and 28 children, written as one level here)
  to that level: the store's upsert (dense vector + keywords, computed from the text) against what the pickled
  BM25 added to the same upsert before: read the level's pickle, add the chunks' term counts, write it back
  (``retrieval.bm25.Bm25Store.update`` until this change; re-created here as it was, the state a dict of
  chunk id → (parent id, Counter, document id)), and the first keyword search after it, which rebuilt the level's
  BM25 matrix from the pickle in every process (:class:`retrieval.bm25.Bm25Level`);
* the mean token count per chunk (the reference length's check: ``ingest.text.keywords.TOKENS_PER_WORD``).

* ``agreement``: on an index written before this change (its pickles and its Edge shards, e.g. the answers
  corpus's), BM25 with the collection's running mean length (what the pickles gave) against the store's fixed
  reference length (:func:`ingest.text.keywords.avg_len`), per level over the train and dev questions: the share of
  questions whose top 10 holds a chunk with the evidence (a chunk holding 60% of the evidence's words), and the
  overlap of the two top 10s.

    python bench/keyword_store.py scale --chunks 100000 --out bench/results/keyword_store_100k.json
    python bench/keyword_store.py agreement --data DATA --out bench/results/keyword_agreement.json
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

import common as B  # noqa: F401  (project root on sys.path, offline flags)
import numpy as np

from ingest.store.index import EdgeIndex
from ingest.text.keywords import tokenize
from ingest.types import Chunk
from retrieval.bm25 import Bm25Level
from retrieval.search import _rrf

SHARED = Path(__file__).resolve().parents[2] / "shared" / "bench"
DIM = 384


def corpus_words() -> list[str]:
    words: list[str] = []
    for d in sorted(SHARED.glob("*/docs/*")):
        if d.is_file():
            words += d.read_text(encoding="utf-8", errors="replace").split()
    return words


def questions(n: int) -> list[str]:
    qs = []
    for f in sorted(SHARED.glob("*/questions.jsonl")):
        for line in f.read_text().splitlines()[:n]:
            qs.append(json.loads(line)["question"])
    return qs[:n]


def make_chunks(words: list[str], n: int, start: int, doc: str, rng) -> tuple[list[Chunk], np.ndarray]:
    out, at = [], start
    for _ in range(n):
        k = int(rng.integers(20, 61))
        text = " ".join(words[(at + i) % len(words)] for i in range(k))
        at += k
        out.append(Chunk(text, 0, len(text), 0, 0, len(text), doc, f"{doc}-{len(out)}"))
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return out, v / np.linalg.norm(v, axis=1, keepdims=True)


def pickled_update(path: Path, chunks: list[Chunk]) -> None:
    """What the pickled BM25 did on each document write: read the level, add the chunks, write it back atomically."""
    state = pickle.loads(path.read_bytes()) if path.exists() else {}
    for c in chunks:
        state[c.id] = (c.parent_id, Counter(tokenize(c.text)), c.doc_id)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))
    os.replace(tmp, path)


def p50_p95(xs: list[float]) -> dict:
    return {"p50": statistics.median(xs), "p95": float(np.percentile(xs, 95))}


def cmd_scale(a) -> None:
    rng = np.random.default_rng(48)
    words = corpus_words()
    # --reuse DIR: the store and pickle an earlier run built in DIR (kept by --keep; its build is not timed again)
    reused = bool(a.reuse) and (Path(a.reuse) / "g1_L0.pkl").exists()
    root = Path(a.reuse) if a.reuse else Path(tempfile.mkdtemp(prefix="kwstore-"))
    live = type("Live", (), {"gen": 1, "__call__": lambda self: self.gen})()
    idx = EdgeIndex(root / "edge", live, hnsw_min_points=250_000)
    pkl = root / "g1_L0.pkl"
    t0, n_tokens, state = time.perf_counter(), [], {}
    if not reused:
        idx.create_generation(1, DIM, 1)
        for i in range(0, a.chunks, 5000):
            ch, v = make_chunks(words, min(5000, a.chunks - i), i * 40, f"doc{i // 5000}", rng)
            idx.upsert(1, ch, v, 1)
            n_tokens += [len(tokenize(c.text)) for c in ch]
            state.update({c.id: (c.parent_id, Counter(tokenize(c.text)), c.doc_id) for c in ch})
        pkl.write_bytes(pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))  # the pickled level, written once
        del state
    else:
        rng = np.random.default_rng(49)  # the questions and the new documents differ from the build's draws
    idx.flush(1)
    t_opt = time.perf_counter()
    idx.optimize(1)
    build_s = None if reused else time.perf_counter() - t0
    optimize_s = time.perf_counter() - t_opt
    qs = questions(30)
    kw, dense, hybrid, found = [], [], [], []
    for q in qs:
        toks = tokenize(q)
        t = time.perf_counter()
        found.append(len(idx.keyword_search(0, toks, 20)))
        kw.append(time.perf_counter() - t)
        qv = rng.standard_normal(DIM).astype(np.float32)
        qv /= np.linalg.norm(qv)
        t = time.perf_counter()
        idx.search(0, qv, 20)
        dense.append(time.perf_counter() - t)
        # the hybrid search as one: both halves one after the other and their fusion by reciprocal rank, as
        # retrieval.search does for a level (its parent assembly aside)
        t = time.perf_counter()
        rankings = [[p.id for p in idx.search(0, qv, 20)], [p.id for p in idx.keyword_search(0, toks, 20)]]
        _rrf(rankings, 60, [1.0, 1.0])
        hybrid.append(time.perf_counter() - t)
    store_w, pickle_w, rebuild = [], [], []
    for r in range(3):
        ch, v = make_chunks(words, 49, 10**6 + r * 5000, f"new{r}", rng)  # 7 + 14 + 28 chunks of a 2-page document
        t = time.perf_counter()
        idx.upsert(1, ch, v, 1)
        idx.flush(1)
        store_w.append(time.perf_counter() - t)
        t = time.perf_counter()
        pickled_update(pkl, ch)
        pickle_w.append(time.perf_counter() - t)
        t = time.perf_counter()
        state = pickle.loads(pkl.read_bytes())
        Bm25Level(list(state), [v[1] for v in state.values()], [v[0] for v in state.values()],
                  [v[2] for v in state.values()]).top_indices(tokenize(qs[r]), 20)
        rebuild.append(time.perf_counter() - t)
        del state
    res = {"chunks": a.chunks, "dim": DIM, "build_s": build_s, "optimize_s": optimize_s,
           "reused_build": str(root) if reused else None, "pickle_mb": pkl.stat().st_size / 2**20,
           "keyword_search_s": p50_p95(kw), "dense_search_s": p50_p95(dense), "hybrid_search_s": p50_p95(hybrid),
           "write_2_pages_store_s": p50_p95(store_w), "write_2_pages_pickle_extra_s": p50_p95(pickle_w),
           "pickle_first_search_after_write_s": p50_p95(rebuild), "keyword_hits_per_question": float(np.mean(found)),
           "mean_tokens_per_chunk": float(np.mean(n_tokens)) if n_tokens else None, "cores": os.cpu_count(),
           "command": f"python bench/keyword_store.py scale --chunks {a.chunks}"
                      + (" --keep" if a.keep else "") + (f" --reuse {a.reuse}" if a.reuse else "")}
    idx.close()
    if not (a.keep or reused):
        shutil.rmtree(root, ignore_errors=True)
    Path(a.out).write_text(json.dumps(res, indent=1))
    print(json.dumps(res, indent=1))


def cmd_agreement(a) -> None:
    from ingest.text.keywords import K1, avg_len
    from retrieval.bm25 import lucene_idf

    rows = [json.loads(x) for f in ("train", "dev") for x in (B.ROOT / "bench" / "data" / "qa" / f"{f}.jsonl")
            .read_text().splitlines() if x.strip()]
    rows = [r for r in rows if r.get("evidence")]
    live = type("Live", (), {"gen": 1, "__call__": lambda self: self.gen})()
    idx = EdgeIndex(Path(a.data) / "edge", live)
    out = {"questions": len(rows), "levels": {}, "theta": a.theta,
           "command": f"python bench/keyword_store.py agreement --data {a.data}"}
    for level in range(3):
        state = pickle.loads((Path(a.data) / "bm25" / f"g1_L{level}.pkl").read_bytes())
        texts = {p.id: p.payload.get("text", "") for p in idx.points(1, level)}
        ids = [i for i in state if i in texts]
        old = Bm25Level(ids, [state[i][1] for i in ids])
        # the store's scoring: the same idf and saturation, the length normalised by the fixed reference length
        lens = np.array([sum(state[i][1].values()) for i in ids], dtype=float)
        ref = avg_len(a.theta, level)
        new = Bm25Level(ids, [state[i][1] for i in ids])
        norm_old = K1 * (1 - 0.75 + 0.75 * lens / lens.mean())
        norm_new = K1 * (1 - 0.75 + 0.75 * lens / ref)
        m = new.matrix.tocoo()
        tf = m.data * (norm_old[m.row]) / ((K1 + 1) - m.data)  # the term frequency back from the old weight
        m.data = tf * (K1 + 1) / (tf + norm_new[m.row])
        new.matrix = m.tocsc()
        assert np.allclose(new.idf, [lucene_idf(len(ids), d) for d in np.diff(old.matrix.indptr)])
        hits = {"old": 0, "new": 0}
        overlap = []
        for r in rows:
            q = tokenize(r["question"])
            ev = [set(tokenize(e["text"])) for e in r["evidence"] if e.get("text")]
            tops = {}
            for name, lv in (("old", old), ("new", new)):
                tops[name] = [ids[i] for i, _ in lv.top_indices(q, 10)]
                if any(e and len(e & set(tokenize(texts[c]))) >= 0.6 * len(e) for c in tops[name] for e in ev):
                    hits[name] += 1
            overlap.append(len(set(tops["old"]) & set(tops["new"])) / 10)
        out["levels"][str(level)] = {"chunks": len(ids), "mean_tokens": float(lens.mean()), "reference_len": ref,
                                     "evidence_at10_old": hits["old"] / len(rows),
                                     "evidence_at10_new": hits["new"] / len(rows),
                                     "overlap_at10": float(np.mean(overlap))}
        print(level, out["levels"][str(level)], flush=True)
    Path(a.out).write_text(json.dumps(out, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("command", choices=("scale", "agreement"))
    ap.add_argument("--data", default="", help="agreement: a data dir written before keywords moved into the store")
    ap.add_argument("--theta", type=int, default=300)
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--keep", action="store_true", help="keep the built store (for --reuse)")
    ap.add_argument("--reuse", default="", help="a folder an earlier --keep run built: time its searches again")
    ap.add_argument("--out", default="bench/results/keyword_store.json")
    a = ap.parse_args()
    {"scale": cmd_scale, "agreement": cmd_agreement}[a.command](a)


if __name__ == "__main__":
    main()
