"""Two changes to how the reader decides, read on collected rows (``bench/fit_reader.py collect``) before any is built
into the product; neither is shipped (BENCHMARKS "The reader against its own ceiling", stop 64).

* ``kind_mask``: an answer must hold an answer of the kind asked. For a question that asks a figure, a percent, a
  date or a name (:attr:`app.question.Question.kind`), the candidates without one (feature ``kind_fit`` 0) are left
  out before the scorer is refitted on the train rows (listwise, as shipped) and read on dev: the candidates' kinds
  decide, not a weight.
* ``figure_mass``: an answer's confidence summed over every candidate that gives the same figure (a cell, the
  statement row that holds it, the sentence of the MD&A that repeats it), not only over those that quote the same
  line (:func:`app.scorer.answer_mass`). ``keep``: the chosen line stays, its confidence is the most of its figures'
  mass; ``choose``: the figure with the most mass is the answer, shown by its likeliest candidate; ``_split``: a
  candidate that gives several figures lends each an equal part of its probability. Read with the shipped model.

Each is scored as ``fit_reader.py fit`` scores a model: the answers right at the threshold that gives 70% precision
of the answers given (``operating_point``), and at the shipped model's own threshold.

    python bench/scorer_probes.py --fit FIT --out bench/results/scorer_probes_s64.json
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import time
from pathlib import Path

import common as B  # noqa: F401  (project root on sys.path, offline flags)
import numpy as np
from fit_reader import MODEL_OUT, decisions, fit_listwise, load_sets, operating_point, standardise

from app.candidates import numbers_in
from app.features import FEATURES
from app.question import read_question
from app.scorer import ReaderModel, answer_key, answer_mass

TRAIN = ("train", "filings", "train_short", "filings_short")
TYPED = ("amount", "percent", "count", "measure", "date", "name")


class Questions:
    """Each collected row's question read once (no conversation: a follow-up's own words)."""

    def __init__(self):
        self._read: dict[str, object] = {}

    def __call__(self, text: str):
        if text not in self._read:
            self._read[text] = read_question(text)
        return self._read[text]


def masked(rows: list[dict], kinds: set[str], read: Questions) -> tuple[list[dict], int, int]:
    """The rows with the candidates of no kind asked left out; (rows, questions whose every answering candidate was
    left out, questions with an answering candidate)."""
    kf = list(FEATURES).index("kind_fit")
    out, lost, had = [], 0, 0
    for r in rows:
        if not r["X"] or read(r["question"]).kind not in kinds:
            out.append(r)
            continue
        keep = [j for j, x in enumerate(r["X"]) if x[kf] > 0]
        r2 = {**r, **{k: [r[k][j] for j in keep] for k in ("X", "y", "lines", "kinds") if k in r}}
        if any(r["y"]):
            had += 1
            lost += not any(r2["y"])
        out.append(r2)
    return out, lost, had


def at_threshold(dec: list[tuple[float, int, bool]], threshold: float) -> dict:
    given = [(c, ok, a) for c, ok, a in dec if c >= threshold]
    return {"right": sum(ok for _, ok, a in given if a), "given": len(given),
            "unanswerable_answered": sum(1 for _, _, a in given if not a)}


def kind_mask(train: list[dict], dev: list[dict], read: Questions) -> dict:
    out = {}
    for name, kinds in (("none", set()), ("typed", set(TYPED)), ("figures_and_dates", set(TYPED) - {"name"})):
        tr, lost_t, had_t = masked(train, kinds, read)
        dv, lost_d, had_d = masked(dev, kinds, read)
        mean, scale = standardise(tr)
        coef, b, _ = fit_listwise(tr, mean, scale, 0.001)
        out[name] = {"kinds": sorted(kinds), "train_questions_losing_every_answer": [lost_t, had_t],
                     "dev_questions_losing_every_answer": [lost_d, had_d],
                     "dev": operating_point(decisions(dv, mean, scale, coef, b, "listwise")),
                     "train": operating_point(decisions(tr, mean, scale, coef, b, "listwise"))}
        print("kind_mask", name, json.dumps(out[name]), flush=True)
    return out


def _figure(v: str) -> str | None:
    d = re.sub(r"[^\d.]", "", v)
    if d.count(".") > 1 or not d.strip("."):
        return None
    x = float(d)
    return repr(x) if x else None


def figures(line: str, asked: set[str]) -> set[str]:
    """The figures a line gives (:func:`app.candidates.numbers_in`, years and dates aside), the question's own aside,
    as numbers ("$40,215" and "40,215" one figure)."""
    return {f for v in numbers_in(line) if v not in asked for f in [_figure(v)] if f is not None}


def decide(model: ReaderModel, r: dict, mode: str, read: Questions) -> tuple[int, float]:
    p = np.asarray(model.probabilities(np.asarray(r["X"])))
    j, conf = answer_mass(p.tolist(), [answer_key(x) for x in r["lines"]])
    q = read(r["question"])
    if mode == "line" or not q.numeric:
        return j, conf
    asked = set(numbers_in(q.text))
    figs = [figures(x, asked) for x in r["lines"]]
    mass: dict[str, float] = {}
    for pi, fs in zip(p, figs):
        for v in fs:
            mass[v] = mass.get(v, 0.0) + (pi / len(fs) if mode.endswith("_split") else pi)
    if mode.startswith("keep"):
        return j, min(1.0, max([conf] + [mass[v] for v in figs[j]]))
    if mass:
        v = max(mass, key=mass.get)
        if mass[v] > conf:
            return max((i for i, fs in enumerate(figs) if v in fs), key=lambda i: p[i]), min(1.0, mass[v])
    return j, conf


def figure_mass(model: ReaderModel, sets: dict[str, list[dict]], read: Questions) -> dict:
    out = {}
    for mode in ("line", "keep", "keep_split", "choose", "choose_split"):
        out[mode] = {}
        for name, rows in sets.items():
            dec = []
            for r in rows:
                if not r["X"]:
                    dec.append((0.0, 0, r["answerable"]))
                    continue
                j, c = decide(model, r, mode, read)
                dec.append((c, int(r["y"][j]), r["answerable"]))
            out[mode][name] = {"operating_point": operating_point(dec),
                               "at_shipped_threshold": at_threshold(dec, model.threshold)}
        print("figure_mass", mode, json.dumps(out[mode]), flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fit", required=True, help="the folder of collected rows (train.json, dev.json, …)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    train = load_sets(",".join(f"{a.fit}/{n}.json" for n in TRAIN))
    dev = load_sets(f"{a.fit}/dev.json")
    model = ReaderModel.from_dict(json.loads(MODEL_OUT.read_text()))
    read = Questions()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    out = {"command": f"python bench/scorer_probes.py --fit {a.fit} --out {a.out}", "commit": commit,
           "date": time.strftime("%Y-%m-%d"), "train_sets": list(TRAIN), "train_rows": len(train),
           "dev_rows": len(dev), "kind_mask": kind_mask(train, dev, read),
           "figure_mass": figure_mass(model, {"train": load_sets(f"{a.fit}/train.json,{a.fit}/filings.json"),
                                              "dev": dev}, read)}
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    print("->", a.out)


if __name__ == "__main__":
    main()
