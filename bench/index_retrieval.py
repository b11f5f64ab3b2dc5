"""Retrieval on the six dev sets through a running index (issue 48): the documents ingested by the product
(``mgrag ingest``, the queue's one write path, BM25 as the ``bm25`` sparse vectors inside Qdrant Edge) and each
question searched by the product's own ``retrieval.search.retrieve`` within its document, hybrid and dense alone.

``bench/fusion_weight.py`` chose the fusion weight on the same six sets from chunks and vectors it computes itself;
this is the same question asked of the shipped path end to end: the product's chunker (MG, θ = 300, contextual text
as configured), its stored keywords with their fixed reference lengths, its level weights, its parent assembly and
its 1500-word context. Scored as the harness scores a ranking (``app.evaluation.bench.question_metrics``: DCG@10 of
the parents and evidence recall within the context), paired bootstrap CIs (2000 resamples, seed 0) of hybrid minus
dense per set.

Each document is written as a ``.txt`` file and ingested; its stored text is compared with the set's text and an
evidence span whose offsets no longer fit is found again by its words (counted in the result).

    .venv/bin/python bench/index_retrieval.py --data /tmp/index_retrieval      # ingest (once) and search
    .venv/bin/python bench/index_retrieval.py --render
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench.level_scoring as LS  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "index_retrieval.json"
SECTION = "index-retrieval"
COMMAND = ".venv/bin/python bench/index_retrieval.py --data DATA"
RETRIEVERS = ("dense", "hybrid")
TOP_KS = (10, 20)  # hits per level: the product's default (10) and bench/fusion_weight.py's (20)
WEIGHTS = (0.25, 0.5, 0.75)  # the keyword ranking's weight in the fusion (bm25_weight; 1 is the variants above)
VARIANTS = tuple(f"{r}@{k}" for k in TOP_KS for r in RETRIEVERS) + tuple(f"hybrid@{TOP_KS[0]}@w{w:g}"
                                                                         for w in WEIGHTS)


def _file_names(b) -> dict[str, str]:
    """Each document's file: its name in the set (the title the contextual text carries), made safe."""
    return {d: re.sub(r"[^A-Za-z0-9._-]+", "_", d)[:120] + ".txt" for d in sorted(b.docs)}


def ingest(data: Path, sets: dict) -> dict[str, float]:
    """Each set's documents as .txt files ingested into ``data/<set>`` (skipped when done before)."""
    secs = {}
    mgrag = Path(sys.executable).with_name("mgrag")
    env = {**os.environ, "MGRAG_THETA": str(LS.THETA), "MGRAG_CHUNKER": "mg"}
    for name, b in sets.items():
        root = data / name
        marker = root / "ingested.json"
        if marker.exists():
            secs[name] = json.loads(marker.read_text())["seconds"]
            continue
        docs = root / "docs"
        docs.mkdir(parents=True, exist_ok=True)
        for d, f in _file_names(b).items():
            (docs / f).write_text(b.docs[d], encoding="utf-8")
        t = time.perf_counter()
        subprocess.run([str(mgrag), "--data-dir", str(root / "index"), "ingest", "--wait", "ready", "--quiet",
                        str(docs)], check=True, env=env)
        secs[name] = time.perf_counter() - t
        marker.write_text(json.dumps({"seconds": secs[name]}))
        print(f"{name}: ingested {len(b.docs)} documents in {secs[name]:.0f} s", flush=True)
    return secs


def _relocate(q, original: str, stored: str):
    """``q`` with its located evidence moved to where its words are in ``stored`` (None offsets if not found)."""
    from core.questions import Evidence, Question

    if original == stored:
        return q, 0, 0
    ev, moved, lost = [], 0, 0
    for e in q.evidence:
        if not e.located:
            ev.append(e)
            continue
        piece = original[e.start:e.end]
        at = stored.find(piece)
        if at >= 0:
            ev.append(Evidence(e.text, at, at + len(piece)))
            moved += 1
        else:
            ev.append(Evidence(piece or e.text, None, None))
            lost += 1
    return Question(q.id, q.question, q.doc_id, q.answers, tuple(ev), q.dataset), moved, lost


def search_set(name: str, b, root: Path) -> dict:
    from app.context import AppContext
    from app.evaluation.bench import question_metrics
    from core.settings import Settings
    from retrieval.search import retrieve

    ctx = AppContext(Settings(data_dir=root / "index", theta=LS.THETA))
    try:
        files = _file_names(b)
        live = ctx.catalog.live_generation()
        rows = {r["doc_id"]: r for r in ctx.catalog.documents(live.gen)}
        spans: dict[str, set] = {}
        for p in ctx.index.points(live.gen, 0):
            spans.setdefault(p.payload["doc_id"], set()).add((p.payload["start"], p.payload["end"]))
        parents = {f: sorted(x) for f, x in spans.items()}  # each document's parents, the harness's units
        texts = {d: ctx.store.text(rows[f]["hash"]) or "" for d, f in files.items() if f in rows}
        same = sum(texts[d] == b.docs[d] for d in texts)
        per = {v: {m: [] for m in LS.METRICS} for v in VARIANTS}
        seconds = {v: [] for v in VARIANTS}
        moved = lost = 0
        for q in b.questions:
            if q.doc_id not in texts:
                continue
            f = files[q.doc_id]
            units = parents.get(f, [])
            q1, mv, ls = _relocate(q, b.docs[q.doc_id], texts[q.doc_id])
            moved, lost = moved + mv, lost + ls
            q2 = LS._relabel(q1, texts[q.doc_id], units)
            for v in VARIANTS:
                r, k, *w = v.split("@")
                ctx.settings.bm25_weight = float(w[0][1:]) if w else 1.0
                t = time.perf_counter()
                got = retrieve(ctx, q.question, k=int(k), budget_words=LS.BUDGET, retriever=r, doc_ids=[f])
                seconds[v].append(time.perf_counter() - t)
                spans = [(s.start, s.end) for s in got.sources]
                row = question_metrics(q2, texts[q.doc_id], spans, units, budget_words=LS.BUDGET)[0]
                for m in LS.METRICS:
                    per[v][m].append(row[m])
        return {"per": {r: {m: np.array(v) for m, v in d.items()} for r, d in per.items()},
                "docs": len(texts), "docs_same_text": same, "questions": len(per[VARIANTS[0]][LS.METRICS[0]]),
                "evidence_moved": moved, "evidence_relabelled": lost,
                "seconds": {r: {"p50": float(np.percentile(v, 50)), "p95": float(np.percentile(v, 95))}
                            for r, v in seconds.items() if v}}
    finally:
        ctx.close()


def run(a) -> dict:
    from app.evaluation import bench as B

    t0 = time.perf_counter()
    sets, notes = LS.load_sets(a.sets, quick=True)
    data = Path(a.data)
    ingest_s = ingest(data, sets)
    got = {}
    for name, b in sets.items():
        got[name] = search_set(name, b, data / name)
        print(f"{name}: searched ({time.perf_counter() - t0:.0f} s)", flush=True)
    per = {v: {s: got[s]["per"][v] for s in got} for v in VARIANTS}
    out = {v: {"per_set": {s: {m: float(x[m].mean()) for m in LS.METRICS} for s, x in per[v].items()},
               "mean": {m: float(np.mean([x[m].mean() for x in per[v].values()])) for m in LS.METRICS}}
           for v in VARIANTS}

    def diff(a: str, b: str) -> dict:
        return {m: LS.boot({s: per[a][s][m] - per[b][s][m] for s in got}) for m in LS.METRICS}

    for w in WEIGHTS:
        out[f"hybrid@{TOP_KS[0]}@w{w:g}"]["vs_dense"] = diff(f"hybrid@{TOP_KS[0]}@w{w:g}", f"dense@{TOP_KS[0]}")
    for k in TOP_KS:
        out[f"hybrid@{k}"]["vs_dense"] = diff(f"hybrid@{k}", f"dense@{k}")
        if k != TOP_KS[0]:
            out[f"hybrid@{k}"]["vs_default_k"] = diff(f"hybrid@{k}", f"hybrid@{TOP_KS[0]}")
    offline = {}
    fw = Path(__file__).resolve().parent / "results" / "fusion_weight.json"
    if fw.exists():
        w = json.loads(fw.read_text())["weights"]
        offline = {"dense": w["0"]["per_set"], "hybrid": w["1"]["per_set"]}
    meta = {s: {k: v for k, v in g.items() if k != "per"} | {"subset": notes[s], "ingest_s": ingest_s.get(s)}
            for s, g in got.items()}
    return {"command": COMMAND, "sets": meta, "variants": out, "top_ks": TOP_KS, "offline_fusion_weight": offline,
            "n_boot": LS.N_BOOT, "theta": LS.THETA, "budget_words": LS.BUDGET, "machine": B.machine_info(),
            "seconds": time.perf_counter() - t0}


def render(res: dict) -> str:
    m10, er = LS.METRICS
    sets = list(res["sets"])
    head = ["search (hits per level)", *[LS.SHORT[s] for s in sets], "mean"]
    out = ["```", res["command"], "```", "",
           f"The product's path end to end: each set's documents ingested by `mgrag ingest` (MG, θ = {res['theta']}, "
           f"contextual text, keywords as sparse vectors in Qdrant Edge), each question searched by "
           f"`retrieval.search.retrieve` within its document with k hits per level (the product's default: "
           f"{res['top_ks'][0]}). Cells: DCG@10 / evidence recall within {res['budget_words']} words; in brackets, "
           f"`bench/fusion_weight.py`'s offline figure for the set (20 hits per level; w = 0 for dense, w = 1 for "
           f"hybrid). CIs: paired bootstrap, {res['n_boot']} resamples. {res['seconds'] / 60:.0f} min on "
           f"{res['machine'].get('affinity', '?')} cores, ingestion included.", "",
           "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    off = res.get("offline_fusion_weight") or {}
    for v, d in res["variants"].items():
        r, k, *w = v.split("@")
        cells = []
        for s in sets:
            c = f"{d['per_set'][s][m10]:.3f} / {d['per_set'][s][er]:.3f}"
            if k == "20" and s in off.get(r, {}):
                c += f" ({off[r][s][m10]:.3f} / {off[r][s][er]:.3f})"
            cells.append(c)
        name = f"{r} ({k})" + (f", keyword weight {w[0][1:]}" if w else "")
        out.append("| " + " | ".join([name, *cells, f"{d['mean'][m10]:.3f} / {d['mean'][er]:.3f}"]) + " |")
    for v, d in res["variants"].items():
        for key, what in (("vs_dense", "− dense"), ("vs_default_k", f"− hybrid ({res['top_ks'][0]})")):
            if key in d:
                for m, name in ((m10, "DCG@10"), (er, "recall")):
                    r, k, *w = v.split("@")
                    label = f"{r} ({k})" + (f", weight {w[0][1:]}" if w else "")
                    out.append(f"| {label} {what}, {name} | "
                               + " | ".join(LS._ci(d[key][m][s]) for s in sets) + " | " + LS._ci(d[key][m]["mean"])
                               + " |")
    k0 = f"hybrid@{res['top_ks'][0]}"
    secs = " · ".join(f"{LS.SHORT[s]} {res['sets'][s]['seconds'][k0]['p50'] * 1000:.0f} ms" for s in sets)
    out += ["", f"Hybrid search p50 per question, {res['top_ks'][0]} hits per level (embedding, both halves, fusion, "
                f"assembly): {secs}."]
    return "\n".join(out)


def main(argv=None) -> int:
    from app.evaluation import bench as B

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", help="where the sets are ingested (kept: a second run only searches)")
    ap.add_argument("--sets", type=lambda s: s.split(","), default=None)
    ap.add_argument("--render", action="store_true", help="only render the section from the results file")
    a = ap.parse_args(argv)
    if not a.render:
        if not a.data:
            ap.error("--data is required unless --render")
        res = run(a)
        OUT.write_text(json.dumps(res, indent=1))
    res = json.loads(OUT.read_text())
    B.write_section(SECTION, render(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
