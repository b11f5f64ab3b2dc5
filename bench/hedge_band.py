"""Where an abstention may show its likeliest lines: the hedge floor of the reader (``app.reader.HEDGE_FLOOR``).

Below the fitted threshold the reader abstains. In newcomer runs on documents nobody here used, the passages held the
answer for most questions and the scorer's first or second line was it, at confidences of 0.1-0.3, under the
threshold (0.33) chosen on dev: the reply said "The documents do not say" with the answer in front of it. So an
abstention above a floor shows the two likeliest lines, marked as unsure (no claim, no citation of support).

The floor is chosen on the **train** rows of ``bench/fit_reader.py collect`` by a rule stated before looking: the
lowest of the edges 0.05, 0.10, 0.20 such that, among the answerable questions the shipped scorer abstains on with a
confidence at or above it, the two likeliest lines hold the answer for at least half. Dev and issue 33's filings set
are read with the chosen floor, not used to choose it.

    python bench/hedge_band.py --train FIT/train.json --dev FIT/dev.json --filings FIT/filings.json
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import common as B
import numpy as np

EDGES = (0.05, 0.10, 0.20)
MIN_SHARE = 0.5  # the two likeliest lines hold the answer for at least this share of the answerable in the band


def band_rows(path: str, model) -> list[tuple[float, bool, bool]]:
    """(confidence, answerable, the two likeliest distinct lines hold the answer) of each abstained row."""
    from app.reader import first_distinct

    out = []
    for r in json.loads(Path(path).read_text())["rows"]:
        if not r["X"]:
            continue
        p = np.asarray(model.probabilities(np.asarray(r["X"])))
        top, conf, threshold = model.decide(np.asarray(r["X"]), r["lines"], p)  # the reader's confidence and threshold
        if conf >= threshold:
            continue
        order = [top] + [int(i) for i in np.argsort(-p) if i != top]  # the reader's ranking (app.reader.read)
        two = [order[i] for i in first_distinct([r["lines"][j] for j in order])]
        out.append((conf, bool(r["answerable"]), bool(r["answerable"]) and any(r["y"][i] for i in two)))
    return out


def at(rows: list[tuple[float, bool, bool]], floor: float) -> dict:
    a = [x for x in rows if x[1] and x[0] >= floor]
    u = [x for x in rows if not x[1] and x[0] >= floor]
    return {"answerable_hedged": len(a), "hedge_holds_answer": sum(x[2] for x in a),
            "share": round(sum(x[2] for x in a) / len(a), 3) if a else None, "unanswerable_hedged": len(u),
            "answerable_abstained": sum(1 for x in rows if x[1]), "unanswerable_abstained": sum(1 for x in rows
                                                                                             if not x[1])}


def by_phrasing(model, paths: list[str]) -> dict:
    """The median of the scorer's share (its softmax, before any calibrator) of a right first line, plain questions
    against paraphrased or synonym ones (the corpus's ``phrasing`` field): how much a wording the document does not
    use costs that share."""
    from app.scorer import answer_key, answer_mass

    phr = {}
    for split in ("train", "dev", "test"):
        for x in (B.ROOT / "bench" / "data" / "qa" / f"{split}.jsonl").read_text().splitlines():
            r = json.loads(x)
            phr[r["id"]] = r.get("phrasing") or ""
    got: dict[str, list[float]] = {"plain": [], "paraphrase or synonym": []}
    for path in paths:
        for r in json.loads(Path(path).read_text())["rows"]:
            g = {"plain": "plain", "paraphrase": "paraphrase or synonym",
                 "synonym": "paraphrase or synonym"}.get(phr.get(r["id"], ""))
            if not r["X"] or not r["answerable"] or g is None:
                continue
            top, conf = answer_mass(model.probabilities(np.asarray(r["X"])), [answer_key(ln) for ln in r["lines"]])
            if r["y"][top]:
                got[g].append(conf)
    return {g: {"right_first_lines": len(v), "median_confidence": round(float(np.median(v)), 3) if v else None}
            for g, v in got.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train", required=True)
    ap.add_argument("--dev", required=True)
    ap.add_argument("--filings", default="")
    ap.add_argument("--out", default=str(B.ROOT / "bench" / "results" / "hedge_band.json"))
    a = ap.parse_args()
    from app.scorer import load

    model = load()
    sets = {"train": a.train, "dev": a.dev, **({"filings": a.filings} if a.filings else {})}
    rows = {k: band_rows(v, model) for k, v in sets.items()}
    table = {k: {f"{e:.2f}": at(v, e) for e in EDGES} for k, v in rows.items()}
    ok = [e for e in EDGES if (table["train"][f"{e:.2f}"]["share"] or 0) >= MIN_SHARE]
    chosen = min(ok) if ok else None
    out = {"by_phrasing": by_phrasing(model, [a.train, a.dev]),
           "rule": f"the lowest edge of {list(EDGES)} where the two likeliest lines hold the answer for >= "
                   f"{MIN_SHARE:.0%} of the answerable train questions abstained on at or above it",
           "threshold": model.calibrator.threshold if model.calibrator else model.threshold,
           "chosen_floor": chosen, "bands": table,
           "command": " ".join(["python bench/hedge_band.py", *sys.argv[1:]]), "date": time.strftime("%Y-%m-%d")}
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
