"""The table rows a search did not bring, as more candidates for a figure question.

A statement page embeds as a list of numbers, close to no question, and a keyword search over a whole library ranks
the notes that repeat a row's words above the row itself: on the filings dev set the answer to a figure question was
missing from the retrieved passages for 39 of 119 questions, most of them a statement line of a document the
passages did come from. So for a figure question the answer step also reads the tables of the documents the first
retrieved passages come from (at most :data:`MAX_DOCS`) and adds the :data:`MAX_ROWS` rows whose labels hold most of
the question's key terms (idf-weighted) as candidates, each with the lines around it as its source. Whether one of
them answers is the fitted scorer's decision (:mod:`app.reader`), as for any candidate: this module only widens
what it looks at, and a row it adds is cited only when it is the answer.

Only documents the search already returned are read (the reader may see them); each document's rows are parsed
once and kept for the next question (the 16 latest documents).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import replace
from types import SimpleNamespace

from app.cells import Cell, cells_of
from app.features import coverage, idf, stems
from app.question import Question

MAX_DOCS = 2  # documents read: those of the first retrieved passages
MAX_ROWS = 3  # rows added as candidates: the candidate budget of a lookup
AROUND_CHARS = (900, 300)  # a looked-up row's source: this much of the document before and after the row


class RowIndex:
    """Every table cell of a document (Markdown tables and statements printed as lines), by content hash; the
    16 latest documents are kept (the answer step is shared by the server's threads)."""

    def __init__(self, text_of: Callable[[str], str | None], size: int = 16):
        self.text_of = text_of
        self.size = size
        self._cells: OrderedDict[str, tuple[str, list[Cell]]] = OrderedDict()
        self._lock = threading.Lock()

    def cells(self, doc_hash: str) -> tuple[str, list[Cell]]:
        with self._lock:
            if doc_hash in self._cells:
                self._cells.move_to_end(doc_hash)
                return self._cells[doc_hash]
        try:
            text = self.text_of(doc_hash) or ""
        except Exception:  # the document is gone (deleted meanwhile): nothing to look up
            text = ""
        whole = SimpleNamespace(text=text, start=0, rank=0)
        got = (text, cells_of([whole]) if text else [])
        with self._lock:
            self._cells[doc_hash] = got
            while len(self._cells) > self.size:
                self._cells.popitem(last=False)
        return got


def rows_for(q: Question, sources: Sequence, index: RowIndex) -> list[tuple[Cell, object]]:
    """(cell, source) pairs of the rows looked up for ``q`` (see the module doc): each cell renumbered to its new
    source, numbered after ``sources``; [] for a question that asks no figure or has no key terms."""
    if not (q.numeric and q.terms):
        return []
    docs: list[tuple[str, str]] = []
    for s in sources:
        key = (getattr(s, "doc_id", ""), getattr(s, "doc_hash", ""))
        if key[1] and key not in docs:
            docs.append(key)
    rows: dict[tuple[str, int], list[Cell]] = {}
    texts: dict[str, str] = {}
    for doc_id, doc_hash in docs[:MAX_DOCS]:
        text, cells = index.cells(doc_hash)
        texts[doc_hash] = text
        for c in cells:
            if not _inside(sources, doc_id, c.start, c.end):
                rows.setdefault((doc_hash, c.start), []).append(c)
    if not rows:
        return []
    labels = {k: stems(f"{cs[0].row} {cs[0].title}") for k, cs in rows.items()}
    weights = idf(q.terms, list(labels.values()))
    if not sum(weights.values()):
        return []

    def covered(k) -> float:
        return coverage(q.terms, weights, labels[k])

    best = sorted((k for k in rows if covered(k) > 0), key=lambda k: (-covered(k), k[1]))[:MAX_ROWS]
    out: list[tuple[Cell, object]] = []
    for i, (doc_hash, start) in enumerate(best):
        cells = rows[(doc_hash, start)]
        text = texts[doc_hash]
        like = next(s for s in sources if getattr(s, "doc_hash", "") == doc_hash)
        rank = len(sources) + i + 1
        c0 = cells[0]
        s0 = text.find("\n", max(0, c0.start - AROUND_CHARS[0])) + 1
        s0 = min(s0, c0.start)
        e0 = text.find("\n", min(len(text), c0.end + AROUND_CHARS[1]))
        e0 = len(text) if e0 < 0 else max(e0, c0.end)
        src = _source(like, rank, s0, e0, text[s0:e0], c0)
        out += [(replace(c, source=rank), src) for c in cells]
    return out


def _inside(sources: Sequence, doc_id: str, start: int, end: int) -> bool:
    return any(getattr(s, "doc_id", "") == doc_id and s.start <= start and end <= s.end for s in sources)


def _source(like, rank: int, start: int, end: int, text: str, cell: Cell):
    """A source like ``like`` (a retrieved passage of the same document: its name, hash, unit), for the document
    span [start, end) that holds ``cell``'s row."""
    fields = dict(rank=rank, parent_id=f"lookup:{like.doc_hash}:{start}", start=start, end=end, text=text,
                  score=0.0, matched_level=0, matched_start=cell.start, matched_end=cell.end,
                  matched_text=cell.quote or text[cell.start - start: cell.end - start], pages=None, headings=[],
                  matched_pages=None, blocks=[], level_scores={}, bm25_level_scores={})
    try:
        return replace(like, **fields)
    except TypeError:  # not a dataclass (a test's stand-in): a plain namespace with the same fields
        return SimpleNamespace(**{**vars(like), **fields})
