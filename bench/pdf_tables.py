"""PDF table finders side by side on real filings: pdfplumber vs PyMuPDF (``find_tables()``, default settings).

Per finder: seconds for all pages (finding and extracting every table), tables found, and cell fidelity: the share
of non-empty cells whose text, whitespace collapsed, occurs in the page's text as pypdf extracts it (a third,
independent reader), so a cell read as "Totalnetsales" or "81797\\n," counts as unfaithful. Same pages, one run.

    python bench/pdf_tables.py --pdf DOCS/"2023 Q3 AAPL.pdf" --pdf DOCS/"2023 Q3 MSFT.pdf" … \
        --out bench/results/pdf_tables.json
"""
from __future__ import annotations

import argparse
import io
import json
import re
import time
from pathlib import Path

import common as B


def norm(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip()


def plumber(data: bytes):
    import pdfplumber

    out = []
    with pdfplumber.open(io.BytesIO(data)) as pdf:
        for page in pdf.pages:
            out.append([t.extract() for t in page.find_tables()])
    return out


def mupdf(data: bytes):
    import pymupdf

    doc = pymupdf.open(stream=data, filetype="pdf")
    return [[t.extract() for t in page.find_tables().tables] for page in doc]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pdf", action="append", required=True)
    ap.add_argument("--out", default="bench/results/pdf_tables.json")
    a = ap.parse_args()
    import pypdf

    res = {"benchmark": "pdf_tables", "machine": B.machine_info(), "files": [Path(p).name for p in a.pdf],
           "finders": {}}
    refs = {p: [norm(pg.extract_text() or "") for pg in pypdf.PdfReader(p).pages] for p in a.pdf}
    for name, fn in (("pdfplumber", plumber), ("pymupdf", mupdf)):
        secs, tables, cells, faithful, pages = 0.0, 0, 0, 0, 0
        for p in a.pdf:
            data = Path(p).read_bytes()
            t = time.perf_counter()
            found = fn(data)
            secs += time.perf_counter() - t
            pages += len(found)
            for ref, page_tables in zip(refs[p], found):
                for tb in page_tables:
                    tables += 1
                    for row in tb:
                        for c in row:
                            c = norm(c or "")
                            if c and c not in ("$", "%"):
                                cells += 1
                                faithful += c in ref
        res["finders"][name] = {"seconds": round(secs, 2), "pages": pages, "seconds_per_page": round(secs / pages, 3),
                                "tables": tables, "cells": cells, "cell_fidelity": round(faithful / max(cells, 1), 4)}
        print(name, res["finders"][name], flush=True)
    res["command"] = "python bench/pdf_tables.py " + " ".join(f'--pdf "{p}"' for p in a.pdf)
    Path(a.out).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
