"""Does the question reader tell a follow-up from a question that stands alone? Measured on every follow-up of the
answer sets, in the wordings their writers chose, against the other questions asked after a first one.

* follow-ups (should refer back): every row with ``followup_of`` in the train and dev splits of the issue-46 corpus
  (``bench/data/qa/{train,dev}.jsonl``: seven kinds, several writers; the test split is not read) and in
  ``bench/data/filings_qa.jsonl``, asked after its first question; the 37 follow-ups of ``bench/data/followups.jsonl``
  (the standalone check there counts as standing alone);
* questions that stand alone (should not): every other row of those sets, asked after the row before it in its file
  (a user's next, unrelated question in the same conversation).

A follow-up is what :func:`app.question.read_question` marks ``followup`` (it then inherits the previous question's
names, terms and period, and its search query carries the previous one). Prints precision and recall per set and the
misread questions.

    .venv/bin/python bench/followup_detection.py [--show]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import common as B  # noqa: F401  (project root on sys.path)

from app.question import read_question

DATA = Path(__file__).resolve().parent / "data"


def pairs() -> list[tuple[str, str, str, bool]]:
    """(set, first question, question, is a follow-up)."""
    out = []
    files = [DATA / "qa" / "train.jsonl", DATA / "qa" / "dev.jsonl", DATA / "filings_qa.jsonl"]
    for f in files:
        rows = [json.loads(x) for x in f.read_text(encoding="utf-8").splitlines() if x.strip()]
        by_id = {r["id"]: r for r in rows}
        for i, r in enumerate(rows):
            if r.get("followup_of") in by_id:
                out.append((f.stem, by_id[r["followup_of"]]["question"], r["question"], True))
            elif i > 0:
                out.append((f.stem, rows[i - 1]["question"], r["question"], False))
    for x in (json.loads(x) for x in (DATA / "followups.jsonl").read_text().splitlines() if x.strip()):
        out.append(("followups", x["first"], x["followup"], x["kind"] != "standalone-check"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--show", action="store_true", help="print every misread question")
    a = ap.parse_args()
    res: dict[str, dict[str, int]] = {}
    wrong = []
    for name, first, q, is_fu in pairs():
        hist = [{"role": "user", "content": first}, {"role": "assistant", "content": "…"}]
        said = read_question(q, hist).followup
        r = res.setdefault(name, {"tp": 0, "fp": 0, "fn": 0, "tn": 0})
        r[("t" if said == is_fu else "f") + ("p" if said else "n")] += 1
        if said != is_fu:
            wrong.append((name, is_fu, first, q))
    total = {k: sum(r[k] for r in res.values()) for k in ("tp", "fp", "fn", "tn")}
    for name, r in sorted(res.items()) + [("all", total)]:
        p = r["tp"] / (r["tp"] + r["fp"]) if r["tp"] + r["fp"] else float("nan")
        rc = r["tp"] / (r["tp"] + r["fn"]) if r["tp"] + r["fn"] else float("nan")
        print(f"{name:10s} follow-ups {r['tp'] + r['fn']:3d} (found {r['tp']:3d}, recall {rc:.2f})   standalone "
              f"{r['tn'] + r['fp']:3d} (taken for follow-ups {r['fp']:3d}; precision {p:.2f})")
    if a.show:
        for name, is_fu, first, q in wrong:
            what = "missed follow-up" if is_fu else "standalone taken as follow-up"
            print(f"[{name}] {what}: {q!r}  (after {first!r})")
    print(json.dumps({"by_set": res, "all": total}))


if __name__ == "__main__":
    main()
