"""The reader's thresholds read again over retrieved contexts saved by ``bench/answers_real.py --dump``: each
setting's right / abstained / cited non-answers on the dev set, without retrieving again (the extractive
backend's reading only; answer lines scored as the benchmark scores them).

    python bench/answers_real.py --root KG-RAG-datasets --data /work/devdata/filings_index --out /tmp/answers.json \
        --dump /tmp/contexts.json
    python bench/archive/reader_tune.py --data /work/devdata/filings_index --dump /tmp/contexts.json

Archived (bench/archive/README.md): the sweep behind ``app.reader.MISSING_COVERAGE = 0.0``; it prints, writes nothing.
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for common and answers_real
import common as B  # noqa: E402,F401  (project root on sys.path, offline flags)
from answers_real import gives  # noqa: E402


def score(synth, items, progress=False) -> dict:
    out = {"right": 0, "partly": 0, "wrong": 0, "abstained": 0, "una_abstained": 0, "cited_non_answer": 0}
    for it in items:
        r = it["row"]
        srcs = [SimpleNamespace(**s) for s in it["sources"]]
        q = it["query"] if it["history"] else r["question"]
        rd = synth.reading(q, srcs, it["history"])
        if r["answers"]:
            k = ("abstained" if rd.answer is None else "right" if gives(rd.answer, r["answers"]) else
                 "partly" if any(gives(c.text, r["answers"]) for c in rd.more) else "wrong")
        else:
            k = "una_abstained" if rd.answer is None else "cited_non_answer"
        out[k] += 1
        if progress:
            print(r["id"], k, (rd.answer or rd.why)[:120])
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--dump", required=True)
    ap.add_argument("--show", action="store_true")
    a = ap.parse_args()
    from app import reader
    from app.context import AppContext
    from app.synth import make_synthesizer
    from core.settings import Settings

    items = json.loads(Path(a.dump).read_text())
    ctx = AppContext(Settings(data_dir=Path(a.data)))
    synth = make_synthesizer("extractive", ctx)
    try:
        if a.show:
            print(score(synth, items, progress=True))
            return
        for mc, miss in itertools.product((0.4, 0.5, 0.6), (0.0, 0.6, 0.75, 1.01)):
            reader.MIN_COVERAGE, reader.MISSING_COVERAGE = mc, miss
            print(json.dumps({"min_coverage": mc, "missing_coverage": miss, **score(synth, items)}), flush=True)
    finally:
        ctx.close()


if __name__ == "__main__":
    main()
