"""Scanned PDFs with the shipped defaults: the extraction child's peak memory and time on image-only PDFs.

Four pages of a real filing are rendered to grey images at 150 and 300 dpi and saved as an image-only PDF (what a
scanner makes); each is read by the product's own extraction (``ingest.readers.loaders.load_bytes``, RapidOCR, the
default ``extract_memory_mb`` and half of it), in a fresh process per run, and the run's extraction
children's peak resident memory is read from ``getrusage(RUSAGE_CHILDREN)``. Words read are compared with the
pages' own text layer (``bench/ocr_bench.py``'s recall: words found in any order).

    python bench/ocr_memory.py --pdf "DOCS/2023 Q2 AAPL.pdf" --pages 4-7 --out bench/results/ocr_memory.json
"""
from __future__ import annotations

import argparse
import dataclasses
import io
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import common as B  # noqa: F401  (project root on sys.path, offline flags)
from ocr_bench import parse_pages, recall, words


def scan_pdf(pdf: str, pages: list[int], dpi: int) -> tuple[bytes, list[str]]:
    """An image-only PDF of ``pages`` rendered at ``dpi`` (grey), and the pages' own words (the reference)."""
    import pdfplumber
    import pypdfium2 as pdfium

    data = Path(pdf).read_bytes()
    doc = pdfium.PdfDocument(data)
    imgs = [doc[p - 1].render(scale=dpi / 72).to_pil().convert("L") for p in pages]
    with pdfplumber.open(io.BytesIO(data)) as pl:
        ref = [w for p in pages for w in words(pl.pages[p - 1].extract_text() or "")]
    buf = io.BytesIO()
    imgs[0].save(buf, "PDF", resolution=dpi, save_all=True, append_images=imgs[1:])
    return buf.getvalue(), ref


def one(pdf: str, pages: list[int], dpi: int, memory_mb: int | None) -> dict:
    """In a fresh process: the scan through the product's extraction; its children's peak resident memory."""
    from core.settings import Settings
    from ingest.readers.loaders import IngestError, Limits, load_bytes

    data, ref = scan_pdf(pdf, pages, dpi)
    limits = Limits.of(Settings())
    if memory_mb:
        limits = dataclasses.replace(limits, memory_mb=memory_mb)
    row = {"scan_dpi": dpi, "pages": len(pages), "bytes": len(data), "memory_cap_mb": limits.memory_mb}
    t = time.perf_counter()
    try:
        doc = load_bytes("scan.pdf", data, limits=limits)
        row.update(read=True, ocr_pages=doc.layout.get("ocr_pages"),
                   word_recall_any_order=round(recall(ref, words(doc.text)), 4))
    except IngestError as e:
        row.update(read=False, problem=e.problem[:300])
    row.update(seconds=round(time.perf_counter() - t, 1),
               child_peak_rss_mb=round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024))
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pdf", required=True)
    ap.add_argument("--pages", default="4-7")
    ap.add_argument("--out", default="bench/results/ocr_memory.json")
    ap.add_argument("--one", nargs=2, type=int, metavar=("DPI", "MEMORY_MB"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    pages = parse_pages(a.pages)
    if a.one:
        print(json.dumps(one(a.pdf, pages, a.one[0], a.one[1] or None)))
        return
    from core.settings import Settings

    default = Settings().extract_memory_mb
    rows = []
    for dpi in (150, 300):
        for mb in (0, default // 2):
            cmd = [sys.executable, __file__, "--pdf", a.pdf, "--pages", a.pages, "--one", str(dpi), str(mb)]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
            print(out, flush=True)
            rows.append(json.loads(out))
    res = {"benchmark": "ocr_memory", "pdf": Path(a.pdf).name, "pages": a.pages, "rows": rows,
           "machine": B.machine_info(),
           "command": f'python bench/ocr_memory.py --pdf "{a.pdf}" --pages {a.pages} --out {a.out}'}
    Path(a.out).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
