"""The embedder's batch size and CPU threads, measured (issue 37: "chosen by measurement on 2 cores, and what 4, 8
cores give"): MiniLM (all-MiniLM-L6-v2 through sentence-transformers, as ``ingest/embed.py`` loads it) embeds the
same passages — the repository's own Markdown cut into 75-, 150- and 300-word pieces, the three MG levels at the
default θ — at each thread count, batch size and precision (``--precision fp32,bf16``: bf16 runs the model's matrix
products in bfloat16 under torch autocast, as the product's ``embed_precision`` does); passages and words per
second, best of ``--repeat`` runs. On a machine with CUDA, ``--device cuda`` measures the GPU too.

    python bench/embed_threads.py --threads 1,2 --batch 16,32,64 --out bench/results/embed_threads.json
    python bench/embed_threads.py --threads 1,2 --batch 16,64 --precision fp32,bf16 \
        --out bench/results/embed_threads_bf16.json
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def passages(limit: int) -> list[str]:
    words = []
    for p in sorted(ROOT.glob("*.md")) + sorted((ROOT / "docs").glob("*.md")) + sorted((ROOT / "samples").glob("*.md")):
        words += p.read_text(encoding="utf-8").split()
    out, i = [], 0
    for size in (75, 150, 300) * 1000:
        if len(out) >= limit:
            break
        out.append(" ".join(words[i:i + size]))
        i = (i + size) % max(1, len(words) - 300)
    return out


def _native_bf16() -> bool:
    from ingest.embed import native_bf16

    return native_bf16()


def _best(model, texts: list[str], batch: int, precision: str, device: str, repeat: int) -> float:
    """The fastest of ``repeat`` runs over ``texts``, seconds (after one warm batch)."""
    import torch

    ctx = (torch.autocast(device.split(":")[0], dtype=torch.bfloat16) if precision == "bf16"
           else contextlib.nullcontext())
    best = float("inf")
    with ctx:
        model.encode(texts[:batch], batch_size=batch)  # warm
        for _ in range(repeat):
            t0 = time.perf_counter()
            model.encode(texts, batch_size=batch)
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=None, help="a sentence-transformers folder (default: the shipped MiniLM)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--batch", default="16,32,64")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--precision", default="fp32", help="comma-separated: fp32, bf16")
    ap.add_argument("--n", type=int, default=240, help="passages per run")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--out", default="bench/results/embed_threads.json")
    args = ap.parse_args(argv)
    import torch
    from sentence_transformers import SentenceTransformer

    path = args.model
    if path is None:
        from core.models import resolve_embedder_path

        path = resolve_embedder_path("sentence-transformers/all-MiniLM-L6-v2")
    model = SentenceTransformer(str(path), device=args.device, local_files_only=True).float()
    texts = passages(args.n)
    n_words = sum(len(t.split()) for t in texts)
    rows = []
    threads = [int(x) for x in args.threads.split(",")] if args.device == "cpu" else [torch.get_num_threads()]
    for n_threads in threads:
        torch.set_num_threads(n_threads)
        for batch in (int(x) for x in args.batch.split(",")):
            for precision in args.precision.split(","):
                best = _best(model, texts, batch, precision, args.device, args.repeat)
                row = {"device": args.device, "threads": n_threads, "batch": batch, "seconds": round(best, 3),
                       "passages_s": round(len(texts) / best, 1), "words_s": round(n_words / best)}
                if args.precision != "fp32":
                    row["precision"] = precision
                rows.append(row)
                print(json.dumps(row), flush=True)
    out = {"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
           "load_before": os.getloadavg()[0], "passages": len(texts), "words": n_words,
           "torch": torch.__version__, "native_bf16": _native_bf16(),
           "gpu": torch.cuda.get_device_name() if args.device == "cuda" else None,
           "rows": rows}
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
