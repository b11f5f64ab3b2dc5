"""A table's figures as **cells** that know their row, column, table title and unit.

:func:`cells_of` reads the Markdown tables of passages (as the readers write every table: "| Net sales | 81,797 |
82,959 |") and statements printed as plain lines ("Gross margin 40,215 34,670" under "Three Months Ended September
30, 2023 2022"). A cell's row label carries its group's ("Net sales: Products"), its column is the period or column
name from the header (or the period lines above a headerless table), and the table's title and unit come from the
lines just above it. A form's fields ("| Flight Time: | 475 hours (Total, all aircraft) |") are cells too.

Pure text processing: the candidates of :mod:`app.candidates` and the row lookup of :mod:`app.lookup` read them.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from app.guard import looks_like_instruction
from app.question import _MONTH_RE
from app.question import YEAR_RE as _YEAR_RE
from ingest.text.tables import header_of, is_number, is_separator, is_table_line, row_quote, split_cells, table_lines

# a row's other word cells that name it (a region, a quarter, a code), at most this many: short, not prose
MAX_ROW_KEYS = 3
_KEY = re.compile(r"(?=.*[A-Za-z0-9])[^.!?]{1,40}")


@dataclass
class Cell:
    """One figure of a table: ``row`` (its label, with its group's: "Cost of sales: Products"), ``column`` (the
    period or column name), ``value`` as printed, where it is (``source`` number and document offsets of its row),
    and the table's ``title`` and ``unit`` when the text above the table gives them."""

    source: int
    start: int
    end: int
    row: str
    column: str
    value: str
    title: str = ""
    unit: str = ""
    quote: str = ""  # the whole row with its column headers, as quoted

    @property
    def number(self) -> float | None:
        return parse_number(self.value)


_NUM_TOKEN = re.compile(r"\(?-?\$?\s?\d[\d,]*(?:\.\d+)?\s?%?\)?|—|-")


def parse_number(value: str) -> float | None:
    """``"$ 1,234"`` → 1234.0, ``"(265)"`` → -265.0, ``"12.5%"`` → 12.5; None for text.

    >>> parse_number("$ 81,797"), parse_number("(265)"), parse_number("12.5 %"), parse_number("n/a")
    (81797.0, -265.0, 12.5, None)
    """
    v = value.replace("$", "").replace(" ", "").strip()
    neg = v.startswith("(") and v.endswith(")")
    v = v.strip("()").rstrip("%")
    if not re.fullmatch(r"-?\d[\d,]*(\.\d+)?", v):
        return None
    n = float(v.replace(",", ""))
    return -n if neg else n


def _unit_of(text: str) -> str:
    m = re.search(r"\(\s*(?:dollars |amounts |\$ )?in (millions|billions|thousands)", text, re.I)
    return m.group(1).lower() if m else ""


def _title_above(text: str, start: int, max_back: int = 1500) -> tuple[str, str]:
    """The table's title and unit: the non-table lines just above the table block that starts at ``start``
    (tables split into groups are one block), at most three, nearest first."""
    pos, lines = start, []
    lo = max(0, start - max_back)
    while pos > lo and len(lines) < 3:
        prev_end = text.rfind("\n", lo, pos)
        if prev_end < 0:
            break
        prev_start = text.rfind("\n", lo, prev_end) + 1
        line = text[prev_start:prev_end].strip()
        pos = prev_start
        if not line or is_table_line(line) or _stacked_head(line):
            continue
        if lines and (len(line.split()) > 30 or line.endswith(".")):
            break  # a paragraph of prose above a heading ("GREATER CHINA") is not the title
        lines.append(line)
    title = " ".join(reversed(lines))
    return title[:200], _unit_of(title)


def _stacked_head(line: str) -> bool:
    """A line of a column header stacked over several lines, its words repeated once per group of columns ("% CHANGE
    % CHANGE", "EXCLUDING EXCLUDING" above "FISCAL 2023 FISCAL 2022 % CHANGE …"): not the table's title.

    >>> _stacked_head("% CHANGE % CHANGE"), _stacked_head("Revenues by segment")
    (True, False)
    """
    words = line.split()
    return any(len(words) % k == 0 and words == words[:len(words) // k] * k for k in (2, 3, 4) if len(words) >= k)


# a form's field holding several figures, each with what it counts: "2319 hours (Total, all aircraft), 2313 hours
# (Total, this make and model)"
_FIELD_PART = re.compile(r"(\d[\d,.]*\s*[A-Za-z]*)\s*\(([^()]+)\)")
_FIELD_PARTS = re.compile(r"\s*\d[\d,.]*\s*[A-Za-z]*\s*\([^()]+\)(?:\s*,\s*\d[\d,.]*\s*[A-Za-z]*\s*\([^()]+\))+\s*")


MAX_BODY_HEAD_ROWS = 3  # header rows a PDF table's reading may leave in its body, at most (a band, a sub-band, years)


def _body_heads(text: str, lines: Sequence[tuple[int, int, int]]) -> tuple[dict[int, list[str]], set[int]]:
    """The column names of the tables whose header row is empty and whose first rows are their header (a PDF table
    read with its labels in the body: "| | | Three months ended September 30, | | | |" over "| | Note | 2024 | 2023 |
    2024 | 2023 |"), by the start of each of their data rows, and the starts of those header rows (not data: a row of
    years is no row of figures, a band label no group). A header row holds words or years and no other figure."""
    names_of: dict[int, list[str]] = {}
    head_rows: set[int] = set()
    for i, (_, _, kind) in enumerate(lines):
        if kind != 2 or i == 0 or lines[i - 1][2] != 1 or any(split_cells(text[lines[i - 1][0]:lines[i - 1][1]])):
            continue
        stack, j = [], i + 1
        while j < len(lines) and len(stack) < MAX_BODY_HEAD_ROWS and lines[j][2] == 0 \
                and lines[j][0] == lines[j - 1][1] + 1 and _header_like(split_cells(text[lines[j][0]:lines[j][1]])):
            stack.append(split_cells(text[lines[j][0]:lines[j][1]]))
            j += 1
        if not stack or j >= len(lines) or lines[j][2] != 0 or lines[j][0] != lines[j - 1][1] + 1:
            continue  # no header in the body, or no row of figures under it
        names = stacked_names(stack)
        head_rows.update(lines[k][0] for k in range(i + 1, j))
        while j < len(lines) and lines[j][2] == 0 and lines[j][0] == lines[j - 1][1] + 1:
            names_of[lines[j][0]] = names
            j += 1
    return names_of, head_rows


def _header_like(cells: Sequence[str]) -> bool:
    return any(c for c in cells[1:]) and all(not c or not is_number(c) or _YEAR_RE.fullmatch(c) for c in cells)


def stacked_names(rows: Sequence[Sequence[str]]) -> list[str]:
    """Column names from header rows stacked top to bottom; a label of an upper row heads the columns under it up
    to the next label of its row, and no further than its group of the bottom row: a group ends where the bottom
    row's names begin again ("2024 2023 2024 2023" is two groups), so "Three months ended" over the first pair
    never names the second (whose own label a PDF's reading may have lost).

    >>> stacked_names([["", "", "Three months ended", "", "", ""], ["", "Note", "2024", "2023", "2024", "2023"]])
    ['', 'Note', 'Three months ended 2024', 'Three months ended 2023', '2024', '2023']
    """
    n = max(len(r) for r in rows)
    bottom = list(rows[-1]) + [""] * (n - len(rows[-1]))
    group, seen, g = [0] * n, set(), 0
    for c in range(n):
        if bottom[c] and bottom[c] in seen:
            g, seen = g + 1, set()
        seen.add(bottom[c])
        group[c] = g
    parts: list[list[str]] = [[] for _ in range(n)]
    for r in rows[:-1]:
        r = list(r) + [""] * (n - len(r))
        for c in range(n):
            if not r[c]:
                continue
            parts[c].append(r[c])
            for d in range(c + 1, n):
                if r[d] or group[d] != group[c]:
                    break
                parts[d].append(r[c])
    return [" ".join([*parts[c], bottom[c]]).strip() for c in range(n)]


def _table_cells(text: str, base: int, source: int, doc_text: str | None = None) -> list[Cell]:
    """The cells of every Markdown table in ``text`` (a passage starting at document offset ``base``)."""
    out: list[Cell] = []
    group, group_at = "", 0
    titles: dict[int, tuple[str, str]] = {}  # a table block's title and unit, read once per block
    heads_above: dict[int, list[str]] = {}  # … and the columns its period lines give, when its header is empty
    block: int | None = None
    block_end = 0
    lines = table_lines(text)
    body_names, body_head_rows = _body_heads(text, lines)
    for s, e, _ in lines:
        line = text[s:e]
        if is_separator(line) or s in body_head_rows:
            continue
        head = header_of(text, s)
        if head is None or split_cells(line) == head:
            continue
        cells = split_cells(line)
        fields = _form_fields(cells)
        if fields:  # a form: "| Flight Time: | 475 hours (Total, all aircraft) | Runway Used: | 090 |"
            quote = row_quote(text, s, e)
            for name, value in fields:
                parts = _FIELD_PART.findall(value) if _FIELD_PARTS.fullmatch(value) else []
                for v, qualifier in parts or [(value, "")]:  # "2313 hours (Total, this make and model), …"
                    out.append(Cell(source, base + s, base + e, _row_name(group, name), qualifier, v, "", "", quote))
            continue
        # the row's label: its first cell of words, past a measure's code ("| 7.02A | Average unit cost … |")
        label = next((c for c in cells if c and not is_number(c) and re.search(r"[A-Za-z]{3}", c)),
                     next((c for c in cells if c and not is_number(c)), ""))
        if not label and cells[0]:  # a row of figures keyed by its first ("| 2012 | 37379 | 4347 |": a year's row)
            label = cells[0]
        values = [(j, c) for j, c in enumerate(cells) if c and is_number(c) and j > 0]
        full = doc_text if doc_text is not None else text
        at = base + s if doc_text is not None else s
        if label and not values:  # a group label ("Net sales:", "AWS")
            group, group_at = label.rstrip(":"), at
            continue
        if not values:
            continue
        if block is None or not _only_tables(full[block_end:at]):  # a new table block: walk back to its start once
            block = _block_start(full, at)
            titles[block] = _title_above(full, block)
            if group_at < block:
                group = ""  # a group of another table ("Rest of Asia Pacific:" above a reconciliation)
        block_end = at + (e - s)
        title, unit = titles[block]
        if block not in heads_above:
            heads_above[block] = _head_above(full, block)
        row = _row_name(group, label)
        # a long table's other word cells identify its row too ("| West | 2023-Q3 | 402 |": West, 2023-Q3)
        keys = [c for c in cells if c and c != label and not is_number(c) and _KEY.fullmatch(c)]
        if keys:
            row = ", ".join([row, *keys[:MAX_ROW_KEYS]])
        if _SUBTOTAL.match(label):
            group = ""  # a total closes its group
        quote = row_quote(text, s, e)
        above = heads_above[block] if len(heads_above[block]) == len(cells) - 1 else []
        for j, v in values:
            col = head[j] if j < len(head) else ""
            if not col.strip() and s in body_names:  # its header read into the table's first rows
                col = body_names[s][j] if j < len(body_names[s]) else ""
            if not col.strip() and above:  # an empty header row under the period lines of a statement
                col = above[j - 1]
            out.append(Cell(source, base + s, base + e, row, col, v, title, unit, quote))
    return out


def _form_fields(cells: Sequence[str]) -> list[tuple[str, str]]:
    """A form's (label, value) pairs: "Label:" and the cell after it; in a row that has those, also a label printed
    without its colon whose value stands past empty cells ("| Lowest Cloud Condition: | Scattered | Visibility | |
    0.7 Miles |"). No pairs: the row is no form."""
    fields = [(j, cells[j].rstrip(": "), cells[j + 1]) for j in range(len(cells) - 1)
              if cells[j].endswith(":") and cells[j + 1] and not cells[j + 1].endswith(":")]
    if not fields:
        return []
    used = {j for j, _, _ in fields} | {j + 1 for j, _, _ in fields}
    for j in range(len(cells) - 2):
        if j in used or not cells[j] or cells[j].endswith(":") or cells[j + 1] or re.search(r"\d", cells[j]):
            continue
        k = next((i for i in range(j + 1, len(cells)) if cells[i]), None)
        if k is not None and k not in used and not cells[k].endswith(":"):
            fields.append((j, cells[j], cells[k]))
            used |= {j, k}
    return [(label, value) for _, label, value in sorted(fields)]


# a statement's subtotal line, its own row and the end of the group above it ("Cash generated by operating activities"
# after the lines of "Changes in operating assets and liabilities:")
_SUBTOTAL = re.compile(r"^(total|net cash|cash (generated|provided|used)|net (increase|decrease))\b", re.I)


def _row_name(group: str, label: str) -> str:
    """A row's label with its group's ("Net sales: Products"); a total, a cash-flow subtotal or a label that repeats
    the group is its own ("Total net sales")."""
    if not group or not label or _SUBTOTAL.match(label) or group.lower() in label.lower():
        return label
    return f"{group}: {label}"


def _only_tables(between: str) -> bool:
    """Whether text between two rows holds only table lines and blank lines (the rows are of one table block)."""
    return all(not ln.strip() or is_table_line(ln) for ln in between.split("\n"))


def _block_start(text: str, pos: int) -> int:
    """The start of the run of table lines (and blank lines between them) that holds ``pos``."""
    start = text.rfind("\n", 0, pos) + 1
    while start > 0:
        prev_start = text.rfind("\n", 0, start - 1) + 1
        line = text[prev_start:start - 1]
        if line.strip() and not is_table_line(line):
            break
        start = prev_start
    return start


# the figures' digits are possessive (``*+``): a run of digits is one figure, never split between two repetitions,
# so a line the pattern does not fit (nine figures where eight at most are read) fails at once instead of trying
# every split of every figure (a 10-K's "TOTAL REVENUES $ 18,353 $ 12,479 …" line took 1.9 s)
_LINE_ROW = re.compile(r"^(?P<label>[A-Za-z][^\n\d$()]*?[A-Za-z:)])\s+(?P<nums>(?:[($-]*+\s?\$?\s?\(?\d[\d,]*+"
                       r"(?:\.\d++)?\)?(?:\s?%)?\s*){2,8})$")
_PERIOD_LINE = re.compile(rf"((?:three|six|nine|twelve) months ended|year ended|as of|quarter ended|\bfiscal\b|"
                          rf"{_MONTH_RE})", re.I)


def _years_head(line: str, prev: str) -> list[str]:
    """The column names a line of two or more years gives ("Three Months Ended September 30, 2023 2022"), with the
    dates of the line above it when it holds only the years ("July 1, June 25," over "2023 2022")."""
    years = _YEAR_RE.findall(line)
    prefix = re.sub(r"\([^)]*\)", " ", _YEAR_RE.split(line)[0]).strip(" ,")  # not "(In Millions) Sep 30,"
    if re.fullmatch(r"[\d\s,]+", line) and _PERIOD_LINE.search(prev):  # "September 30, June 30," / "2023 2023"
        prev = re.sub(r"\([^)]*\)|\b(?:%\s*)?change\b|%", " ", prev, flags=re.I)  # "(In millions) …, Change"
        parts = [p.strip() for p in re.split(r",\s*", prev) if p.strip()]
        if len(parts) == 1:  # "September 30," over "2023 2022": both columns are that date's
            parts = parts * len(years)
        return [(f"{parts[k]}, {y}" if parts[k][-1:].isdigit() else f"{parts[k]} {y}") if k < len(parts) else y
                for k, y in enumerate(years)]
    sep = ", " if re.search(r"\d$", prefix) else " "
    return [f"{prefix}{sep}{y}".strip(" ,") for y in years]


_SPAN_HEAD = re.compile(r"\b(?:three|six|nine|twelve) months ended\b|\b(?:quarter|year) ended\b", re.I)


def _head_above(text: str, start: int) -> list[str]:
    """The columns of a table whose header row is empty, from the period lines printed above it ("Nine Months
    Ended" / "July 1, June 25," / "2023 2022" gives "Nine Months Ended July 1, 2023", "Nine Months Ended June 25,
    2022"); [] when the lines just above name no years."""
    above = [ln.strip() for ln in text[max(0, start - 600):start].split("\n") if ln.strip()][-4:]
    for i in range(len(above) - 1, -1, -1):
        ln = above[i]
        if len(_YEAR_RE.findall(ln)) >= 2 and (_PERIOD_LINE.search(ln) or re.fullmatch(r"[\d\s,]+", ln)):
            prev = above[i - 1] if i else ""
            head = _years_head(ln, prev)
            spans_at = i - 2 if re.fullmatch(r"[\d\s,]+", ln) and _PERIOD_LINE.search(prev) else i - 1
            spans = _SPAN_HEAD.findall(above[spans_at]) if spans_at >= 0 else []
            if spans and len(head) % len(spans) == 0 and not _SPAN_HEAD.search(" ".join(head)):
                per = len(head) // len(spans)
                head = [f"{spans[k // per]} {h}" for k, h in enumerate(head)]
            return head
        if "|" in ln:
            break
    return []


_MERGED_ROWS = re.compile(r"(?<=[\d)])\s+(?=[A-Z][a-z])")


def _line_cells(text: str, base: int, source: int) -> list[Cell]:
    """Statements printed as lines ("Gross margin 40,215 34,670" under "Three Months Ended September 30, 2023
    2022"): each line of a label and two or more figures is a row; its columns are the years of the nearest line
    above (within the block) that holds as many years."""
    out: list[Cell] = []
    lines = [(m.start(), m.end(), m.group()) for m in re.finditer(r"[^\n]+", text)]
    head: list[str] = []
    head_at = -10
    group, title, unit = "", "", ""
    for i, (s, e, line) in enumerate(lines):
        ln = line.strip()
        years = _YEAR_RE.findall(ln)
        if len(years) >= 2 and (_PERIOD_LINE.search(ln) or re.fullmatch(r"[\d\s,]+", ln)):
            head = _years_head(ln, lines[i - 1][2].strip() if i else "")
            head_at, group = i, ""
            t, u = _title_above(text, s, 600)
            title, unit = t, _unit_of(ln) or u or unit  # "(Dollars in millions) FISCAL 2023 FISCAL 2022 …"
            continue
        rows = [_LINE_ROW.match(ln)]
        if not rows[0]:  # an OCR'd page may print two rows on one line ("Cash … $ 5,783 $ 3,389 Marketable …")
            pieces = _MERGED_ROWS.split(ln)
            rows = [_LINE_ROW.match(x) for x in pieces] if len(pieces) > 1 else [None]
        if not all(rows):
            if (ln.endswith(":") and len(ln) < 60) or (head and len(ln) < 40 and re.fullmatch(r"[A-Z][A-Za-z ,&'’()-]+",
                                                                                              ln)):
                group = ln.rstrip(":")  # "Revenue" above "More Personal Computing 13,666 13,332"
            continue
        if i - head_at > 60 or not head:
            continue
        for m in rows:
            nums = [n.strip() for n in re.findall(r"\(?\$?\s?-?\d[\d,]*(?:\.\d+)?\)?(?:\s?%)?", m.group("nums"))]
            nums = [n.replace("$", "").replace(" ", "") for n in nums if n.replace("$", "").strip()]
            if len(nums) > len(head):
                # change columns between or after the periods ("13,666 13,332 3%"; a 10-K's "$ 7,248 $ 7,547 -4 % 4 %
                # $ 8,290 -9 % -13 %" under "FISCAL 2023 FISCAL 2022 % CHANGE … FISCAL 2021 …"): the periods'
                # figures are the ones that are not percentages
                plain = [n for n in nums if not n.endswith("%")]
                nums = plain if len(plain) == len(head) else nums
            if len(nums) != len(head):
                continue
            label = m.group("label").strip()
            row = _row_name(group, label)
            if _SUBTOTAL.match(label):
                group = ""
            quote = m.group().strip()  # the row as printed (its periods are in the answer line): word for word
            for h, v in zip(head, nums):
                out.append(Cell(source, base + s, base + e, row, h, v, title, unit, quote))
    return out


def cells_of(sources: Sequence, doc_text: Callable[[object], str | None] | None = None) -> list[Cell]:
    """Every cell of the passages' tables, Markdown tables and statements printed as lines (never a row that
    holds an order to an AI: :func:`app.guard.looks_like_instruction`)."""
    out: list[Cell] = []
    for src in sources:
        base = getattr(src, "start", 0)
        full = doc_text(src) if doc_text is not None else None
        out += _table_cells(src.text, base, src.rank, full)
        lead = ""
        if full and base > 0 and full[base: base + 200] == src.text[:200]:
            # a statement's period line may be above the passage: read from up to 2,500 characters before it
            cut = full.find("\n", max(0, base - 2500), base)
            lead = full[cut + 1: base] if 0 <= cut < base else ""
        out += [c for c in _line_cells(lead + src.text, base - len(lead), src.rank) if c.start >= base]
    return [c for c in out if not looks_like_instruction(c.quote)]


