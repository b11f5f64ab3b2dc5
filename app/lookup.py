"""The row of a statement that the search did not bring: a figure question looked up in its documents' tables.

On the filings dev set the answer to a figure question was missing from the retrieved passages for 39 of 119
questions, most of them a statement line ("Net cash from operations 23,198 24,540", "Gross profit 13,400 …") of a
document the passages did come from: a statement page embeds as a list of numbers, close to no question, and a
keyword search over the whole library ranks the notes that repeat the words above it. The reader can tell such a row
from its label, so the answer step reads the tables of the documents the retrieved passages come from (at most
two, the first ones) and, when a row covers the question's key terms better than every retrieved cell, adds the
lines around it as one more numbered source, with its page: the reader then weighs it like any other passage, and
the citation opens the statement itself.

Only documents the search already returned are read (the reader may see them); each document's rows are parsed
once and kept for the next question (the 16 latest documents).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import replace
from types import SimpleNamespace

from app import reader

MIN_ROW_COVERAGE = 0.75  # the row label (with its group: "AWS: Net sales") holds this share of the key terms
# ... and its label says little else (this share of its content words are the question's): "Employee severance and
# benefit arrangements" is no answer to "how many employees", "Cost of revenue" none to "what was the revenue"
MIN_LABEL_PRECISION = 0.6
MAX_DOCS = 2  # documents read: those of the first retrieved passages
LATER_DOCUMENT = 0.9  # a row of the second document is worth this much of the same row in the first
AROUND_CHARS = (900, 300)  # the looked-up source: this much of the document before and after the row


class RowIndex:
    """Every table cell of a document (Markdown tables and statements printed as lines), by content hash; the
    16 latest documents are kept (the answer step is shared by the server's threads)."""

    def __init__(self, text_of: Callable[[str], str | None], size: int = 16):
        self.text_of = text_of
        self.size = size
        self._cells: OrderedDict[str, tuple[str, list[reader.Cell]]] = OrderedDict()
        self._lock = threading.Lock()

    def cells(self, doc_hash: str) -> tuple[str, list[reader.Cell]]:
        with self._lock:
            if doc_hash in self._cells:
                self._cells.move_to_end(doc_hash)
                return self._cells[doc_hash]
        try:
            text = self.text_of(doc_hash) or ""
        except Exception:  # the document is gone (deleted meanwhile): nothing to look up
            text = ""
        whole = SimpleNamespace(text=text, start=0, rank=0)
        got = (text, reader.cells_of([whole]) if text else [])
        with self._lock:
            self._cells[doc_hash] = got
            while len(self._cells) > self.size:
                self._cells.popitem(last=False)
        return got


def looked_up(question: str, sources: Sequence, index: RowIndex, history: Sequence[dict] = (),
              known_names: set[str] = frozenset(), limit: int = 1) -> list:
    """Up to ``limit`` extra sources for a figure ``question``: the lines around the best-covering row of the
    tables of the documents of ``sources`` (numbered after them), when no retrieved cell covers the question's
    key terms as well and the row is not inside a retrieved passage already. ``known_names``: name words of the
    documents (their registrants: "Amazon" says which document, "AWS" which row), as the reader takes them."""
    f = reader.frame(question)
    prev = reader._previous(history) if history else None
    terms, _ = reader._key_terms(question, f, prev, set(known_names))
    if not (f.numeric and terms):
        return []
    docs: list = []
    for s in sources:
        key = (getattr(s, "doc_id", ""), getattr(s, "doc_hash", ""))
        if key[1] and key not in docs:
            docs.append(key)
    read = [(doc_id, doc_hash, *index.cells(doc_hash)) for doc_id, doc_hash in docs[:MAX_DOCS]]
    everything = [c for *_, cells in read for c in cells]
    if not everything:
        return []
    weights = reader._weights(terms, [reader._stems(f"{c.row} {c.title}") for c in everything])
    asked = {a for w in reader.words_of(f.question) for a in reader._alts(w)}
    both = set(f.years) if f.change and len(set(f.years)) >= 2 else set()

    def good(cells, rank: int = 0):
        """(score, label precision, cell) of the cells that answer well enough; a later document's a little lower
        (the search ranked it below the first). A change between two named years wants a row with both."""
        out = []
        years: dict[int, set[str]] = {}
        for c in cells if both else ():
            years.setdefault(c.start, set()).update(reader._YEAR_RE.findall(c.column))
        for c in reader._score_cells(f, terms, weights, cells, [], None):
            precision = reader.label_precision(c.cell.row, asked, own_only=True)
            row_coverage = reader._coverage(terms, weights, reader._stems(c.cell.row))
            if both and not {str(y) for y in both} <= years.get(c.cell.start, set()):
                continue
            if row_coverage >= MIN_ROW_COVERAGE and c.coverage >= reader.MIN_COVERAGE \
                    and precision >= MIN_LABEL_PRECISION:
                out.append((c.score * LATER_DOCUMENT ** rank, precision, c.cell))
        return out

    found = [(score, precision, doc_id, doc_hash, cell, text) for rank, (doc_id, doc_hash, text, cells)
             in enumerate(read) for score, precision, cell in good(cells, rank)]
    if not found:
        return []
    best_here = max((x[0] for x in good(reader.cells_of(sources))), default=0.0)
    if best_here >= max(x[0] for x in found) - 1e-9:
        return []  # a retrieved row is as good as any looked up
    found.sort(key=lambda x: (-x[0], -x[1]))
    out: list = []
    seen: set = set()
    for _, _, doc_id, doc_hash, cell, text in found:
        if (doc_hash, cell.start) in seen or _inside(sources, doc_id, cell.start, cell.end):
            continue
        seen.add((doc_hash, cell.start))
        start = text.find("\n", max(0, cell.start - AROUND_CHARS[0])) + 1
        start = min(start, cell.start)
        end = text.find("\n", min(len(text), cell.end + AROUND_CHARS[1]))
        end = len(text) if end < 0 else max(end, cell.end)
        like = next(s for s in sources if getattr(s, "doc_hash", "") == doc_hash)
        out.append(_source(like, len(sources) + len(out) + 1, start, end, text[start:end], cell))
        if len(out) >= limit:
            break
    return out


def _inside(sources: Sequence, doc_id: str, start: int, end: int) -> bool:
    return any(getattr(s, "doc_id", "") == doc_id and s.start <= start and end <= s.end for s in sources)


def _source(like, rank: int, start: int, end: int, text: str, cell: reader.Cell):
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
