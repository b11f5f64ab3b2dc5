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
    ``chars``: only these of its characters (:func:`_marked`)."""
    marked = _marked(page_chars(page, textpage)) if chars is None else chars
    return [it for it in map(_line_item, _lines(marked)) if it["text"]]


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
