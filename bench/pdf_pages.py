"""PDF pages: pdfium where there is a text layer, and pdfplumber's table finder on pdfium's lines (issue 37, "tables
only where there are tables"). Each PDF is read three times in one process, as the extraction child reads it
(:func:`ingest.readers.pdf.read_pages`, then :func:`ingest.readers.pdf.assemble`): every page by pdfplumber (the
reader before issue 37); ``pdfplumber-tables`` (pdfium for the pages whose ruling lines hold no table, pdfplumber for
the others: the default until the tables were read by pdfium too); and ``auto`` (pdfium on every page with a text
layer, its ruled tables found by pdfplumber's finder in pdfium's paths and their cells read from pdfium's characters,
:mod:`ingest.readers.pdfium_page`). Per PDF: pages, pages left to pdfplumber, CPU-seconds and pages per CPU-second of
each (a page without a text layer is read by OCR in all three), and what the reader changed in the document against
pdfplumber's: the word sequence's agreement (difflib ratio over whitespace words), the tables and headings found.

``--merge NAME=a.pdf,b.pdf,...`` measures those PDFs joined into one (a stand-in for a 10-K when none is at hand).
``--agree a.pdf ...``: for these PDFs only whether the page test (:func:`ingest.readers.pdfium_page.may_have_table`)
sends pdfplumber exactly the pages it finds a table on: pages missed (a table pdfium's lines would read as text) and
pages sent without need (only time lost).

    python bench/pdf_pages.py --pdf DOCS/"2023 Q1 AAPL.pdf" --merge "filing-191p=A.pdf,B.pdf,C.pdf" \\
        --out bench/results/pdf_pages.json
"""
from __future__ import annotations

import argparse
import difflib
import io
import json
import os
import time
from pathlib import Path

import common as B  # noqa: F401 (sys.path, offline flags)

from ingest.readers.pdf import assemble, read_pages


def merged(paths: list[Path]) -> bytes:
    from pypdf import PdfReader, PdfWriter

    w = PdfWriter()
    for p in paths:
        w.append(PdfReader(str(p)))
    buf = io.BytesIO()
    w.write(buf)
    return buf.getvalue()


def read(name: str, data: bytes, reader: str, counted: list) -> tuple[float, str, dict, int]:
    import ingest.readers.pdf as P

    real = P.read_page

    def spy(page, ocr_engine=None):
        counted.append(page.page_number)
        return real(page, ocr_engine)

    P.read_page = spy
    try:
        t0 = time.process_time()
        n, pages, outline = read_pages(name, data, 0, None, None, reader)  # pages without text: OCR either way
        text, layout = assemble(name, pages, outline)
        return time.process_time() - t0, text, layout, n
    finally:
        P.read_page = real


def measure(name: str, data: bytes) -> dict:
    """One PDF read three ways: every page by pdfplumber; ``pdfplumber-tables`` (pdfium where no ruled table is,
    the default before); ``auto`` (pdfium on every page with a text layer, its tables' cells too)."""
    plumbed: list = []
    plumbed_t: list = []
    t_old, old, lay_old, n = read(name, data, "pdfplumber", [])
    t_mid, mid, lay_mid, _ = read(name, data, "pdfplumber-tables", plumbed_t)
    t_new, new, lay_new, _ = read(name, data, "auto", plumbed)
    a, m, b = old.split(), mid.split(), new.split()
    tables = [sum(1 for blk in lay.get("blocks", []) if blk[2] == "table") for lay in (lay_old, lay_mid, lay_new)]
    heads = [[h[2] for h in lay["headings"]] for lay in (lay_old, lay_mid, lay_new)]
    return {"pdf": name, "pages": n, "pages_to_pdfplumber": len(plumbed), "pages_to_pdfplumber_tables": len(plumbed_t),
            "pdfplumber_cpu_s": round(t_old, 2), "pdfplumber_tables_cpu_s": round(t_mid, 2),
            "auto_cpu_s": round(t_new, 2), "speedup": round(t_old / max(t_new, 1e-9), 2),
            "speedup_over_pdfplumber_tables": round(t_mid / max(t_new, 1e-9), 2),
            "pages_per_cpu_s": {"pdfplumber": round(n / t_old, 1), "pdfplumber-tables": round(n / t_mid, 1),
                                "auto": round(n / t_new, 1)},
            "words": {"pdfplumber": len(a), "pdfplumber-tables": len(m), "auto": len(b)},
            "word_agreement": round(difflib.SequenceMatcher(None, a, b, autojunk=False).ratio(), 4),
            "word_agreement_pdfplumber_tables": round(difflib.SequenceMatcher(None, a, m, autojunk=False).ratio(), 4),
            "tables": {"pdfplumber": tables[0], "pdfplumber-tables": tables[1], "auto": tables[2]},
            "headings_same": heads[0] == heads[2], "headings": len(heads[0])}


def agreement(paths: list[Path]) -> dict:
    import pdfplumber
    import pypdfium2 as pdfium

    from ingest.readers.pdfium_page import may_have_table

    out = {"pdfs": len(paths), "pages": 0, "table_pages": 0, "missed": [], "sent_without_table": 0}
    for p in paths:
        doc = pdfium.PdfDocument(p.read_bytes())
        with pdfplumber.open(str(p)) as pdf:
            for i, page in enumerate(pdf.pages):
                truth = any(len(t.rows) >= 2 for t in page.find_tables())
                guess = may_have_table(doc[i])
                out["pages"] += 1
                out["table_pages"] += truth
                if truth and not guess:
                    out["missed"].append(f"{p.name} p. {i + 1}")
                out["sent_without_table"] += guess and not truth
                page.close()
        doc.close()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pdf", action="append", default=[], help="a PDF to measure (repeat)")
    ap.add_argument("--merge", action="append", default=[], help="NAME=a.pdf,b.pdf: those PDFs joined into one")
    ap.add_argument("--agree", nargs="*", default=[], help="PDFs to check the page test on (no timing)")
    ap.add_argument("--out", default="bench/results/pdf_pages.json")
    args = ap.parse_args(argv)
    load_before = os.getloadavg()[0]
    rows = []
    for p in map(Path, args.pdf):
        rows.append(measure(p.name, p.read_bytes()))
        print(json.dumps(rows[-1]), flush=True)
    for spec in args.merge:
        name, _, parts = spec.partition("=")
        paths = [Path(x) for x in parts.split(",")]
        rows.append({**measure(name, merged(paths)), "made_of": [x.name for x in paths]})
        print(json.dumps(rows[-1]), flush=True)
    out = {"cpu": os.cpu_count(), "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2),
           "rows": rows, "page_test": agreement([Path(x) for x in args.agree]) if args.agree else None}
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
