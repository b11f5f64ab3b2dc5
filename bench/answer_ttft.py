"""Time to first token of the offline answer configurations side by side (BENCHMARKS.md, "Answers").

The same first N answerable questions of `mgrag bench answers`, each asked of every configuration in turn in one
process (so the machine's load is shared alike), generation forced (no floor, no draft cache). Writes
bench/results/answer_ttft.json.

    .venv/bin/python bench/answer_ttft.py --questions 3 --threads 2
"""
from __future__ import annotations

import argparse
import json

from app.evaluation import bench as B


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--candidates", default="extractive,gemma-500,qwen-500,gemma-1500")
    a = ap.parse_args()
    import torch

    torch.set_num_threads(a.threads)
    from app.context import AppContext
    from app.evaluation.answer_sets import build_index, load_answer_sets
    from app.evaluation.answers import CANDIDATES, make_synth, time_side_by_side
    from core.settings import Settings

    s = Settings(torch_threads=a.threads)
    sets = load_answer_sets()
    ctx = AppContext(s.model_copy(update={"data_dir": build_index("A", sets.docs_a, s)}))
    cands = [CANDIDATES[n] for n in a.candidates.split(",")]
    synths = {c.name: make_synth(c, ctx) for c in cands}
    monitor = B.LoadMonitor(interval=5)
    res = time_side_by_side(ctx, cands, synths, sets.answerable[:a.questions], print)
    monitor.stop()
    out = {"timing": res, "questions": [q.id for q in sets.answerable[:a.questions]], "load": monitor.summary(),
           "machine": B.machine_info()}
    B.RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (B.RESULTS_DIR / "answer_ttft.json").write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    for name, t in res.items():
        print(f"{name}: first token {t['ttft_s_median']:.2f} s, total {t['total_s_median']:.2f} s (median of {t['n']})")
    ctx.close()


if __name__ == "__main__":
    main()
