"""Probe (issue 46, not shipped): does the document's name before the passage help the LM check? Newcomer run r9's
"we had approximately 83,700 employees" sentence got a weak no (−0.16) for a question naming Nike and +1.65 with
"From nike_10k_fy2023.pdf:" before it. Read on dev only, on the scorer's top two candidates of each row: the
margins' AUC for answering candidates and how often the LM's pick of the two answers, plain (``bench/lm_check.py``)
against named (``bench/lm_check.py --named``).

    python bench/lm_check.py --rows FIT/dev.json --model app/data/reader_model.json --top-k 2 --named --url URL \\
        --out LM/dev_k2_named.json
    python bench/lm_named_probe.py --rows FIT/dev.json --plain LM/dev_k5.json --named LM/dev_k2_named.json \\
        --out bench/results/lm_named_probe.json
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def main() -> None:
    from sklearn.metrics import roc_auc_score

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", required=True)
    ap.add_argument("--plain", required=True)
    ap.add_argument("--named", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rows = {r["id"]: r for r in json.loads(Path(a.rows).read_text())["rows"]}
    plain, named = json.loads(Path(a.plain).read_text()), json.loads(Path(a.named).read_text())
    y, mp, mn, pick_p, pick_n, n = [], [], [], 0, 0, 0
    for i, g in named.items():
        r, ks = rows[i], list(g["margins"])
        if i not in plain or not all(k in plain[i]["margins"] for k in ks):
            continue
        for k in ks:
            y.append(r["y"][int(k)])
            mp.append(plain[i]["margins"][k])
            mn.append(g["margins"][k])
        if r["answerable"] and len(ks) == 2:
            n += 1
            pick_p += r["y"][int(max(ks, key=lambda k: plain[i]["margins"][k]))]
            pick_n += r["y"][int(max(ks, key=lambda k: g["margins"][k]))]
    auc = {"plain": round(roc_auc_score(y, mp), 3), "named": round(roc_auc_score(y, mn), 3)}
    out = {"candidates": len(y), "auc": auc,
           "answerable_rows": n, "lm_pick_of_two_right": {"plain": pick_p, "named": pick_n},
           "mean_margin": {"plain": round(float(np.mean(mp)), 3), "named": round(float(np.mean(mn)), 3)},
           "command": f"python bench/lm_named_probe.py --rows {a.rows} --plain {a.plain} --named {a.named} "
                      f"--out {a.out}"}
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
