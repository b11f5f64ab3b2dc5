"""Does fitting on paraphrased questions make the scorer hold on paraphrased ones? (issue 46; protocol in
``bench/data/qa/README.md`` "Paraphrased rows", written before this ran.)

Three scorers, each judged offline on the collected candidates (``bench/fit_reader.py collect``) of dev, dev's
paraphrased rows and both, at its own threshold (the lowest giving 70% precision on the rows it was chosen on):

* ``shipped``: ``app/data/reader_model.json`` as it is (chosen on dev);
* ``refit, chosen on dev + paraphrased``: the shipped training sets, the same grid (``bench/fit_reader.py``: three
  pointwise strengths × balanced or not, three listwise strengths × a size-dependent "none" or not), the form and
  threshold chosen on dev and dev's paraphrased rows together — the choice's effect alone;
* ``refit with paraphrased train rows``: the same, with the train split's paraphrased rows (full and 300-word contexts)
  added to the training data — the data's effect on top.

    python bench/paraphrase_fit.py --fit /work/devdata/fit    # -> bench/results/paraphrase_fit.json
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import common as B  # noqa: F401  (project root on sys.path, offline flags)
import numpy as np
from fit_reader import TARGET_PRECISION, decisions, fit_grid, load_sets, operating_point

from app.scorer import ReaderModel

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "paraphrase_fit.json"
BASE_TRAIN = ("train", "filings", "train_short", "filings_short")
PARA_TRAIN = ("train_para", "train_para_short")


def at(dec, threshold: float) -> dict:
    """Right / wrong answers given, abstentions, over answerable and unanswerable rows, at ``threshold``."""
    given = [(ok, a) for c, ok, a in dec if c >= threshold]
    right = sum(ok for ok, a in given if a)
    n_ans = sum(a for _, _, a in dec)
    return {"answerable": n_ans, "right": right, "wrong": len(given) - right,
            "unanswerable_answered": sum(1 for _, a in given if not a), "unanswerable": len(dec) - n_ans,
            "precision": round(right / len(given), 3) if given else None,
            "top1_right": round(sum(ok for _, ok, a in dec if a) / max(1, n_ans), 3)}


def grid(train: list[dict], choose: list[dict]) -> tuple:
    mean, scale, tried = fit_grid(train)
    best = None
    for form, params, coef, b, beta in tried:
        op = operating_point(decisions(choose, mean, scale, coef, b, form, beta), TARGET_PRECISION)
        key = (op.get("right_share", 0.0), op["top1_right"])
        if best is None or key > best[0]:
            best = (key, form, params, coef, b, beta, op)
    _, form, params, coef, b, beta, op = best
    return form, params, mean, scale, coef, b, beta, op.get("threshold", 1.01)


def paired(fit: Path, v: tuple) -> dict:
    """The shipped scorer on each reworded row beside the same row as written (dev and train): how often its first
    candidate answers, the median confidence of a first candidate that answers, and the right answers at its
    threshold; for the unanswerable rows the median confidence."""
    form, _, mean, scale, coef, b, beta, thr = v
    out = {}
    for orig, para in (("dev", "dev_para"), ("train", "train_para")):
        by_id = {r["id"]: r for r in load_sets(str(fit / f"{orig}.json"))}
        pairs = [(by_id[r["paraphrase_of"] if "paraphrase_of" in r else r["id"].split("~")[0]], r)
                 for r in load_sets(str(fit / f"{para}.json")) if r["id"].split("~")[0] in by_id]
        got = {}
        for side, k in (("as written", 0), ("reworded", 1)):
            ans = [p[k] for p in pairs if p[k]["answerable"]]
            un = [p[k] for p in pairs if not p[k]["answerable"]]
            da = decisions(ans, mean, scale, coef, b, form, beta)
            du = decisions(un, mean, scale, coef, b, form, beta)
            got[side] = {"answerable": len(ans), "top1_right": round(float(np.mean([ok for _, ok, _ in da])), 3),
                         "median_confidence_right_top1": round(float(np.median([c for c, ok, _ in da if ok])), 3),
                         "right_at_threshold": int(sum(ok and c >= thr for c, ok, _ in da)),
                         "unanswerable": len(un),
                         "median_confidence_unanswerable": round(float(np.median([c for c, _, _ in du])), 3)}
        out[orig] = got
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fit", type=Path, default=Path("/work/devdata/fit"))
    a = ap.parse_args()
    sets = {n: load_sets(str(a.fit / f"{n}.json")) for n in BASE_TRAIN + PARA_TRAIN + ("dev", "dev_para")}
    judge = {"dev": sets["dev"], "dev_para": sets["dev_para"], "dev+dev_para": sets["dev"] + sets["dev_para"]}
    shipped = ReaderModel.from_dict(json.loads((ROOT / "app" / "data" / "reader_model.json").read_text()))
    variants = {"shipped": (shipped.form, shipped.card.get("params"), np.asarray(shipped.mean),
                            np.asarray(shipped.scale), np.asarray(shipped.coef), shipped.intercept,
                            shipped.none_slope, shipped.threshold)}
    base = [r for n in BASE_TRAIN for r in sets[n]]
    para = [r for n in PARA_TRAIN for r in sets[n]]
    variants["refit, chosen on dev + paraphrased"] = grid(base, judge["dev+dev_para"])
    variants["refit with paraphrased train rows"] = grid(base + para, judge["dev+dev_para"])
    result = {"protocol": "bench/data/qa/README.md, Paraphrased rows", "target_precision": TARGET_PRECISION,
              "rows": {k: len(v) for k, v in sets.items()}, "variants": {}}
    for name, (form, params, mean, scale, coef, b, beta, thr) in variants.items():
        got = {"form": form, "params": params, "threshold": round(float(thr), 4)}
        for jn, rows in judge.items():
            got[jn] = at(decisions(rows, mean, scale, coef, b, form, beta), thr)
        result["variants"][name] = got
        print(name, json.dumps(got), flush=True)
    result["paired"] = paired(a.fit, variants["shipped"])
    print(json.dumps(result["paired"], indent=1))
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(f"-> {OUT}")


if __name__ == "__main__":
    main()
