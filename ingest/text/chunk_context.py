"""What a chunk's vector and keywords are computed from: the chunk's own text, preceded by where it sits.

MiniLM reads each chunk alone: a row "| Total net sales | 81,797 | 82,959 |" looks the same in every 10-Q, and a
"Legal Proceedings" paragraph does not say whose it is. :func:`context_line` gives the chunk the document's title,
the heading path in force where it starts (the layout's headings, else headings found in plain text by
:func:`text_headings`: "Item 2. …", "PART II", "ARTICLE V", "Section 5.1 …", Markdown) and, for a chunk that starts
inside a table, the table's caption and header row. What is shown, quoted and cited stays the document's own text
(``chunk.text``); only the embedded and keyword-indexed text (:func:`indexed_text`) carries the context.

>>> doc = ("Item 2. Results\\n\\nNet sales\\n\\n| | 2023 | 2022 |\\n|---|---|---|\\n"
...        "| Total net sales | 81,797 | 82,959 |\\n")
>>> start = doc.index("| Total")
>>> context_line("Apple 10-Q", doc, start, text_headings(doc))
'Apple 10-Q › Item 2. Results\\nNet sales | | 2023 | 2022 |'
"""
from __future__ import annotations

import re

from ingest.readers.layout import Layout, heading_path

# a heading standing alone on its line: numbered parts of filings, contracts and reports, or Markdown
_NUMBERED = re.compile(
    r"^\s*(?:#{1,6}\s+\S.*|(?:PART|Part)\s+[IVX\d]+\b.*|(?:ITEM|Item)\s+\d{1,2}[A-C]?\.?(?:\s.*)?"
    r"|(?:ARTICLE|Article|CHAPTER|Chapter)\s+(?:[IVXL]+|\d{1,3})\b.*|(?:SECTION|Section)\s+\d{1,2}(?:\.\d{1,2})*\.?\s.*)$")
# headings a contract prints inside a paragraph: "ARTICLE IV REPRESENTATIONS   Section 4.12.   Tax Matters. …",
# "1. CONFIDENTIAL INFORMATION. The term …" (after two spaces or a line start, so a cross-reference in a sentence
# — "in accordance with Section 8.1 of this Agreement" — is not one)
_INLINE = re.compile(
    r"(?:(?<=\s\s)|^)(?:(?P<article>ARTICLE\s+[IVXL\d]+\s+[A-Z][A-Z ,;&'’\-]{2,80}?)(?=\s{2,}|\n|$)"
    r"|(?P<section>Section\s+\d{1,2}(?:\.\d{1,2})+\.?\s+[A-Z][\w ,/'’&\-]{1,80}?)\.(?=\s)"
    r"|(?P<clause>\d{1,2}\.\s+[A-Z][A-Z &,;'’\-]{3,60}[A-Z])\.(?=\s))", re.MULTILINE)
_LEVEL = (("#", 0), ("part", 1), ("article", 1), ("chapter", 1), ("item", 2), ("section", 2))
_MAX_HEADING_WORDS = 16
_MAX_CAPTION_WORDS = 25
_MAX_CONTEXT_CHARS = 400


def text_headings(text: str) -> tuple[tuple[int, int, str], ...]:
    """``(offset, level, title)`` of the lines of ``text`` that are headings by their shape alone: a short line,
    its own paragraph (a blank line or the text's edge on both sides), starting "PART", "ARTICLE", "CHAPTER"
    (level 1), "Item 7A.", "Section 5.1" (level 2), or Markdown ``#`` (its own level); and the headings a contract
    prints inside its paragraphs (``_INLINE``).

    >>> doc = "of the Company.  ARTICLE V TERMS   Section 5.1.  Fees. Pay as in Section 4.2 here."
    >>> [t for _, _, t in text_headings(doc)]
    ['ARTICLE V TERMS', 'Section 5.1. Fees']
    """
    out = []
    lines = text.split("\n")
    offset = 0
    for i, line in enumerate(lines):
        body = line.strip()
        alone = (i == 0 or not lines[i - 1].strip()) and (i + 1 == len(lines) or not lines[i + 1].strip())
        if body and alone and len(body.split()) <= _MAX_HEADING_WORDS and _NUMBERED.match(body):
            out.append((offset + len(line) - len(line.lstrip()), _level(body), body.lstrip("#").strip()))
        offset += len(line) + 1
    seen = {o for o, _, _ in out}
    for m in _INLINE.finditer(text):
        if m.start() not in seen and not any(o <= m.start() < o + len(t) + 2 for o, _, t in out):
            kind = m.lastgroup
            out.append((m.start(), 1 if kind == "article" else 2, re.sub(r"\s+", " ", m.group(kind)).strip()))
    return tuple(sorted(out))


def _level(body: str) -> int:
    if body.startswith("#"):
        return len(body) - len(body.lstrip("#"))
    word = body.split()[0].lower()
    return next(lv for key, lv in _LEVEL if word.startswith(key))


def _table_context(text: str, start: int) -> str:
    """The caption line above the table and its header row, when ``start`` lies in a Markdown table's body."""
    line_start = text.rfind("\n", 0, start) + 1
    if not text.startswith("|", line_start):
        return ""
    top = line_start
    while top > 0:
        prev = text.rfind("\n", 0, top - 1) + 1
        if not text.startswith("|", prev):
            break
        top = prev
    if top == line_start:  # the chunk starts at the header row itself
        header = ""
    else:
        header = text[top:text.find("\n", top) if "\n" in text[top:] else len(text)].strip()
    caption = ""
    above = text[max(0, top - 2000):top].rstrip().rsplit("\n", 1)[-1].strip()
    if above and not above.startswith("|") and len(above.split()) <= _MAX_CAPTION_WORDS:
        caption = above
    return " ".join(p for p in (caption, header) if p)


def context_line(title: str, text: str, start: int, headings=(), path: list[str] | None = None) -> str:
    """The context of the chunk starting at ``start`` of ``text``: "title › heading path", then the table's caption
    and header row when the chunk starts inside a table body (at most 400 characters). ``path``: the heading path at
    ``start`` when the caller has it (:func:`paths_at`), else it is read from ``headings``."""
    if path is None:
        path = heading_path(Layout(headings=tuple(headings)), start) if headings else []
    first = " › ".join(p for p in [title.strip(), *path] if p)
    table = _table_context(text, start)
    out = "\n".join(p for p in (first, table) if p)
    return out[:_MAX_CONTEXT_CHARS]


def indexed_text(context: str, chunk_text: str) -> str:
    """What is embedded and keyword-indexed for a chunk: its context line, then its own text."""
    return f"{context}\n{chunk_text}" if context else chunk_text


def title_of(doc_id: str) -> str:
    """A document's title from its name: the file name without its extension, "_" and "-" read as spaces."""
    stem = doc_id.rsplit("/", 1)[-1]
    stem = stem.rsplit(".", 1)[0] if "." in stem[1:] else stem
    return re.sub(r"[_\s]+", " ", stem).strip()


def headings_for(text: str, layout_headings=()) -> tuple[tuple[int, int, str], ...]:
    """The layout's headings where the reader found some (Markdown, HTML, DOCX, a PDF outline), else the ones
    :func:`text_headings` finds in the text."""
    return tuple(layout_headings) if layout_headings else text_headings(text)



# -- the index's record: a generation built with contextual text says so in its parameters ------------------------
CONTEXT_KEY = "chunk_context"
CONTEXT_RULE = "title+headings+table"


def generation_params(settings) -> dict:
    """What a new index generation records of the settings' ``chunk_context`` (nothing when it is off, so an index
    built before the setting existed reads as built without it)."""
    return {CONTEXT_KEY: CONTEXT_RULE} if settings.chunk_context else {}


def uses_context(params: dict | None) -> bool:
    """Whether the generation with these recorded parameters embeds and indexes contextual text."""
    return bool((params or {}).get(CONTEXT_KEY))


def chunker_params(params: dict | None) -> dict:
    """The recorded parameters without the context's record: what the chunker's ``describe()`` gives."""
    return {k: v for k, v in (params or {}).items() if k != CONTEXT_KEY}


def chunk_contexts(text: str, doc_id: str, layout: dict | None, starts) -> list[str]:
    """The context line of every chunk starting at ``starts`` of a document: its title from ``doc_id``, its headings
    from the reader's ``layout`` (JSON) or, where the reader found none, from the text."""
    starts = list(starts)
    paths = paths_at(headings_for(text, Layout.from_json(layout).headings), starts)
    title = title_of(doc_id)
    return [context_line(title, text, s, path=paths[s]) for s in starts]


def paths_at(headings, starts) -> dict[int, list[str]]:
    """The heading path (as :func:`ingest.readers.layout.heading_path` gives it) at each offset of ``starts``, in one
    sweep over the headings rather than one per chunk (a long PDF's outline times its thousands of chunks).

    >>> paths_at(((0, 1, "A"), (10, 2, "B"), (20, 2, "C"), (30, 1, "D")), [5, 15, 25, 35])
    {5: ['A'], 15: ['A', 'B'], 25: ['A', 'C'], 35: ['D']}
    """
    heads = list(headings)  # sorted by offset, as the layout and text_headings give them
    out, stack, i = {}, [], 0
    for s in sorted(set(starts)):
        while i < len(heads) and heads[i][0] <= s:
            _, level, title = heads[i]
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            i += 1
        out[s] = [t for _, t in stack]
    return out
