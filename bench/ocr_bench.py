"""OCR engines side by side: word accuracy and seconds per page on rendered pages of real PDFs.

Each page of a PDF with a text layer is rendered to pixels (pypdfium2, 300 dpi), read back by each engine, and its
words compared with the page's own text layer (pdfplumber): accuracy = reference words matched in order (difflib's
longest matching blocks over lower-cased words without punctuation) / reference words; recall = reference words
found anywhere on the page (recognition without reading order). Same pages, same run.

    python bench/ocr_bench.py --pdf "/work/devdata/newcomer/2023 Q3 AAPL.pdf" --pages 1-4 \
        --pdf /work/devdata/newcomer/2016-annual-performance-report.pdf --pages 10-13 --out bench/results/ocr.json
"""
from __future__ import annotations

import argparse
import difflib
import io
import json
import re
import time
from pathlib import Path

import common as B  # noqa: F401  (project root on sys.path, offline flags)


def words(text: str) -> list[str]:
    return [w for w in (re.sub(r"[^\w$%.,-]", "", t).strip(".,").lower() for t in text.split()) if w]


def accuracy(ref: list[str], hyp: list[str]) -> float:
    if not ref:
        return 1.0
    sm = difflib.SequenceMatcher(None, ref, hyp, autojunk=False)
    return sum(b.size for b in sm.get_matching_blocks()) / len(ref)


def recall(ref: list[str], hyp: list[str]) -> float:
    """Reference words found anywhere on the page (a multiset): recognition without reading order."""
    from collections import Counter

    if not ref:
        return 1.0
    return sum((Counter(ref) & Counter(hyp)).values()) / len(ref)


def parse_pages(spec: str) -> list[int]:
    a, _, b = spec.partition("-")
    return list(range(int(a), int(b or a) + 1))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pdf", action="append", required=True)
    ap.add_argument("--pages", action="append", required=True, help="1-based page range per --pdf, e.g. 1-4")
    ap.add_argument("--engines", default="tesseract,rapidocr")
    ap.add_argument("--dpi", type=int, default=300)
    ap.add_argument("--out", default="bench/results/ocr.json")
    a = ap.parse_args()
    import pdfplumber
    import pypdfium2 as pdfium

    from ingest.readers.ocr import ocr_lines

    engines = a.engines.split(",")
    rows = []
    for path, spec in zip(a.pdf, a.pages):
        data = Path(path).read_bytes()
        doc = pdfium.PdfDocument(data)
        with pdfplumber.open(io.BytesIO(data)) as pl:
            for p in parse_pages(spec):
                ref = words(pl.pages[p - 1].extract_text() or "")
                img = doc[p - 1].render(scale=a.dpi / 72).to_pil()
                row = {"pdf": Path(path).name, "page": p, "ref_words": len(ref)}
                for eng in engines:
                    t = time.perf_counter()
                    hyp = words("\n".join(ocr_lines(img, eng)))
                    row[eng] = {"accuracy": round(accuracy(ref, hyp), 4), "recall": round(recall(ref, hyp), 4),
                                "seconds": round(time.perf_counter() - t, 2),
                                "words": len(hyp)}
                rows.append(row)
                print(json.dumps(row), flush=True)
    summary = {}
    for eng in engines:
        n = sum(r["ref_words"] for r in rows)
        summary[eng] = {"word_accuracy": round(sum(r[eng]["accuracy"] * r["ref_words"] for r in rows) / n, 4),
                        "mean_page_accuracy": round(sum(r[eng]["accuracy"] for r in rows) / len(rows), 4),
                        "word_recall_any_order": round(sum(r[eng]["recall"] * r["ref_words"] for r in rows) / n, 4),
                        "seconds_per_page": round(sum(r[eng]["seconds"] for r in rows) / len(rows), 2)}
    res = {"benchmark": "ocr", "dpi": a.dpi, "pages": len(rows), "summary": summary, "rows": rows,
           "machine": B.machine_info(), "command": "python bench/ocr_bench.py " + " ".join(
               f'--pdf "{p}" --pages {s}' for p, s in zip(a.pdf, a.pages))}
    Path(a.out).write_text(json.dumps(res, indent=1))
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
