"""What could answer a question: the sentences and table cells of the retrieved passages, and the rows the table
lookup adds, each with the words around it that say what it is about; and the answer span inside one.

A **sentence** candidate is a sentence of a passage (:func:`app.grounding.source_sentences`: headings and title lines
are not, nor a document's orders to an AI); its context is the passage's heading path and the sentence before it. A
**window** candidate is two such sentences that follow each other in one passage, quoted together: an answer often
sits in the sentence after the one that matches the question's words ("Which port to listen on." / "Default:
6432"), and which of the two, or both, to quote is the scorer's decision like any other. A
**cell** candidate is one figure of a table (:mod:`app.cells`): row label, column (the period), table title and unit;
a table row that gives cells is read as its cells, not as a sentence. No candidate is refused for its words: which
one answers is the fitted scorer's decision (:mod:`app.scorer`), from the features of :mod:`app.features`.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from app.cells import Cell, cells_of, parse_number
from app.grounding import source_sentences
from app.question import DATE_RE, YEAR_RE, Question, lexicon


@dataclass
class Candidate:
    """One possible answer: a ``sentence`` or a ``cell``, from passage number ``source`` at document offsets
    ``start``–``end``; ``text`` is what is quoted (the sentence, or the cell's row with its headers), ``context`` the
    words around it that say what it is about (headings; the table's title, row and column)."""

    kind: str
    source: int
    doc_id: str
    start: int
    end: int
    text: str
    context: str = ""
    cell: Cell | None = None
    looked_up: bool = False
    features: dict[str, float] = field(default_factory=dict)
    score: float = 0.0  # the scorer's probability that it answers

    @property
    def line(self) -> str:
        """The answer line: a cell as "Row, Column: value", a sentence as itself."""
        return cell_line(self.cell) if self.cell is not None else self.text

    @property
    def about(self) -> str:
        """The text its similarity to the question is measured on: the sentence, or the cell's row quoted with its
        column headers (every cell of a row shares it; the period is the period features' to judge)."""
        return self.text


def fmt_value(c: Cell) -> str:
    v = c.value.strip()
    n = c.number
    money = c.unit and not v.endswith("%") and n is not None and "per share" not in c.row.lower()
    unit = c.unit.rstrip("s")
    if money:
        return f"${v.lstrip('$ ')} {unit}" if not v.startswith("(") else f"{v} ({unit})"
    return v


def cell_line(c: Cell) -> str:
    col = f", {c.column}" if c.column else ""
    return f"{c.row}{col}: {fmt_value(c)}"


def decimals(value: str) -> int:
    """The decimal places a printed figure gives ("1,304.9" 1, "(9,819)" 0, "12.50%" 2).

    >>> decimals("1,304.9"), decimals("(9,819)"), decimals("12.50%")
    (1, 0, 2)
    """
    m = re.search(r"\d[\d,]*\.(\d+)", value)
    return len(m.group(1)) if m else 0


def change_line(a: Cell, b: Cell) -> str:
    """Both figures of one row and the difference between them, given to the places its figures are printed with
    (1,578 and 1,304.9 differ by 273.1, not 273.10; 81,797 and 82,959 by 1,162): "… 81,797 vs 82,959: 1,162 lower
    (−1.4%)"."""
    x, y = a.number, b.number
    diff = x - y
    pct = f" ({diff / abs(y):+.1%})" if y else ""
    word = "higher" if diff > 0 else "lower" if diff < 0 else "unchanged"
    unit = f" {a.unit}" if a.unit else ""
    places = max(decimals(a.value), decimals(b.value))
    return (f"{a.row}: {a.value.strip()} ({a.column}) vs {b.value.strip()} ({b.column}): "
            f"{abs(diff):,.{places}f}{unit} {word}{pct}")


def candidates(q: Question, sources: Sequence, doc_text: Callable[[object], str | None] | None = None,
               extra_cells: Sequence[tuple[Cell, object]] = ()) -> list[Candidate]:
    """Every sentence and cell of ``sources`` (numbered passages: ``rank``, ``text``, ``start``, ``doc_id``,
    ``headings``), and ``extra_cells`` ((cell, source) pairs the lookup found outside them)."""
    by_rank = {getattr(s, "rank", 0): s for s in sources}
    cells = cells_of(sources, doc_text)
    as_cells = {(c.source, c.start) for c in cells}
    out: list[Candidate] = []
    sents = source_sentences(sources)
    prev_text: dict[tuple[int, int], str] = {}
    for a, b in zip(sents, sents[1:]):
        if a.source == b.source:
            prev_text[(b.source, b.start)] = a.shown
    windows: list[Candidate] = []
    last: Candidate | None = None
    for s in sents:
        if not s.answerable or (s.quote and (s.source, s.start) in as_cells):
            last = None
            continue
        src = by_rank.get(s.source)
        heads = " › ".join(getattr(src, "headings", None) or [])
        before = prev_text.get((s.source, s.start), "")
        intro = before if before.rstrip().endswith(":") else ""  # "… determines the probable cause to be:"
        cand = Candidate("sentence", s.source, getattr(src, "doc_id", ""), s.start, s.end, s.shown,
                         " ".join(x for x in (heads, intro) if x))
        if last is not None and last.source == cand.source:
            windows.append(Candidate("window", last.source, last.doc_id, last.start, cand.end,
                                     f"{last.text} {cand.text}", last.context))
        out.append(cand)
        last = cand
    out += windows  # after the sentences: a sentence's neighbours in the list stay its neighbours in the passage
    for c in cells:
        src = by_rank.get(c.source)
        out.append(Candidate("cell", c.source, getattr(src, "doc_id", ""), c.start, c.end, c.quote or cell_line(c),
                             " ".join(x for x in (c.title, c.row, c.column) if x), c))
    for c, src in extra_cells:
        out.append(Candidate("cell", c.source, getattr(src, "doc_id", ""), c.start, c.end, c.quote or cell_line(c),
                             " ".join(x for x in (c.title, c.row, c.column) if x), c, looked_up=True))
    return out


_NUMBER = re.compile(r"[$€£]?\s?\(?-?\d[\d,]*(?:\.\d+)?\)?\s?(?:%|percent\b|(?:million|billion|thousand|trillion)\b)?",
                     re.I)


def numbers_in(text: str) -> list[str]:
    """The figures a text gives, years and dates aside ("$452.2 million", "2.5%", "1,234")."""
    plain = DATE_RE.sub(" ", text)
    out = []
    for m in _NUMBER.finditer(plain):
        v = m.group().strip()
        if YEAR_RE.fullmatch(v.strip("$€£ ()")) or parse_number(re.sub(r"[^\d.,()-]", "", v) or "x") is None:
            continue
        out.append(v)
    return out


def words_number(text: str) -> bool:
    """Does ``text`` write a number in words ("three times", "twice")?"""
    return any(w in lexicon()["number_words"] for w in re.findall(r"[a-z]+", text.lower()))


def has_kind(kind: str, text: str) -> bool:
    """Does ``text`` hold an answer of ``kind``: a figure for an amount or a count (in digits or words), a percent,
    a date or a year, a capitalised name, a cause? Any text fits the other kinds."""
    if kind == "percent":
        return bool(re.search(r"\d\s?%|\bpercent\b", text))
    if kind in ("amount", "count", "measure"):
        return any(not re.search(r"%|percent", n, re.I) for n in numbers_in(text)) or words_number(text)
    if kind == "date":
        return bool(DATE_RE.search(text) or YEAR_RE.search(text)
                    or re.search(r"\b(" + "|".join(sorted(lexicon()["months"])) + r")\b", text.lower()))
    if kind == "name":
        return bool(re.search(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+", text.strip()))
    if kind == "explain":
        return any(w in lexicon()["cause_cues"] for w in re.findall(r"[a-z]+", text.lower()))
    return True
