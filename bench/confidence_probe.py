"""How sure the reader should be of an answer, and what else was tried beside it (stop 60, issue 46).

With two-sentence windows among the candidates (``app/candidates.py``), one answer's share of the scorer's softmax is
spread over the sentence and the windows around it, so a plain answer ("Total revenue for Q4 2020 was $519
million.") was refused with itself as the first unsure line. On the collected rows (``bench/fit_reader.py collect``)
and the shipped model (``app/data/reader_model.json``), the same first candidate of each question, three readings of
its confidence:

* ``same_line``: the candidates that give the same answer line, summed (the reader before stop 60);
* ``held``: also the candidates that quote it or that it quotes (:func:`app.scorer.answer_mass`, shipped);
* ``held_choice``: the answer with the most ``held`` confidence chosen instead (not shipped: it changes the answer);

each read as a **frontier**: the most right answers at a threshold that still abstains on at least 70/75/80/85/90%
of the unanswerable questions, with the wrong answers (answerable, answered wrong) at that point. ``--wide`` reads a
collection with a larger context (``collect --budget-words``) with the shipped reading, and ``--gbm`` fits gradient
boosted trees (scikit-learn) on the train rows' candidates beside the shipped linear model: its first candidate right
on train and dev.

    python bench/confidence_probe.py \\
        --train FIT/train.json,FIT/filings.json,FIT/train_short.json,FIT/filings_short.json --dev FIT/dev.json \\
        [--wide FIT/dev_b2500.json] [--gbm] --out bench/results/confidence_probe.json
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import common as B  # project root on sys.path, offline flags
import numpy as np
from fit_reader import load_sets, operating_point

from app.scorer import answer_key, answer_mass, holds, load

LEVELS = (0.7, 0.75, 0.8, 0.85, 0.9)


def readings(rows: list[dict], model, how: str) -> list[tuple[float, int, bool]]:
    """(confidence, right, answerable) of each row's answer under reading ``how``."""
    out = []
    for r in rows:
        if not r["X"]:
            out.append((0.0, 0, r["answerable"]))
            continue
        p = model.probabilities(np.asarray(r["X"]))
        keys = [answer_key(x) for x in r["lines"]]
        j, conf = answer_mass(p, keys)
        if how == "same_line":
            conf = min(1.0, sum(q for q, k in zip(p, keys) if k == keys[j]))
        elif how == "held_choice":
            held = [sum(q for q, k in zip(p, keys) if holds(k, keys[i]) or holds(keys[i], k)) for i in range(len(p))]
            j = max(range(len(p)), key=lambda i: (held[i], p[i]))
            conf = min(1.0, held[j])
        out.append((conf, int(r["y"][j]), r["answerable"]))
    return out


def frontier(dec: list[tuple[float, int, bool]]) -> dict:
    n_un = sum(not a for _, _, a in dec) or 1
    out = {}
    for level in LEVELS:
        best = None
        for t in sorted({c for c, _, _ in dec} | {1.01}):
            given = [(ok, a) for c, ok, a in dec if c >= t]
            if 1 - sum(1 for _, a in given if not a) / n_un < level:
                continue
            right = sum(ok for ok, a in given if a)
            if best is None or right > best["right"]:
                best = {"right": right, "wrong": sum(1 for ok, a in given if a and not ok), "given": len(given)}
        out[f"{level:.2f}"] = best
    return out


def top1(rows: list[dict], score) -> float:
    ans = [r for r in rows if r["answerable"]]
    return round(sum(1 for r in ans if r["X"] and r["y"][int(np.argmax(score(np.asarray(r["X"]))))]) / len(ans), 3)


def main() -> None:
    ap = B.fit_rows_parser(__doc__.split("\n")[0])
    ap.add_argument("--wide", default="")
    ap.add_argument("--gbm", action="store_true")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    model = load()
    sets = {"train": load_sets(a.train), "dev": load_sets(a.dev)}
    out: dict = {"answerable": {k: sum(r["answerable"] for r in v) for k, v in sets.items()},
                 "unanswerable": {k: sum(not r["answerable"] for r in v) for k, v in sets.items()}}
    for how in ("same_line", "held", "held_choice"):
        out[how] = {}
        for name, rows in sets.items():
            dec = readings(rows, model, how)
            out[how][name] = {"at_70_precision": operating_point(dec, 0.7), "frontier": frontier(dec)}
        print(how, json.dumps(out[how]["dev"]["frontier"]), flush=True)
    if a.wide:
        wide = load_sets(a.wide)
        out["wide"] = {"rows": a.wide, "dev_rows_with_an_answering_candidate":
                       sum(1 for r in wide if r["answerable"] and any(r["y"])),
                       "dev_rows_with_an_answering_candidate_shipped":
                       sum(1 for r in sets["dev"] if r["answerable"] and any(r["y"])),
                       "candidates_mean": round(float(np.mean([len(r["X"]) for r in wide])), 1),
                       "candidates_mean_shipped": round(float(np.mean([len(r["X"]) for r in sets["dev"]])), 1),
                       "at_70_precision": operating_point(readings(wide, model, "held"), 0.7),
                       "frontier": frontier(readings(wide, model, "held"))}
        print("wide", json.dumps(out["wide"]), flush=True)
    if a.gbm:
        from sklearn.ensemble import HistGradientBoostingClassifier

        tr = [r for r in sets["train"] if r["X"]]
        X = np.concatenate([np.asarray(r["X"]) for r in tr])
        y = np.concatenate([r["y"] for r in tr])
        w = np.concatenate([np.full(len(r["X"]), 1.0 / len(r["X"])) for r in tr])
        out["gbm"] = {"linear_top1": {k: top1(v, model.logits) for k, v in sets.items()}, "grid": []}
        for lr, iters, leaves in ((0.05, 200, 15), (0.05, 400, 15), (0.1, 200, 31), (0.05, 300, 7)):
            t = time.time()
            g = HistGradientBoostingClassifier(learning_rate=lr, max_iter=iters, max_leaf_nodes=leaves,
                                               l2_regularization=1.0, random_state=0)
            g.fit(X, y, sample_weight=w / w.mean())
            row = {"learning_rate": lr, "iterations": iters, "leaves": leaves,
                   "top1": {k: top1(v, g.decision_function) for k, v in sets.items()},
                   "fit_seconds": round(time.time() - t, 1)}
            out["gbm"]["grid"].append(row)
            print("gbm", json.dumps(row), flush=True)
    out["command"] = ("python bench/confidence_probe.py --train " + a.train + " --dev " + a.dev
                      + (" --wide " + a.wide if a.wide else "") + (" --gbm" if a.gbm else "") + " --out " + a.out)
    out["date"] = time.strftime("%Y-%m-%d")
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    print("->", a.out)


if __name__ == "__main__":
    main()
