"""Extractors of the structured formats: DOCX and HTML (paragraphs, headings and tables in document order), PPTX
(slides, their tables and speaker notes), XLSX and CSV (sheets as tables, the header repeated in every group of
rows), EPUB (chapters as HTML) and images (PNG, JPEG, TIFF: OCR).

Each returns ``(text, layout JSON)``; they run in the extraction child (:mod:`ingest.readers.sandbox`) with its memory
cap and time limit. A table is Markdown (:mod:`ingest.text.tables`); its span is a ``table`` block of the layout, a
heading's span a ``heading`` block. Locations: PPTX pages are slides, XLSX pages are sheets, CSV pages are rows, an
image's pages are its frames (a multi-page TIFF).
"""
from __future__ import annotations

import csv
import io
import posixpath
import re
import zipfile
from urllib.parse import unquote
from xml.etree import ElementTree as ET

from ingest.readers.base import IngestError, _check_unpacked_size, _docx_level, clean_text, decode_text
from ingest.readers.layout import Layout
from ingest.readers.ocr import OcrUnavailable, image_pages, ocr_lines
from ingest.readers.sandbox import progress
from ingest.text.tables import TABLE_WORDS, is_number, looks_like_header, markdown_tables, tidy

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): docx, bs4, pptx, openpyxl

Block = tuple[str, str, int]  # (kind: "p" | "h" | "table", text, heading level)


class Builder:
    """Joins blocks with blank lines and records page starts, headings and structural blocks as it goes."""

    def __init__(self, unit: str = "page"):
        self.parts: list[str] = []
        self.offset = 0
        self.pages: list[int] = []
        self.headings: list[tuple[int, int, str]] = []
        self.blocks: list[tuple[int, int, str]] = []
        self.unit = unit

    def page(self) -> None:
        self.pages.append(self.offset + (2 if self.parts else 0))

    def add(self, kind: str, text: str, level: int = 0) -> None:
        text = clean_text(text)[0].strip()
        if not text:
            return
        if self.parts:
            self.parts.append("\n\n")
            self.offset += 2
        start = self.offset
        self.parts.append(text)
        self.offset += len(text)
        if kind == "h" or level:
            self.headings.append((start, max(1, level), " ".join(text.split())[:200]))
            self.blocks.append((start, self.offset, "heading"))
        elif kind == "table":
            self.blocks.append((start, self.offset, "table"))

    def table(self, header: list[str], rows: list[list[str]]) -> None:
        for g in markdown_tables(header, rows):
            self.add("table", g)

    def result(self) -> tuple[str, dict]:
        text = "".join(self.parts)
        pages = tuple(min(p, len(text)) for p in self.pages)
        return text, Layout(pages, tuple(self.headings), tuple(self.blocks), self.unit).to_json()


def _header_and_rows(rows: list[list[str]]) -> tuple[str, list[str], list[list[str]]]:
    """A table's title, header and rows. Rows above the header that hold one cell only are its **title** ("BCE -
    Capital expenditures by segment ($ millions)" above "Segment | 2019 | 2018"), said once above the table rather
    than made its header, which is repeated in every group of rows: each group then names its periods. Header rows
    stacked above the first row of figures ("| | 30 June 2019 | 30 June 2018 |" over "| | $’000 | $’000 |") are
    joined column by column into one.

    >>> _header_and_rows([["Sales (USD)", "", ""], ["Region", "2023", "2022"], ["West", "5", "4"]])
    ('Sales (USD)', ['Region', '2023', '2022'], [['West', '5', '4']])
    >>> _header_and_rows([["", "June 30, 2019", "June 30, 2018"], ["", "$'000", "$'000"], ["Net profit", "9", "6"]])
    ('', ['', "June 30, 2019 $'000", "June 30, 2018 $'000"], [['Net profit', '9', '6']])
    >>> _header_and_rows([["3. By segment", "", ""], ["3.1 Operating", "", ""], ["CHF m", "", "H1 2023"],
    ...                   ["", "Sales", "Profit"], ["Zone NA", "12553", "2713"]])
    ('3. By segment 3.1 Operating', ['CHF m', 'H1 2023 Sales', 'H1 2023 Profit'], [['Zone NA', '12553', '2713']])
    """
    rows = tidy(rows)
    if not rows:
        return "", [], []
    titles = []
    filled = [sum(1 for c in r if c.strip()) for r in rows]
    first = next((i for i, k in enumerate(filled) if k >= 2), len(rows))
    if first < len(rows) - 1:  # the title lines above a table's first row of two cells or more, all of them
        titles = [next(c for c in r if c.strip()).strip() for r in rows[:first]]
        rows = rows[first:]
    header, body = rows[0], rows[1:]
    while len(body) > 1 and _stacked_header(header, body[0]) and not _stacked_header(body[0], body[1]):
        over = [j for j in range(1, len(header)) if header[j].strip()]
        under = [j for j in range(1, len(body[0])) if body[0][j].strip()]
        if len(over) == 1 and len(under) >= 2:  # one label over the columns below it (a merged cell's band, read
            band = header[over[0]].strip()  # in one of its columns): "January–June 2023" heads them all
            header = [header[0]] + [band if j in under else "" for j in range(1, len(header))]
        header = [" ".join(x for x in (h.strip(), b.strip()) if x) for h, b in zip(header, body[0])]
        body = body[1:]
    return " ".join(titles), header, body


def _stacked_header(upper: list[str], row: list[str]) -> bool:
    """Is ``row`` a second header row under ``upper``: no figure in it, some cell under a column name, and its first
    cell empty (a data row starts with its label)?"""
    filled = [j for j, c in enumerate(row) if c.strip()]
    return (bool(filled) and not row[0].strip() and all(not is_number(row[j]) for j in filled)
            and any(upper[j].strip() for j in filled if j < len(upper)))


# -- DOCX --------------------------------------------------------------------------------------------------------------
def _bold_heading(paragraph) -> bool:
    """A paragraph written as a heading without a heading style: short, every run bold, no sentence end (how most
    real documents mark their sections)."""
    text = paragraph.text.strip()
    runs = [r for r in paragraph.runs if r.text.strip()]
    return (bool(runs) and 0 < len(text.split()) <= 12 and not text.endswith((".", ";", ",", ":", "?", "!"))
            and all(r.bold or (r.style is not None and r.style.font.bold) for r in runs))


_MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"


def docx_body(doc):
    """The body's paragraphs and tables in document order, those inside block-level content controls (``w:sdt``)
    and custom XML included: python-docx's ``iter_inner_content`` skips both, and a document written from a Word
    template can hold its whole body in content controls (a thesis read as its 760-word appendix of 16,455 words).
    A text box's paragraphs follow the paragraph it is anchored in (a shape's text is in no paragraph's text)."""
    from docx.oxml.ns import qn
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    body = doc.element.body
    p, tbl, sdt, content, custom = qn("w:p"), qn("w:tbl"), qn("w:sdt"), qn("w:sdtContent"), qn("w:customXml")
    box = qn("w:txbxContent")

    def boxes(par):
        """The text boxes anchored in paragraph ``par`` (a shape's text: python-docx's paragraph text leaves it
        out), each once: not the copy in a compatibility fallback (``mc:Fallback``, the same box drawn in VML), nor
        one inside another box (read with it)."""
        for b in par.iter(box):
            a = b.getparent()
            while a is not par and a.tag != box and a.tag != _MC_FALLBACK:
                a = a.getparent()
            if a is par:
                yield b

    def walk(el):
        for child in el.iterchildren():
            if child.tag == p:
                yield Paragraph(child, doc._body)
                for b in boxes(child):
                    yield from walk(b)
            elif child.tag == tbl:
                yield Table(child, doc._body)
            elif child.tag == sdt:
                for c in child.iterchildren(content):
                    yield from walk(c)
            elif child.tag == custom:
                yield from walk(child)

    yield from walk(body)


def docx_blocks(doc) -> list[Block]:
    """Paragraphs (headings by style, or a short all-bold paragraph as a heading) and tables of a python-docx
    Document (:func:`docx_body`), in document order; each non-empty paragraph and each table starts a new "page"
    numbered as a paragraph (unit ``paragraph``: a citation says "¶ 12", a place inside a document that has no
    pages)."""
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    out: list[Block] = []
    for item in docx_body(doc):
        if isinstance(item, Paragraph):
            if not item.text.strip():
                continue
            level = _docx_level(item.style.name if item.style is not None else "")
            if not level and _bold_heading(item):
                level = 2
            out.append(("page", None, 0))
            out.append(("h" if level else "p", item.text, level))
        elif isinstance(item, Table):
            rows = [_docx_row(r) for r in item.rows]
            out.append(("page", None, 0))
            out.append(("table", rows, 0))
    return out


def _docx_row(r) -> list[str]:
    """One table row's cell texts, a merged cell once per grid column it spans (then empty). python-docx follows a
    vertically merged cell up to the row above and fails (ValueError: no `tc` element at grid_offset) where that row
    has no cell in the same column (it starts with ``gridBefore``); such a row is read from its own cells."""
    try:
        cells, seen = [], set()
        for c in r.cells:  # a merged cell appears once per grid column it spans: keep it once
            key = id(c._tc)
            cells.append("" if key in seen else c.text)
            seen.add(key)
        return cells
    except (ValueError, IndexError):
        from docx.oxml.ns import qn

        return ["".join(t.text or "" for t in tc.iter(qn("w:t"))) for tc in r._tr.tc_lst]


def build(blocks, unit: str = "page") -> tuple[str, dict]:
    b = Builder(unit)
    for kind, body, level in blocks:
        if kind == "table":
            title, header, rows = _header_and_rows(body)
            if title:
                b.add("p", title)
            b.table(header, rows)
        elif kind == "page":
            b.page()
        else:
            b.add(kind, body, level)
    return b.result()


# -- HTML / EPUB -------------------------------------------------------------------------------------------------------
_BLOCK_TAGS = ["h1", "h2", "h3", "h4", "h5", "h6", "p", "li", "pre", "blockquote", "dt", "dd", "table", "td", "th",
               "caption", "figcaption"]


def html_blocks(soup) -> list[Block]:
    """Paragraphs, headings and tables of parsed HTML, in document order; a table's cells are not paragraphs."""
    for tag in soup(["script", "style", "noscript", "template", "head"]):
        tag.decompose()
    out: list[Block] = []
    for el in soup.find_all(_BLOCK_TAGS):
        if el.name != "table" and el.find_parent("table") is not None:
            continue  # inside a table: the table takes it
        if el.name == "table":
            if el.find_parent("table") is not None:
                continue  # a nested table is read as its outer cell's text
            cap = el.find("caption")
            if cap is not None:
                out.append(("p", " ".join(cap.get_text(" ").split()), 0))
            rows = []
            for tr in el.find_all("tr"):
                if tr.find_parent("table") is not el:
                    continue
                rows.append([" ".join(c.get_text(" ").split()) for c in tr.find_all(["th", "td"], recursive=False)])
            out.append(("table", rows, 0))
            continue
        if el.name in ("td", "th", "caption"):
            continue
        if el.find(["p", "li", "pre", "blockquote", "table"]):
            continue  # a container; its children are taken one by one
        t = " ".join(el.get_text(" ").split())
        if t:
            level = int(el.name[1]) if re.fullmatch(r"h[1-6]", el.name) else 0
            out.append(("h" if level else "p", t, level))
    if not out:
        out = [("p", " ".join(soup.get_text(" ").split()), 0)]
    return out


def epub_text(name: str, data: bytes, max_unpacked: int) -> tuple[str, dict]:
    """The chapters of an EPUB in spine order (its HTML, headings and tables as for HTML)."""
    from bs4 import BeautifulSoup


    _check_unpacked_size(name, data, max_unpacked, "EPUB")
    try:
        z = zipfile.ZipFile(io.BytesIO(data))
        container = ET.fromstring(z.read("META-INF/container.xml"))
        ns = {"c": "urn:oasis:names:tc:opendocument:xmlns:container", "o": "http://www.idpf.org/2007/opf"}
        opf_path = container.find(".//c:rootfile", ns).get("full-path")
        opf = ET.fromstring(z.read(opf_path))
        base = posixpath.dirname(opf_path)
        items = {it.get("id"): it.get("href") for it in opf.findall(".//o:manifest/o:item", ns)}
        spine = [items[r.get("idref")] for r in opf.findall(".//o:spine/o:itemref", ns) if r.get("idref") in items]
    except (KeyError, AttributeError, ET.ParseError, zipfile.BadZipFile) as e:
        raise IngestError(name, f"is not a readable EPUB ({e.__class__.__name__}: {str(e)[:100]})") from e
    blocks: list[Block] = []
    for href in spine:
        href = unquote(href.split("#", 1)[0])  # a URI: "chapter%201.xhtml" is the file "chapter 1.xhtml"
        path = posixpath.normpath(posixpath.join(base, href)) if base else href
        try:
            raw = z.read(path)
        except KeyError:
            continue
        soup = BeautifulSoup(raw.decode("utf-8", errors="replace"), "html.parser")
        blocks.extend(html_blocks(soup))
    if not blocks:
        raise IngestError(name, "is an EPUB without readable chapters")
    return build(blocks)


# -- PPTX --------------------------------------------------------------------------------------------------------------
def _pptx_shapes(shapes):
    """Every shape of a slide, those inside groups (and groups inside groups) included: a diagram's boxes are often
    grouped, and a group has no text frame of its own."""
    for s in shapes:
        if getattr(s, "shape_type", None) == _GROUP and hasattr(s, "shapes"):
            yield from _pptx_shapes(s.shapes)
        else:
            yield s


_GROUP = 6  # pptx.enum.shapes.MSO_SHAPE_TYPE.GROUP


def pptx_text(name: str, data: bytes, max_unpacked: int) -> tuple[str, dict]:
    """Slides in order: the title (a heading), the other text frames top to bottom, tables, then the speaker
    notes ("Notes: …"); a page per slide."""
    _check_unpacked_size(name, data, max_unpacked, "PPTX")
    try:
        from pptx import Presentation
    except ImportError as e:  # pragma: no cover
        raise IngestError(name, "reading PPTX needs `pip install python-pptx`") from e
    try:
        prs = Presentation(io.BytesIO(data))
    except Exception as e:
        raise IngestError(name, f"is not a readable PPTX file ({e.__class__.__name__})") from e
    blocks: list = []
    for i, slide in enumerate(prs.slides, 1):
        blocks.append(("page", "", 0))
        title_shape = slide.shapes.title
        title = title_shape.text_frame.text.strip() if title_shape is not None and title_shape.has_text_frame else ""
        blocks.append(("h", title or f"Slide {i}", 2))
        title_id = title_shape.shape_id if title_shape is not None else None
        shapes = sorted((s for s in _pptx_shapes(slide.shapes) if s.shape_id != title_id),
                        key=lambda s: ((s.top or 0), (s.left or 0)))
        for s in shapes:
            if getattr(s, "has_table", False) and s.has_table:
                blocks.append(("table", [[c.text for c in r.cells] for r in s.table.rows], 0))
            elif s.has_text_frame:
                for para in s.text_frame.paragraphs:
                    t = "".join(r.text for r in para.runs) or para.text
                    if t.strip():
                        blocks.append(("p", t, 0))
        if slide.has_notes_slide:
            notes = slide.notes_slide.notes_text_frame.text if slide.notes_slide.notes_text_frame else ""
            if notes.strip():
                blocks.append(("p", "Notes: " + " ".join(notes.split()), 0))
    if not prs.slides:
        raise IngestError(name, "is a presentation without slides")
    return build(blocks, unit="slide")


# -- XLSX / CSV --------------------------------------------------------------------------------------------------------
def _too_many_rows(name: str, n: int, max_rows: int):
    return IngestError(name, f"has more than {max_rows:,} rows (read {n:,}), over the limit (MGRAG_MAX_ROWS); split "
                             "it or raise the limit")


MAX_COLUMNS = 1000  # a row wider than this is no table a person reads (a hostile CSV had a million columns)
EXPANSION = 64  # the text a spreadsheet may expand to, in characters per byte of the (compressed) XLSX …
EXPANSION_CSV = 8  # … of a CSV (plain text already: its Markdown is a few times its size) …
MIN_TEXT_CHARS = 8_000_000  # … but at least this many (a small file of long cells) …
MAX_TEXT_CHARS = 64_000_000  # … and never more (4 M words, the per-file cap, is ~25 M characters)


class _Expansion:
    """The text a spreadsheet expands to, counted while its cells are read and estimated for its Markdown tables
    (each row padded to the widest, the header repeated in every group of rows) before they are built: a file past
    :data:`EXPANSION` × its size (within :data:`MIN_TEXT_CHARS`, :data:`MAX_TEXT_CHARS`) or :data:`MAX_COLUMNS` is
    refused before the work starts. A hostile run's 7.6 KB XLSX (one 100 KB shared string in 2,500 cells) became
    474 MB of text; a 1 MB CSV with a wide header, 238 MB."""

    def __init__(self, name: str, size: int, factor: int = EXPANSION):
        self.name, self.chars = name, 0
        self.budget = min(MAX_TEXT_CHARS, max(MIN_TEXT_CHARS, factor * size))

    def _refuse(self, what: str):
        return IngestError(self.name, f"{what} more than {self.budget / 1e6:.0f} M characters of text from a file of "
                                      "this size (a spreadsheet bomb: one cell repeated thousands of times, or a "
                                      "wide header repeated before every group of rows) and is not read; split it "
                                      "or keep fewer columns")

    def row(self, cells: list[str]) -> None:
        if len(cells) > MAX_COLUMNS:
            raise IngestError(self.name, f"has a row of {len(cells):,} columns, over the limit of {MAX_COLUMNS:,}")
        self.chars += sum(len(c) for c in cells) + len(cells)
        if self.chars > self.budget:
            raise self._refuse("expands to")

    def tables(self, header: list[str], rows: list[list[str]]) -> None:
        """Refuse ``header`` and ``rows`` whose Markdown tables would pass the budget (estimated, not built)."""
        width = max([len(header)] + [len(r) for r in rows]) if (header or rows) else 0
        head = sum(len(c) for c in header) + 4 * width
        body = self.chars + 3 * width * len(rows)
        head_words = sum(len(c.split()) for c in header) + width
        per_group = max(1, TABLE_WORDS - head_words)
        groups = len(rows) if head_words >= TABLE_WORDS else max(1, sum(len(" ".join(r).split()) + width
                                                                        for r in rows) // per_group + 1)
        if body + min(groups, len(rows) or 1) * head > self.budget:
            raise self._refuse("would expand to")


def xlsx_text(name: str, data: bytes, max_unpacked: int, max_rows: int) -> tuple[str, dict]:
    """Every sheet as a heading (its name) and a table (first non-empty row = header, repeated in every group of
    rows); a page per sheet. Formulas are read as their cached values."""
    _check_unpacked_size(name, data, max_unpacked, "XLSX")
    try:
        import openpyxl
    except ImportError as e:  # pragma: no cover
        raise IngestError(name, "reading XLSX needs `pip install openpyxl`") from e
    try:
        wb = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except Exception as e:
        raise IngestError(name, f"is not a readable XLSX file ({e.__class__.__name__})") from e
    blocks: list = []
    n = 0
    grow = _Expansion(name, len(data))
    parts = zipfile.ZipFile(io.BytesIO(data))  # the sheets' XML, for their merged cells (read once per workbook)
    try:
        for ws in wb.worksheets:
            rows = []
            for r in ws.iter_rows(values_only=True):
                n += 1
                if n > max_rows:
                    raise _too_many_rows(name, n, max_rows)
                rows.append(["" if v is None else _cell(v) for v in r])
                grow.row(rows[-1])
            _spread_merged(rows, _merged_across(parts, getattr(ws, "_worksheet_path", "")))
            nonempty = [r for r in rows if any(c.strip() for c in r)]
            if nonempty:
                grow.tables(nonempty[0], nonempty[1:])
            blocks.append(("page", "", 0))
            blocks.append(("h", ws.title, 1))
            blocks += [("table", part, 0) for part in sheet_tables(rows)]
    finally:
        wb.close()
        parts.close()
    return build(blocks, unit="sheet")


_MERGE_REF = re.compile(rb'<(?:\w+:)?mergeCell\s+ref="([A-Z]{1,3})(\d+):([A-Z]{1,3})(\d+)"')


def _merged_across(parts: zipfile.ZipFile, path: str) -> list[tuple[int, int, int]]:
    """``(row, first column, last column)``, 0-based, of a sheet's cells merged across columns of one row (read from
    the sheet's XML in the workbook's ``parts``: a read-only workbook does not give them). Nothing when the part
    cannot be read."""
    from openpyxl.utils import column_index_from_string

    if not path:
        return []
    try:
        xml = parts.read(path)
    except (KeyError, zipfile.BadZipFile, OSError):
        return []
    out = []
    for m in _MERGE_REF.finditer(xml):
        c1, r1, c2, r2 = m.group(1).decode(), int(m.group(2)), m.group(3).decode(), int(m.group(4))
        if r1 == r2 and c1 != c2:
            out.append((r1 - 1, column_index_from_string(c1) - 1, column_index_from_string(c2) - 1))
    return out


def _spread_merged(rows: list[list[str]], merged: list[tuple[int, int, int]]) -> None:
    """A label merged across columns ("2023" over its Sales and Profit columns) is written in each of them, so the
    header under it reads "2023 Sales", "2023 Profit"; not a row's only text (a title merged across the table stays
    one cell, the table's title) nor a figure."""
    for r, c1, c2 in merged:
        if r >= len(rows) or c1 >= len(rows[r]):
            continue
        row = rows[r]
        v = row[c1].strip()
        if not v or (is_number(v) and not re.fullmatch(r"(?:19|20)\d\d", v)):
            continue
        if sum(1 for c in row if c.strip()) < 2:
            continue
        row.extend([""] * (c2 + 1 - len(row)))
        for j in range(c1 + 1, c2 + 1):
            if not row[j].strip():
                row[j] = row[c1]


def sheet_tables(rows: list[list[str]]) -> list[list[list[str]]]:
    """A sheet's rows as the tables it holds: a run of rows after an empty row starts a table of its own when its first
    row of two cells or more, past its title lines, is a header (:func:`looks_like_header`: a second half-year's
    "In millions of CHF | January–June 2022" stacked under the first's); else it continues the table above (an empty
    row between a statement's sections, "Total assets | 900" after it).

    >>> sheet_tables([["Zone", "2023"], ["NA", "5"], [], ["H1 2022", ""], [], ["Zone", "2022"], ["NA", "4"], [],
    ...               ["Total", "9"]])
    [[['Zone', '2023'], ['NA', '5']], [['H1 2022', ''], ['Zone', '2022'], ['NA', '4'], ['Total', '9']]]
    """
    runs: list[list[list[str]]] = [[]]
    for r in rows:
        if any(c.strip() for c in r):
            runs[-1].append(r)
        elif runs[-1]:
            runs.append([])
    parts: list[list[list[str]]] = []
    titles: list[list[str]] = []  # runs of one-cell lines: the title of the table below them
    for run in (r for r in runs if r):
        first = next((r for r in run if sum(1 for c in r if c.strip()) >= 2), None)
        if first is None:
            titles += run
        elif not parts or looks_like_header(first):
            parts.append(titles + run)
            titles = []
        else:
            parts[-1] += titles + run
            titles = []
    if titles:
        parts.append(titles) if not parts else parts[-1].extend(titles)
    return parts


def _cell(v) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def csv_text(name: str, data: bytes, max_rows: int) -> tuple[str, dict]:
    """A CSV (or TSV) file as one table, its header repeated in every group of rows; a page per data row, so a
    citation reads "rows 12–19"."""
    text, _ = decode_text(name, data)
    try:
        dialect = csv.Sniffer().sniff(text[:20_000], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    rows = []
    grow = _Expansion(name, len(data), EXPANSION_CSV)
    try:
        for i, r in enumerate(csv.reader(io.StringIO(text), dialect)):
            if i >= max_rows + 1:
                raise _too_many_rows(name, i, max_rows)
            if len(r) > MAX_COLUMNS:
                grow.row(r)  # refused before its cells are cleaned
            rows.append([clean_text(c)[0] for c in r])
            grow.row(rows[-1])
    except csv.Error as e:
        raise IngestError(name, f"is not a readable CSV file ({e})") from e
    rows = [r for r in rows if any(c.strip() for c in r)]
    if not rows:
        raise IngestError(name, "contains no text")
    header, body = rows[0], rows[1:]
    grow.tables(header, body)
    groups = markdown_tables(header, body)
    parts, starts, blocks, offset = [], [], [], 0
    for g in groups:
        if parts:
            parts.append("\n\n")
            offset += 2
        lines = g.split("\n")
        blocks.append((offset, offset + len(g), "table"))
        pos = offset + len(lines[0]) + 1 + len(lines[1]) + 1
        for k, ln in enumerate(lines[2:]):  # each data row is a "page", numbered as the file's lines (header = 1)
            starts.append(offset if k == 0 else pos)
            pos += len(ln) + 1
        parts.append(g)
        offset += len(g)
    out = "".join(parts)
    # pages count data rows from 1; shift so that the numbers are the file's line numbers (header is row 1)
    lay = Layout(tuple([0] + starts), (), tuple(blocks), "row")
    return out, lay.to_json()


# -- images ------------------------------------------------------------------------------------------------------------
def image_text(name: str, data: bytes, ocr_engine: str | None = None) -> tuple[str, dict]:
    """The OCR text of an image (each frame of a multi-page TIFF a page)."""
    try:
        frames = image_pages(data)
    except Exception as e:  # PIL: unreadable, truncated, or a decompression bomb
        why = "not an image format PIL knows" if e.__class__.__name__ == "UnidentifiedImageError" else str(e)[:100]
        raise IngestError(name, f"is not a readable image ({e.__class__.__name__}: {why})") from e

    b = Builder("page")
    for i, img in enumerate(frames):
        b.page()
        try:
            lines = ocr_lines(img, ocr_engine)
        except OcrUnavailable as e:
            raise IngestError(name, f"is an image; reading it needs OCR: {e}") from e
        progress((i + 1, len(frames)))
        para: list[str] = []
        for ln in lines + [""]:
            if ln.strip():
                para.append(ln.strip())
            elif para:
                b.add("p", " ".join(para))
                para = []
    text, lay = b.result()
    if not text.strip():
        raise IngestError(name, "is an image in which OCR found no text")
    lay["ocr_pages"] = list(range(1, len(frames) + 1))
    return text, lay
