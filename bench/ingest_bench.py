"""Ingestion cost of a whole book: LGMGC exact vs streaming against one plain LM pass, then embedding.

On GutenQA's *Emma* (``../shared/bench/gutenqa_emma/docs/emma.txt``, 157k words), in one process and one run,
with the boundary signal ``<eos>`` (the one that retrieved best in ``bench/boundary_signal.py``; change it with
``--boundary-tokens``):

a. **Plain pass**: one forward pass of the chunker LM over the document's tokens
   (``scorer.plain_pass(scorer.tokenize(text, split_sentences(text, θ)))``): the reference cost.
b. **LGMGC exact** (the paper: one forward pass per window), θ = 300: wall time; LM tokens processed per
   document token; wall-time ratio to (a); the floor θ / mean parent words (each window reads ~θ words and
   advances by one parent) and how far exact is from it.
c. **LGMGC streaming** (one pass with running context): the same figures.
d. **Embedding** all chunks (all levels) of (b), the whole ingestion's words per second (chunk + embed),
   and the peak resident memory of the process (``ru_maxrss``, model loading included).

Chunking times include sentence segmentation (cache cleared before each) and tokenisation, so they are
what ``mgrag ingest`` pays; the plain pass (a) is the forward pass alone. (a), (b) and (c) are measured side by
side: the document is cut into ``--segments`` pieces at paragraph breaks, and each piece runs the three in turn
(the order rotated from piece to piece), so a change of load on the shared machine hits all three alike; the
ratios are sums over the pieces. Retrieval of (b) and (c) is then evaluated on the GutenQA questions with
:func:`bench.common.evaluate_retrieval`. Prints a table and writes ``bench/results/ingest_emma.json``. torch
uses ``--threads`` (default 1).

    .venv/bin/python bench/ingest_bench.py                     # the whole book
    .venv/bin/python bench/ingest_bench.py --excerpt 0.25      # the first quarter (a quicker ratio)
"""
from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402  (puts the project root on sys.path)

from app.context import AppContext  # noqa: E402
from core.settings import Settings  # noqa: E402
from ingest.chunkers import build_chunker  # noqa: E402
from ingest.chunkers.logits import SENTENCE_CAP, LGConfig  # noqa: E402
from ingest.text import sentences as sentences_mod  # noqa: E402
from ingest.text.sentences import count_words, split_sentences  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", default="gutenqa_emma")
    ap.add_argument("--doc", default="emma")
    ap.add_argument("--theta", type=int, default=300)
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (1: the figure least disturbed by "
                    "other work on a shared machine)")
    ap.add_argument("--excerpt", type=float, default=1.0, help="only the first fraction of the document (and the "
                    "questions whose evidence lies in it)")
    ap.add_argument("--segments", type=int, default=8, help="interleave the three runs over this many segments")
    ap.add_argument("--batch-probe", action="store_true", help="also time exact windows batched across documents")
    ap.add_argument("--boundary-tokens", nargs="+", default=["<eos>"],
                    help="LG boundary tokens (default <eos>, the signal that retrieved best in boundary_signal.py)")
    ap.add_argument("--out", default="ingest_emma.json")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING)

    import torch

    torch.set_num_threads(args.threads)
    t_start = time.perf_counter()
    monitor = common.LoadMonitor()
    bench = common.load_set(args.set, [args.doc])
    if args.excerpt < 1:
        bench = common.excerpt(bench, args.excerpt)
    text = bench.docs[args.doc]
    words = count_words(text)
    settings = Settings(torch_threads=args.threads, lg_boundary_tokens=args.boundary_tokens)
    ctx = AppContext(settings)
    t0 = time.perf_counter()
    scorer = ctx.scorer
    embedder = ctx.embedder
    load_seconds = time.perf_counter() - t0
    rss_loaded = common.peak_rss_mb()
    scorer._forward([scorer.prompt_ids + [scorer.pad_id] * 32], [[0]])  # warm-up, not timed
    embedder.embed_passages(["warm up"])

    res: dict = {
        "benchmark": "ingest", "set": args.set, "doc": args.doc, "words": words, "chars": len(text),
        "theta": args.theta, "lm": settings.lm_model, "boundary_tokens": list(settings.lg_boundary_tokens),
        "prompt": settings.lg_prompt, "block_tokens": settings.lg_block_tokens,
        "context_tokens": settings.lg_context_tokens, "batch_size": settings.lg_batch_size,
        "embedder": settings.embedder, "machine": common.machine_info(),
        "model_load_seconds": load_seconds, "peak_rss_mb_after_load": rss_loaded, "excerpt": args.excerpt,
        "questions": len(bench.questions),
    }
    print(f"{args.doc}: {words} words; models loaded in {load_seconds:.1f}s; rss {rss_loaded:.0f} MiB", flush=True)

    chunks = chunking_runs(res, text, scorer, args, monitor)
    # (e) exact windows batched across documents: the same windows, one at a time vs in batches (padded)
    if args.batch_probe:
        res["batching"] = batch_probe(scorer, text)
        common.write_json(args.out, res)
        print("(e) windows batched: " + ", ".join(f"{k} {v:.1f}s" for k, v in res["batching"]["seconds"].items()),
              flush=True)
    embed_and_retrieve(res, bench, chunks, embedder, words, monitor, args)

    res["peak_rss_mb"] = common.peak_rss_mb()
    res["total_seconds"] = time.perf_counter() - t_start
    res["load"] = monitor.summary()
    monitor.stop()
    path = common.write_json(args.out, res)
    print()
    print(tables(res))
    print(f"\nwrote {path}")
    return 0


def interleaved(segments: list[tuple[int, str]], scorer, chunkers: dict, theta: int) -> tuple[dict, int, int]:
    """(a) plain pass, (b) LGMGC exact, (c) LGMGC streaming: interleaved over segments of the document, each
    segment running the three in a rotated order, so that a change in the machine's load hits all three alike
    (the machine is shared; a ratio of two runs made at different times would measure the load, not the code).
    Returns the per-mode sums, the document's tokens and its sentences."""
    from ingest.types import Chunk

    acc = {m: {"seconds": 0.0, "cpu": 0.0, "tokens": 0, "passes": 0, "chunks": []} for m in MODES}
    n_tok = n_sents = 0
    for i, (off, seg) in enumerate(segments):
        for mode in MODES[i % 3:] + MODES[:i % 3]:
            sentences_mod.clear_caches()  # each mode pays its own segmentation, as a fresh ingest would
            tp0, fp0 = scorer.tokens_processed, scorer.forward_passes
            if mode == "plain":
                doc = scorer.tokenize(seg, split_sentences(seg, min(theta, SENTENCE_CAP)))
                n_tok += doc.n_tokens
                n_sents += len(doc.segments)
                c0, t0 = common.cpu_seconds(), time.perf_counter()
                scorer.plain_pass(doc)
            else:
                c0, t0 = common.cpu_seconds(), time.perf_counter()
                out = chunkers[mode].chunk(seg)
                acc[mode]["chunks"] += [Chunk(c.text, c.start + off, c.end + off, c.level, c.parent_start + off
                                              if c.parent_start is not None else None,
                                              c.parent_end + off if c.parent_end is not None else None) for c in out]
            acc[mode]["seconds"] += time.perf_counter() - t0
            acc[mode]["cpu"] += common.cpu_seconds() - c0
            acc[mode]["tokens"] += scorer.tokens_processed - tp0
            acc[mode]["passes"] += scorer.forward_passes - fp0
        print(f"segment {i + 1}/{len(segments)}: " + ", ".join(f"{m} {acc[m]['seconds']:.0f}s" for m in MODES),
              flush=True)
    return acc, n_tok, n_sents


def chunking_runs(res: dict, text: str, scorer, args, monitor) -> dict:
    """(a), (b), (c) side by side (:func:`interleaved`), their figures into ``res``; the chunks of (b) and (c)."""
    chunkers = {m: build_chunker("lgmgc", args.theta, scorer=scorer, lg_config=LGConfig(theta=args.theta, mode=m))
                for m in ("exact", "streaming")}
    segments = split_segments(text, args.segments)
    m0 = monitor.mark()
    acc, n_tok, n_sents = interleaved(segments, scorer, chunkers, args.theta)
    p = acc["plain"]
    res["segments"] = len(segments)
    res["plain"] = {
        "sentences": n_sents, "doc_tokens": n_tok, "seconds": p["seconds"], "tokens_processed": p["tokens"],
        "tokens_per_second": n_tok / p["seconds"], "cpu_seconds": p["cpu"], "peak_rss_mb": common.peak_rss_mb(),
        **monitor.summary(m0),
    }
    print(f"(a) plain pass: {n_tok} tokens in {p['seconds']:.1f}s ({n_tok / p['seconds']:.0f} tok/s)", flush=True)
    chunks = {}
    for mode in ("exact", "streaming"):
        a = acc[mode]
        out = chunks[mode] = a["chunks"]
        parents = [c for c in out if c.level == 0]
        mean_parent = sum(count_words(c.text) for c in parents) / len(parents)
        per_doc_token = a["tokens"] / n_tok
        floor = args.theta / mean_parent
        wall_ratio = a["seconds"] / p["seconds"]
        res[mode] = {
            "seconds": a["seconds"], "tokens_processed": a["tokens"], "forward_passes": a["passes"],
            "lm_tokens_per_doc_token": per_doc_token, "wall_ratio_vs_plain": wall_ratio,
            "n_parents": len(parents), "n_chunks": len(out), "mean_parent_words": mean_parent,
            "floor_theta_over_mean_parent": floor,
            "tokens_vs_floor": per_doc_token / floor, "wall_vs_floor": wall_ratio / floor,
            "cpu_seconds": a["cpu"], "cpu_ratio_vs_plain": a["cpu"] / p["cpu"],
            "cpu_vs_floor": a["cpu"] / p["cpu"] / floor, "peak_rss_mb": common.peak_rss_mb(),
        }
        common.write_json(args.out, res)
        print(f"({'b' if mode == 'exact' else 'c'}) lgmgc {mode}: {a['seconds']:.1f}s, {per_doc_token:.3f} LM tok/doc "
              f"tok, {wall_ratio:.3f}x plain, {len(parents)} parents of {mean_parent:.1f} words, floor {floor:.3f}",
              flush=True)
    return chunks


def embed_and_retrieve(res: dict, bench, chunks: dict, embedder, words: int, monitor, args) -> None:
    """(d) embedding + retrieval of (b) and (c) (the evaluator embeds every chunk of every level once and times it)."""
    for mode in ("exact", "streaming"):
        m0 = monitor.mark()
        ev = common.evaluate_retrieval(bench, {args.doc: chunks[mode]}, embedder, keep_per_question=True)
        res[mode]["retrieval"] = ev
        res[mode]["embed_seconds"] = ev["embed_seconds"]
        res[mode]["embedded_words"] = ev["embedded_words"]
        total = res[mode]["seconds"] + ev["embed_seconds"]
        res[mode]["ingest_seconds"] = total
        res[mode]["ingest_words_per_second"] = words / total
        res[mode]["peak_rss_mb_after_embed"] = common.peak_rss_mb()
        res[mode]["embed_load"] = monitor.summary(m0)
        common.write_json(args.out, res)
        print(f"(d) {mode}: embedded {ev['n_chunks']} chunks ({ev['embedded_words']} words) in "
              f"{ev['embed_seconds']:.1f}s; ingest {total:.1f}s = {words / total:.0f} words/s; "
              f"dcg@5 {ev['dcg@5']:.3f} recall@5 {ev['recall@5']:.3f}", flush=True)


MODES = ["plain", "exact", "streaming"]


def batch_probe(scorer, text: str, n_windows: int = 16, repeats: int = 2) -> dict:
    """Exact-mode windows as a multi-file ingestion could batch them (one window from each of several documents per
    forward pass): 16 windows of ~360-400 tokens with a boundary read every 20 tokens, run one at a time and in
    batches of 4 and 8 (right-padded), interleaved, best of ``repeats``."""
    ids = scorer.tokenizer(text[: 200_000])["input_ids"]
    wins = [ids[i * 400:(i + 1) * 400 - (i * 37 % 40)] for i in range(n_windows)]
    pos = [list(range(10, len(w), 20)) for w in wins]
    best: dict[str, float] = {}
    for _ in range(repeats):
        for mode, b in (("one at a time", 1), ("batches of 4", 4), ("batches of 8", 8)):
            t = time.perf_counter()
            for s0 in range(0, len(wins), b):
                scorer._forward(wins[s0:s0 + b], pos[s0:s0 + b])
            best[mode] = min(best.get(mode, float("inf")), time.perf_counter() - t)
    return {"windows": len(wins), "tokens": sum(map(len, wins)), "seconds": best,
            "ratio_vs_one_at_a_time": {k: v / best["one at a time"] for k, v in best.items()}}


def split_segments(text: str, n: int) -> list[tuple[int, str]]:
    """``n`` consecutive pieces of ``text`` of about equal length, cut at paragraph breaks: ``(offset, piece)``."""
    cuts, start = [], 0
    for i in range(1, n):
        at = text.find("\n\n", max(start, len(text) * i // n))
        if at < 0:
            break
        cuts.append((start, text[start:at]))
        start = at
    cuts.append((start, text[start:]))
    return [(off, seg) for off, seg in cuts if seg.strip()]


def tables(res: dict) -> str:
    p = res["plain"]
    cost = common.markdown_table(
        ["run", "wall s", "LM tokens / doc token", "wall × plain pass", "CPU × plain pass", "floor θ/mean parent",
         "tokens vs floor", "wall vs floor", "parents (mean words)", "embed s", "chunk+embed s", "words/s"],
        [["plain pass", f"{p['seconds']:.1f}", f"{p['tokens_processed'] / p['doc_tokens']:.3f}", "1.000", "1.000", "",
          "", "", "", "", "", ""]]
        + [[f"LGMGC {m}", f"{r['seconds']:.1f}", f"{r['lm_tokens_per_doc_token']:.3f}",
            f"{r['wall_ratio_vs_plain']:.3f}", f"{r['cpu_ratio_vs_plain']:.3f}",
            f"{r['floor_theta_over_mean_parent']:.3f}",
            f"{100 * (r['tokens_vs_floor'] - 1):+.1f}%", f"{100 * (r['wall_vs_floor'] - 1):+.1f}%",
            f"{r['n_parents']} ({r['mean_parent_words']:.1f})", f"{r['embed_seconds']:.1f}",
            f"{r['ingest_seconds']:.1f}", f"{r['ingest_words_per_second']:.0f}"]
           for m in ("exact", "streaming") for r in [res[m]]],
    )
    retr = common.markdown_table(
        ["mode", "DCG@1", "DCG@5", "DCG@10", "DCG@20", "Recall@1", "Recall@5", "Recall@10", "Recall@20",
         "ev. recall @1500w"],
        [[m, r["dcg@1"], r["dcg@5"], r["dcg@10"], r["dcg@20"], r["recall@1"], r["recall@5"], r["recall@10"],
          r["recall@20"], r["evidence_recall@1500w"]] for m in ("exact", "streaming") for r in [res[m]["retrieval"]]],
    )
    return (f"{res['doc']}: {res['words']} words, {p['doc_tokens']} tokens; peak RSS {res['peak_rss_mb']:.0f} MiB; "
            f"1-min load mean {res['load']['load1_mean']:.2f} (max {res['load']['load1_max']:.2f})\n\n"
            f"{cost}\n\n{retr}" + (("\n\n" + common.markdown_table(
                ["exact windows (16, ~380 tokens)", "seconds", "× one at a time"],
                [[k, f"{v:.1f}", f"{res['batching']['ratio_vs_one_at_a_time'][k]:.2f}"]
                 for k, v in res["batching"]["seconds"].items()])) if "batching" in res else ""))


if __name__ == "__main__":
    sys.exit(main())
