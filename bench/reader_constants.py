"""The answer step's hand-set constants measured on the dev split (issue 46: "no unnamed numeric weight in code";
BENCHMARKS "What in the answer step is not fitted" listed them as guesses with a stated role).

Each constant is set to each of its values in turn, the others left at their shipped values, and the dev split is
answered through the product's own path (:func:`bench.answers_qa.run`, one warm context); right, wrong, abstained
and precision are recorded per value. The scorer is **not** refitted per value: a feature constant (``IDF_SMOOTHING``,
``QUARTER_SPAN_CREDIT``) is read as the fitted weights see it, so the sweep asks "is the shipped value a bad guess
for the model we ship", not "what would a refit choose". The rule, stated before the run: a constant changes only if
another value is right for at least 3 more dev questions with no more wrong answers; the test split is not run.

    python bench/reader_constants.py --data DATA --out bench/results/reader_constants.json
"""
from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import time
from pathlib import Path

import answers_qa as Q
import common as B

# (module, constant, values tried); the shipped value is read from the module and always run first
SWEEP = (("app.lookup", "MAX_DOCS", (1, 3)),
         ("app.lookup", "MAX_ROWS", (1, 5)),
         ("app.cells", "MAX_ROW_KEYS", (1, 5)),
         ("app.features", "QUARTER_SPAN_CREDIT", (0.0, 1.0)),
         ("app.features", "IDF_SMOOTHING", (0.1, 1.0)))
MIN_GAIN = 3  # right answers another value must add (with no more wrong) to replace a shipped one


def brief(rows: list[dict]) -> dict:
    b = Q.block(rows)
    return {k: b[k] for k in ("right", "partly", "wrong", "abstained", "unanswerable_abstained", "cited_non_answer",
                              "precision", "p50_s")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--split", default="dev")
    ap.add_argument("--only", default="", help="constants to sweep (comma-separated names); default all")
    ap.add_argument("--out", default=str(B.ROOT / "bench" / "results" / "reader_constants.json"))
    a = ap.parse_args()
    import app.evidence as E
    from app.context import AppContext
    from core.settings import Settings

    rows = Q.rows_of(a.split, list(Q.KINDS))
    ctx = AppContext(Settings(data_dir=Path(a.data)))
    looked: list[int] = []  # rows the table lookup added, per question (MAX_DOCS, MAX_ROWS act only through them)
    rows_for = E.rows_for

    def counted(q, sources, index):
        got = rows_for(q, sources, index)
        looked.append(len({c.source for c, _ in got}))
        return got

    E.rows_for = counted
    out = {"split": a.split, "rule": f"a value replaces the shipped one only with >= {MIN_GAIN} more right and no "
                                     "more wrong on dev", "machine": B.machine_info(),
           "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                    cwd=B.ROOT).stdout.strip(),
           "command": f"python bench/reader_constants.py --data {a.data} --split {a.split}", "constants": {}}
    try:
        t0 = time.time()
        base = brief(Q.run(ctx, rows, "extractive", progress=None))
        out["shipped"] = base
        out["lookup"] = {"questions": len(rows), "asked": len(looked), "added_rows": sum(1 for n in looked if n)}
        print("lookup", out["lookup"], flush=True)
        print("shipped", json.dumps(base), f"{time.time() - t0:.0f}s", flush=True)
        for mod_name, name, values in SWEEP:
            if a.only and name not in a.only.split(","):
                continue
            mod = importlib.import_module(mod_name)
            shipped = getattr(mod, name)
            res = {"module": mod_name, "shipped": shipped, "values": {}}
            try:
                for v in values:
                    setattr(mod, name, v)
                    got = brief(Q.run(ctx, rows, "extractive", progress=None))
                    res["values"][str(v)] = got
                    print(name, v, json.dumps(got), flush=True)
            finally:
                setattr(mod, name, shipped)
            better = [v for v, g in res["values"].items()
                      if g["right"] >= base["right"] + MIN_GAIN and g["wrong"] <= base["wrong"]]
            res["verdict"] = f"change to {better[0]}" if better else "keep"
            out["constants"][name] = res
    finally:
        E.rows_for = rows_for
        ctx.close()
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    print("->", a.out)


if __name__ == "__main__":
    main()
