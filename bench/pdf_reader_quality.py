"""Retrieval on the 10-Q set read by pdfium, tables too (``pdf_reader=auto``, issue 37): does it hold?

The ``filings_10q`` dev set (five 10-Q PDFs, the answered questions of ``bench/data/filings_qa.jsonl``, a
question's evidence every place the extracted text prints its reference figure) built twice by
``bench/external_sets.py``: every page read by pdfplumber (``--pdf-reader pdfplumber``, the reader the set was first
built with) and with ``pdf_reader=auto`` (pdfium for every page with a text layer, its ruled tables' cells too:
today's default).
Each build scored with the shipped default retriever exactly as ``bench/retrieval_variants.py`` scores the row
"mg · contextual · hybrid 1" (MiniLM, θ = 300, top 20 chunks per level, each question searched within its
document): DCG@10 and evidence recall within a 1500-word context per question, the mean of each build, and the
paired bootstrap 95% CI (level_scoring's ``boot``, 2000 resamples, seed 0) of auto − pdfplumber over the questions
both builds keep::

    D=/work/devdata/kgrag/sec-10-q/data/v1/docs
    .venv/bin/python bench/external_sets.py --sets '' --filings $D --out /tmp/plumber --pdf-reader pdfplumber
    .venv/bin/python bench/external_sets.py --sets '' --filings $D --out /tmp/auto --pdf-reader auto
    .venv/bin/python bench/pdf_reader_quality.py --pdfplumber /tmp/plumber/filings_10q --auto /tmp/auto/filings_10q

Results: ``bench/results/pdf_reader_quality.json`` (cited by hand in BENCHMARKS.md "PDF pages: pdfium where there
is no table"). Passage vectors are shared with level_scoring's cache: identical chunk texts are not re-embedded.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench.level_scoring as LS  # noqa: E402
import bench.retrieval_variants as RV  # noqa: E402

ROW = "mg|contextual|hybrid 1"  # the shipped default: mg chunks, contextual text, dense + BM25 fused (weight 1)
READERS = ("pdfplumber", "auto")


def score_build(b, ctx, vectors, qvecs) -> dict[str, dict[str, float]]:
    """question id -> {metric: value} for the shipped default retriever on one build, as
    :func:`bench.retrieval_variants.run_set` scores its ``mg|contextual|hybrid 1`` row."""
    from app.evaluation import harness as H
    from app.evaluation.bench import question_metrics
    from retrieval.bm25 import tokenize

    run = H.chunk_documents(b, "mg", LS.THETA, ctx)
    prepared = {}
    for d, chunks in run.chunks.items():
        texts = RV.contextual_texts(d, b.docs[d], chunks)
        parents = sorted({c.parent_span for c in chunks})
        prepared[d] = (chunks, vectors.passages(texts), RV._bm25(chunks, texts), parents)
    vectors.save()
    out = {}
    for q in b.questions:
        if q.doc_id not in prepared:
            continue
        chunks, vecs, bm25, parents = prepared[q.doc_id]
        q2 = LS._relabel(q, b.docs[q.doc_id], parents)
        spans = RV.rankings(chunks, vecs, bm25, qvecs[q.question], tokenize(q.question))["hybrid 1"]
        row, _ = question_metrics(q2, b.docs[q.doc_id], spans, parents, budget_words=LS.BUDGET)
        out[q.id] = {m: float(row[m]) for m in LS.METRICS}
    return out


def run(args) -> dict:
    from app.evaluation import bench as B
    from app.evaluation import harness as H
    from core.settings import Settings

    t0 = time.perf_counter()
    ctx = H.bench_context(Settings(embedder="all-MiniLM-L6-v2", theta=LS.THETA))
    vectors = LS.DiskVectors(ctx.embedder, Path(ctx.settings.cache_dir) / "bench" / "level_scoring_vectors.npy")
    builds = {r: B.load_set(str(getattr(args, r))) for r in READERS}
    qs = sorted({q.question for b in builds.values() for q in b.questions})
    qvecs = dict(zip(qs, ctx.embedder.embed_queries(qs)))
    per = {r: score_build(b, ctx, vectors, qvecs) for r, b in builds.items()}
    both = [q for q in per["pdfplumber"] if q in per["auto"]]
    res = {"command": "python bench/pdf_reader_quality.py --pdfplumber DIR/filings_10q --auto DIR/filings_10q",
           "row": ROW, "theta": LS.THETA, "budget_words": LS.BUDGET, "n_boot": LS.N_BOOT, "builds": {},
           "paired_questions": len(both), "only_in": {r: sorted(set(per[r]) - set(both)) for r in READERS}}
    for r, b in builds.items():
        res["builds"][r] = {"docs": len(b.docs), "questions": len(b.questions), "words": b.words,
                            "mean": {m: float(np.mean([v[m] for v in per[r].values()])) for m in LS.METRICS},
                            "per_question": per[r]}
    res["diff"] = {m: LS.boot({"filings_10q": np.array([per["auto"][q][m] - per["pdfplumber"][q][m] for q in both])})
                   ["filings_10q"] for m in LS.METRICS}
    res["paired_mean"] = {r: {m: float(np.mean([per[r][q][m] for q in both])) for m in LS.METRICS} for r in READERS}
    res["machine"], res["seconds"] = B.machine_info(), time.perf_counter() - t0
    return res


def main(argv=None) -> int:
    from app.evaluation import harness as H

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pdfplumber", type=Path, required=True, help="filings_10q built with --pdf-reader pdfplumber")
    ap.add_argument("--auto", type=Path, required=True, help="filings_10q built with --pdf-reader auto")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    res = run(args)
    if not args.no_write:
        H.write_results("pdf_reader_quality.json", res)
    m10, er = LS.METRICS
    for r in READERS:
        b = res["builds"][r]
        print(f"{r}: {b['questions']} questions, DCG@10 {b['mean'][m10]:.3f}, recall {b['mean'][er]:.3f}")
    print(f"auto − pdfplumber over {res['paired_questions']} questions: DCG@10 {res['diff'][m10]}, "
          f"recall {res['diff'][er]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
