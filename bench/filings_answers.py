"""Answers on real company filings (the `filings` dev set, bench/data/filings_qa.jsonl): five 10-Q PDFs, 20
questions about a figure in them (most of them in a table) and 10 that they do not answer, asked as a user asks
them in the web app: scoped to the filing, the default retrieval, per answering backend.

Per backend: **right** (the reply gives one of the reference figures), **abstained**, **wrong** (an answer
without a reference figure); on the unanswerable questions, **abstained** (right) vs **cited non-answer**; and how
many replies quote a heading or a title line as their answer (``app.grounding.is_title_line``), and how often a
reference figure is anywhere in the retrieved context (retrieval, backend-independent).

The PDFs are SEC filings from docugami/KG-RAG-datasets (`sec-10-q/data/v1/docs`, MIT); they are not in this
repository: clone that repository and pass its folder with ``--docs``.

    python bench/filings_answers.py --docs ~/KG-RAG-datasets/sec-10-q/data/v1/docs --backends extractive,offline \
        --out bench/results/filings_answers.json
"""
from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from pathlib import Path

import common as B

DATA = B.ROOT / "bench" / "data" / "filings_qa.jsonl"


def norm(text: str) -> str:
    """Figures compared without currency signs and spacing: "$ 36,413" == "36,413"."""
    return re.sub(r"\s+", " ", text.replace("$", "")).replace(" %", "%").lower()


def forms(figure: str) -> list[str]:
    """A reference figure and the ways a filing also writes it: "14,514" (millions) as "14.51 billion" or "14.5
    billion"."""
    out = [norm(figure)]
    if re.fullmatch(r"\d{1,3}(,\d{3})+", figure):
        v = int(figure.replace(",", "")) / 1000
        out += [f"{v:.2f} billion", f"{v:.1f} billion"]
    return out


def has_figure(text: str, answers) -> bool:
    t = norm(text)
    return any(re.search(rf"(?<![\d.,]){re.escape(f)}(?![\d])", t) for a in answers for f in forms(a))


def quotes_a_title(reply: str) -> bool:
    from app.grounding import is_title_line, split_claims, strip_citations

    return any(is_title_line(strip_citations(c).strip("“”\" ")) for c in split_claims(reply))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", required=True, help="folder with the 10-Q PDFs ('2023 Q3 AAPL.pdf', …)")
    ap.add_argument("--backends", default="extractive,offline")
    ap.add_argument("--chunker", default="mg", help="mg: the first pass every upload gets within seconds")
    ap.add_argument("--data-dir", default=None, help="index folder to (re)use; default: a temporary one")
    ap.add_argument("--label", default="", help="a name for this code version in the results")
    ap.add_argument("--out", default="bench/results/filings_answers.json")
    a = ap.parse_args()
    from app.answer import answer
    from app.context import AppContext
    from app.core.settings import Settings
    from ingest.pipeline import Ingestor

    qs = [json.loads(x) for x in DATA.read_text().splitlines() if x.strip()]
    data_dir = Path(a.data_dir or tempfile.mkdtemp(prefix="mgrag-filings-"))
    ctx = AppContext(Settings(data_dir=data_dir, chunker=a.chunker, router="none"))
    gen = ctx.catalog.live_gen()
    have = {d["doc_id"] for d in ctx.catalog.documents(gen)} if gen is not None else set()
    docs = sorted({q["doc"] for q in qs})
    t0 = time.perf_counter()
    missing = [Path(a.docs) / d for d in docs if d not in have]
    if missing:
        Ingestor(ctx).ingest_paths(missing)
    ingest_s = time.perf_counter() - t0
    res = {"benchmark": "filings_answers", "label": a.label, "chunker": a.chunker, "ingest_s": round(ingest_s, 1),
           "machine": B.machine_info(), "n_answerable": sum(1 for q in qs if q["answers"]),
           "n_unanswerable": sum(1 for q in qs if not q["answers"]), "backends": {}, "rows": []}
    for backend in a.backends.split(","):
        counts = dict(right=0, abstained=0, wrong=0, unanswerable_abstained=0, cited_non_answer=0,
                      quotes_title=0, figure_in_context=0, seconds=0.0)
        for q in qs:
            t = time.perf_counter()
            ans = answer(ctx, q["question"], backend=backend, doc_ids=[q["doc"]])
            dt = time.perf_counter() - t
            counts["seconds"] += dt
            ctx_text = " ".join(s.parent_text for s in ans.sources)
            title = (not ans.abstained) and quotes_a_title(ans.text)
            counts["quotes_title"] += title
            if q["answers"]:
                counts["figure_in_context"] += has_figure(ctx_text, q["answers"])
                verdict = "abstained" if ans.abstained else "right" if has_figure(ans.text, q["answers"]) else "wrong"
                counts[verdict] += 1
            else:
                verdict = "unanswerable_abstained" if ans.abstained else "cited_non_answer"
                counts[verdict] += 1
            res["rows"].append({"backend": backend, "id": q["id"], "verdict": verdict, "quotes_title": title,
                                "reply": ans.text[:600], "labels": [c.label for c in ans.citations],
                                "seconds": round(dt, 2)})
            print(f"{backend} {q['id']} {verdict:22s} {ans.text[:110]!r}", flush=True)
        counts["seconds"] = round(counts["seconds"] / len(qs), 2)
        res["backends"][backend] = counts
        Path(a.out).write_text(json.dumps(res, indent=1))
    res["command"] = (f"python bench/filings_answers.py --docs DOCS --backends {a.backends} --chunker {a.chunker}"
                      + (f" --label {a.label}" if a.label else "") + f" --out {a.out}")
    Path(a.out).write_text(json.dumps(res, indent=1))
    print(json.dumps(res["backends"], indent=1))


if __name__ == "__main__":
    main()
