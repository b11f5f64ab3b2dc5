"""Tables as text: every extractor (PDF, DOCX, HTML, PPTX, XLSX, CSV) writes a table as Markdown, one row a line,
so a table is read, chunked, embedded, quoted and shown as a table.

* :func:`markdown_tables` renders a header and rows as one or more Markdown tables: a long table is split by rows
  into groups of at most ``max_words`` words, **each with the header repeated**, so every chunk that holds part of a
  table knows what its columns are. A row is never cut.
* :func:`table_lines` finds the table lines of a text (a line that starts and ends with ``|``); the sentence
  splitter keeps a table group whole as one unit for the chunkers, or one unit per row for answering
  (:func:`ingest.text.sentences.split_sentences`).
* :func:`row_quote` renders a table row with its column headers ("Total net sales — Three Months Ended July 1, 2023:
  81,797; …"): what an answer quotes for a question about a figure.

>>> print("\\n".join(markdown_tables(["", "2023", "2022"], [["Revenue", "10", "9"], ["Cost", "4", "3"]])))
| | 2023 | 2022 |
|---|---|---|
| Revenue | 10 | 9 |
| Cost | 4 | 3 |
>>> t = markdown_tables(["", "2023", "2022"], [["Revenue", "10", "9"], ["Cost", "4", "3"]])[0]
>>> row_quote(t, t.index("| Cost"), len(t))
'Cost — 2023: 4; 2022: 3'
"""
from __future__ import annotations

import re

from ingest.text.words import count_words

_TABLE_LINE_RE = re.compile(r"[ \t]*\|.*\|[ \t]*$")
_SEPARATOR_RE = re.compile(r"[ \t]*\|(?:[ \t]*:?-{3,}:?[ \t]*\|)+[ \t]*$")
_NUMBER_RE = re.compile(r"^[($€£¥-]*\s*\d[\d,.]*\s*%?\)?$")


def cell_text(value) -> str:
    """A cell's text on one line, with ``|`` escaped (a cell never breaks the table)."""
    if value is None:
        return ""
    return " ".join(str(value).split()).replace("|", "\\|")


def _row(cells) -> str:
    return "|" + "|".join(f" {c} " if c else " " for c in cells) + "|"


def is_number(cell: str) -> bool:
    """``"81,797"``, ``"(265)"``, ``"$ 1.27"``, ``"12%"`` …

    >>> is_number("(265)"), is_number("$ 1.27"), is_number("Total")
    (True, True, False)
    """
    return bool(_NUMBER_RE.match(cell.replace("$", "").strip())) if cell.strip() else False


def looks_like_header(row: list[str]) -> bool:
    """Could ``row`` be a table's header: two or more cells, none a figure (a year is a column name).

    >>> looks_like_header(["Segment", "2023", "2022"]), looks_like_header(["Widgets", "4,210", "3,980"])
    (True, False)
    """
    cells = [c for c in row if c.strip()]
    return len(cells) >= 2 and not any(is_number(c) and not re.fullmatch(r"(19|20)\d\d", c.strip()) for c in cells)


def tidy(rows: list[list], keep_columns: list[int] | None = None) -> list[list[str]]:
    """Rows of cells as text: a currency sign alone in a cell takes the value of the next cell (which is then
    empty), columns empty in every row and rows empty in every column are dropped, rows padded to one width.
    ``keep_columns``, when given, receives the indexes of the columns kept."""
    out = []
    for r in rows:
        cells = [cell_text(c) for c in r]
        for j in range(len(cells) - 1):
            if cells[j] in ("$", "€", "£", "¥") and cells[j + 1]:
                cells[j], cells[j + 1] = f"{cells[j]} {cells[j + 1]}", ""
            elif cells[j + 1] == "%" and cells[j]:
                cells[j], cells[j + 1] = cells[j] + "%", ""
        out.append(cells)
    width = max((len(r) for r in out), default=0)
    out = [r + [""] * (width - len(r)) for r in out]
    keep = [j for j in range(width) if any(r[j] for r in out)]
    if keep_columns is not None:
        keep_columns[:] = keep
    out = [[r[j] for j in keep] for r in out]
    return [r for r in out if any(r)]


TABLE_WORDS = 75  # the default θ/4: a quarter-level child holds a whole group, header included


def markdown_tables(header: list[str], rows: list[list[str]], max_words: int = TABLE_WORDS) -> list[str]:
    """``header`` and ``rows`` as Markdown tables of at most ``max_words`` words each (words as the chunkers count
    them, ``|`` included; a single row over the bound is a group of its own), the header repeated at the top of
    each; cells are :func:`cell_text`."""
    width = max([len(header)] + [len(r) for r in rows]) if (header or rows) else 0
    if width == 0:
        return []
    head = [cell_text(c) for c in header] + [""] * (width - len(header))
    head_lines = [_row(head), "|" + "---|" * width]
    head_words = count_words(head_lines[0]) + 1
    groups: list[list[str]] = []
    words = head_words
    for r in rows:
        cells = [cell_text(c) for c in r] + [""] * (width - len(r))
        line = _row(cells)
        n = count_words(line)
        if not groups or (words + n > max_words and len(groups[-1]) > 0):
            groups.append([])
            words = head_words
        groups[-1].append(line)
        words += n
    return ["\n".join(head_lines + g) for g in groups] or ["\n".join(head_lines)]


def is_table_line(line: str) -> bool:
    return bool(_TABLE_LINE_RE.match(line))


def is_separator(line: str) -> bool:
    return bool(_SEPARATOR_RE.match(line))


def table_lines(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int, int]]:
    """``(line start, line end, kind)`` of the table lines in ``text[start:end]``; kind 0: a row, 1: a header row
    (the line before a separator), 2: the separator line."""
    end = len(text) if end is None else end
    if "|" not in text[start:end]:
        return []
    out: list[tuple[int, int, int]] = []
    pos = start
    while pos < end:
        nl = text.find("\n", pos, end)
        stop = end if nl == -1 else nl
        line = text[pos:stop]
        if line.lstrip().startswith("|") and is_table_line(line):
            if is_separator(line):
                if out and out[-1][1] + 1 == pos and out[-1][2] == 0:
                    out[-1] = (out[-1][0], out[-1][1], 1)
                out.append((pos, stop, 2))
            else:
                out.append((pos, stop, 0))
        pos = stop + 1
    return out


def table_groups(lines: list[tuple[int, int, int]]) -> list[tuple[int, int]]:
    """The spans of the runs of adjacent table lines (:func:`table_lines`): one Markdown table each."""
    out: list[list[int]] = []
    for s, e, _ in lines:
        if out and out[-1][1] + 1 == s:
            out[-1][1] = e
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def split_cells(line: str) -> list[str]:
    """The cells of a Markdown table line (``\\|`` inside a cell kept)."""
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", body)]


def header_of(text: str, row_start: int) -> list[str] | None:
    """The header cells of the Markdown table whose row starts at ``row_start`` (None when the row is not in a
    table with a header)."""
    pos = row_start
    while pos > 0:
        prev_end = pos - 1  # the "\n" before this line
        prev_start = text.rfind("\n", 0, prev_end) + 1
        line = text[prev_start:prev_end]
        if not is_table_line(line):
            return None
        if is_separator(line):
            head_end = prev_start - 1
            if head_end < 0:
                return None
            head_start = text.rfind("\n", 0, head_end) + 1
            head = text[head_start:head_end]
            return split_cells(head) if is_table_line(head) else None
        pos = prev_start
    return None


def row_quote(text: str, start: int, end: int) -> str:
    """The row ``text[start:end]`` of a Markdown table as a readable line with its column headers ("Label —
    Column: value; …"); cells without a header are joined as they are. A line that is not a table row is returned
    as it is (whitespace collapsed)."""
    line = text[start:end].strip()
    if not is_table_line(line) or is_separator(line):
        return " ".join(line.split())
    cells = split_cells(line)
    head = header_of(text, start + (len(text[start:end]) - len(text[start:end].lstrip())))
    label, values, heads = cells[0], cells[1:], (head or [])[1:]
    parts = []
    for j, v in enumerate(values):
        if not v:
            continue
        h = heads[j] if j < len(heads) else ""
        parts.append(f"{h}: {v}" if h else v)
    if not parts:
        return label
    return f"{label} — " + "; ".join(parts) if label else "; ".join(parts)


def is_header_row(text: str, start: int, end: int) -> bool:
    """Is ``text[start:end]`` a table's header row or separator, or both (never an answer on its own)?"""
    line = text[start:end].strip()
    if "\n" in line:
        first, _, rest = line.partition("\n")
        return is_table_line(first) and is_separator(rest.strip())
    if not is_table_line(line):
        return False
    if is_separator(line):
        return True
    nxt = text.find("\n", end)
    if nxt == -1:
        return False
    stop = text.find("\n", nxt + 1)
    return is_separator(text[nxt + 1: len(text) if stop == -1 else stop])
