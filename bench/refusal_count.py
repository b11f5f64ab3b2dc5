"""How often the routing's one hard refusal fires ("the question names X, which only documents outside this search
are about", ``app.routing.route_for``) and how often a question is routed away from its own document, per split of
the answers corpus, for each value of ``app.routing.SPELLED_REPEATS`` given (the repeats that make a spelling-out in
small letters count as saying an abbreviation). Follow-ups are left out (their names come from the question before).

    python bench/refusal_count.py --data /work/devdata/qa_index_s63b --splits train,dev --repeats 1,2,3 \\
        --out bench/results/refusals_s63.json
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import common as B  # noqa: F401  (project root on sys.path, offline flags)
from answers_qa import kind_docs, rows_of

KINDS = ["filings", "calls", "agency", "papers", "manuals", "prose", "sheets"]


def count(ctx, rows: list[dict], have: set[str]) -> dict:
    from app.question import read_question
    from app.routing import route_for

    refused, away = [], []
    for r in rows:
        if r.get("followup_of"):
            continue
        scope = [r["doc"]] if r["scope"] == "doc" else [d for d in kind_docs(r["kind"]) if d in have]
        rt = route_for(ctx, read_question(r["question"]), scope)
        if rt.doc_ids == []:
            refused.append({"id": r["id"], "answerable": bool(r["answers"]), "why": rt.why})
        elif rt.doc_ids and r["doc"] not in rt.doc_ids:
            away.append({"id": r["id"], "answerable": bool(r["answers"]), "why": rt.why})
    return {"questions": sum(1 for r in rows if not r.get("followup_of")), "refused": len(refused),
            "answerable_refused": sum(x["answerable"] for x in refused), "routed_away": len(away),
            "answerable_routed_away": sum(x["answerable"] for x in away), "refusals": refused, "away": away}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="the corpus's index (a data dir)")
    ap.add_argument("--splits", default="train,dev")
    ap.add_argument("--repeats", default="2", help="values of SPELLED_REPEATS, comma-separated")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    import app.routing as routing
    from app.context import AppContext
    from core.settings import Settings

    ctx = AppContext(Settings(data_dir=Path(a.data)))
    have = {d["doc_id"] for d in ctx.catalog.documents(ctx.catalog.live_gen())}
    out = {"command": "bench/refusal_count.py " + " ".join(f"--{k} {v}" for k, v in vars(a).items()), "runs": {}}
    for n in (int(x) for x in a.repeats.split(",")):
        routing.SPELLED_REPEATS = n
        out["runs"][str(n)] = {s: count(ctx, rows_of(s, KINDS), have) for s in a.splits.split(",")}
        for s, v in out["runs"][str(n)].items():
            print(f"SPELLED_REPEATS {n} {s:5s} refused {v['refused']} (answerable {v['answerable_refused']}), "
                  f"routed away {v['routed_away']} (answerable {v['answerable_routed_away']})")
    Path(a.out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
