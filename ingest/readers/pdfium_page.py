"""A PDF page read by pdfium: pdfium reads a page's characters and paths at a few percent of pdfminer's cost
(BENCHMARKS.md "PDF pages"), so pdfplumber — whose table finder and settings the product reads tables with — runs
only its table finder, on pdfium's lines.

* :func:`ruled_tables` finds a page's tables from its vector paths alone: their horizontal and vertical segments
  are given, as edges, to pdfplumber's own table finder (the same finder and settings as on a pdfplumber page),
  which needs no text; :func:`may_have_table` says whether there is one;
* :func:`read_lines` gives the page's text lines in the shape :func:`ingest.readers.pdf.read_page` gives them
  (text, top, bottom, x0, x1, font size, bold, column gaps), grouped and spaced as pdfplumber groups them (lines
  by their top within 3 points, a word break where pdfplumber makes one, :func:`_words`);
* :func:`read_ruled` reads a page's ruled tables: each cell's text from the characters whose centre lies in it
  (:class:`CharTable`, what :func:`ingest.readers.pdf._table_markdown` reads of a pdfplumber table), and the page's
  words and characters for the header lines above a table and the lines outside it.
"""
from __future__ import annotations

import ctypes
import re
import unicodedata
from collections import Counter

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): pypdfium2, pdfplumber

Y_TOLERANCE = 3.0  # pdfplumber's default y_tolerance / x_tolerance
X_TOLERANCE = 3.0
SPACE = 0.2  # a gap of this much of the font size where the size changes is a space the PDF draws and pdfium may not
# report (before a footnote mark: "Services (3)")
DESCENT = 0.2  # of the font size below the baseline: where pdfminer's boxes end for most fonts
_BOLD = re.compile(r"bold|black|heavy|semibold", re.I)
_AXIS = 0.5  # a segment within half a point of horizontal (vertical) is an edge, as pdfminer's rects and lines are


def _matrix(obj, pdfium_c) -> tuple:
    m = pdfium_c.FS_MATRIX()
    if not pdfium_c.FPDFPageObj_GetMatrix(obj.raw, m):  # an object pdfium keeps no matrix for: its own coordinates
        return (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
    return (m.a, m.b, m.c, m.d, m.e, m.f)


def _compose(inner, outer):
    """The matrix of ``inner`` (local → form) followed by ``outer`` (form → page)."""
    a, b, c, d, e, f = inner
    A, B, C, D, E, F = outer
    return (a * A + b * C, a * B + b * D, c * A + d * C, c * B + d * D, e * A + f * C + E, e * B + f * D + F)


def _subpaths(raw, pdfium_c) -> list[list[tuple[float, float]]]:
    """The points of each subpath of a path object, in its own coordinates (a closed subpath repeats its start)."""
    out: list[list[tuple[float, float]]] = []
    x, y = ctypes.c_float(), ctypes.c_float()
    for i in range(pdfium_c.FPDFPath_CountSegments(raw)):
        seg = pdfium_c.FPDFPath_GetPathSegment(raw, i)
        if not pdfium_c.FPDFPathSegment_GetPoint(seg, x, y):
            continue
        pt = (x.value, y.value)
        if pdfium_c.FPDFPathSegment_GetType(seg) == pdfium_c.FPDF_SEGMENT_MOVETO or not out:
            out.append([pt])
        else:
            out[-1].append(pt)
        if pdfium_c.FPDFPathSegment_GetClose(seg) and out[-1][0] != pt:
            out[-1].append(out[-1][0])
    return out


def path_edges(page) -> list[dict]:
    """Every horizontal and vertical segment of the page's vector paths (in form XObjects too) as a pdfplumber edge
    (``x0``, ``x1``, ``top``, ``bottom``, ``width``, ``height``, ``orientation``, ``object_type``), top measured
    from the page's top edge as pdfplumber measures it."""
    import pypdfium2.raw as pdfium_c

    height = page.get_height()
    stack: list[tuple[int, tuple]] = []  # (level, matrix to page space) of the enclosing forms
    edges: list[dict] = []
    ident = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
    for obj in page.get_objects(filter=None, max_depth=8):
        while stack and stack[-1][0] >= obj.level:
            stack.pop()
        to_page = _compose(_matrix(obj, pdfium_c), stack[-1][1] if stack else ident)
        if obj.type == pdfium_c.FPDF_PAGEOBJ_FORM:
            stack.append((obj.level, to_page))
            continue
        if obj.type != pdfium_c.FPDF_PAGEOBJ_PATH:
            continue
        a, b, c, d, e, f = to_page
        for pts in _subpaths(obj.raw, pdfium_c):
            xy = [(a * px + c * py + e, b * px + d * py + f) for px, py in pts]
            for (x0, y0), (x1, y1) in zip(xy, xy[1:]):
                if abs(y0 - y1) <= _AXIS and abs(x0 - x1) > _AXIS:
                    lo, hi = sorted((x0, x1))
                    top = height - y0
                    edges.append({"x0": lo, "x1": hi, "top": top, "bottom": top, "width": hi - lo, "height": 0.0,
                                  "orientation": "h", "object_type": "line"})
                elif abs(x0 - x1) <= _AXIS and abs(y0 - y1) > _AXIS:
                    lo, hi = sorted((height - y0, height - y1))
                    edges.append({"x0": x0, "x1": x0, "top": lo, "bottom": hi, "width": 0.0, "height": hi - lo,
                                  "orientation": "v", "object_type": "line"})
    return edges


class _EdgesOnly:
    """What pdfplumber's ``TableFinder`` reads of a page with the default ("lines") strategies: its edges, its bbox."""

    def __init__(self, edges: list[dict], width: float, height: float):
        self.edges, self.bbox = edges, (0.0, 0.0, width, height)


def ruled_tables(page, edges: list[dict] | None = None) -> list:
    """The tables of two rows or more that pdfplumber's table finder, with the settings
    :func:`ingest.readers.pdf.read_page` uses, finds in the page's ruling lines and boxes (``edges``: the page's
    :func:`path_edges`, when known). A table with no rules is no pdfplumber table either: its rows are read as lines
    with column gaps either way."""
    from pdfplumber.table import TableFinder

    edges = path_edges(page) if edges is None else edges
    if len(edges) < 4:
        return []
    found = TableFinder(_EdgesOnly(edges, page.get_width(), page.get_height())).tables  # type: ignore[arg-type]
    return [t for t in found if len(t.rows) >= 2]


def may_have_table(page) -> bool:
    """Whether :func:`ruled_tables` finds a table on the page."""
    return bool(ruled_tables(page))


def _font_name(pdfium_c, textpage, i: int, cache: dict) -> str:
    obj = pdfium_c.FPDFText_GetTextObject(textpage, i)
    font = pdfium_c.FPDFTextObj_GetFont(obj) if obj else None
    key = ctypes.cast(font, ctypes.c_void_p).value if font else None
    if key not in cache:
        name = ""
        if font:
            n = pdfium_c.FPDFFont_GetBaseFontName(font, None, 0)
            buf = ctypes.create_string_buffer(max(n, 1))
            pdfium_c.FPDFFont_GetBaseFontName(font, buf, n)
            name = buf.value.decode("utf-8", "replace")
        cache[key] = name
    return cache[key]


def page_chars(page, textpage) -> list[dict]:
    """The page's characters (a space kept as ``space``; those set sideways left out, :func:`upright_only`): ``text``,
    ``x0``, ``x1``, ``size`` (the font size times the text's vertical scale, as pdfminer measures it), ``bottom``
    (from the page's top: the baseline and a typical descent), ``top`` (``bottom - size``, as pdfminer's boxes are),
    ``bold`` (the font's name says so)."""
    import pypdfium2.raw as pdfium_c

    tp = textpage.raw
    height = page.get_height()
    box, m = pdfium_c.FS_RECTF(), pdfium_c.FS_MATRIX()
    ox, oy = ctypes.c_double(), ctypes.c_double()
    fonts: dict = {}
    out = []
    for i in range(pdfium_c.FPDFText_CountChars(tp)):
        ch = chr(pdfium_c.FPDFText_GetUnicode(tp, i) or 0xFFFD)
        if pdfium_c.FPDFText_IsGenerated(tp, i) == 1 and ch != " ":  # its line breaks: lines are found here
            continue
        if not ch.strip():  # a space, the PDF's or one pdfium saw in a gap (where pdfplumber sees the PDF's)
            out.append({"space": True})
            continue
        if (not pdfium_c.FPDFText_GetLooseCharBox(tp, i, box) or not pdfium_c.FPDFText_GetMatrix(tp, i, m)
                or not pdfium_c.FPDFText_GetCharOrigin(tp, i, ox, oy)):
            continue
        if ch == "\x02" and pdfium_c.FPDFText_IsHyphen(tp, i) == 1:  # a hyphen that ends a line: pdfium reads 0x02
            ch = "-"
        if ch in "\ufb00\ufb01\ufb02\ufb03\ufb04":  # a ligature glyph: its letters
            ch = unicodedata.normalize("NFKC", ch)
        size = pdfium_c.FPDFText_GetFontSize(tp, i) * (m.c * m.c + m.d * m.d) ** 0.5
        bottom = height - oy.value + DESCENT * size  # pdfium boxes a ligature's letters off the line: the baseline
        out.append({"text": ch, "x0": box.left, "x1": box.right, "top": bottom - size, "bottom": bottom, "size": size,
                    "bold": bool(_BOLD.search(_font_name(pdfium_c, tp, i, fonts))), "sideways": abs(m.b) > abs(m.a)})
    return upright_only(out)


def upright_only(chars: list[dict], key: str = "sideways") -> list[dict]:
    """The characters without those set sideways, when those are a minority of the page (a margin's rotated note):
    read into the horizontal lines beside them they are spliced into them a letter or two at a time. A page drawn
    sideways as a whole keeps its characters."""
    sideways = sum(1 for c in chars if c.get(key))
    if not sideways or 2 * sideways >= sum(1 for c in chars if "text" in c):
        return chars
    return [c for c in chars if not c.get(key)]


def _marked(chars: list[dict]) -> list[dict]:
    """:func:`page_chars`' characters without the spaces, each marked ``brk`` when a space came before it."""
    marked = []
    brk = False
    for c in chars:
        if c.get("space"):
            brk = True
            continue
        marked.append({**c, "brk": brk})
        brk = False
    return marked


def _lines(marked: list[dict]) -> list[list[dict]]:
    """Characters (:func:`_marked`) in lines: clustered by their top as pdfplumber clusters (each within
    ``Y_TOLERANCE`` of the previous; a superscript's top is its line's), each line in x order."""
    groups: list[list[dict]] = []
    last = None
    for c in sorted(marked, key=lambda c: c["top"]):
        if last is None or c["top"] - last > Y_TOLERANCE:
            groups.append([])
        groups[-1].append(c)
        last = c["top"]
    return [sorted(g, key=lambda c: c["x0"]) for g in groups]


def _closes_figure(prev: dict, c: dict, gap: float) -> bool:
    """A parenthesis that closes a figure within pdfplumber's tolerance: pdfium sees a space in that gap (a
    statement's right-aligned "(260 )"), pdfplumber does not."""
    return c["text"] == ")" and prev["text"].isdigit() and gap <= X_TOLERANCE


def _words(line: list[dict]) -> list[list[dict]]:
    """One line's characters in words, as pdfplumber splits them: at a space (pdfium's, or a gap of :data:`SPACE`
    where the font size changes), a gap over ``X_TOLERANCE``, a top more than ``Y_TOLERANCE`` off the last
    character's, or a character that starts left of the last one's start."""
    words: list[list[dict]] = []
    prev = None
    for c in line:
        gap = c["x0"] - prev["x1"] if prev is not None else 0.0
        spaced = prev is not None and (c["brk"] or gap > SPACE * min(c["size"], prev["size"])
                                       and abs(c["size"] - prev["size"]) > 0.1 * max(c["size"], prev["size"]))
        if prev is None or spaced and not _closes_figure(prev, c, gap) \
                or gap > X_TOLERANCE or abs(c["top"] - prev["top"]) > Y_TOLERANCE or c["x0"] < prev["x0"]:
            words.append([])
        words[-1].append(c)
        prev = c
    return words


def _text(line: list[dict]) -> str:
    return " ".join("".join(c["text"] for c in w) for w in _words(line)).strip()


def _line_item(ln: list[dict]) -> dict:
    sizes = Counter(round(c["size"], 1) for c in ln)
    size = sizes.most_common(1)[0][0]
    gaps = [b["x0"] - a["x1"] for a, b in zip(ln, ln[1:])]
    return {"kind": "line", "text": _text(ln), "top": min(c["top"] for c in ln),
            "bottom": max(c["bottom"] for c in ln), "x0": ln[0]["x0"], "x1": max(c["x1"] for c in ln),
            "size": size, "bold": sum(c["bold"] for c in ln) > len(ln) / 2,
            "cols": bool(gaps) and max(gaps) > 2.5 * max(size, 1.0)}


def read_lines(page, textpage, chars: list[dict] | None = None) -> list[dict]:
    """The page's text lines as :func:`ingest.readers.pdf._line_items` gives them (see the module doc);
    ``chars``: only these of its characters (:func:`_marked`). On a page set in two columns of text
    (:func:`column_regions`) each line is one column's, marked with its ``region``, the regions' reading order."""
    marked = _marked(page_chars(page, textpage)) if chars is None else chars
    lines = _lines(marked)
    regions = column_regions(lines, float(page.get_width()))
    if regions is None:
        return [it for it in map(_line_item, lines) if it["text"]]
    return [{**it, "region": r} for r, part in enumerate(regions) for it in map(_line_item, _lines(part))
            if it["text"]]


COLUMN_ZONE = (0.3, 0.7)  # where the gutter between two columns of text may lie, as shares of the page's width
COLUMN_MIN_LINES = 6  # the lines the gutter splits in two: at least this many, and more than the lines across it
COLUMN_WORDS = 4  # each column's parts of those lines: a median of at least this many words, and
COLUMN_LETTERS = 0.6  # this share of letters among their characters (running text, not a table's label and figures)
COLUMN_FILL = 0.6  # their median width: at least this share of their column's
COLUMN_EDGE = 3.0  # points: parts starting within this of each other start at one edge, and
COLUMN_ALIGNED = 0.5  # at least this share of each column's parts start at one edge (a column of text, left-aligned)
COLUMN_RUNS = 0.8  # this share of the split lines lie in runs of COLUMN_MIN_LINES lines or more with none across


def column_regions(lines: list[list[dict]], width: float) -> list[list[dict]] | None:
    """A page set in two columns of text, read column by column: its characters in regions, in reading order, or
    None for a page that is not.

    Lines are found by their top across the whole page (:func:`_lines`), so side-by-side columns come out as one
    line holding a line of each, and paragraphs interleave line by line. The gutter is the x (in the middle of the
    page, :data:`COLUMN_ZONE`) where the lines with words on both sides and none across it outnumber the lines with a
    word across it the most (the middle of the widest such stretch); it counts
    when enough lines are split there (:data:`COLUMN_MIN_LINES`, and more than lines across it) and both sides of them
    read as running text (:data:`COLUMN_WORDS`, :data:`COLUMN_LETTERS`; a table's label and figure columns do
    not), fill their column (:data:`COLUMN_FILL`), start at its edge (:data:`COLUMN_ALIGNED`) and come in runs of
    lines (:data:`COLUMN_RUNS`): a page of tables, bullets beside charts or an exhibit list is read as before. A line
    across the gutter (a title, an abstract, a caption set full width) is a region of its own; each run of lines
    between two such is read as its left column, then its right.
    """
    import numpy as np

    n, w = len(lines), int(width) + 1
    if n < COLUMN_MIN_LINES or w < 20:
        return None
    words = [[(min(c["x0"] for c in wd), max(c["x1"] for c in wd)) for wd in _words(ln)] for ln in lines]
    covered = np.zeros((n, w), dtype=bool)
    left, right = np.full(n, np.inf), np.full(n, -np.inf)
    for i, spans in enumerate(words):
        for a, b in spans:
            covered[i, max(int(np.ceil(a)), 0):max(min(int(b) + 1, w), 0)] = True
        left[i], right[i] = min(a for a, _ in spans), max(b for _, b in spans)
    xs = np.arange(w)
    split = ~covered & (left[:, None] < xs[None, :]) & (right[:, None] > xs[None, :])
    lo, hi = int(COLUMN_ZONE[0] * width), int(COLUMN_ZONE[1] * width)
    margin = split[:, lo:hi + 1].sum(axis=0) - covered[:, lo:hi + 1].sum(axis=0)  # lines split less lines across
    best = int(margin.max()) if margin.size else 0
    at = np.flatnonzero(margin == best)
    runs = np.split(at, np.flatnonzero(np.diff(at) > 1) + 1)
    run = max(runs, key=len)  # the widest stretch of the gutter: its middle
    x = lo + int(run[len(run) // 2])
    if best <= 0 or split[:, x].sum() < COLUMN_MIN_LINES:
        return None
    across = covered[:, x]
    runs_of = np.cumsum(across)  # lines between two lines across the gutter share a number
    run_len = np.bincount(runs_of[~across])
    at_split = np.flatnonzero(split[:, x])
    if np.mean(run_len[runs_of[at_split]] >= COLUMN_MIN_LINES) < COLUMN_RUNS:
        return None  # columns come in runs of lines, not a line here and there between lines across (a table)
    sides = [[], []]
    for i in at_split:
        for side in (0, 1):
            spans = [(a, b) for a, b in words[i] if (b <= x if side == 0 else a >= x)]
            text = "".join(c["text"] for c in lines[i] if (c["x1"] <= x if side == 0 else c["x0"] >= x))
            sides[side].append((len(spans), sum(ch.isalpha() for ch in text) / max(len(text), 1), spans[0][0],
                                spans[-1][1]))
    for parts in sides:
        k, letters, x0, x1 = (np.array(v) for v in zip(*parts))
        extent = float(x1.max() - x0.min()) or 1.0
        starts = np.round(x0 / COLUMN_EDGE)
        if np.median(k) < COLUMN_WORDS or letters.mean() < COLUMN_LETTERS \
                or np.median(x1 - x0) < COLUMN_FILL * extent \
                or np.bincount(starts.astype(int) - int(starts.min())).max() < COLUMN_ALIGNED * len(starts):
            return None
    regions: list[list[dict]] = []
    block: list[list[dict]] = []

    def close() -> None:
        if block:
            regions.extend(r for r in ([c for ln in block for c in ln if c["x1"] <= x],
                                       [c for ln in block for c in ln if c["x1"] > x]) if r)
            block.clear()

    for i, ln in enumerate(lines):
        if covered[i, x]:
            close()
            regions.append(ln)
        else:
            block.append(ln)
    close()
    return regions


def _centre_in(c: dict, box) -> bool:
    x0, top, x1, bottom = box
    cx, cy = (c["x0"] + c["x1"]) / 2, (c["top"] + c["bottom"]) / 2
    return x0 <= cx < x1 and top <= cy < bottom


class CharTable:
    """A table pdfplumber's finder found in the ruling lines, with the text of its cells from pdfium's characters:
    what :func:`ingest.readers.pdf._table_markdown` reads of a pdfplumber table (``rows``, ``bbox``, ``extract()``:
    per row, per cell its lines joined by a line break as pdfplumber's ``extract_text`` joins them, "" for an empty
    cell, None where a merged cell has no box of its own)."""

    def __init__(self, table, chars: list[dict]):
        self.rows, self.bbox = table.rows, table.bbox
        self._chars = [c for c in chars if _centre_in(c, table.bbox)]

    def extract(self) -> list[list[str | None]]:
        out = []
        for row in self.rows:
            in_row = [c for c in self._chars if _centre_in(c, row.bbox)]
            out.append([None if cell is None else
                        "\n".join(t for t in (_text(ln) for ln in _lines([c for c in in_row if _centre_in(c, cell)]))
                                  if t)
                        for cell in row.cells])
        return out


def read_ruled(page, textpage, tables: list) -> tuple[list[CharTable], list[dict], list[dict]]:
    """A page with ruled ``tables`` (:func:`ruled_tables`) read by pdfium: the tables with their cells' text, the
    page's words (``text``, ``x0``, ``x1``, ``top``, ``bottom``, as pdfplumber's ``extract_words`` gives them) and its
    characters (:func:`_marked`), for :func:`ingest.readers.pdf.read_page`'s table reading."""
    marked = _marked(page_chars(page, textpage))
    words = []
    for ln in _lines(marked):
        for w in _words(ln):
            words.append({"text": "".join(c["text"] for c in w), "x0": w[0]["x0"], "x1": max(c["x1"] for c in w),
                          "top": min(c["top"] for c in w), "bottom": max(c["bottom"] for c in w)})
    return [CharTable(t, marked) for t in tables], words, marked
