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

    def to_json(self) -> dict:
        return {"pages": list(self.pages), "headings": [list(h) for h in self.headings]}

    @classmethod
    def from_json(cls, d: dict | None) -> "Layout":
        if not d:
            return cls()
        return cls(tuple(d.get("pages") or ()),
                   tuple((int(o), int(lv), str(t)) for o, lv, t in d.get("headings") or ()))

    def __bool__(self) -> bool:
        return bool(self.pages or self.headings)


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


def source_place(pages, headings, first_pass: bool = False) -> str:
    """The place of a source as its line shows it: :func:`place_label`, then ``first pass (refining)`` when the
    passage comes from a document whose LM refinement has not replaced its quick first-pass chunks yet.

    >>> source_place([4, 4], ["Fees"], True)
    'p. 4 · Fees · first pass (refining)'
    """
    return " · ".join(x for x in (place_label(pages, headings), FIRST_PASS_NOTE if first_pass else "") if x)


def place_label(pages, headings) -> str:
    """``p. 4–5 · Section › Subsection`` from a passage's ``pages`` [first, last] and heading path (either may be
    missing; "" when both are)."""
    parts = []
    if pages:
        parts.append(f"p. {pages[0]}" if pages[0] == pages[-1] else f"p. {pages[0]}–{pages[-1]}")
    if headings:
        parts.append(" › ".join(headings[-3:]))
    return " · ".join(parts)


def cite_label(layout: Layout, start: int, end: int) -> str:
    """The :func:`place_label` of the span ``[start, end)``."""
    return place_label(page_span(layout, start, end), heading_path(layout, start))


def chunk_meta(layout: Layout, start: int, end: int) -> dict:
    """The payload fields of a chunk: ``pages`` [first, last] and ``headings`` (the path at its start)."""
    out: dict = {}
    span = page_span(layout, start, end)
    if span:
        out["pages"] = list(span)
    path = heading_path(layout, start)
    if path:
        out["headings"] = path
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
_EDGE_LINES = 2  # lines at the top and at the bottom of a page that may be a running header or footer


def _norm(line: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"\d+", "#", line)).strip().lower()


@dataclass
class PageCleaner:
    """Removes running headers and footers from the pages of one PDF: a line among the first or last
    ``_EDGE_LINES`` of a page that recurs (digits ignored) on at least half of the pages (and on 3 or more), and
    bare page numbers ("5", "Page 5", "- 5 -", "5 of 12") at a page's edge."""

    pages: list[str]
    repeated: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        counts: Counter = Counter()
        for page in self.pages:
            lines = [ln for ln in page.splitlines() if ln.strip()]
            edge = {_norm(ln) for ln in lines[:_EDGE_LINES] + lines[-_EDGE_LINES:]}
            counts.update(edge)
        need = max(3, (len(self.pages) + 1) // 2)
        self.repeated = {k for k, n in counts.items() if n >= need and k}

    def clean(self, page: str) -> str:
        lines = page.splitlines()
        idx = [i for i, ln in enumerate(lines) if ln.strip()]
        edge = set(idx[:_EDGE_LINES] + idx[-_EDGE_LINES:])
        keep = [ln for i, ln in enumerate(lines)
                if not (i in edge and (_norm(ln) in self.repeated or _PAGE_NUMBER.match(ln)))]
        return "\n".join(keep).strip()
