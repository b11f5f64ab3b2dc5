"""False abstention on chroma: how often the grounding's context floor turns away a question whose evidence the
context holds.

The answers benchmark calibrated the floors on LongBench and *Emma* questions (BENCHMARKS.md "answers"). Every
chroma question has an answer in its document, so here each one is asked of an index of chroma's five documents
(`mg`, θ = 300, MiniLM; the index of `bench/source_floor.py` is reused with ``--data-dir``): the context's
score (`app.answer.Grounder.context_score`, the closest sentence's match to the question) against the floor,
among the questions whose located evidence lies in the 1500-word context.

    .venv/bin/python bench/chroma_abstention.py --data-dir /tmp/floor-data
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", help="an index of chroma's documents built by bench/source_floor.py")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)

    from app.answer import Grounder, synth_sources
    from app.evaluation.answers import context_evidence_recall
    from app.evaluation.bench import RESULTS_DIR, load_set, write_section
    from bench.common import chroma_library
    from retrieval.search import retrieve

    bench = load_set("chroma")
    data = Path(args.data_dir) if args.data_dir else Path(tempfile.mkdtemp(prefix="mgrag-abst-"))
    ctx = chroma_library(data)
    rows = []
    for q in bench.questions:
        r = retrieve(ctx, q.question)
        read = synth_sources(r.sources, None)
        g = Grounder(ctx, q.question, read)
        rec = context_evidence_recall(r.sources, f"{q.doc_id}.md", q.evidence)
        rows.append({"id": q.id, "doc": q.doc_id, "context_score": g.context_score, "evidence_recall": rec,
                     "floor": g.floors.context})
    ctx.close()
    # the other side of the trade, from the answers benchmark's extractive rows (bench/results/answers.json)
    ans_path = RESULTS_DIR / "answers.json"
    ans = json.loads(ans_path.read_text(encoding="utf-8"))["candidates"]["extractive"]["rows"] \
        if ans_path.exists() else []
    (RESULTS_DIR / "chroma_abstention.json").write_text(json.dumps({"rows": rows, "per_doc": per_doc(rows)},
                                                                   indent=1), encoding="utf-8")
    md = render(rows, ans)
    print(md)
    if not args.no_write:
        write_section("chroma-abstention", md)
    return 0


def per_doc(rows: list[dict]) -> dict[str, float]:
    """Share of each document's questions with evidence in context that the floor turns away."""
    floor = rows[0]["floor"]
    with_ev = [x for x in rows if x["evidence_recall"]]
    docs = sorted({x["doc"] for x in with_ev})
    return {d: sum(x["context_score"] < floor for x in with_ev if x["doc"] == d)
            / sum(x["doc"] == d for x in with_ev) for d in docs}


def render(rows: list[dict], ans: list[dict]) -> str:
    """The BENCHMARKS.md section from this script's rows and the answers benchmark's extractive rows."""
    from app.evaluation.bench import markdown_table

    floor = rows[0]["floor"]
    with_ev = [x for x in rows if x["evidence_recall"]]
    unans = [r for r in ans if not r["answerable"]]
    table = []
    for f in sorted({floor, 0.46, 0.40, 0.35, 0.30}, reverse=True):
        turned = [x for x in with_ev if x["context_score"] < f]
        kept_out = sum(r["context_score"] < f for r in unans)
        table.append([f"{f:.2f}" + (" (default)" if f == floor else ""), len(with_ev), len(turned),
                      f"{len(turned) / max(len(with_ev), 1):.1%}",
                      f"{kept_out} of {len(unans)} ({kept_out / len(unans):.1%})" if unans else "–"])
    return f"""### False abstention on chroma (bench/chroma_abstention.py)

`.venv/bin/python bench/chroma_abstention.py` — the {len(rows)} chroma questions (all answerable) over one index of
its five documents (`mg`, θ=300, MiniLM, dense, 1500 words); {len(with_ev)} have located evidence in their context.
A question is turned away ("the documents do not say") when its context score is under the context floor. The last
column is the other side of the trade: the unanswerable questions of `mgrag bench answers` (its extractive rows in
bench/results/answers.json) whose context score is under the same floor.

{markdown_table(["context floor", "questions with evidence in context", "turned away", "false abstention",
                 "answers benchmark: unanswerable questions abstained on"], table)}

At the default floor, by document: {", ".join(f"{d} {v:.0%}" for d, v in per_doc(rows).items())}.
"""


if __name__ == "__main__":
    sys.exit(main())
