"""CPU time of the recursive and MG chunkers against document length: MG's children must cost linear time.

    .venv/bin/python bench/archive/chunker_scaling.py   # prints the table; the JSON: bench/archive/results/

Archived (bench/archive/README.md): issue 14's check, backing no section of BENCHMARKS.md.

Synthetic documents of 100k to 800k words in paragraphs of 2,000 words (a 500-word vocabulary, a sentence end
every ~16 words), once with one line per paragraph and once hard-wrapped at 72 characters (Project Gutenberg
style, where single newlines are wrapping). θ = 300. CPU seconds of this process (``ru_utime + ru_stime``), the
sentence caches cleared before each chunker, so each pays its own segmentation. Before issue 14's fix, MG looked
up a parent's sentences by scanning every sentence of the document, and tested hard wrapping (re-splitting the
first 200,000 characters) on every paragraph split: 0.54 vs 0.13 s at 100k words, 3.78 vs 0.59 at 400k, 12.3 vs
1.30 at 800k (MG vs recursive).
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from bench.common import cpu_seconds, machine_info, markdown_table  # noqa: E402

OUT = ROOT / "bench" / "archive" / "results" / "chunker_scaling.json"


def document(n_words: int, para: int = 2000, seed: int = 0, wrap: bool = False) -> str:
    rnd = random.Random(seed)
    vocab = [f"w{i}" for i in range(500)]
    paras, left = [], n_words
    while left > 0:
        k = min(para, left)
        left -= k
        words = [rnd.choice(vocab) + ("." if rnd.random() < 0.06 else "") for _ in range(k)]
        p = " ".join(words)
        p = p[0].upper() + p[1:] + "."
        paras.append(textwrap.fill(p, 72) if wrap else p)
    return "\n\n".join(paras)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--words", default="100000,400000,800000")
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args(argv)
    from ingest.chunkers.multigranular import MultiGranularChunker
    from ingest.chunkers.recursive import RecursiveChunker
    from ingest.text import sentences

    rows, raw = [], []
    for wrap in (False, True):
        for n in (int(x) for x in args.words.split(",")):
            text = document(n, wrap=wrap)
            secs = {}
            for name, ch in (("recursive", RecursiveChunker(300)), ("mg", MultiGranularChunker(300))):
                sentences.clear_caches()
                c0 = cpu_seconds()
                ch.chunk(text)
                secs[name] = cpu_seconds() - c0
            raw.append({"words": n, "hard_wrapped": wrap, **secs})
            rows.append([f"{n:,}", "hard-wrapped" if wrap else "one line per paragraph", f"{secs['recursive']:.2f}",
                         f"{secs['mg']:.2f}", f"{secs['mg'] / secs['recursive']:.1f}"])
            print(rows[-1], flush=True)
    if not args.no_write:
        OUT.write_text(json.dumps({"machine": machine_info(), "runs": raw}, indent=2) + "\n", encoding="utf-8")
    md = "\n".join([
        "Synthetic documents, paragraphs of 2,000 words, θ = 300, CPU seconds of the process (sentence caches "
        "cleared before each chunker). MG (recursive parents, θ/2 and θ/4 children) should cost a constant multiple "
        "of recursive at every length; before the fix it grew super-linearly (0.54 vs 0.13 s at 100k words, 3.78 vs "
        "0.59 at 400k, 12.3 vs 1.30 at 800k).", "",
        markdown_table(["words", "layout", "recursive CPU s", "MG CPU s", "MG / recursive"], rows)])
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
