"""Probe (issue 46, not shipped): does the scorer lack "this candidate states a change where the question asks for a
level"? Newcomer run r11 asked for Google Cloud's 2025 operating income and got "Google Cloud operating income
increased $7.8 billion from 2024 to 2025" over the table row "Google Cloud 6,112 13,910".

Four columns are added to the fit rows' shipped features, computed from each candidate's answer line and the
question alone: the line puts a figure right after a word of change ("increased $7.8 billion", "rose 5%"), the
question asks about a change, and the two crossed. A pointwise logistic regression (scikit-learn, C from a grid) is
fitted on the train split's rows with and without them, and read on dev: the share of answerable rows whose best
candidate answers (top-1), and the rows that flip. The word lists are the probe's; a shipped feature would read them
from the lexicon data file (``app/data``) as the question's other word lists are.

    python bench/change_probe.py --fit /work/devdata/fit    # train.json and dev.json of bench/fit_reader.py collect

Writes ``bench/results/change_probe.json``.
"""
from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import common as B  # noqa: F401  (project root on sys.path, offline flags)
import numpy as np

OUT = Path(__file__).resolve().parent / "results" / "change_probe.json"
_CHANGE = (r"\b(?:increas|decreas|rose|rise|rising|fell|fall|grew|grow|declin|drop|gain|improv|reduc|climb|jump|"
           r"higher|lower|up|down|change)\w*")
CHANGE_FIGURE = re.compile(_CHANGE + r"[^.;:\n]{0,30}?(?:\$\s?)?\d", re.I)
CHANGE_ASKED = re.compile(_CHANGE + r"|\b(?:difference|compared?|versus|vs\.?|more than|less than)\b", re.I)


def change_columns(question: str, line: str) -> list[float]:
    """[the line states a change figure, the question asks a change, change figure and no change asked, both]."""
    c, q = float(bool(CHANGE_FIGURE.search(line))), float(bool(CHANGE_ASKED.search(question)))
    return [c, q, c * (1 - q), c * q]


def top1(rows: list[dict], scores) -> tuple[float, list[bool]]:
    a = [r for r in rows if r["answerable"]]
    hits = [bool(r["X"]) and bool(r["y"][int(np.argmax(scores(r)))]) for r in a]
    return sum(hits) / len(a), hits


def main() -> None:
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit", type=Path, required=True)
    a = ap.parse_args()
    sets = {n: json.loads((a.fit / f"{n}.json").read_text())["rows"] for n in ("train", "dev")}
    for rows in sets.values():
        for r in rows:
            if r["X"]:
                r["_change"] = np.array([change_columns(r["question"], t) for t in r["lines"]])
    result: dict = {"train_rows": len(sets["train"]), "dev_rows": len(sets["dev"]), "variants": []}
    fit_rows = [r for r in sets["train"] if r["X"]]
    hits_by: dict = {}
    for name, extra in (("shipped features", False), ("+ change columns", True)):
        def X(r, extra=extra):
            return np.hstack([np.array(r["X"]), r["_change"]]) if extra else np.array(r["X"])
        Xt, yt = np.vstack([X(r) for r in fit_rows]), np.concatenate([r["y"] for r in fit_rows])
        sc = StandardScaler().fit(Xt)
        for C in (0.01, 0.1, 1.0):
            lr = LogisticRegression(C=C, max_iter=4000).fit(sc.transform(Xt), yt)
            f = lambda r, lr=lr, X=X, sc=sc: lr.decision_function(sc.transform(X(r)))  # noqa: E731
            dev, hits = top1(sets["dev"], f)
            train, _ = top1(sets["train"], f)
            hits_by[(name, C)] = hits
            result["variants"].append({"name": name, "C": C, "dev_top1": round(dev, 4), "train_top1": round(train, 4),
                                       **({"change_coef": [round(float(x), 3) for x in lr.coef_[0][-4:]]}
                                          if extra else {})})
            print(result["variants"][-1], flush=True)
    lines = [(r["question"], t) for r in sets["dev"] if r["X"] for t in r["lines"]]
    result["dev_lines_with_change_figure"] = sum(1 for q, t in lines if CHANGE_FIGURE.search(t))
    result["dev_lines"] = len(lines)
    result["dev_questions_asking_change"] = sum(1 for r in sets["dev"] if CHANGE_ASKED.search(r["question"]))
    for C in (0.01, 0.1, 1.0):
        base, new = hits_by[("shipped features", C)], hits_by[("+ change columns", C)]
        result[f"flips_C{C}"] = {"became_right": sum(1 for x, y in zip(base, new) if y and not x),
                                 "stopped_right": sum(1 for x, y in zip(base, new) if x and not y)}
    OUT.write_text(json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k != "variants"}, indent=1))


if __name__ == "__main__":
    main()
