"""Question by question: what one answers run changed against another on the same rows (``bench/answers_qa.py``
result files), over one or more pairs (the dev and the test split), with a sign test on the right answers.

    cd bench/results && python ../answer_flips.py --pair answers_qa_r8_dev.json:answers_qa_lmstage_dev.json \\
        --pair answers_qa_r8_test.json:answers_qa_lmstage_test.json --out lm_stage_flips.json

(the committed result was made from the repository root with the paths in full: its ``command``).

Counts: ``became_right`` (answerable, not right before, right after), ``stopped_right``, ``new_errors`` (not an error
before; a wrong answer or a cited non-answer after), ``mended_errors``; each per pair and over all pairs.
"""
from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

ERRORS = ("wrong", "cited_non_answer")


def rows(path: str) -> dict[str, dict]:
    return {r["id"]: r for r in json.loads(Path(path).read_text())["backends"]["extractive"]["rows"]}


def flips(before: dict[str, dict], after: dict[str, dict]) -> dict:
    c: Counter = Counter()
    for i, b in before.items():
        a = after.get(i)
        if a is None:
            continue
        vb, va = b["verdict"], a["verdict"]
        c["rows"] += 1
        c["became_right"] += vb != "right" and va == "right"
        c["stopped_right"] += vb == "right" and va != "right"
        c["new_errors"] += vb not in ERRORS and va in ERRORS
        c["mended_errors"] += vb in ERRORS and va not in ERRORS
        if vb != va:
            c[f"{vb} -> {va}"] += 1
    return dict(c)


def main() -> None:
    from scipy.stats import binomtest

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pair", action="append", required=True, help="BEFORE.json:AFTER.json")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    out: dict = {"pairs": {}, "command": "python bench/answer_flips.py " + " ".join(f"--pair {p}" for p in a.pair)
                 + f" --out {a.out}"}
    total: Counter = Counter()
    for p in a.pair:
        before, after = p.split(":")
        f = flips(rows(before), rows(after))
        out["pairs"][p] = f
        total.update({k: v for k, v in f.items() if "->" not in k})
    n = total["became_right"] + total["stopped_right"]
    total_d = dict(total)
    total_d["sign_test_p_right"] = round(binomtest(total["became_right"], n).pvalue, 4) if n else None
    out["all"] = total_d
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out["all"]))


if __name__ == "__main__":
    main()
