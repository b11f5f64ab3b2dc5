"""Which boundary signal should the LG chunker read? EOS, "\\n\\n", or both — compared by retrieval.

On a subset of Chroma's chunking evaluation (chatlogs, state_of_the_union, wikitexts: 3 of its 5 documents,
about 37k words and 276 questions; finance and pubmed, 190k more words, are left out to keep the run
under half an hour on 2 CPU cores), at θ = 300, it chunks every document with:

* LGMGC, exact mode, boundary tokens ``["<eos>"]``, ``["\\n\\n"]`` and ``["<eos>", "\\n\\n"]`` (summed probability);
* LGMGC, streaming mode, ``["\\n\\n"]`` (and, as an extra, ``["<eos>"]``);
* the baselines recursive (parents only) and MG (recursive parents + θ/2, θ/4 children), same θ;

and evaluates multi-granular retrieval with :func:`bench.common.evaluate_retrieval` (MiniLM, top 20 per
level, per-document search, DCG@k / Recall@k / evidence recall within 1500 words). Prints a markdown table
and writes ``bench/results/boundary_signal.json``.

    .venv/bin/python bench/boundary_signal.py
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
from ingest.chunkers.logits import LGConfig  # noqa: E402
from ingest.text.lm import LogitsScorer  # noqa: E402
from ingest.text.sentences import sentences_cached  # noqa: E402

DOCS = ("chatlogs", "state_of_the_union", "wikitexts")
# (label, chunker, boundary tokens, lg mode)
CONFIGS = (
    ("recursive", "recursive", None, None),
    ("mg", "mg", None, None),
    ("lgmgc exact <eos>", "lgmgc", ("<eos>",), "exact"),
    ("lgmgc exact \\n\\n", "lgmgc", ("\n\n",), "exact"),
    ("lgmgc exact <eos>+\\n\\n", "lgmgc", ("<eos>", "\n\n"), "exact"),
    ("lgmgc streaming \\n\\n", "lgmgc", ("\n\n",), "streaming"),
    ("lgmgc streaming <eos>", "lgmgc", ("<eos>",), "streaming"),  # extra: the winning signal, streamed
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docs", nargs="+", default=list(DOCS), help="chroma doc ids (default: the 3 smaller docs)")
    ap.add_argument("--theta", type=int, default=300)
    ap.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    ap.add_argument("--only", nargs="*", help="run only the configs whose label contains one of these strings")
    ap.add_argument("--out", default="boundary_signal.json")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)

    import torch

    torch.set_num_threads(args.threads)
    bench = common.load_set("chroma", args.docs)
    settings = Settings(torch_threads=args.threads)
    ctx = AppContext(settings)
    base = ctx.scorer  # loads Gemma once; every config below reuses its tokenizer and model
    embedder = ctx.embedder
    print(f"chroma subset {args.docs}: {bench.words} words, {len(bench.questions)} questions; θ={args.theta}",
          flush=True)

    # Warm-ups kept out of the timings: sentence segmentation (memoised per text) and the first forward pass.
    for text in bench.docs.values():
        sentences_cached(text, args.theta)
        sentences_cached(text, None)
    base._forward([base.prompt_ids + [base.pad_id] * 32], [[0]])
    embedder.embed_passages(["warm up"])
    doc_tokens = {}
    for doc_id, text in bench.docs.items():
        doc_tokens[doc_id] = base.tokenize(text, list(sentences_cached(text, args.theta))).n_tokens

    monitor = common.LoadMonitor()
    results = []
    payload = {
        "benchmark": "boundary_signal",
        "set": "chroma",
        "docs": args.docs,
        "words": bench.words,
        "doc_tokens": sum(doc_tokens.values()),
        "n_questions": len(bench.questions),
        "theta": args.theta,
        "embedder": settings.embedder,
        "lm": settings.lm_model,
        "prompt": settings.lg_prompt,
        "machine": common.machine_info(),
        "configs": results,
    }
    for label, name, tokens, mode in CONFIGS:
        if args.only and not any(s in label for s in args.only):
            continue
        scorer = None
        if tokens is not None:
            scorer = LogitsScorer(base.tokenizer, base.model, prompt=settings.lg_prompt, boundary_tokens=tokens,
                                  batch_size=settings.lg_batch_size, block_tokens=settings.lg_block_tokens,
                                  context_tokens=settings.lg_context_tokens)
        chunker = build_chunker(name, args.theta, scorer=scorer,
                                lg_config=LGConfig(theta=args.theta, mode=mode) if mode else None)
        m0, c0 = monitor.mark(), common.cpu_seconds()
        t0 = time.perf_counter()
        chunks = {doc_id: chunker.chunk(text) for doc_id, text in bench.docs.items()}
        chunk_seconds = time.perf_counter() - t0
        chunk_cpu = common.cpu_seconds() - c0
        chunk_load = monitor.summary(m0)
        ev = common.evaluate_retrieval(bench, chunks, embedder)
        row = {"label": label, "chunker": name, "boundary_tokens": list(tokens) if tokens else None,
               "mode": mode, "chunk_seconds": chunk_seconds,
               "chunk_cpu_seconds": chunk_cpu, "chunk_load": chunk_load, **ev}
        if scorer is not None:
            row["lm_tokens_processed"] = scorer.tokens_processed
            row["lm_forward_passes"] = scorer.forward_passes
            row["lm_tokens_per_doc_token"] = scorer.tokens_processed / payload["doc_tokens"]
        row["peak_rss_mb"] = common.peak_rss_mb()
        results.append(row)
        common.write_json(args.out, payload)
        print(f"{label}: chunk {chunk_seconds:.1f}s, embed {ev['embed_seconds']:.1f}s, dcg@5 {ev['dcg@5']:.3f}, "
              f"recall@5 {ev['recall@5']:.3f}, mean parent words {ev['mean_parent_words']:.1f}", flush=True)

    payload["load"] = monitor.summary()
    monitor.stop()
    print()
    print(table(results))
    path = common.write_json(args.out, payload)
    print(f"\nwrote {path}")
    return 0


def table(results: list[dict]) -> str:
    headers = ["config", "DCG@1", "DCG@5", "DCG@10", "Recall@1", "Recall@5", "Recall@10", "ev. recall @1500w",
               "mean parent words", "LM tok / doc tok", "chunk s"]
    rows = [[r["label"], r["dcg@1"], r["dcg@5"], r["dcg@10"], r["recall@1"], r["recall@5"], r["recall@10"],
             r["evidence_recall@1500w"], f"{r['mean_parent_words']:.1f}",
             f"{r['lm_tokens_per_doc_token']:.2f}" if "lm_tokens_per_doc_token" in r else "–",
             f"{r['chunk_seconds']:.2f}"]
            for r in results]
    return common.markdown_table(headers, rows)


if __name__ == "__main__":
    sys.exit(main())
