"""``mgrag bench answers --filings DOCS``: answers on real company filings (the ``filings`` dev set,
``bench/data/filings_qa.jsonl``): five 10-Q PDFs, 20 questions about a figure in them (most in a table) and 10 they
do not answer, each asked as a user asks it in the web app (scoped to its filing, the default retrieval and
floors), per answering configuration (:data:`app.evaluation.answers.CANDIDATES`).

Per configuration: **right** (the reply gives one of the reference figures, as printed or in billions),
**abstained**, **wrong** (an answer without a reference figure); on the unanswerable questions **abstained** (right)
vs **cited non-answer**; how many replies quote a heading or a title line as their answer
(:func:`app.grounding.is_title_line`); and how often a reference figure is anywhere in the retrieved context
(retrieval, the same for every configuration).

The PDFs are SEC filings from docugami/KG-RAG-datasets (``sec-10-q/data/v1/docs``, MIT); they are not in this
repository: clone that repository and pass its folder.
"""
from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from app.answer import answer
from app.context import AppContext
from app.evaluation import bench as B
from app.evaluation.answers import CANDIDATES, make_synth
from app.grounding import is_title_line, split_claims, strip_citations
from ingest.jobs.queue import ingest_files

DATA = B.ROOT / "bench" / "data" / "filings_qa.jsonl"
DEFAULT_CANDIDATES = ("extractive", "hybrid-gemma-500", "qwen-500", "hybrid-qwen-500")


def norm(text: str) -> str:
    """Figures compared without currency signs and spacing: "$ 36,413" == "36,413".

    >>> norm("$ 36,413 and 12.5 %")
    '36,413 and 12.5%'
    """
    return re.sub(r"\s+", " ", text.replace("$", "")).replace(" %", "%").strip().lower()


def forms(figure: str) -> list[str]:
    """A reference figure and the ways a filing also writes it: "14,514" (millions) as "14.51 billion" or "14.5
    billion".

    >>> forms("14,514")
    ['14,514', '14.51 billion', '14.5 billion']
    """
    out = [norm(figure)]
    if re.fullmatch(r"\d{1,3}(,\d{3})+", figure):
        v = int(figure.replace(",", "")) / 1000
        out += [f"{v:.2f} billion", f"{v:.1f} billion"]
    return out


def has_figure(text: str, answers: Sequence[str]) -> bool:
    """Does ``text`` give one of the reference figures (a whole number, not part of a longer one)?

    >>> has_figure("Net sales were $ 39,669 million [1]", ["39,669"]), has_figure("139,669", ["39,669"])
    (True, False)
    """
    t = norm(text)
    return any(re.search(rf"(?<![\d.,]){re.escape(f)}(?![\d])", t) for a in answers for f in forms(a))


def quotes_a_title(reply: str) -> bool:
    return any(is_title_line(strip_citations(c).strip("“”\" ")) for c in split_claims(reply))


def load_questions(path: Path = DATA, first_set: bool = True) -> list[dict]:
    """The set's rows; ``first_set``: only the 30 of issue 20 (``f01``–``f20``, ``u01``–``u10``: the five 2023 Q3
    10-Qs, each question asked alone and scoped to its filing), which this harness was built for and its published
    results hold; the grown set (other collections, follow-ups, questions over a whole collection) has rows of its
    own kinds (``bench/data/README.md``)."""
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    first = {f"f{i:02d}" for i in range(1, 21)} | {f"u{i:02d}" for i in range(1, 11)}
    return [r for r in rows if r["id"] in first] if first_set else rows


def run_filings(settings, docs_dir, names: Sequence[str] = DEFAULT_CANDIDATES, *, fresh: bool = False,
                progress: Callable[[str], None] | None = print, checkpoint: Callable[[dict], None] | None = None,
                questions: Sequence[dict] | None = None) -> dict:
    """Ingest the set's filings from ``docs_dir`` into ``settings.data_dir`` (those already there are reused) and
    ask every question with each configuration in ``names``."""
    qs = list(questions or load_questions())
    unknown = [n for n in names if n not in CANDIDATES or CANDIDATES[n].backend == "openai"]
    if unknown:
        raise ValueError(f"unknown configuration(s) for the filings set: {', '.join(unknown)}")
    ctx = AppContext(settings)
    try:
        gen = ctx.catalog.live_gen()
        have = {d["doc_id"] for d in ctx.catalog.documents(gen)} if gen is not None else set()
        missing = [Path(docs_dir) / d for d in sorted({q["doc"] for q in qs}) if d not in have]
        absent = [str(p) for p in missing if not p.is_file()]
        if absent:
            raise FileNotFoundError(f"the filings set needs {', '.join(absent)} (docugami/KG-RAG-datasets, "
                                    "sec-10-q/data/v1/docs)")
        t0 = time.perf_counter()
        if missing:
            ingest_files(ctx, missing)
        ingest_s = round(time.perf_counter() - t0, 1)
        res = {"benchmark": "filings_answers", "chunker": settings.chunker, "ingest_s": ingest_s,
               "machine": B.machine_info(), "n_answerable": sum(1 for q in qs if q["answers"]),
               "n_unanswerable": sum(1 for q in qs if not q["answers"]), "candidates": {}, "rows": []}
        synths: dict[str, object] = {}
        for name in names:
            cand = CANDIDATES[name]
            gname = cand.derived_from or cand.name
            if gname not in synths:
                synths[gname] = make_synth(CANDIDATES[gname], ctx, fresh=fresh)
            counts = dict(right=0, abstained=0, wrong=0, unanswerable_abstained=0, cited_non_answer=0,
                          quotes_title=0, figure_in_context=0, seconds=0.0)
            for q in qs:
                t = time.perf_counter()
                ans = answer(ctx, q["question"], backend=cand.backend, synthesizer=synths[gname],
                             doc_ids=[q["doc"]], style=cand.style, grounded=cand.grounded,
                             synth_budget_words=cand.budget)
                dt = time.perf_counter() - t
                gen = getattr(synths[gname], "last", None) or {}
                if gen:  # a draft read back from the cache: count the time it took when it was generated
                    dt += gen.get("total_s", 0.0) - gen.get("observed_total_s", 0.0)
                    synths[gname].last = {}
                counts["seconds"] += dt
                title = (not ans.abstained) and quotes_a_title(ans.text)
                counts["quotes_title"] += title
                if q["answers"]:
                    counts["figure_in_context"] += has_figure(" ".join(s.parent_text for s in ans.sources),
                                                              q["answers"])
                    verdict = ("abstained" if ans.abstained else
                               "right" if has_figure(ans.text, q["answers"]) else "wrong")
                else:
                    verdict = "unanswerable_abstained" if ans.abstained else "cited_non_answer"
                counts[verdict] += 1
                res["rows"].append({"candidate": name, "id": q["id"], "verdict": verdict, "quotes_title": title,
                                    "reply": ans.text[:600], "labels": [c.label for c in ans.citations],
                                    "seconds": round(dt, 2)})
                if progress:
                    progress(f"{name} {q['id']} {verdict:22s} {ans.text[:100]!r}")
            counts["seconds"] = round(counts["seconds"] / len(qs), 2)
            res["candidates"][name] = counts
            if checkpoint:
                checkpoint(res)
        return res
    finally:
        ctx.close()


def filings_table(res: dict) -> str:
    rows = ["| configuration | right | abstained | wrong | unanswerable: abstained | cited non-answers | "
            "quotes a heading or title line | figure in the retrieved context | s / question |",
            "|---|---|---|---|---|---|---|---|---|"]
    na, nu = res["n_answerable"], res["n_unanswerable"]
    for name, c in res["candidates"].items():
        rows.append(f"| {name} | {c['right']} / {na} | {c['abstained']} | {c['wrong']} | "
                    f"{c['unanswerable_abstained']} / {nu} | {c['cited_non_answer']} | {c['quotes_title']} | "
                    f"{c['figure_in_context']} / {na} | {c['seconds']:.1f} |")
    return "\n".join(rows)
