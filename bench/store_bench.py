"""The vector store side by side: qdrant-client's local mode vs Qdrant Edge (BENCHMARKS.md "Vector store").

    .venv/bin/python bench/store_bench.py synthetic            # upsert, exact/filtered search, reopen, RSS, disk
    .venv/bin/python bench/store_bench.py recall               # HNSW recall vs ef on MiniLM embeddings of the dev sets
    .venv/bin/python bench/store_bench.py ingest [--parallel]  # `mgrag ingest` of chroma end to end, local vs Edge
    .venv/bin/python bench/store_bench.py hnsw 1000000         # Edge with its HNSW graph at 1M: build, latency, recall

Synthetic points: unit 384-d vectors, a payload like ours (ids, offsets, ~100 words of text), 500 points per
document id, batches of 256, each size and engine in its own process (so RSS is that store's alone). Searches:
top 20 of one level, 50 random queries (the first one warms up); filtered = restricted to one document id.
Local mode writes every point in its own SQLite commit (~60 points/s here), so it is built on disk at 7.5k only;
its 100k search figures come from ``:memory:`` (the same numpy scan a reopened local store runs), and neither
its 100k reopen nor anything at 1M is measured (27 min and 4.5 h to build). Results: bench/results/store_bench.json.
"""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

RESULTS = Path(__file__).resolve().parent / "results" / "store_bench.json"
DIM = 384
WORDS = "the of and a to in is was for on that with as by at from his her it an be this which".split()


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def pct(xs, q):
    return float(np.percentile(np.asarray(xs) * 1000, q))


def points(n: int, seed: int = 0, start: int = 0):
    """(ids, vectors, payloads) of ``n`` synthetic chunks, made batch by batch."""
    rng = np.random.default_rng(seed + start)
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    ids = [str(uuid.uuid5(uuid.NAMESPACE_URL, f"p{start + i}")) for i in range(n)]
    text = " ".join(WORDS[i % len(WORDS)] for i in range(100))
    pl = [{"doc_id": f"doc{(start + i) // 500}", "doc_hash": "h" * 64, "doc_version": 1, "level": 2,
           "parent_id": ids[i], "start": 0, "end": len(text), "text": text} for i in range(n)]
    return ids, v, pl


def open_index(engine: str, path: Path, live):
    from ingest.store.index import ClientIndex, EdgeIndex, make_client

    if engine == "edge":
        return EdgeIndex(path / "edge", live, hnsw_min_points=10**9)
    if engine == "memory":
        return ClientIndex(make_client(":memory:", None, path), live)
    return ClientIndex(make_client(None, None, path / "qdrant"), live)


def synthetic_one(engine: str, n: int, path: Path) -> dict:
    """Runs in its own process: build, search, close, reopen, search again."""
    from ingest.store.index import StoredPoint

    base = rss_mb()
    live = lambda: 1  # noqa: E731
    idx = open_index(engine, path, live)
    idx.create_generation(1, DIM, 1)
    out = {"engine": engine, "n": n}
    t = time.perf_counter()
    step = 25_600
    for s in range(0, n, step):
        ids, v, pl = points(min(step, n - s), start=s)
        for i in range(0, len(ids), 256):
            idx.upsert_points(1, 0, [StoredPoint(ids[j], pl[j], vector=v[j]) for j in range(i, min(i + 256, len(ids)))])
    idx.flush(1)
    out["upsert_s"] = time.perf_counter() - t
    out["upsert_pts_s"] = n / out["upsert_s"]
    rng = np.random.default_rng(42)
    qs = rng.standard_normal((51, DIM)).astype(np.float32)
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)

    def searches(tag):
        lat, flat = [], []
        for k, q in enumerate(qs):
            t = time.perf_counter()
            idx.search(0, q, 20)
            if k:
                lat.append(time.perf_counter() - t)
            doc = f"doc{rng.integers(0, max(1, n // 500))}"
            t = time.perf_counter()
            hits = idx.search(0, q, 20, doc_ids=[doc])
            if k:
                flat.append(time.perf_counter() - t)
            assert all(h.payload["doc_id"] == doc for h in hits)
        out[f"{tag}exact_p50_ms"], out[f"{tag}exact_p95_ms"] = pct(lat, 50), pct(lat, 95)
        out[f"{tag}filtered_p50_ms"], out[f"{tag}filtered_p95_ms"] = pct(flat, 50), pct(flat, 95)

    searches("")
    out["rss_built_mb"] = rss_mb() - base
    if engine != "memory":
        idx.close()
        del idx
        out["disk_mb"] = sum(f.stat().st_blocks * 512 for f in path.rglob("*") if f.is_file()) / 2**20
    return out


def hnsw_one(n: int, path: Path, ef_values=(32, 64, 128, 256)) -> dict:
    """Edge at ``n`` synthetic points with the HNSW graph built (what ``hnsw_min_points`` triggers): build time
    of :meth:`EdgeShard.optimize`, search latency and recall@20 against exact per ef. Random 384-d vectors are
    the hard case for a graph (no clusters), so this recall is a floor; the MiniLM figures are the realistic one."""
    from ingest.store.index import EdgeIndex, StoredPoint

    idx = EdgeIndex(path / "edge", lambda: 1, hnsw_min_points=1000)
    idx.create_generation(1, DIM, 1)
    step = 25_600
    for s in range(0, n, step):
        ids, v, pl = points(min(step, n - s), start=s)
        for i in range(0, len(ids), 256):
            idx.upsert_points(1, 0, [StoredPoint(ids[j], pl[j], vector=v[j]) for j in range(i, min(i + 256, len(ids)))])
    t = time.perf_counter()
    idx._shard(1, 0).optimize()
    out = {"n": n, "hnsw_build_s": time.perf_counter() - t, "indexed": idx._shard(1, 0).info().indexed_vectors_count}
    from qdrant_edge import Query, QueryRequest, SearchParams

    sh = idx._shard(1, 0)
    rng = np.random.default_rng(7)
    qs = rng.standard_normal((51, DIM)).astype(np.float32)
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)

    def run(params):
        lat, res = [], []
        for k, q in enumerate(qs):
            t = time.perf_counter()
            r = sh.query(QueryRequest(limit=20, query=Query.Nearest(q.tolist()), params=params))
            if k:
                lat.append(time.perf_counter() - t)
                res.append({str(p.id) for p in r})
        return res, lat

    exact, lat = run(SearchParams(exact=True))
    out["exact_p50_ms"], out["exact_p95_ms"] = pct(lat, 50), pct(lat, 95)
    out["ef"] = []
    for ef in ef_values:
        got, lat = run(SearchParams(hnsw_ef=ef))
        out["ef"].append({"ef": ef, "recall": statistics.mean(len(a & b) / 20 for a, b in zip(got, exact)),
                          "p50_ms": pct(lat, 50), "p95_ms": pct(lat, 95)})
    idx.close()
    return out


def reopen_one(engine: str, path: Path) -> dict:
    """Runs in a fresh process: open the store built before, first search, RSS above the interpreter's."""
    import ingest.store.index  # noqa: F401  (imports not counted in the reopen time)

    if engine == "edge":
        import qdrant_edge  # noqa: F401
    else:
        import qdrant_client  # noqa: F401
    base = rss_mb()
    t = time.perf_counter()
    idx = open_index(engine, path, lambda: 1)
    q = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
    idx.search(0, q, 20)
    out = {"reopen_s": time.perf_counter() - t, "rss_reopen_mb": rss_mb() - base}
    idx.close()
    return out


def child(fn: str, *args) -> dict:
    p = subprocess.run([sys.executable, __file__, "_child", fn, *map(str, args)], capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(p.stderr[-3000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


def synthetic(sizes=(7_500, 100_000, 1_000_000)) -> list[dict]:
    rows = []
    plan = [("local", 7_500), ("memory", 100_000)] + [("edge", n) for n in sizes]
    for engine, n in plan:
        d = Path(tempfile.mkdtemp(prefix=f"store_{engine}_{n}_", dir=os.environ.get("BENCH_TMP")))
        try:
            r = child("synthetic_one", engine, n, d)
            if engine != "memory":
                r.update(child("reopen_one", engine, d))
            print(json.dumps(r), flush=True)
            rows.append(r)
        finally:
            shutil.rmtree(d, ignore_errors=True)
    return rows


# ---- HNSW recall vs ef on MiniLM embeddings of the dev sets --------------------------------------------------

def recall(ef_values=(8, 16, 32, 64, 128, 256), k: int = 10) -> dict:
    """Chunks of chroma and Emma (mg, θ 300, all three levels) embedded with the shipped MiniLM; their questions
    as queries. One Edge shard with an HNSW graph forced (m 16, ef_construct 128); recall@k of HNSW search
    against the exact top k, per ef, with latency."""
    from core.settings import Settings
    from ingest.chunkers import build_chunker
    from ingest.embed import load_embedder
    from ingest.store.index import EdgeIndex, StoredPoint

    bench = Path(__file__).resolve().parents[2] / "shared" / "bench"
    s = Settings()
    emb = load_embedder(s.embedder)
    ch = build_chunker("mg", 300)
    texts, questions = [], []
    for name in ("chroma", "gutenqa_emma"):
        for p in sorted((bench / name / "docs").iterdir()):
            for c in ch.chunk_document(p.read_text(encoding="utf-8"), p.name, "h"):
                texts.append(c.text)
        questions += [json.loads(line)["question"] for line in (bench / name / "questions.jsonl").open()]
    t = time.perf_counter()
    vecs = emb.embed_passages(texts)
    embed_s = time.perf_counter() - t
    qv = emb.embed_queries(questions)
    d = Path(tempfile.mkdtemp(prefix="store_recall_"))
    try:
        idx = EdgeIndex(d, lambda: 1, hnsw_min_points=1000)
        idx.create_generation(1, emb.dim, 1)
        pts = [StoredPoint(str(uuid.uuid5(uuid.NAMESPACE_URL, f"c{i}")), {"doc_id": "d", "i": i}, vector=v)
               for i, v in enumerate(vecs)]
        for i in range(0, len(pts), 256):
            idx.upsert_points(1, 0, pts[i:i + 256])
        t = time.perf_counter()
        idx._shard(1, 0).optimize()
        build_s = time.perf_counter() - t
        info = idx._shard(1, 0).info()
        from qdrant_edge import Query, QueryRequest, SearchParams

        sh = idx._shard(1, 0)

        def run(params):
            lat, res = [], []
            for q in qv:
                t = time.perf_counter()
                r = sh.query(QueryRequest(limit=k, query=Query.Nearest(q.tolist()), params=params))
                lat.append(time.perf_counter() - t)
                res.append([str(p.id) for p in r])
            return res, lat

        exact, elat = run(SearchParams(exact=True))
        rows = [{"ef": "exact", "recall": 1.0, "p50_ms": pct(elat, 50), "p95_ms": pct(elat, 95)}]
        for ef in ef_values:
            got, lat = run(SearchParams(hnsw_ef=ef))
            rec = statistics.mean(len(set(a) & set(b)) / k for a, b in zip(got, exact))
            rows.append({"ef": ef, "recall": rec, "p50_ms": pct(lat, 50), "p95_ms": pct(lat, 95)})
            print(json.dumps(rows[-1]), flush=True)
        idx.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return {"points": len(texts), "queries": len(questions), "k": k, "indexed_vectors": info.indexed_vectors_count,
            "embed_s": embed_s, "hnsw_build_s": build_s, "rows": rows}


# ---- `mgrag ingest` of chroma end to end ----------------------------------------------------------------------

def ingest_e2e(chunker: str = "mg", parallel: bool = False) -> list[dict]:
    """`mgrag ingest` of chroma into a fresh data dir with each engine; ``parallel``: both at once, so that both
    see the same background load on a shared machine (they also share the cores with each other)."""
    bench = Path(__file__).resolve().parents[2] / "shared" / "bench" / "chroma" / "docs"
    root = Path(__file__).resolve().parents[1]
    runs, done = {}, {}
    for engine in ("local", "edge"):
        d = Path(tempfile.mkdtemp(prefix=f"store_ingest_{engine}_"))
        env = {**os.environ, "MGRAG_QDRANT_ENGINE": engine, "MGRAG_CHUNKER": chunker}
        cmd = [sys.executable, "-m", "cli.main", "--data-dir", str(d), "ingest", "--quiet", str(bench)]
        runs[engine] = (d, time.perf_counter(), subprocess.Popen(cmd, env=env, cwd=root, stdout=subprocess.PIPE,
                                                                   stderr=subprocess.PIPE, text=True))
        while engine in runs and (not parallel or engine == "edge") and len(done) < len(runs):
            for e, (_, _, p) in runs.items():  # output is small: the pipes do not fill before the end
                if e not in done and p.poll() is not None:
                    done[e] = time.perf_counter()
            time.sleep(0.2)
    rows = []
    for engine, (d, t0, p) in runs.items():
        out, err = p.communicate()
        t1 = done[engine]
        shutil.rmtree(d, ignore_errors=True)
        if p.returncode:
            raise RuntimeError(err[-3000:])
        chunks = sum(int(x) for x in out.split("new chunks: ")[1].split(";")[0].replace(",", "").split() if x.isdigit())
        rows.append({"engine": engine, "chunker": chunker, "parallel": parallel, "wall_s": t1 - t0, "chunks": chunks,
                     "load1_end": os.getloadavg()[0], "summary": out.strip().splitlines()[-1]})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> int:
    if sys.argv[1] == "_child":
        fn, *args = sys.argv[2:]
        if fn == "synthetic_one":
            print(json.dumps(synthetic_one(args[0], int(args[1]), Path(args[2]))))
        elif fn == "hnsw_one":
            print(json.dumps(hnsw_one(int(args[0]), Path(args[1]))))
        else:
            print(json.dumps(reopen_one(args[0], Path(args[1]))))
        return 0
    res = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    what = sys.argv[1]
    if what == "synthetic":
        sizes = tuple(int(x) for x in sys.argv[2].split(",")) if len(sys.argv) > 2 else (7_500, 100_000, 1_000_000)
        res["synthetic"] = synthetic(sizes)
    elif what == "recall":
        res["recall"] = recall()
    elif what == "ingest":
        parallel = "--parallel" in sys.argv
        res["ingest_parallel" if parallel else "ingest"] = ingest_e2e(parallel=parallel)
    elif what == "hnsw":
        n = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
        d = Path(tempfile.mkdtemp(prefix=f"store_hnsw_{n}_"))
        try:
            res[f"hnsw_{n}"] = child("hnsw_one", n, d)
        finally:
            shutil.rmtree(d, ignore_errors=True)
        print(json.dumps(res[f"hnsw_{n}"]))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
