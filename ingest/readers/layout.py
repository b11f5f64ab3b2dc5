"""Where a passage sits in its document: page boundaries (PDF) and the heading path (Markdown, HTML, DOCX, PDF
outline), as character offsets into the extracted text. Pure functions; the loaders build a :class:`Layout`, the
pipeline stores it beside the text and puts each chunk's pages and headings in its payload, and citations read
"p. 4–5 · Scope › Fees".

>>> lay = Layout(pages=(0, 100, 250), headings=((0, 1, "Rules"), (120, 2, "Fees"), (260, 2, "Hours")))
>>> page_span(lay, 90, 130), heading_path(lay, 130), cite_label(lay, 90, 130)
((1, 2), ['Rules', 'Fees'], 'p. 1–2 · Rules')
"""
from __future__ import annotations

import bisect
import re
from collections import Counter
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Layout:
    pages: tuple[int, ...] = ()  # offset where page i + 1 starts (pages[0] == 0); empty: no pages (not a PDF)
    headings: tuple[tuple[int, int, str], ...] = ()  # (offset, level 1–6, title), sorted by offset
    blocks: tuple[tuple[int, int, str], ...] = ()  # (start, end, "table" | "heading"): structural blocks, sorted
    unit: str = "page"  # what ``pages`` counts: page (PDF, image), slide (pptx), sheet (xlsx), row (csv)

    def to_json(self) -> dict:
        out = {"pages": list(self.pages), "headings": [list(h) for h in self.headings]}
        if self.blocks:
            out["blocks"] = [list(b) for b in self.blocks]
        if self.unit != "page":
            out["unit"] = self.unit
        return out

    @classmethod
    def from_json(cls, d: dict | None) -> "Layout":
        if not d:
            return cls()
        return cls(tuple(d.get("pages") or ()),
                   tuple((int(o), int(lv), str(t)) for o, lv, t in d.get("headings") or ()),
                   tuple((int(s), int(e), str(k)) for s, e, k in d.get("blocks") or ()),
                   str(d.get("unit") or "page"))

    def __bool__(self) -> bool:
        return bool(self.pages or self.headings or self.blocks)


def page_span(layout: Layout, start: int, end: int) -> tuple[int, int] | None:
    """First and last page (1-based) of the span ``[start, end)``, or None without page boundaries."""
    if not layout.pages:
        return None
    first = bisect.bisect_right(layout.pages, start)
    last = bisect.bisect_right(layout.pages, max(start, end - 1))
    return (max(first, 1), max(last, 1))


def heading_path(layout: Layout, offset: int) -> list[str]:
    """The titles of the headings in force at ``offset``, outermost first."""
    path: list[tuple[int, str]] = []
    for off, level, title in layout.headings:
        if off > offset:
            break
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, title))
    return [t for _, t in path]


FIRST_PASS_NOTE = "first pass (refining)"


def source_place(pages, headings, first_pass: bool = False, unit: str | None = None, support=()) -> str:
    """The place of a source as its line shows it: :func:`place_label`, then ``first pass (refining)`` when the
    passage comes from a document whose LM refinement has not replaced its quick first-pass chunks yet. With the
    answer's ``support`` (sentences carrying their own ``pages``/``headings``), the place of those sentences.

    >>> source_place([4, 4], ["Fees"], True)
    'p. 4 · Fees · first pass (refining)'
    """
    located = [x for x in support or () if "pages" in x or "headings" in x]
    if located:  # the place of the quoted sentences, where the answer quotes the source
        spans = [x["pages"] for x in located if x.get("pages")]
        if spans:
            pages = [min(p[0] for p in spans), max(p[-1] for p in spans)]
        if located[0].get("headings") is not None:
            headings = located[0]["headings"]
    return " · ".join(x for x in (place_label(pages, headings, unit), FIRST_PASS_NOTE if first_pass else "") if x)


UNIT_LABELS = {"page": ("p.", "p."), "slide": ("slide", "slides"), "sheet": ("sheet", "sheets"),
               "row": ("row", "rows"), "paragraph": ("¶", "¶¶")}


def place_label(pages, headings, unit: str | None = None) -> str:
    """``p. 4–5 · Section › Subsection`` from a passage's ``pages`` [first, last] and heading path (either may be
    missing; "" when both are); ``unit`` names what the numbers count (``slide 3``, ``sheet 2``, ``rows 4–9``).

    >>> place_label([3, 3], ["Revenue"], "sheet"), place_label([2, 9], [], "row")
    ('sheet 3 · Revenue', 'rows 2–9')
    """
    parts = []
    one, many = UNIT_LABELS.get(unit or "page", UNIT_LABELS["page"])
    if pages:
        parts.append(f"{one} {pages[0]}" if pages[0] == pages[-1] else f"{many} {pages[0]}–{pages[-1]}")
    if headings:
        parts.append(" › ".join(headings[-3:]))
    return " · ".join(parts)


def cite_label(layout: Layout, start: int, end: int) -> str:
    """The :func:`place_label` of the span ``[start, end)``."""
    return place_label(page_span(layout, start, end), heading_path(layout, start), layout.unit)


def blocks_in(layout: Layout, start: int, end: int) -> list[list]:
    """The structural blocks (:attr:`Layout.blocks`) overlapping ``[start, end)``, as ``[start, end, kind]``."""
    if not layout.blocks:
        return []
    i = bisect.bisect_left(layout.blocks, (start,)) - 1
    out = []
    for s, e, k in layout.blocks[max(i, 0):]:
        if s >= end:
            break
        if e > start:
            out.append([s, e, k])
    return out


def chunk_meta(layout: Layout, start: int, end: int) -> dict:
    """The payload fields of a chunk: ``pages`` [first, last] (and their ``unit`` when they are not pages),
    ``headings`` (the path at its start) and ``blocks``: the tables and headings it holds, in document offsets."""
    out: dict = {}
    span = page_span(layout, start, end)
    if span:
        out["pages"] = list(span)
        if layout.unit != "page":
            out["unit"] = layout.unit
    path = heading_path(layout, start)
    if path:
        out["headings"] = path
    blocks = blocks_in(layout, start, end)
    if blocks:
        out["blocks"] = blocks
    return out


# -- Markdown ---------------------------------------------------------------------------------------------------
_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


def markdown_headings(text: str) -> tuple[tuple[int, int, str], ...]:
    """ATX (``## Title``) and setext (``Title`` over ``===``/``---``) headings, outside fenced code blocks."""
    out = []
    offset, prev, prev_off, fenced = 0, "", 0, False
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        if _FENCE.match(body):
            fenced = not fenced
        elif not fenced:
            m = _ATX.match(body)
            if m:
                out.append((offset, len(m.group(1)), m.group(2).strip()))
            elif _SETEXT.match(body) and prev.strip() and not _ATX.match(prev) and not _SETEXT.match(prev):
                out.append((prev_off, 1 if body.strip().startswith("=") else 2, prev.strip()))
        prev, prev_off = body, offset
        offset += len(line)
    return tuple(sorted(out))


# -- PDF pages: running headers and footers ------------------------------------------------------------------------
_PAGE_NUMBER = re.compile(r"^\s*(?:page\s+)?[-–—]?\s*\d{1,4}\s*[-–—]?\s*(?:(?:of|/)\s*\d{1,4})?\s*$", re.IGNORECASE)
_PAGE_MARK = re.compile(r"\b(?:page|p\.|pg\.?)\s*\d|\d\s*(?:of|/)\s*\d", re.IGNORECASE)  # "page 5", "5 of 12"
_NUMBER = re.compile(r"\d+")
_EDGE_LINES = 2  # lines at the top and at the bottom of a page that may be a running header or footer
_PAGE_OFFSET = 30  # a printed page number without "page"/"of" differs from the page's place by at most this


def _norm(line: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"\d+", "#", line)).strip().lower()


def _exact(line: str) -> str:
    return re.sub(r"\s+", " ", line).strip().lower()


def _edge(lines: list[str]) -> list[str]:
    idx = [i for i, ln in enumerate(lines) if ln.strip()]
    return sorted(set(idx[:_EDGE_LINES] + idx[-_EDGE_LINES:]))


def _page_pattern(seen: list[tuple[int, str]]) -> tuple | None:
    """How the numbers of one templated edge line (``seen``: (0-based page, text) on each page) follow the page:
    per number, ``("=", value)`` when it never changes or ``("+", offset)`` when it is the page's place plus a
    fixed offset; None when some number does neither (a receipt's total, an invoice date): not a running line."""
    nums = [(pi, [int(x) for x in _NUMBER.findall(text)]) for pi, text in seen]
    if len({len(n) for _, n in nums}) != 1:
        return None
    marked = all(_PAGE_MARK.search(text) for _, text in seen)
    pattern = []
    for j in range(len(nums[0][1])):
        values = {n[j] for _, n in nums}
        offsets = {n[j] - (pi + 1) for pi, n in nums}
        if len(values) == 1:
            pattern.append(("=", values.pop()))
        elif len(offsets) == 1 and (marked or abs(next(iter(offsets))) <= _PAGE_OFFSET):
            pattern.append(("+", offsets.pop()))
        else:
            return None
    return tuple(pattern)


@dataclass
class PageCleaner:
    """Removes running headers and footers from the pages of one PDF. Only lines among the first or last
    ``_EDGE_LINES`` of a page are candidates, and only these go:

    * a line that recurs unchanged at the edge of at least half of the pages (and of 3 or more);
    * a line that recurs there with only numbers changed when each changed number is the page number ("Annual
      Report | page 5", "ACME 12"): the page's place plus one fixed offset (small unless "page"/"of" marks it),
      on at least 3 pages (a book's chapter head runs through its chapter only);
      a templated line whose numbers change otherwise ("Receipt 1043 Total $ 12.50") is content and stays;
    * a bare page number ("5", "Page 5", "- 5 -", "5 of 12").

    A page with text never ends empty: when every line of it would go, all stay."""

    pages: list[str]
    repeated: set[str] = field(default_factory=set)  # exact lines (see :func:`_exact`)
    paged: dict[str, tuple] = field(default_factory=dict)  # digit-normalised line: its :func:`_page_pattern`
    first_page: int = 0  # the 0-based place of ``pages[0]`` in its document (a later range of a long PDF)

    def __post_init__(self) -> None:
        exact: Counter = Counter()
        templated: dict[str, list[tuple[int, str]]] = {}
        for pi, page in enumerate(self.pages, self.first_page):
            lines = page.splitlines()
            edge = [lines[i] for i in _edge(lines)]
            exact.update({_exact(ln) for ln in edge})
            for ln in edge:
                templated.setdefault(_norm(ln), []).append((pi, ln))
        need = max(3, (len(self.pages) + 1) // 2)
        self.repeated = {k for k, n in exact.items() if n >= need and k}
        for key, seen in templated.items():
            on = len({pi for pi, _ in seen})
            if key and on >= 3 and len({_exact(t) for _, t in seen}) > 1:
                pattern = _page_pattern(seen)
                # a line whose number follows the page is a running head on 3 pages: a book's chapter heads
                # ("52 How to use NOMAD" on a chapter's even pages) run through one chapter, not half the book
                if pattern is not None and (on >= need or any(op == "+" for op, _ in pattern)):
                    self.paged[key] = pattern

    def learn_pages(self, pages: list[str], first_page: int) -> None:
        """Also learn from a later range of pages (a long PDF is read range by range, :class:`ingest.readers.pdf.
        Assembler`) the running lines whose numbers follow the page: a chapter that starts after the first range
        has its own head ("52 How to use NOMAD"). Lines repeated unchanged are learnt from the first range only."""
        more = PageCleaner(pages, first_page=first_page)
        for key, pattern in more.paged.items():
            if key not in self.paged and any(op == "+" for op, _ in pattern):
                self.paged[key] = pattern

    def _running(self, line: str, page: int | None) -> bool:
        if _exact(line) in self.repeated or _PAGE_NUMBER.match(line):
            return True
        pattern = self.paged.get(_norm(line))
        if pattern is None or page is None:
            return False
        nums = [int(x) for x in _NUMBER.findall(line)]
        return len(nums) == len(pattern) and all(n == (v if op == "=" else page + 1 + v)
                                                 for n, (op, v) in zip(nums, pattern))

    def keep_mask(self, lines: list[str], page: int | None = None, other_content: bool = False) -> list[bool]:
        """For each line of a page (``page``: its 0-based place, needed to recognise numbered running lines):
        False for a running header, footer or page number at the page's edge. When that would leave the page
        without any line (and it has no ``other_content``, such as a table), every line is kept."""
        drop = {i for i in _edge(lines) if self._running(lines[i], page)}
        if not other_content and drop and all(i in drop for i, ln in enumerate(lines) if ln.strip()):
            drop = set()
        return [i not in drop for i in range(len(lines))]

    def clean(self, page: str) -> str:
        lines = page.splitlines()
        at = self.pages.index(page) if page in self.pages else None
        return "\n".join(ln for ln, k in zip(lines, self.keep_mask(lines, at)) if k).strip()
