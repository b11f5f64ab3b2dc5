"""Which sources a reader needs to see: the relevance floor under which the chat folds sources away.

Every chroma question (472, five documents in one index, as a user's library would be) is asked through the
product's own retrieval (`retrieval.search.retrieve`: MiniLM, the `mg` chunker at θ=300, k=10 per level, 1500
words of context, uniform weights). Each source of the context is *relevant* when its passage overlaps one of the
question's evidence spans. A floor rule shows a source when its score is at least ``ratio × the top source's
score``; the others are folded under "N more below the relevance floor" (and a cited source is always shown).
For each rule: the share of relevant sources still shown, the questions that lose every relevant source, and how
many sources a reader sees on average.

    .venv/bin/python bench/source_floor.py            # writes the "source-floor" section of BENCHMARKS.md
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RATIOS = (0.0, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", help="reuse an index built by an earlier run (default: a temporary one)")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)

    from app.evaluation.bench import load_set, markdown_table, write_section
    from bench.common import chroma_library
    from retrieval.search import retrieve

    bench = load_set("chroma")
    tmp = None
    data = Path(args.data_dir) if args.data_dir else Path(tmp := tempfile.mkdtemp(prefix="mgrag-floor-"))
    t0 = time.perf_counter()
    ctx = chroma_library(data)
    built = time.perf_counter() - t0
    rows = []  # per question: [(score, relevant)] in rank order
    for q in bench.questions:
        spans = [(e.start, e.end) for e in q.evidence if e.located]
        r = retrieve(ctx, q.question, k=10, budget_words=1500)
        rows.append([(s.score, any(s.doc_id == f"{q.doc_id}.md" and s.start < e and b < s.end for b, e in spans))
                     for s in r.sources])
    ctx.close()
    n_rel = sum(rel for row in rows for _, rel in row)
    with_rel = [row for row in rows if any(rel for _, rel in row)]
    table = []
    for ratio in RATIOS:
        shown = [[(sc, rel) for sc, rel in row if sc >= ratio * row[0][0]] for row in rows if row]
        kept = sum(rel for row in shown for _, rel in row)
        lost = sum(1 for row, full in zip(shown, rows) if any(r for _, r in full) and not any(r for _, r in row))
        table.append([f"{ratio:.2f}", f"{kept / max(n_rel, 1):.3f}", f"{lost} of {len(with_rel)}",
                      f"{sum(len(r) for r in shown) / len(shown):.1f}", f"{sum(len(r) for r in rows) / len(rows):.1f}"])
    md = f"""### Relevance floor for the sources shown (bench/source_floor.py)

`.venv/bin/python bench/source_floor.py` — the {len(rows)} chroma questions over one index of its five documents
(MiniLM, `mg` θ=300, k=10 per level, 1500 words; the index took {built:.0f} s to build here). A source is shown
when its score is at least *ratio* × the top source's score; the rest are folded away in the chat. {n_rel} sources
of the contexts overlap their question's evidence.

{markdown_table(["ratio", "relevant sources still shown", "questions that lose every relevant source",
                 "sources shown per answer", "sources in the context"], table)}
"""
    print(md)
    if not args.no_write:
        write_section("source-floor", md)
    if tmp:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
