"""Summaries of whole documents (``app/summary.py``) against each document's own summary: its abstract, executive
summary or synopsis, found by heading in the stored text.

For every indexed document that has such a section (a heading line "Abstract", "Executive Summary", "Summary",
"Synopsis", "Brief Summary" or "Overview", then at least :data:`MIN_REFERENCE_WORDS` words up to the next heading),
the passages overlapping that section are set aside, and three sentences are chosen from the rest by each method:

* ``centroid_mmr``: with a novelty term (:func:`app.summary.central`, λ = 0.7, the weight most implementations use);
* ``centroid``: the three passages nearest the mean alone (λ = 1: no novelty; the product's, chosen here);
* ``lead``: the document's first three statements outside the section (the classic baseline of news summaries);
* ``random``: three statements drawn at random (seed 0), the floor.

Each document's reference and the three lines of each method are in the result file, to be read, not only scored.

Scored by ROUGE-1 over content words (``app.question.content_words``, lower case): recall (the share of the
reference's words the three sentences hold), precision and F1, each averaged over documents. No document's reference
was read before the method was written; nothing is fitted on them.

    python bench/summary_bench.py --data DATA --out bench/results/summary_bench.json
"""
from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import time
from collections import Counter
from pathlib import Path

import common as B  # noqa: F401  (project root on sys.path, offline flags)
import numpy as np

from app.question import content_words

# a heading line of at most four words ending with the word: "Abstract", "## Executive Summary", "CLINICAL PROTOCOL
# SYNOPSIS", "Scientific Summary", "| Protocol Synopsis | |" (a PDF's table cell)
HEADING = re.compile(r"^[\s|#]*(?:\d+[.\s]+)?(?:[A-Za-z-]+\s+){0,3}(abstract|summary|synopsis|overview)[\s|:]*$",
                     re.I | re.M)
MIN_REFERENCE_WORDS = 40
MAX_REFERENCE_WORDS = 400
K = 3


def reference(text: str) -> tuple[int, int, str] | None:
    """(start, end, text) of the document's own summary section, or None."""
    m = HEADING.search(text)
    if m is None:
        return None
    start = m.end()
    lines, end, words = [], start, 0
    for line in text[start:].splitlines(keepends=True):
        bare = line.strip()
        if lines and bare and len(bare.split()) <= 6 and not re.search(r"[.:;,]$", bare):  # the next heading
            break
        lines.append(line)
        end += len(line)
        words += len(bare.split())
        if words >= MAX_REFERENCE_WORDS:
            break
    ref = " ".join("".join(lines).split())
    return (m.start(), end, ref) if len(ref.split()) >= MIN_REFERENCE_WORDS else None


def rouge1(summary: str, ref: str) -> dict:
    s, r = Counter(content_words(summary.lower())), Counter(content_words(ref.lower()))
    hit = sum((s & r).values())
    rec = hit / max(sum(r.values()), 1)
    prec = hit / max(sum(s.values()), 1)
    return {"recall": rec, "precision": prec, "f1": 2 * rec * prec / (rec + prec) if rec + prec else 0.0}


def main() -> None:
    from app.context import AppContext
    from app.summary import central, passages, statements
    from core.settings import Settings

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="a data dir with the documents ingested (bench/answers_qa.py)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    ctx = AppContext(Settings(data_dir=Path(a.data)))
    rows = []
    t0 = time.time()
    try:
        for d in ctx.catalog.documents(ctx.catalog.live_gen()):
            text = ctx.store.text(d["hash"]) or ""
            ref = reference(text)
            if ref is None:
                continue
            lo, hi, ref_text = ref
            pts = [p for p in passages(ctx, d["doc_id"]) if p.payload["end"] <= lo or p.payload["start"] >= hi]
            if len(pts) < K:
                continue
            outside = [s for p in pts for s in statements(p.payload["text"])]
            rnd = random.Random(0)
            picks = {
                "centroid_mmr": [s for _, s in central(pts, ctx.embedder, K, lam=0.7)],
                "centroid": [s for _, s in central(pts, ctx.embedder, K, lam=1.0)],
                "lead": outside[:K],
                "random": rnd.sample(outside, min(K, len(outside))),
            }
            rows.append({"doc": d["doc_id"], "reference_words": len(ref_text.split()), "passages": len(pts),
                         "scores": {m: rouge1(" ".join(v), ref_text) for m, v in picks.items()},
                         "reference": ref_text[:1500], "picks": picks})
            print(d["doc_id"], {m: round(x["recall"], 3) for m, x in rows[-1]["scores"].items()}, flush=True)
    finally:
        ctx.close()
    methods = ("centroid_mmr", "centroid", "lead", "random")
    mean = {m: {k: round(float(np.mean([r["scores"][m][k] for r in rows])), 4) if rows else None
                for k in ("recall", "precision", "f1")} for m in methods}
    wins = {m: sum(r["scores"][m]["recall"] > r["scores"]["lead"]["recall"] for r in rows) for m in methods}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    out = {"command": f"python bench/summary_bench.py --data {a.data} --out {a.out}", "commit": commit,
           "date": time.strftime("%Y-%m-%d"), "documents": len(rows), "seconds": round(time.time() - t0, 1),
           "mean": mean, "recall_above_lead": wins, "rows": rows}
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(mean, indent=1), wins, "->", a.out)


if __name__ == "__main__":
    main()
