"""Answers on the issue-46 corpus: seven kinds of documents, split by document into train / dev / test
(``bench/data/qa/``, built and checked by ``bench/qa_set.py``), through the product's answer path.

Each row is asked as a user asks it in the web app: ``scope: doc`` with *Search in* ticking its document, ``scope:
all`` over every document of its kind (the kind's folder, ingested as one library); a follow-up (``followup_of``)
after its first question and the answer this run gave to it. Verdicts as ``bench/answers_real.py`` gives them:

* answerable: **right** (the reply's answer line, its first line, gives a reference answer), **partly** (a reference
  answer only in a quote below it), **wrong** (an answer without one), **abstained**;
* unanswerable: **abstained** (right) or **cited non-answer**;
* **precision** of the answers given: right answers / every answer given (to answerable and unanswerable rows);
* seconds per answer (p50, p95) on this machine.

    python bench/answers_qa.py ingest --data /work/devdata/qa_index          # every kind's folder, read to the end
    python bench/answers_qa.py run --data /work/devdata/qa_index --split test --out bench/results/answers_qa_test.json

``--dump FILE`` keeps each row's retrieved sources and reading (for fitting the scorer on train rows without
searching again).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import common as B  # noqa: F401  (project root on sys.path, offline flags)
from answers_real import gives, history_for, verdict
from qa_set import CORPUS, DATA, KINDS, load

OUT = "bench/results/answers_qa.json"


def rows_of(split: str, kinds: list[str], path: str = "") -> list[dict]:
    """The rows of ``split`` (a comma-separated list, or ``all``) of the given kinds: from the split files, or from
    the row file ``path`` (``bench/data/qa/paraphrased.jsonl``) filtered by its rows' ``split``."""
    splits = ["train", "dev", "test"] if split == "all" else split.split(",")
    if path:
        rows = [r for r in load(Path(path)) if r.get("split") in splits]
    else:
        rows = [r for s in splits for r in load(DATA / f"{s}.jsonl")]
    return [r for r in rows if r["kind"] in kinds]


def kind_docs(kind: str) -> list[str]:
    d = CORPUS / "docs" / kind
    return sorted(p.name for p in d.iterdir() if p.is_file()) if d.is_dir() else []


def cmd_ingest(a) -> None:
    mgrag = Path(sys.executable).with_name("mgrag")
    for kind in a.kinds:
        folder = CORPUS / "docs" / kind
        print(f"ingesting {folder}", flush=True)
        subprocess.run([str(mgrag), "--data-dir", a.data, "ingest", "--wait", "ready", "--quiet", str(folder)],
                       check=False)


def run(ctx, rows: list[dict], backend: str, progress=print, dump: list | None = None, options=None,
        conversation: bool = False, alone: bool = False) -> list[dict]:
    """Ask every row through the product's path. A follow-up is asked after its first question and the answer this
    run gave it; with ``conversation`` every other row is asked after the row before it of the same kind and its
    answer, as one user asks unrelated questions in one chat (the follow-up reading must then tell them apart); with
    ``alone`` every row is asked with no conversation, follow-ups too (what a follow-up the reading misses gets)."""
    from app.answer import answer

    have = {d["doc_id"] for d in ctx.catalog.documents(ctx.catalog.live_gen())}
    docs = {k: [d for d in kind_docs(k) if d in have] for k in {r["kind"] for r in rows}}
    given: dict[str, object] = {}
    before: dict[str, dict] = {}  # the row asked last, per kind (--conversation)
    out = []
    for r in rows:
        scope = [r["doc"]] if r["scope"] == "doc" else docs[r["kind"]]
        history = [] if alone else history_for(r, given)
        prev = before.get(r["kind"])
        if conversation and not history and prev is not None:
            history = history_for({"followup_of": prev["id"]}, given)
        before[r["kind"]] = r
        t = time.perf_counter()
        ans = answer(ctx, r["question"], backend=backend, doc_ids=scope, history=history, **(options or {}))
        dt = time.perf_counter() - t
        given[r["id"]] = ans
        if dump is not None:
            dump.append({"row": r, "query": ans.query, "history": history, "grounding": ans.grounding,
                         "sources": [dict(rank=c.number, doc_id=c.doc_id, start=c.start, end=c.end,
                                          text=c.parent_text, doc_hash=c.doc_hash, headings=list(c.headings),
                                          name=c.name, score=c.score) for c in ans.sources]})
        v = verdict(r, ans)
        v["in_context"] = bool(r["answers"]) and gives(" ".join(c.parent_text for c in ans.sources), r["answers"])
        hedge = (ans.grounding or {}).get("hedge") or []  # an unsure abstention's likeliest lines (app.reader)
        v["hedged"] = bool(hedge)
        v["hedge_holds_answer"] = bool(hedge) and bool(r["answers"]) and gives(" ".join(h["line"] for h in hedge),
                                                                                r["answers"])
        out.append({"id": r["id"], "kind": r["kind"], "split": r.get("split", ""), "doc": r["doc"],
                    "scope": r["scope"], "type": r.get("type"), "followup": bool(r.get("followup_of")),
                    "seconds": round(dt, 3), "reply": ans.text[:700],
                    "draft": ans.draft[:300] if ans.abstained else "",
                    "routed": (ans.grounding.get("routed") or {}).get("documents"), **v})
        if progress:
            shown = ans.draft if ans.abstained else ans.text
            progress(f"{r['id']:12s} {out[-1]['verdict']:24s} {dt:5.2f}s {shown[:100]!r}")
    return out


def block(rs: list[dict]) -> dict:
    ans = [r for r in rs if r["verdict"] in ("right", "partly", "wrong", "abstained")]
    una = [r for r in rs if r["verdict"] in ("unanswerable_abstained", "cited_non_answer")]
    secs = sorted(r["seconds"] for r in rs)
    n = {k: sum(r["verdict"] == k for r in ans) for k in ("right", "partly", "wrong", "abstained")}
    cited = sum(r["verdict"] == "cited_non_answer" for r in una)
    given = n["right"] + n["partly"] + n["wrong"] + cited
    return {"answerable": len(ans), "unanswerable": len(una), **n,
            "right_share": round(n["right"] / len(ans), 3) if ans else None,
            "unanswerable_abstained": len(una) - cited, "cited_non_answer": cited,
            "abstain_share": round((len(una) - cited) / len(una), 3) if una else None,
            "answers_given": given,
            "precision": round(n["right"] / given, 3) if given else None,
            "cited_non_answer_share": round(cited / given, 3) if given else None,
            "abstained_hedged": sum(bool(r.get("hedged")) for r in ans if r["verdict"] == "abstained"),
            "hedge_holds_answer": sum(bool(r.get("hedge_holds_answer")) for r in ans if r["verdict"] == "abstained"),
            "unanswerable_hedged": sum(bool(r.get("hedged")) for r in una),
            "answer_in_context": sum(bool(r.get("in_context")) for r in ans),
            "right_when_in_context": sum(r["verdict"] == "right" for r in ans if r.get("in_context")),
            "p50_s": round(statistics.median(secs), 2) if secs else None,
            "p95_s": round(secs[min(len(secs) - 1, int(0.95 * len(secs)))], 2) if secs else None}


def summarise(rows: list[dict]) -> dict:
    splits = sorted({r["split"] for r in rows})
    return {"all": block(rows),
            "by_split": {s: block([r for r in rows if r["split"] == s]) for s in splits},
            "by_kind": {s: {k: block([r for r in rows if r["split"] == s and r["kind"] == k])
                            for k in KINDS if any(r["split"] == s and r["kind"] == k for r in rows)}
                        for s in splits},
            "rows": rows}


def cmd_run(a) -> None:
    from app.context import AppContext
    from core.settings import Settings

    rows = rows_of(a.split, a.kinds, a.rows)
    if a.ids:
        keep = set(a.ids.split(","))
        rows = [r for r in rows if r["id"] in keep or r.get("followup_of") in keep]
    ctx = AppContext(Settings(data_dir=Path(a.data)))
    res = {"benchmark": "answers_qa", "label": a.label, "split": a.split, "machine": B.machine_info(),
           "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                    cwd=Path(__file__).resolve().parents[1]).stdout.strip(),
           "settings": {k: getattr(ctx.settings, k) for k in ("retriever", "chunk_context", "chunker", "embedder")},
           "command": f"python bench/answers_qa.py run --data {a.data} --split {a.split}"
                      + (f" --rows {a.rows}" if a.rows else "")
                      + (f" --kinds {','.join(a.kinds)}" if a.kinds != list(KINDS) else "")
                      + (" --conversation" if a.conversation else "") + (" --alone" if a.alone else "")
                      + (f" --label {a.label!r}" if a.label else "") + f" --out {a.out}",
           "backends": {}}
    try:
        dump: list | None = [] if a.dump else None
        out = run(ctx, rows, a.backend, dump=dump, conversation=a.conversation, alone=a.alone)
        res["backends"][a.backend] = summarise(out)
        if dump is not None:
            Path(a.dump).write_text(json.dumps(dump))
    finally:
        ctx.close()
    s = res["backends"][a.backend]
    print(json.dumps({"all": s["all"], "by_split": s["by_split"]}, indent=1))
    for sp, ks in s["by_kind"].items():
        for k, b in ks.items():
            print(f"{sp:5s} {k:8s} right {b['right']}/{b['answerable']}  abstained-unans "
                  f"{b['unanswerable_abstained']}/{b['unanswerable']}  precision {b['precision']}")
    Path(a.out).write_text(json.dumps(res, indent=1))


# the rows of BENCHMARKS.md's section, in order: (label, results file stem); a file not there yet is left out
ROWS = (("the reader of 3cd4e12 (baseline)", "answers_qa_baseline"),
        ("fitted scorer, first fit (train only; test run 1)", "answers_qa_reader_first"),
        ("fitted scorer, reader alone, keyword weight 1 (the default before)", "answers_qa_reader_w1"),
        ("fitted scorer, reader alone, keyword weight 0.25", "answers_qa_reader"),
        ("fitted scorer + LM check", "answers_qa_lmcheck"),
        ("default: keyword weight 0.25, an unsure route gives way to the whole search", "answers_qa_widen"),
        ("the default on a rebuilt corpus (another machine, own-topic follow-ups)", "answers_qa_r8"),
        ("reader alone at the dev sweep's 60%-precision threshold (dev only)", "answers_qa_floor60"),
        ("fitted LM check stage, k 2 (MGRAG_LM_CHECK=on, bundled llama-server)", "answers_qa_lmstage"),
        ("reader alone, a 10-K's change columns read by year, in-line bullets (4f0a1e5)", "answers_qa_cells"),
        ("LM check stage, a 10-K's change columns read by year, in-line bullets (4f0a1e5)", "answers_qa_lmcells"),
        ("reader alone, two-sentence windows as candidates (issue 46, stop 59)", "answers_qa_win"),
        ("LM check stage over distinct answers, two-sentence windows (stop 59)", "answers_qa_winlm"),
        ("reader alone, an answer's confidence holds the candidates quoting it (stop 60)", "answers_qa_held"),
        ("the same, asked in one conversation per kind, the follow-up rules (stop 60)", "answers_qa_conv"),
        ("the same, the fitted follow-up reading (stop 60)", "answers_qa_fu"),
        ("the same, the fitted follow-up reading, one conversation per kind (stop 60)", "answers_qa_fuconv"),
        ("reader alone, the answer shown as the window that holds it (stop 61)", "answers_qa_shown"),
        ("reader alone, a change given to the places of its figures (stop 62)", "answers_qa_places"),
        ("the same, the corpus's PDFs re-read: two columns, line-end hyphens (stop 62)", "answers_qa_s62"),
        ("abbreviations spelled out, undated documents kept, year-keyed rows (stop 63)", "answers_qa_names"),
        ("the same, numbered headings and a workbook's tables re-read (stop 63)", "answers_qa_s63"),
        ("the same, a setting's name a sentence of its own, 20 documents re-read (stop 63)", "answers_qa_s63s"),
        ("an abbreviation searched as the documents spell it out (stop 64; reverted)", "answers_qa_s64sp"),
        ("a PDF table's header read from its first rows (stop 64)", "answers_qa_s64h"))


def _pct(n: int, d: int) -> str:
    return f"{n}/{d} ({100 * n / d:.0f}%)" if d else "–"


def render(root: Path) -> str:
    """The "answers-qa" section of BENCHMARKS.md from ``bench/results/answers_qa_*_{dev,test}.json``."""
    res = root / "bench" / "results"
    out = ["| split | answer step | answerable right | partly | wrong | abstained | unanswerable abstained | "
           "cited non-answers (of answers given) | precision of answers given | p50 / p95 s |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    kinds_rows = []
    for split in ("dev", "test"):
        for label, stem in ROWS:
            f = res / f"{stem}_{split}.json"
            if not f.is_file():
                continue
            b = json.loads(f.read_text())["backends"]["extractive"]
            a = b["all"]
            out.append(f"| {split} | {label} | {_pct(a['right'], a['answerable'])} | {a['partly']} | {a['wrong']} | "
                       f"{a['abstained']} | {_pct(a['unanswerable_abstained'], a['unanswerable'])} | "
                       f"{_pct(a['cited_non_answer'], a['answers_given'])} | "
                       f"{a['precision'] if a['precision'] is not None else '–'} | {a['p50_s']} / {a['p95_s']} |")
            ks = b["by_kind"].get(split, {})
            kinds_rows.append(f"| {split} | {label} | " + " | ".join(
                f"{ks[k]['right']}/{ks[k]['answerable']} · {ks[k]['unanswerable_abstained']}/{ks[k]['unanswerable']}"
                if k in ks else "–" for k in KINDS) + " |")
    out += ["", "Per kind of document (answerable right · unanswerable abstained):", "",
            "| split | answer step | " + " | ".join(KINDS) + " |", "|---|---|" + "---|" * len(KINDS), *kinds_rows]
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=("ingest", "run"))
    ap.add_argument("--data", required=True, help="the data dir holding every kind ingested")
    ap.add_argument("--split", default="dev", help="train, dev, test, all, or a comma-separated list")
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--rows", default="", help="a row file (bench/data/qa/paraphrased.jsonl) instead of the splits'")
    ap.add_argument("--ids", default="")
    ap.add_argument("--backend", default="extractive")
    ap.add_argument("--label", default="")
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--dump", default="")
    how = ap.add_mutually_exclusive_group()
    how.add_argument("--conversation", action="store_true",
                     help="ask each row after the row before it of its kind, in one chat (see run)")
    how.add_argument("--alone", action="store_true", help="ask every row with no conversation, follow-ups too")
    a = ap.parse_args()
    a.kinds = [k for k in a.kinds.split(",") if k]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    cmd_ingest(a) if a.command == "ingest" else cmd_run(a)


if __name__ == "__main__":
    main()
