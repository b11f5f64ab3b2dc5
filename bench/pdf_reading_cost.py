"""Where a PDF's reading time goes (issue 37: "tables only where there are tables"), per PDF, CPU-seconds in one
run: pdfminer's layout objects as pdfplumber parses them (``page.chars``, ``page.edges``), pdfplumber's table finder
(``find_tables``) on those objects, the text lines the product builds from them (``ingest.readers.pdf._line_items``),
and pypdfium2's text of every page with a count of its path objects (ruling lines, boxes): what a cheaper reader of
the pages without tables would cost.

    python bench/pdf_reading_cost.py --pdf DOCS/"2023 Q1 AAPL.pdf" --pdf DOCS/"2022 Q3 MSFT.pdf" \
        --out bench/results/pdf_reading_cost.json
"""
from __future__ import annotations

import argparse
import io
import json
import os
import time
from pathlib import Path

import common as B  # noqa: F401 (sys.path, offline flags)
import pdfplumber
import pypdfium2 as pdfium

from ingest.readers.pdf import _line_items


def plumber_costs(data: bytes) -> dict:
    t = {"objects_s": 0.0, "find_tables_s": 0.0, "lines_s": 0.0}
    tables = 0
    with pdfplumber.open(io.BytesIO(data)) as doc:
        pages = len(doc.pages)
        for page in doc.pages:
            t0 = time.process_time()
            _ = page.chars, page.edges
            t1 = time.process_time()
            found = [x for x in page.find_tables() if len(x.rows) >= 2]
            t2 = time.process_time()
            _line_items(page, [])
            t3 = time.process_time()
            t["objects_s"] += t1 - t0
            t["find_tables_s"] += t2 - t1
            t["lines_s"] += t3 - t2
            tables += bool(found)
    return {"pages": pages, "pages_with_tables": tables, **{k: round(v, 2) for k, v in t.items()}}


def pdfium_costs(data: bytes) -> dict:
    t0 = time.process_time()
    doc = pdfium.PdfDocument(data)
    paths = chars = 0
    for i in range(len(doc)):
        page = doc[i]
        tp = page.get_textpage()
        chars += len(tp.get_text_range())
        paths += sum(1 for o in page.get_objects() if o.type == pdfium.raw.FPDF_PAGEOBJ_PATH)
        tp.close()
        page.close()
    doc.close()
    return {"pdfium_text_and_paths_s": round(time.process_time() - t0, 2), "chars": chars, "paths": paths}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pdf", action="append", required=True, help="a PDF to measure (repeat)")
    ap.add_argument("--out", default="bench/results/pdf_reading_cost.json")
    args = ap.parse_args(argv)
    rows = []
    for p in map(Path, args.pdf):
        data = p.read_bytes()
        row = {"pdf": p.name, **plumber_costs(data), **pdfium_costs(data)}
        pdfminer = row["objects_s"] + row["find_tables_s"] + row["lines_s"]
        row["find_tables_share"] = round(row["find_tables_s"] / pdfminer, 3)
        row["pdfium_vs_pdfplumber"] = round(row["pdfium_text_and_paths_s"] / pdfminer, 3)
        rows.append(row)
        print(json.dumps(row))
    out = {"cpu": os.cpu_count(), "load_before": os.getloadavg()[0], "rows": rows}
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
