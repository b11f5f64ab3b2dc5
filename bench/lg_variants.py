"""What makes an LG parent better than a recursive one: every cutting rule, boundary LM and child size on the dev sets.

    .venv/bin/python bench/lg_variants.py --variants mg,recursive,lgmgc,lgmgc/stream+s1 --theta 300
    .venv/bin/python bench/lg_variants.py --render          # BENCHMARKS.md section "lg-variants" from the JSON

One LM pass serves many rules: the boundary probabilities (exact windows and streaming passes) are cached on disk
per document, LM, prompt and boundary tokens (:class:`app.evaluation.probcache.CachedScorer`), so a rule is
re-cut from them, never re-read; passage vectors are cached by text (:class:`~app.evaluation.probcache.VectorCache`).
The chunkers are the shipped ones (``LGMGCChunker`` with an ``LGConfig``), so what is measured is what ships.

A variant is written ``chunker[@lm][/stream][+sW][+pB][+kids]``:

* ``mg``, ``recursive``: the baselines (recursive parents with θ/2, θ/4 children; recursive alone);
* ``lgmgc``: LG parents + MG children, exact mode (one pass per window, the paper); ``/stream``: every
  sentence end scored once from a pass over the document;
* ``@lm``: the boundary LM and signal (:data:`LMS`): ``gemma`` (the shipped Gemma-3-270M, ``<eos>``, default),
  ``qwen`` (Qwen2.5-Coder-0.5B-Instruct, ``<|endoftext|>``), ``gemma-nl`` (``\\n\\n``), ``gemma-p0`` (no prompt);
* ``+sW``: structure-aware scores, ``log p + W · layout break`` (paragraph 1, line 0.5, heading or page 1.5);
  ``+s100`` cuts only at the strongest break of the window, the LM choosing among those (the recursive splitter's
  candidates);
* ``+pB``: size prior ``B · log(words / θ)``, so parents fill θ rather than ~0.6 θ;
* ``+kids``: children of half and a quarter of their own parent, not θ/2 and θ/4.

Sets: chroma (all 5 documents, 472 questions), gutenqa_emma (the whole book, 30 questions) and the LongBench
sample's questions whose answer occurs exactly once in its document (``locate_answers``: 9 questions). Scoring is
``evaluate_retrieval`` (per-document search, top 20 per level, parents by the max over children, MiniLM), as in
the chunker tables. Results accumulate in ``bench/results/lg_variants.json`` (one entry per set, variant and θ).
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import RESULTS_DIR, load_set, locate_answers, markdown_table, write_section  # noqa: E402

log = logging.getLogger("lg_variants")
RESULT = RESULTS_DIR / "lg_variants.json"
METRICS = ("dcg@1", "dcg@5", "dcg@10", "dcg@20", "recall@5", "recall@10", "evidence_recall@1500w")
PROMPT = "Continue the text:\n\n"
QWEN = Path.home() / ".cache" / "mgrag" / "models" / "qwen2.5-coder-0.5b-instruct"
LMS = {
    "gemma": {"lm": "gemma3-270m", "prompt": PROMPT, "boundary_tokens": ["<eos>"]},
    "gemma-nl": {"lm": "gemma3-270m", "prompt": PROMPT, "boundary_tokens": ["\n\n"]},
    "gemma-p0": {"lm": "gemma3-270m", "prompt": "", "boundary_tokens": ["<eos>"]},
    # "lm" names the cache entry (kept as the folder the first runs used); "load" is what MGRAG_LM_MODEL would say
    "qwen": {"lm": str(QWEN), "load": "qwen2.5-coder-0.5b-instruct", "prompt": PROMPT,
             "boundary_tokens": ["<|endoftext|>"]},
}
SETS = ("chroma", "gutenqa_emma", "longbench")
_VARIANT = re.compile(r"^(?P<c>mg|recursive|lgmgc|lg)(?:@(?P<lm>[\w-]+))?(?P<stream>/stream)?"
                      r"(?:\+s(?P<s>[\d.]+))?(?:\+p(?P<p>[\d.]+))?(?P<kids>\+kids)?$")


def parse_variant(name: str) -> dict:
    m = _VARIANT.match(name)
    if not m:
        raise SystemExit(f"bad variant {name!r}: write chunker[@lm][/stream][+sW][+pB][+kids], e.g. lgmgc/stream+s1")
    lm = m["lm"] or "gemma"
    if lm not in LMS:
        raise SystemExit(f"variant {name!r}: unknown LM {lm!r}; choose from {', '.join(LMS)}")
    return {"chunker": m["c"], "lm": lm, "mode": "streaming" if m["stream"] else "exact",
            "structure_weight": float(m["s"] or 0), "size_prior": float(m["p"] or 0),
            "children": "parent" if m["kids"] else "theta"}


def bench_set(name: str):
    if name == "longbench":
        return locate_answers(load_set("longbench_sample"))
    return load_set(name)


class Scorers:
    """One cached scorer per LM profile; the real LM is loaded only on a cache miss (unless ``no_lm``)."""

    def __init__(self, cache_dir: Path, no_lm: bool, threads: int):
        self.cache_dir, self.no_lm, self.threads = cache_dir, no_lm, threads
        self._made: dict = {}

    def get(self, lm: str):
        from app.evaluation.probcache import CachedScorer

        if lm not in self._made:
            prof = LMS[lm]
            key = {**{k: v for k, v in prof.items() if k != "load"}, "block_tokens": 1024, "context_tokens": 64}

            def load():
                if self.no_lm:
                    raise LookupError(f"probabilities of {lm} not cached (--no-lm)")
                import torch

                from core.models import load_causal_lm
                from ingest.text.lm import LogitsScorer

                torch.set_num_threads(self.threads)
                tok, model = load_causal_lm(prof.get("load", prof["lm"]), self.cache_dir)
                return LogitsScorer(tok, model, prompt=prof["prompt"], boundary_tokens=tuple(prof["boundary_tokens"]))

            self._made[lm] = CachedScorer(self.cache_dir, key, load)
        return self._made[lm]


def chunk(bench, spec: dict, theta: int, scorers: Scorers) -> tuple[dict, dict]:
    """Chunks of every document of ``bench`` and facts about the run (seconds, cache hits)."""
    from ingest.chunkers.logits import LGConfig, LGMGCChunker, LogitsGuidedChunker
    from ingest.chunkers.multigranular import MultiGranularChunker
    from ingest.chunkers.recursive import RecursiveChunker

    t = time.perf_counter()
    facts: dict = {}
    if spec["chunker"] == "mg":
        ch = MultiGranularChunker(theta)
    elif spec["chunker"] == "recursive":
        ch = RecursiveChunker(theta)
    else:
        sc = scorers.get(spec["lm"])
        cfg = LGConfig(theta=theta, mode=spec["mode"], structure_weight=spec["structure_weight"],
                       size_prior=spec["size_prior"], children=spec["children"])
        ch = (LGMGCChunker if spec["chunker"] == "lgmgc" else LogitsGuidedChunker)(sc, cfg)
        h0, m0, s0 = sc.hits, sc.misses, sc.lm_seconds
    out = {d: ch.chunk(text) for d, text in bench.docs.items()}
    facts["seconds"] = time.perf_counter() - t
    if spec["chunker"] in ("lgmgc", "lg"):
        facts.update(cache_hits=sc.hits - h0, lm_calls=sc.misses - m0, lm_seconds=sc.lm_seconds - s0)
    return out, facts


def evaluate(bench, chunks: dict, embedder) -> dict:
    from app.evaluation.bench import evaluate_retrieval
    from ingest.text.sentences import count_words

    r = evaluate_retrieval(bench, chunks, embedder, keep_per_question=True)
    parents = [count_words(c.text) for cs in chunks.values() for c in cs if c.level == 0]
    return {**{m: r[m] for m in METRICS}, "n_questions": r["n_questions"], "n_parents": len(parents),
            "mean_parent_words": float(np.mean(parents)),
            "per_question": {row["id"]: [row["dcg@10"], row["evidence_recall@1500w"]] for row in r["per_question"]}}


def load_results() -> dict:
    return json.loads(RESULT.read_text(encoding="utf-8")) if RESULT.exists() else {"runs": {}}


def save_results(res: dict) -> None:
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    tmp = RESULT.with_suffix(".tmp")
    tmp.write_text(json.dumps(res, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(RESULT)


# -- report ----------------------------------------------------------------------------------------------------------
def _mean(res: dict, s: str, v: str, thetas, key: str) -> float | None:
    xs = [res["runs"].get(f"{s}|{v}|{t}", {}).get(key) for t in thetas]
    return float(np.mean(xs)) if xs and all(x is not None for x in xs) else None


def _paired(res: dict, s: str, a: str, b: str, thetas, idx: int = 0) -> tuple[int, int, int] | None:
    w = t_ = l_ = 0
    for t in thetas:
        ra, rb = res["runs"].get(f"{s}|{a}|{t}"), res["runs"].get(f"{s}|{b}|{t}")
        if not ra or not rb:
            return None
        for q, va in ra["per_question"].items():
            d = va[idx] - rb["per_question"][q][idx]
            w, t_, l_ = w + (d > 1e-9), t_ + (abs(d) <= 1e-9), l_ + (d < -1e-9)
    return w, t_, l_


def render(res: dict, thetas=(200, 300, 500)) -> str:
    variants = list(dict.fromkeys(k.split("|")[1] for k in res["runs"]))
    lines = ["## LG boundaries: every variant (`bench/lg_variants.py`)", "",
             "```", ".venv/bin/python bench/lg_variants.py --theta 200,300,500 --variants " + ",".join(variants),
             "```", "",
             "Same embedder (MiniLM), same scoring as the chunker tables (per-document search, top 20 per level, "
             "max over children). chroma: all 5 documents, 472 questions; gutenqa_emma: the whole book, 30 "
             "questions; longbench: the 9 LongBench-sample questions whose answer occurs once in its document (the "
             "answer is the evidence). Mean over the θ values each variant was run at (θ listed). "
             "**Δ** columns: the variant minus MG at the same θ, in DCG@10 points (×100) and evidence-recall points; "
             "*w/t/l*: questions where the variant's DCG@10 beats / ties / trails MG's, summed over θ.", ""]
    for s in SETS:
        rows = []
        for v in variants:
            ts = [t for t in thetas if f"{s}|{v}|{t}" in res["runs"]]
            if not ts:
                continue
            r0 = res["runs"][f"{s}|{v}|{ts[0]}"]
            dcg, ev = _mean(res, s, v, ts, "dcg@10"), _mean(res, s, v, ts, "evidence_recall@1500w")
            mg_dcg, mg_ev = _mean(res, s, "mg", ts, "dcg@10"), _mean(res, s, "mg", ts, "evidence_recall@1500w")
            p = _paired(res, s, v, "mg", ts)
            rows.append([v, ",".join(map(str, ts)), f"{_mean(res, s, v, ts, 'mean_parent_words'):.0f}",
                         f"{_mean(res, s, v, ts, 'dcg@1'):.3f}", f"{_mean(res, s, v, ts, 'dcg@5'):.3f}",
                         f"{dcg:.3f}", f"{_mean(res, s, v, ts, 'recall@10'):.3f}", f"{ev:.3f}",
                         f"{100 * (dcg - mg_dcg):+.1f}" if mg_dcg is not None and v != "mg" else "",
                         f"{100 * (ev - mg_ev):+.1f}" if mg_ev is not None and v != "mg" else "",
                         "/".join(map(str, p)) if p and v != "mg" else "", r0["n_questions"]])
        if rows:
            lines += [f"**{s}**", "", markdown_table(
                ["variant", "θ", "parent words", "DCG@1", "DCG@5", "DCG@10", "Recall@10", "ev. recall @1500w",
                 "Δ DCG@10 vs MG", "Δ ev. recall vs MG", "w/t/l vs MG", "questions"], rows), ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--variants", default="mg,recursive,lgmgc", help="comma-separated (see the module doc)")
    ap.add_argument("--theta", default="300")
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--threads", type=int, default=1, help="torch threads for the LM (default 1)")
    ap.add_argument("--no-lm", action="store_true", help="use cached probabilities only; skip what needs the LM")
    ap.add_argument("--probs-only", action="store_true", help="compute (cache) the LM probabilities, do not score")
    ap.add_argument("--render", action="store_true", help="rewrite the BENCHMARKS.md section from the JSON")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("httpx", "sentence_transformers", "transformers"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    if args.render:
        md = render(load_results())
        print(md)
        write_section("lg-variants", md)
        return 0
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    torch.set_num_threads(args.threads)
    from app.evaluation.probcache import DiskCachedEmbedder, VectorCache
    from core.settings import Settings
    from ingest.embed import load_embedder

    settings = Settings()
    cache_dir = Path(settings.cache_dir).expanduser()
    scorers = Scorers(cache_dir, args.no_lm, args.threads)
    emb = None
    if not args.probs_only:
        inner = load_embedder(settings.embedder)
        emb = DiskCachedEmbedder(inner, VectorCache(cache_dir / "bench" / f"vectors-{settings.embedder}.sqlite"))
    thetas = [int(t) for t in args.theta.split(",")]
    for s in args.sets.split(","):
        bench = bench_set(s)
        for v in args.variants.split(","):
            spec = parse_variant(v)
            for theta in thetas:
                key = f"{s}|{v}|{theta}"
                try:
                    chunks, facts = chunk(bench, spec, theta, scorers)
                except LookupError as e:
                    log.info("%s: skipped (%s)", key, e)
                    continue
                if args.probs_only:
                    log.info("%s: probabilities ready (%s)", key, facts)
                    continue
                t = time.perf_counter()
                r = evaluate(bench, chunks, emb)
                r.update(facts, eval_seconds=time.perf_counter() - t, spec=spec, theta=theta)
                res = load_results()  # another process may have added runs meanwhile
                res["runs"][key] = r
                save_results(res)
                log.info("%s: dcg@10 %.3f ev.recall %.3f parent words %.0f (%s)", key, r["dcg@10"],
                         r["evidence_recall@1500w"], r["mean_parent_words"],
                         {k: round(x, 1) if isinstance(x, float) else x for k, x in facts.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
