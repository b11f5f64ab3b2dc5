"""Answers on real documents: the grown filings dev set (``bench/data/filings_qa.jsonl``, issue 33) through the
product's answer path, per backend, scoped and unscoped, with follow-ups asked in their conversation.

Each row is asked as a user asks it in the web app: ``scope: doc`` with *Search in* ticking its document, ``scope:
all`` over every document of its collection at once (the newcomer's situation); a follow-up (``followup_of``) after
its first question and the answer this run gave to it. Verdicts:

* answerable: **right** (the reply's answer line, its first line, gives a reference answer: a figure as printed,
  in millions written in billions, or the phrase), **partly** (a reference answer only in a quote below it),
  **wrong** (an answer without one), **abstained**; **right document** (the answer line cites the row's document);
* unanswerable: **abstained** (right) or **cited non-answer**;
* **foreign quotes**: replies to a question that names something whose citations include a document other than the
  row's (an unscoped question answered from another company's filing);
* seconds per answer (p50, p95), on this machine.

    python bench/answers_real.py --root /work/devdata/kgrag --data /work/devdata/filings_index \
        --out bench/results/answers_real.json

``--data`` holds the collections ingested with the shipped settings (``mgrag --data-dir DATA ingest ROOT/...``);
``--ids`` runs some rows only (a quick look).
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from pathlib import Path

import common as B  # noqa: F401  (project root on sys.path, offline flags)

from app.evaluation.filings import forms, norm  # the figures as the first filings set compares them

DATA = Path(__file__).resolve().parent / "data" / "filings_qa.jsonl"
TENQ = "sec-10-q/data/v1/docs"


def gives(text: str, answers: list[str]) -> bool:
    """Does ``text`` give one of ``answers`` (a figure whole, not part of a longer one; a phrase as words)?"""
    t = norm(text)
    for a in answers:
        if _in_millions(a, t):
            return True
        for f in forms(a):
            if re.search(r"\d", f):
                if re.search(rf"(?<![\d.,]){re.escape(f)}(?![\d])", t):
                    return True
            elif re.search(rf"\b{re.escape(f)}\b", t):
                return True
    return False


def _in_millions(answer: str, text: str) -> bool:
    """A reference in billions given in millions, equal at the reference's precision ("11.4 billion" as "$11,404
    million"; the reverse of :func:`app.evaluation.filings.forms`)."""
    m = re.fullmatch(r"\$?(\d+(?:\.(\d+))?) billion", norm(answer))
    if not m:
        return False
    places = len(m.group(2) or "")
    return any(round(int(x.replace(",", "")) / 1000, places) == float(m.group(1))
               for x in re.findall(r"(?<![\d.,])(\d{1,3}(?:,\d{3})+) million", text))


def first_claim(reply: str) -> str:
    """The reply up to its first citation: the answer a reader takes from it (the code before the reader answered
    with up to three quotes in one paragraph, each cited, so its first line was all of them)."""
    m = re.search(r"\[\d+\]", reply)
    return reply[: m.end()] if m else reply


def collection_docs(root: Path, rows: list[dict]) -> dict[str, list[str]]:
    cols = {r.get("collection", TENQ) for r in rows}
    return {c: sorted(p.name for p in (root / c).glob("*.pdf")) for c in cols}


def verdict(row: dict, ans) -> dict:
    lines = [ln for ln in ans.text.split("\n") if ln.strip()]
    head = lines[0] if lines else ""
    cited = [c.doc_id for c in ans.citations]
    out = {"abstained": ans.abstained, "cited": cited}
    if row["answers"]:
        v = ("abstained" if ans.abstained else "right" if gives(head, row["answers"])
             else "partly" if gives(ans.text, row["answers"]) else "wrong")
        out["first_claim_right"] = not ans.abstained and gives(first_claim(ans.text), row["answers"])
        out.update(verdict=v, right_document=bool(cited) and cited[0] == row["doc"])
    else:
        out.update(verdict="unanswerable_abstained" if ans.abstained else "cited_non_answer")
    return out


OUT = "bench/results/answers_real.json"


def history_for(row: dict, given: dict) -> list[dict]:
    """The conversation a follow-up row is asked after: its first question and the answer this run gave to it."""
    first = given.get(row.get("followup_of") or "")
    if first is None:
        return []
    return [{"role": "user", "content": first.question, "query": first.query},
            {"role": "assistant", "content": first.text}]

def run(ctx, rows: list[dict], root: Path, backend: str, progress=print, dump: list | None = None) -> dict:
    from app.answer import answer

    try:
        from app.reader import frame

        def names_of(q: str) -> list[str]:
            return frame(q).names
    except ImportError:  # the code before the reader (the baseline row): names as the conversation rules read them
        from app.conversation import entities

        def names_of(q: str) -> list[str]:
            return entities(q)

    docs = collection_docs(root, rows)
    have = {d["doc_id"] for d in ctx.catalog.documents(ctx.catalog.live_gen())}
    given: dict[str, object] = {}
    out = []
    for r in rows:
        coll = r.get("collection", TENQ)
        scope = [r["doc"]] if r.get("scope", "doc") == "doc" else [d for d in docs[coll] if d in have]
        history = history_for(r, given)
        t = time.perf_counter()
        ans = answer(ctx, r["question"], backend=backend, doc_ids=scope, history=history)
        dt = time.perf_counter() - t
        given[r["id"]] = ans
        if dump is not None:  # what the reader read, to read again with other settings (bench/archive/reader_tune.py)
            dump.append({"row": r, "query": ans.query, "history": history,
                         "sources": [dict(rank=c.number, doc_id=c.doc_id, start=c.start, end=c.end,
                                          text=c.parent_text, doc_hash=c.doc_hash, headings=list(c.headings),
                                          name=c.name) for c in ans.sources]})
        v = verdict(r, ans)
        v["in_context"] = bool(r["answers"]) and gives(" ".join(c.parent_text for c in ans.sources), r["answers"])
        names = names_of(r["question"])
        foreign = bool(names) and any(d != r["doc"] for d in v["cited"]) and r["answers"] != []
        out.append({"id": r["id"], "collection": coll, "scope": r.get("scope", "doc"), "type": r.get("type"),
                    "followup": bool(r.get("followup_of")), "seconds": round(dt, 3), "foreign": foreign,
                    "reply": ans.text[:700], "draft": ans.draft[:300] if ans.abstained else "",
                    "routed": (ans.grounding.get("routed") or {}).get("documents"), **v})
        if progress:
            shown = ans.draft if ans.abstained else ans.text
            progress(f"{r['id']:5s} {out[-1]['verdict']:24s} {dt:5.2f}s {shown[:110]!r}")
    return summarise(out)


def summarise(rows: list[dict]) -> dict:
    def block(rs: list[dict]) -> dict:
        ans = [r for r in rs if r["verdict"] in ("right", "partly", "wrong", "abstained")]
        una = [r for r in rs if r["verdict"] in ("unanswerable_abstained", "cited_non_answer")]
        secs = sorted(r["seconds"] for r in rs)
        return {"answerable": len(ans), "unanswerable": len(una),
                **{k: sum(r["verdict"] == k for r in ans) for k in ("right", "partly", "wrong", "abstained")},
                "right_share": round(sum(r["verdict"] == "right" for r in ans) / len(ans), 3) if ans else None,
                "first_claim_right": sum(bool(r.get("first_claim_right", gives_first(r))) for r in ans),
                "right_document": sum(bool(r.get("right_document")) for r in ans),
                "unanswerable_abstained": sum(r["verdict"] == "unanswerable_abstained" for r in una),
                "cited_non_answer": sum(r["verdict"] == "cited_non_answer" for r in una),
                "abstain_share": round(sum(r["verdict"] == "unanswerable_abstained" for r in una) / len(una), 3)
                if una else None,
                "foreign_quotes": sum(r["foreign"] for r in rs),
                "answer_in_context": sum(bool(r.get("in_context")) for r in ans),
                "right_when_in_context": sum(r["verdict"] == "right" for r in ans if r.get("in_context")),
                "p50_s": round(statistics.median(secs), 2) if secs else None,
                "p95_s": round(secs[min(len(secs) - 1, int(0.95 * len(secs)))], 2) if secs else None}

    return {"all": block(rows), "scoped": block([r for r in rows if r["scope"] == "doc"]),
            "unscoped": block([r for r in rows if r["scope"] == "all"]),
            "by_collection": {c: block([r for r in rows if r["collection"] == c])
                              for c in sorted({r["collection"] for r in rows})},
            "rows": rows}


def gives_first(row: dict) -> bool:
    """First-claim verdict of a stored row (results written before it was recorded)."""
    ref = ANSWERS.get(row["id"], [])
    return bool(ref) and not row["abstained"] and gives(first_claim(row["reply"]), ref)


ANSWERS: dict[str, list[str]] = {}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default="", help="docugami/KG-RAG-datasets checkout")
    ap.add_argument("--data", default="", help="data dir with the collections ingested")
    ap.add_argument("--rows", default=str(DATA), help="the question rows (JSONL; default: the filings dev set)")
    ap.add_argument("--backends", default="extractive")
    ap.add_argument("--ids", default="", help="comma-separated row ids (default: every row)")
    ap.add_argument("--label", default="", help="a name for this run (e.g. the code it ran)")
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--resummarise", default="", metavar="RESULTS", help=argparse.SUPPRESS)
    ap.add_argument("--dump", default="",
                    help="write each row's retrieved sources here (JSON) for bench/archive/reader_tune.py")
    a = ap.parse_args()
    from app.context import AppContext
    from core.settings import Settings

    rows = [json.loads(x) for x in Path(a.rows).read_text(encoding="utf-8").splitlines() if x.strip()]
    ANSWERS.update({r["id"]: r["answers"] for r in rows})
    if a.resummarise:  # a results file's summary made again from its rows (new figures, same answers)
        res = json.loads(Path(a.resummarise).read_text())
        for b in res["backends"].values():
            b.update(summarise(b["rows"]))
        Path(a.resummarise).write_text(json.dumps(res, indent=1))
        return
    if a.ids:
        keep = set(a.ids.split(","))
        rows = [r for r in rows if r["id"] in keep or r.get("followup_of") in keep]
    ctx = AppContext(Settings(data_dir=Path(a.data)))
    res = {"benchmark": "answers_real", "label": a.label, "machine": B.machine_info(), "backends": {},
           "settings": {k: getattr(ctx.settings, k)
                        for k in ("retriever", "chunk_context", "chunker", "embedder")},
           "command": f"MGRAG_RETRIEVER={ctx.settings.retriever} python bench/answers_real.py --root {a.root} "
                      f"--data {a.data} --backends {a.backends}"
                      + (f" --rows {a.rows}" if a.rows != str(DATA) else "")
                      + (f" --ids {a.ids}" if a.ids else "")
                      + (f" --label {a.label!r}" if a.label else "") + f" --out {a.out}"}
    try:
        dump: list | None = [] if a.dump else None
        for backend in a.backends.split(","):
            res["backends"][backend] = run(ctx, rows, Path(a.root), backend, dump=dump)
            if dump:
                Path(a.dump).write_text(json.dumps(dump))
                dump = None
            s = res["backends"][backend]
            print(backend, json.dumps({k: s[k] for k in ("all", "scoped", "unscoped")}, indent=1))
    finally:
        ctx.close()
    if not a.ids or a.out != OUT:  # a subset overwrites the whole set's results only when told where to write
        Path(a.out).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
