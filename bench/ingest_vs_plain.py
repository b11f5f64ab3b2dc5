"""The product's ingest against a plain pipeline, on the same PDFs (issue 37: "the product's ingest CPU ≤ 1.5× the
plain pipeline's, with tables and three levels kept").

* **product**: a fresh data dir, the shipped defaults (MG θ = 300 with θ/2 and θ/4 children, contextual text,
  MiniLM with the batch the machine does best with — 16 on up to 4 threads —, each θ/4 child pooled from its θ/2
  child's pass, BM25, Qdrant Edge), every PDF through
  the queue (:func:`ingest.jobs.queue.ingest_now`: read in the sandboxed extraction child, chunked, embedded,
  written); ``product-alone`` the same with every chunk embedded alone (``late_quarters=false``, the default
  before); ``product-batch64`` the same with the embedder's batch at 64 (the default before); and at batch 64,
  ``product-pdfplumber`` with every page read by pdfplumber (``pdf_reader=pdfplumber``, the reader before issue
  37's pdfium pages) and ``product-one-pass`` with ``first_pass=false`` (each file read whole, then searchable:
  no page ranges); ``product-fp32`` the defaults with the embedder in fp32 (``embed_precision=fp32``: the default
  ``auto`` computes in bf16 on a CPU with native bf16, this machine's ``precision`` in each row says which). Per file,
  seconds from the start until it was searchable (its first range, for a PDF over 40 pages) and until it was ready;
  the queue runs every file's first pass before the rest of the long ones;
* **plain**: pypdf's text per page, LangChain's ``RecursiveCharacterTextSplitter`` at 1,500 characters (no
  overlap), the same MiniLM through the same embedder class in fp32 as sentence-transformers runs it (the same
  batch: ``plain-batch64`` at 64; ``plain-bf16`` in bf16, to show what the plain pipeline would gain too), vectors
  kept in memory — what a minimal RAG pipeline does, with no tables, levels, context, keywords or store. Every
  ``cpu_vs_plain`` is against the fp32 plain pipeline, the one issue 37 measured.

Each variant runs in its own process with the embedder loaded and warmed first (a server loads it once); measured:
CPU-seconds of the process and its children (the extraction children included), wall seconds, chunks embedded,
the words they hold, peak RSS. Load average before and after says how quiet the machine was.

    python bench/ingest_vs_plain.py --pdf A.pdf --pdf B.pdf --out bench/results/ingest_vs_plain.json
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common as B  # noqa: F401 (sys.path, offline flags)

VARIANTS = ("plain", "plain-batch64", "plain-bf16", "product", "product-alone", "product-fp32", "product-batch64",
            "product-pdfplumber", "product-one-pass")


def _cpu() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def run_plain(paths: list[Path], batch: int = 0, precision: str = "fp32") -> dict:
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from pypdf import PdfReader

    from ingest.embed import load_embedder

    emb = load_embedder("all-MiniLM-L6-v2", batch_size=batch, precision=precision)
    emb.embed_passages(["warm up"])
    t0, w0 = _cpu(), time.perf_counter()
    split = RecursiveCharacterTextSplitter(chunk_size=1500, chunk_overlap=0)
    chunks: list[str] = []
    for p in paths:
        pages = [pg.extract_text() or "" for pg in PdfReader(str(p)).pages]
        chunks += split.split_text("\n\n".join(pages))
    vecs = emb.embed_passages(chunks)
    return {"cpu_s": _cpu() - t0, "wall_s": time.perf_counter() - w0, "chunks": len(chunks),
            "embedded_words": sum(len(c.split()) for c in chunks), "dims": int(vecs.shape[1])}


def run_product(paths: list[Path], reader: str = "auto", batch: int = 0, first_pass: bool = True,
                precision: str = "auto", late_quarters: bool = True) -> dict:
    from app.context import AppContext
    from core.settings import Settings
    from ingest.jobs.queue import ingest_now

    with tempfile.TemporaryDirectory() as d:
        ctx = AppContext(Settings(data_dir=Path(d), pdf_reader=reader, embed_batch_size=batch, first_pass=first_pass,
                                  embed_precision=precision, late_quarters=late_quarters))
        ctx.embedder.embed_passages(["warm up"])
        _ = ctx.index
        t0, w0 = _cpu(), time.perf_counter()
        report = ingest_now(ctx, [(p.name, p.read_bytes()) for p in paths])
        cpu, wall = _cpu() - t0, time.perf_counter() - w0
        failed = [r.name for r in report.results if r.status == "failed"]
        totals = report.totals()
        start = time.time() - wall
        files = {j.name: {"searchable_s": round(j.searchable_at - start, 1) if j.searchable_at else None,
                          "ready_s": round(j.ready_at - start, 1) if j.ready_at else None, "pages": j.pages}
                 for j in ctx.jobs.jobs()}
        ctx.close()
    return {"cpu_s": cpu, "wall_s": wall, "chunks": int(sum(totals)), "chunks_per_level": list(totals),
            "failed": failed, "files": files}


def child(variant: str, paths: list[Path]) -> dict:
    if variant.startswith("plain"):
        out = run_plain(paths, 64 if variant.endswith("batch64") else 0, "bf16" if variant.endswith("bf16") else "fp32")
    else:
        out = run_product(paths, "pdfplumber" if variant.endswith("pdfplumber") else "auto",
                          0 if variant in ("product", "product-fp32", "product-alone") else 64,
                          not variant.endswith("one-pass"), "fp32" if variant.endswith("fp32") else "auto",
                          not variant.endswith("alone"))
    out["precision"] = _precision(variant)
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return {**{k: round(v, 2) if isinstance(v, float) else v for k, v in out.items()},
            "peak_rss_mb": round(max(s.ru_maxrss, c.ru_maxrss) / 1024)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pdf", action="append", default=[], help="a PDF (repeat)")
    ap.add_argument("--merge", action="append", default=[], help="NAME=a.pdf,b.pdf: those PDFs joined into one")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--out", default="bench/results/ingest_vs_plain.json")
    args = ap.parse_args(argv)
    paths = [Path(p).resolve() for p in args.pdf]
    for spec in args.merge:  # written once beside the results, then passed as a plain path to the children
        from pdf_pages import merged

        name, _, parts = spec.partition("=")
        out_pdf = Path(tempfile.gettempdir()) / f"{name}.pdf"
        out_pdf.write_bytes(merged([Path(x) for x in parts.split(",")]))
        paths.append(out_pdf)
    if args.child:
        print("RESULT " + json.dumps(child(args.child, paths)), flush=True)
        return 0
    load_before = os.getloadavg()[0]
    rows = {}
    for v in args.variants.split(","):
        cmd = [sys.executable, __file__, "--child", v] + [a for p in paths for a in ("--pdf", str(p))]
        p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "TOKENIZERS_PARALLELISM": "false"})
        got = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
        if p.returncode or not got:
            raise SystemExit(f"{v} failed:\n{p.stderr[-3000:]}")
        rows[v] = json.loads(got[-1][7:])
        print(v, rows[v], flush=True)
    for v, r in rows.items():  # against the plain pipeline at the same batch
        base = rows.get("plain-batch64" if v.endswith("64") or v in ("product-pdfplumber", "product-one-pass")
                        else "plain", {}).get("cpu_s")  # the plain pipeline as the issue measured it: fp32
        if base and not v.startswith("plain"):
            r["cpu_vs_plain"] = round(r["cpu_s"] / base, 2)
    out = {"cpu": os.cpu_count(), "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2),
           "pdfs": [p.name for p in paths], "pages": _pages(paths), "rows": rows}
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


def _precision(variant: str) -> str:
    """What the variant's embedder computes in on this machine (``auto``: bf16 where the CPU computes it natively)."""
    from ingest.embed import resolve_precision

    if variant.startswith("plain"):
        return "bf16" if variant.endswith("bf16") else "fp32"
    return "fp32" if variant.endswith("fp32") else resolve_precision("auto", "cpu")


def _pages(paths: list[Path]) -> int:
    from pypdf import PdfReader

    return sum(len(PdfReader(str(p)).pages) for p in paths)


if __name__ == "__main__":
    raise SystemExit(main())
