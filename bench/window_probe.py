"""What two-sentence windows add to the reader's candidates, and how much of it is only a longer quote.

The reader's candidates gained windows (two sentences that follow each other in one passage, ``app/candidates.py``).
A longer quote holds the reference answer more often whatever it quotes, so the gain is read against a control: the
scorer fitted without windows, its first sentence quoted together with the sentence after it, every time. On the
collected rows (``bench/fit_reader.py collect``, windows included), for the dev split's answerable questions:

* ``without``: the scorer fitted on train without the windows, its first candidate;
* ``without_next_always``: the same first candidate, a sentence quoted with the next sentence of its passage;
* ``with``: the scorer fitted with the windows (the shipped form: listwise, "none" at one score), its first;

each with the share right and the words of the answer line (median and mean). ``--answer-words`` adds, without
fitting anything, the words of the answer lines the product gave in results files of ``bench/answers_qa.py`` (the
first line of each reply that does not abstain, its citation marks aside).

    python bench/window_probe.py --train FIT/train.json,FIT/filings.json,FIT/train_short.json,FIT/filings_short.json \\
        --dev FIT/dev.json --out bench/results/window_probe.json
    python bench/window_probe.py --out bench/results/window_probe.json \\
        --answer-words bench/results/answers_qa_cells_dev.json,bench/results/answers_qa_win_dev.json
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
from pathlib import Path
from types import SimpleNamespace

import common as B  # noqa: F401  (project root on sys.path, offline flags)
import numpy as np
from fit_reader import fit_listwise, label, load_sets, standardise, without_windows
from qa_set import DATA, KINDS, load

from app.features import FEATURES


def first(rows: list[dict], mean, scale, coef) -> list[int]:
    return [int(np.argmax(((np.asarray(r["X"]) - mean) / scale) @ coef)) for r in rows]


def next_sentence(r: dict, j: int) -> str:
    """Candidate ``j``'s line with the next sentence candidate's after it (sentences are listed in passage order;
    the windows after them: a window's first half is the sentence, so its line starts with it)."""
    if r["kinds"][j] != "sentence":
        return r["lines"][j]
    for i, k in enumerate(r["kinds"]):
        if k == "window" and r["lines"][i].startswith(r["lines"][j] + " "):
            return r["lines"][i]
    return r["lines"][j]


def summary(lines: list[str], rights: list[bool]) -> dict:
    words = [len(x.split()) for x in lines]
    return {"right": int(sum(rights)), "questions": len(rights), "right_share": round(sum(rights) / len(rights), 3),
            "words_median": statistics.median(words), "words_mean": round(statistics.mean(words), 1)}


def answer_words(paths: str) -> dict:
    out = {}
    for path in paths.split(","):
        rows = json.loads(Path(path).read_text())["backends"]["extractive"]["rows"]
        words = [len(re.sub(r"\[\d+\]", " ", r["reply"].split("\n")[0]).split()) for r in rows if not r["abstained"]]
        out[Path(path).stem] = {"answers": len(words), "words_median": statistics.median(words),
                                "words_mean": round(statistics.mean(words), 1)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train", default="")
    ap.add_argument("--dev", default="")
    ap.add_argument("--answer-words", default="", help="results files of bench/answers_qa.py (a comma list)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.answer_words:
        got = json.loads(Path(a.out).read_text()) if Path(a.out).is_file() else {}
        got["answer_words"] = answer_words(a.answer_words)
        Path(a.out).write_text(json.dumps(got, indent=1) + "\n")
        print(json.dumps(got["answer_words"]), "->", a.out)
        return
    qa = {q["id"]: q for k in KINDS for q in load(DATA / f"{k}.jsonl")}
    train, dev = load_sets(a.train), load_sets(a.dev)
    dev = [r for r in dev if r["answerable"] and r["X"]]
    out = {"command": "python bench/window_probe.py --train " + a.train + " --dev " + a.dev + " --out " + a.out}
    for name, tr, dv in (("without", without_windows(train, list(FEATURES)), without_windows(dev, list(FEATURES))),
                         ("with", train, dev)):
        mean, scale = standardise(tr)
        coef, _, _ = fit_listwise(tr, mean, scale, 0.001, False)
        picks = first(dv, mean, scale, coef)
        lines = [r["lines"][j] for r, j in zip(dv, picks)]
        out[name] = summary(lines, [bool(r["y"][j]) for r, j in zip(dv, picks)])
        if name == "without":
            full = {r["id"]: r for r in dev}
            longer = [next_sentence(full[r["id"]], full[r["id"]]["lines"].index(r["lines"][j]))
                      for r, j in zip(dv, picks)]
            # labelled as every candidate is (bench/fit_reader.py label): the reference answer in the line
            out["without_next_always"] = summary(longer, [bool(label(SimpleNamespace(line=x, text=x, cell=None),
                                                                     qa[r["id"]])) for x, r in zip(longer, dv)])
        print(name, json.dumps(out[name]), flush=True)
    print("without_next_always", json.dumps(out["without_next_always"]))
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    print("->", a.out)


if __name__ == "__main__":
    main()
