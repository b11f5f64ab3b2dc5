"""Sentence segmentation with exact character offsets.

Rule-based, language-light and fast (a 900 kB book segments in well under a second). It handles:

* abbreviations (``Mr.``, ``e.g.``, ``Fig.``, initials such as ``J. R. R.``) and decimals/versions (``3.14``,
  ``v1.2``), which do not end a sentence;
* closing quotes and brackets after the terminal mark (``He said "go."``), which stay with the sentence;
* newlines: a blank line always ends a sentence; a single newline does too, unless the document is
  hard-wrapped prose (most lines 50-100 characters and not ending in punctuation), where it is a space;
* list items and headings (``- item``, ``1. item``, ``# Title``), which start a new sentence; their marker
  stays with the item's text: a line ``1.`` or ``(a)`` alone, or a heading label such as ``Clause 1.`` or
  ``Section IV.``, is joined to the sentence that follows instead of becoming a sentence of its own;
* CJK terminal punctuation (``。！？``), which needs no following space;
* Markdown tables (how every extractor writes a table, :mod:`ingest.text.tables`): a table group is one unit for the
  chunkers (or one unit per row for answering), never cut inside a row;
* a "sentence" longer than ``max_words`` (no punctuation, a 10,000-word run-on) is split on word boundaries
  into pieces of at most ``max_words`` words (CJK characters count as words and split between characters);
* a "word" longer than :data:`MAX_WORD_CHARS` characters (a file of megabytes with no space) counts as several
  words of at most that many characters, and splits between them, so a span of ``max_words`` words is bounded in
  characters too (URLs and hashes fit in one word).

Spans are ``(start, end)`` with ``text[start:end]`` stripped of surrounding whitespace; spans are ordered
and disjoint, and everything between them is whitespace.
"""
from __future__ import annotations

import re
from bisect import bisect_right
from functools import lru_cache

from ingest.text.tables import table_groups, table_lines
from ingest.text.words import _CJK, MAX_WORD_CHARS, count_words, word_spans  # noqa: F401 (the words, re-exported)

ABBREVIATIONS = frozenset(
    """mr mrs ms dr prof sr jr st mt ft vs etc e.g i.e cf al fig figs eq eqs no nos vol vols pp ed eds
    approx dept est inc ltd co corp jan feb mar apr jun jul aug sep sept oct nov dec gen col capt lt sgt
    gov sen rep rev hon u.s u.k a.m p.m ph.d b.a m.a op cit ibid viz resp""".split()
)

_CJK_RE = re.compile(rf"[{_CJK}]")
# A terminal mark, then closing quotes/brackets. ASCII marks need whitespace (or end) after them; CJK marks don't.
_TERMINAL_RE = re.compile(r"(?:[.!?…]+|[。！？]+)[\"'”’»)\]」』）]*")
_LIST_OR_HEADING_RE = re.compile(r"[ \t]*(?:[-*•▪◦‣+]\s|\d{1,3}[.)]\s|[a-zA-Z][.)]\s|#{1,6}\s|>\s)")
_BLANK_LINE_RE = re.compile(r"\n[ \t\r\f\v]*\n")
_INLINE_BULLET_RE = re.compile(r"(?<=[^\s•▪◦‣] )[•▪◦‣](?=\s)")
# A numbering marker: "1.", "2.3.", "(a)", "iv)", "A.", or a bullet. At the start of a line its "." is no sentence end.
_MARKER = r"(?:\(?(?:\d{1,3}(?:\.\d{1,3})*|[a-zA-Z]|[ivxlcdmIVXLCDM]{1,7})[.)]|[-*•▪◦‣+])"
_LINE_MARKER_RE = re.compile(rf"[ \t]*{_MARKER}")
# A span that is only a marker, or a heading label ("Clause 1.", "Section IV.", "Article 3)"): joined to the next.
_LABEL_WORDS = (r"article|art|chapter|ch|clause|section|sec|part|schedule|appendix|annex|annexure|exhibit|"
                r"item|step|rule|paragraph|para|book|lesson|unit|§")
_BARE_MARKER_RE = re.compile(
    rf"(?:{_MARKER}|(?:{_LABEL_WORDS})\s+(?:\d{{1,3}}(?:\.\d{{1,3}})*|[a-zA-Z]|[ivxlcdmIVXLCDM]{{1,7}})[.):]?)",
    re.IGNORECASE)


def is_hard_wrapped(text: str, min_lines: int = 20) -> bool:
    """True when single newlines look like line wrapping rather than breaks (e.g. Project Gutenberg plain text).
    A document is judged on at least ``min_lines`` lines; a passage cut from one (a PDF page's parent holds ~10
    wrapped lines) can be judged on fewer.

    Memoised per text: chunkers ask once per paragraph split, and the answer reads the first 200,000 characters.
    """
    return _hard_wrapped_cached(text, min_lines)


@lru_cache(maxsize=8)
def _hard_wrapped_cached(text: str, min_lines: int) -> bool:
    lines = [ln.rstrip() for ln in text[:200_000].split("\n")]
    lines = [ln for ln in lines if ln.strip()]
    if len(lines) < min_lines:
        return False
    lengths = sorted(len(ln) for ln in lines)
    median = lengths[len(lengths) // 2]
    unterminated = sum(1 for ln in lines if not ln.endswith((".", "!", "?", ":", ";", '"', "”", "’", "'")))
    return 50 <= median <= 100 and unterminated / len(lines) > 0.5


def _is_abbreviation(text: str, dot: int) -> bool:
    """Is the '.' at index ``dot`` the end of an abbreviation or initial rather than of a sentence?"""
    i = dot
    while i > 0 and (text[i - 1].isalpha() or text[i - 1] == "."):
        i -= 1
    token = text[i:dot].lower()
    if not token:
        return False
    if token in ABBREVIATIONS:
        return True
    if len(token) == 1 and text[i].isupper():  # an initial: "J. Smith"
        return True
    if "." in token and all(len(p) <= 2 for p in token.split(".")):  # "u.s", "e.g"
        return True
    return False


def _split_points(text: str, start: int, end: int, newline_breaks: bool) -> list[int]:
    """Indices inside [start, end) where a new sentence begins (may contain duplicates; caller cleans)."""
    cuts: list[int] = []
    for m in _TERMINAL_RE.finditer(text, start, end):
        stop = m.end()
        mark = m.group(0)
        if mark[0] in "。！？":
            cuts.append(stop)
            continue
        if stop < end and not text[stop].isspace():
            continue  # "3.14", "e.g.x", "U.S.A" mid-token
        if mark[0] == "." and len(mark.rstrip("\"'”’»)]")) == 1 and _is_abbreviation(text, m.start()):
            continue  # "Mr. Knightley", "e.g. this", "J. Smith"
        if mark == "." and _closes_line_marker(text, m.start()):
            continue  # "\n1. Data we collect", "\n2.3. Scope": the number belongs to the item
        nxt = _next_visible(text, stop, end)
        if nxt and nxt.islower() and "\n" not in text[stop:stop + 2]:
            continue  # '"Really?" she said.' / 'Well... and then' continue the sentence
        cuts.append(stop)
    # a bullet inside a line starts an item of its own: a PDF's list printed as one line ("…product mix; and
    # • Lower other costs, …"); only round bullets, never "-" or "*" (a minus, an emphasis, a footnote)
    cuts += [m.start() for m in _INLINE_BULLET_RE.finditer(text, start, end)]
    joined: set[int] = set()  # newlines of blank lines inside a sentence: no cut there, even where every newline cuts
    for m in _BLANK_LINE_RE.finditer(text, start, end):
        if _wrapped_across(text, m.start(), m.end(), end):
            joined.update(range(m.start(), m.end()))
        else:
            cuts.append(m.start())
    pos = text.find("\n", start, end)
    while pos != -1:
        nxt = pos + 1
        if pos in joined:
            pos = text.find("\n", nxt, end)
            continue
        if newline_breaks or _LIST_OR_HEADING_RE.match(text, nxt) or _heading_line_before(text, pos):
            cuts.append(pos)
        pos = text.find("\n", nxt, end)
    return cuts


def _wrapped_across(text: str, gap: int, after: int, end: int) -> bool:
    """Is the blank line at [gap, after) inside a sentence: a PDF that puts a blank line after every wrapped line
    ("the pilot crossed the initial\n\napproach fix and descended to 2,300 feet")? The line before ends without a
    sentence mark and the line after starts in lower case (never a table row, a list item or a heading)."""
    before = text[max(0, gap - 200):gap].rstrip()
    nxt = _next_visible(text, after, end)
    if not before or not nxt or not nxt.islower():
        return False
    last_line = before[before.rfind("\n") + 1:]
    return last_line[-1] not in ".!?:;|\"”’)" and not last_line.lstrip().startswith("|") \
        and not _LIST_OR_HEADING_RE.match(text, after) and not _standalone_term(text, after, end)


STANDALONE_WORDS = 3  # a line of at most this many words between blank lines is a term or a title, not a wrapped line


def _standalone_term(text: str, at: int, end: int) -> bool:
    """Is the line at ``at`` a paragraph of its own of a few words without a sentence mark, a blank line after it: a
    setting's name in a reference ("Default: not set" / "listen_port" / "Which port to listen on."), which a wrapped
    line (one that fills the width, or ends its paragraph with a mark) is not?"""
    stop = text.find("\n", at, end)
    line = text[at:stop if stop != -1 else end].strip()
    if not line or len(line.split()) > STANDALONE_WORDS or line[-1] in ".!?:;,\"”’)":
        return False
    return stop == -1 or _BLANK_LINE_RE.match(text, stop) is not None


def _closes_line_marker(text: str, dot: int) -> bool:
    """Is the '.' at ``dot`` the end of a numbering marker that opens its line ("1.", "2.3.", "iv.", "a.")?"""
    lo = max(0, dot - 25)  # a marker is short: look back only that far (a long line would make this quadratic)
    line_start = text.rfind("\n", lo, dot) + 1
    if line_start == 0 and lo > 0:  # no line start within reach
        return False
    if dot - line_start > 24:
        return False
    m = _LINE_MARKER_RE.match(text, line_start)
    return m is not None and m.end() == dot + 1


def _join_markers(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Join each span that is only a list marker or a heading label to the span after it."""
    out: list[tuple[int, int]] = []
    carry: int | None = None
    for s, e in spans:
        if carry is not None:
            s, carry = carry, None
        if e - s <= 40 and _BARE_MARKER_RE.fullmatch(text, s, e):
            carry = s
            continue
        out.append((s, e))
    if carry is not None:  # a marker at the very end stays a span of its own
        out.append((carry, spans[-1][1]))
    return out


def _next_visible(text: str, i: int, end: int) -> str:
    while i < end and text[i].isspace():
        i += 1
    return text[i] if i < end else ""


def _heading_line_before(text: str, nl: int) -> bool:
    """A markdown heading line ends a sentence even in hard-wrapped text."""
    line_start = text.rfind("\n", 0, nl) + 1
    return text.startswith("#", line_start)


_HEADING_SMALL = frozenset("a an and as at by for from in of on or the to with per vs via".split())
_HEADING_NUMBER = re.compile(r"^(?:\d{1,3}(?:\.\d{1,3})*\.?|[IVXLC]{1,6}\.|[A-Z]\.)\s+\S")
_HEADING_LABEL = re.compile(r"^(?:item|part|section|chapter|article|appendix|annex|schedule|note)\s+[\w.]+", re.I)


def is_heading_line(line: str, max_words: int = 12) -> bool:
    """Is ``line`` a heading rather than text: one line of at most ``max_words`` words, no sentence end, and a
    Markdown heading, a numbered or labelled section ("2.1 Results", "Item 3. Legal Proceedings") or words mostly
    capitalised ("Legal Proceedings", "RISK FACTORS")? A table row is none.

    >>> [is_heading_line(x) for x in ("Item 3. Legal Proceedings", "## Setup", "Net sales rose 5%.", "| a | b |",
    ...                                "Results of Operations", "the results were good")]
    [True, True, False, False, True, False]
    """
    t = line.strip()
    if not t or "\n" in t or t.startswith("|"):
        return False
    if t.startswith("#"):
        return True
    words = t.split()
    if len(words) > max_words or t[-1] in ".!?;,:" and not _HEADING_LABEL.match(t):
        return False
    if not re.search(r"[A-Za-z]{2}", t):
        return False
    if _HEADING_NUMBER.match(t) or _HEADING_LABEL.match(t):
        return True
    content = [w for w in re.findall(r"[A-Za-z][A-Za-z'’&-]*", t) if w.lower() not in _HEADING_SMALL]
    return bool(content) and sum(w[0].isupper() for w in content) / len(content) >= 0.75 and t[0].isupper()


def _strip_span(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def split_long(text: str, start: int, end: int, max_words: int) -> list[tuple[int, int]]:
    """Split ``text[start:end]`` into consecutive pieces of at most ``max_words`` words, on word boundaries."""
    words = word_spans(text, start, end)
    if len(words) <= max_words:
        return [(start, end)] if words else []
    pieces = []
    for i in range(0, len(words), max_words):
        group = words[i:i + max_words]
        pieces.append((group[0][0], group[-1][1]))
    return pieces


PASSAGE_MIN_LINES = 4  # a passage of four or more wrapped lines is judged hard-wrapped on its own lines


def _table_cuts(text: str, cuts: list[int], rows: bool) -> tuple[list[int], list[tuple[int, int]]]:
    """``cuts`` with Markdown tables (:mod:`ingest.text.tables`) kept whole: no cut inside a table group (a run of table
    lines), a cut at its start and end, and with ``rows`` one at each row (the header row stays with its separator).
    Also returns the groups' spans."""
    lines = table_lines(text)
    if not lines:
        return cuts, []
    groups = table_groups(lines)
    row_starts = {s for s, _, kind in lines if kind != 2} if rows else set()
    starts = [g[0] for g in groups]
    kept = list(row_starts)
    for c in cuts:
        i = bisect_right(starts, c) - 1
        if i >= 0 and groups[i][0] < c < groups[i][1] and c not in row_starts:
            continue
        kept.append(c)
    for s, e in groups:
        kept += [s, e]
    return kept, groups


def _split_rows(text: str, start: int, end: int, max_words: int) -> list[tuple[int, int]]:
    """A table group ``text[start:end]`` over ``max_words`` words as consecutive runs of whole rows of at most
    that many words (a single row over it is split on words)."""
    pieces: list[tuple[int, int]] = []
    cur, words, pos = None, 0, start
    while pos < end:
        nl = text.find("\n", pos, end)
        stop = end if nl == -1 else nl
        n = count_words(text[pos:stop])
        if n > max_words:
            if cur is not None:
                pieces.append(cur)
            pieces.extend(split_long(text, pos, stop, max_words))
            cur, words = None, 0
        elif cur is not None and words + n <= max_words:
            cur, words = (cur[0], stop), words + n
        else:
            if cur is not None:
                pieces.append(cur)
            cur, words = (pos, stop), n
        pos = stop + 1
    if cur is not None:
        pieces.append(cur)
    return pieces


def split_sentences(text: str, max_words: int | None = None, min_lines: int = 20,
                    table_rows: bool = False) -> list[tuple[int, int]]:
    """Sentence spans of ``text`` (see module doc). ``max_words`` bounds every span's word count; ``min_lines``: see
    :func:`is_hard_wrapped` (callers splitting a retrieved passage rather than a document pass
    :data:`PASSAGE_MIN_LINES`). A Markdown table group is one span (``table_rows``: one span per row, the header
    row with its separator line), never cut inside a row; one over ``max_words`` is split between rows."""
    if max_words is not None and max_words < 1:
        raise ValueError(f"max_words must be >= 1, got {max_words}")
    if not text or text.isspace():
        return []
    newline_breaks = not is_hard_wrapped(text, min_lines)
    cuts, tables = _table_cuts(text, _split_points(text, 0, len(text), newline_breaks), table_rows)
    cuts = sorted(set(cuts))
    spans: list[tuple[int, int]] = []
    prev = 0
    for c in cuts + [len(text)]:
        s = _strip_span(text, prev, c)
        if s:
            spans.append(s)
        prev = c
    spans = _join_markers(text, spans)
    if max_words is not None:
        bounded: list[tuple[int, int]] = []
        table_starts = {s for s, _ in tables}
        for s, e in spans:
            if count_words(text[s:e]) > max_words:
                rows = s in table_starts or (table_rows and text.startswith("|", s))
                bounded.extend(_split_rows(text, s, e, max_words) if rows else split_long(text, s, e, max_words))
            else:
                bounded.append((s, e))
        spans = bounded
    return spans


@lru_cache(maxsize=8)
def _cached(text: str, max_words: int | None) -> tuple[tuple[int, int], ...]:
    return tuple(split_sentences(text, max_words))


def sentences_cached(text: str, max_words: int | None = None) -> tuple[tuple[int, int], ...]:
    """Memoised :func:`split_sentences` (chunkers of one document share the work)."""
    return _cached(text, max_words)


@lru_cache(maxsize=8)
def _ends_cached(text: str, max_words: int | None) -> list[int]:
    return [e for _, e in _cached(text, max_words)]


def sentences_between(text: str, start: int, end: int, max_words: int | None = None) -> list[tuple[int, int]]:
    """The memoised sentence spans of the whole ``text`` that overlap [start, end), clipped to it.

    A binary search finds the first one, so a call costs O(log n + the sentences returned), not O(n): the
    multi-granular chunkers call this once per paragraph of every parent.
    """
    spans = _cached(text, max_words)
    i = bisect_right(_ends_cached(text, max_words), start)
    out = []
    while i < len(spans) and spans[i][0] < end:
        s, e = max(spans[i][0], start), min(spans[i][1], end)
        if s < e:
            out.append((s, e))
        i += 1
    return out


def clear_caches() -> None:
    """Forget every memoised segmentation (benchmarks make each chunker pay for its own)."""
    for f in (_cached, _ends_cached, _hard_wrapped_cached):
        f.cache_clear()
