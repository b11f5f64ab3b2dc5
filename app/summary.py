"""Questions about a document as a whole ("Summarize the call.", "What is this report about?", "What are the key
points?"; the kind ``summary`` of :func:`app.question.kind_of`).

The reader answers a question with the sentence nearest its words, and a summary question has none to be near: the
product abstained on the first thing most people ask of a file they upload. Such a question is answered from the
document instead, by a standard extractive method: the document's passages nearest its own mean vector (the centroid
of its passages' vectors, which the index already holds; Radev et al., 2004), and from each passage the sentence
nearest that mean. A novelty term (maximal marginal relevance, Carbonell and Goldstein, 1998) is there and off
(:data:`MMR_LAMBDA`): on the documents that carry their own summary it did not raise the overlap with it
(``bench/summary_bench.py``). The sentences are quoted in the document's order, each cited (the citation marks the
sentence); the passages are the reply's sources, so a generating backend summarises from them instead. The
document's first lines (the lead, the classic baseline) did as well there, on papers whose introductions restate
their abstracts; they are not used because an earnings call opens with who is on the line and its notices ("We use
non-GAAP measures …"), where the centroid quotes the quarter's results (BENCHMARKS "What a whole document says").

Which document: the one of the search's first passage, so the question's words, the documents ticked and the
route by name decide, as for any question ("Summarize the Nike filing" over several). A section named by number
("Summarize section 6.2", "What does chapter 3 say?") is summarised from its own text (:func:`section_span`) or,
without a heading line for it, from the passages whose heading path holds it; with neither, the reader answers as
for any question. A question about a topic ("Summarize the risk factors", "What does section 3 say about costs?")
is not a summary (``kind_of``): the reader answers it. A failure here leaves the reader's answer, never an error.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np

from app.grounding import answerable_text
from app.question import MONTH_NAMES, lexicon
from ingest.embed import normalise
from ingest.text.sentences import split_sentences
from ingest.text.tables import is_table_line
from retrieval.search import Retrieval, Source

log = logging.getLogger(__name__)

SUMMARY_PASSAGES = 3  # passages quoted, one sentence each: a summary a reader takes in at a glance
# relevance against novelty in maximal marginal relevance (1: relevance alone). Chosen on bench/summary_bench.py, the
# corpus's 7 documents that carry their own abstract, executive summary or synopsis (the only reference summaries
# here; no held-out split): ROUGE-1 F1 0.166 at 1.0 against 0.164 at 0.7, the weight most implementations use (0.142
# with the first version's sentence filter); no gain from novelty, so relevance alone
MMR_LAMBDA = 1.0
MAX_PASSAGES_READ = 600  # a longer document's (or section's) passages are read at even steps (a 900-page book)
SENTENCE_MIN_WORDS = 8  # shorter lines are headings, labels and table cells, not statements
PARENT_LEVEL = 0  # the index level of the parent passages (ingest: parents, θ/2 and θ/4 children)
HEAD_WORDS = 10  # a heading line has at most this many words
HEAD_TITLE_CHARS = 80  # … and at most this many characters after its number
SHORT_HEAD_WORDS = 2  # a heading this short may end with a full stop ("CHAPTER IV.")
MAX_SECTION_NUMBER = 99  # a larger leading number is a year or a figure ("2023 Revenue grew"), not a section

_SECTION = re.compile(r"\b(section|chapter|appendix)\s+(\d+(?:\.\d+)*|[ivxlc]+|[a-z])\b", re.I)
_MONTHS = "|".join(m.capitalize() for m in MONTH_NAMES)
# a line that starts a section: an optional keyword, a number (1, 6.2, IV, B), then a title in capitals or nothing
# (a bare number only after a keyword: "Chapter 4"; a page number alone is not a heading); a contents line ends in
# a page number or dot leaders and is not the section's heading
_HEAD = re.compile(rf"^[ \t#*|]*(?P<kw>(?i:section|chapter|appendix)\s+)?(?P<num>\d+(?:\.\d+)*|[IVXLC]+|[A-Z])"
                   rf"(?:[.):]?[ \t]+(?!(?:{_MONTHS})\b)(?P<title>[A-Z][^\n]{{0,{HEAD_TITLE_CHARS}}})|[.):]?[ \t]*)$",
                   re.M)
_CONTENTS = re.compile(r"(?:\.{3,}|\s\d{1,4})\s*$")
_END_HEAD = re.compile(r"^[ \t#*|]*(References|Bibliography|Acknowledge?ments?|Appendix(?:\s+[A-Z0-9]+)?|Appendices)"
                       r"\b[^\n.]{0,40}$", re.M)


def section_asked(question: str) -> tuple[str, str] | None:
    """(``section`` | ``chapter`` | ``appendix``, its number) of the part of a document ``question`` names, or None.

    >>> section_asked("Summarize section 6.2"), section_asked("What does Chapter IV say?"), section_asked("Sum it up")
    (('section', '6.2'), ('chapter', 'iv'), None)
    """
    m = _SECTION.search(question)
    return (m.group(1).lower(), m.group(2).lower()) if m else None


def _headings(text: str, start: int = 0, end: int | None = None) -> Iterator[re.Match]:
    """The heading lines of ``text[start:end]`` (:data:`_HEAD`), contents lines and a bare number without a keyword
    left out: numbered headings of at most :data:`HEAD_WORDS` words that do not end a sentence."""
    for m in _HEAD.finditer(text, start, len(text) if end is None else end):
        title = m.group("title")
        if title is None and not m.group("kw"):
            continue  # "3" alone: a page number
        if title is not None:
            words = title.split()
            if (len(words) > HEAD_WORDS or _CONTENTS.search(title)
                    or (title.rstrip().endswith(".") and len(words) > SHORT_HEAD_WORDS and title.upper() != title)):
                continue
        num = m.group("num")
        if num[0].isdigit() and int(num.split(".")[0]) > MAX_SECTION_NUMBER:
            continue
        yield m


def _numeric(num: str) -> tuple[int, ...]:
    return tuple(int(x) for x in num.split("."))


def section_span(text: str, ref: tuple[str, str]) -> tuple[int, int] | None:
    """The character span of the section ``ref`` in ``text``: from its heading line ("6.2 Results", "CHAPTER IV. …")
    to the next heading of the same or a higher level further on ("7 Related Work" and "6.3" end 6.2; "6.2.1" does
    not, nor a list's "1." inside section 3), or to the references; None when no line is its heading. A chapter or
    an appendix ends at the next heading with the same keyword.

    >>> t = "6 QA\\n6.1 Setup\\nWe train.\\n6.2 Results\\nIt works.\\n6.2.1 Detail\\nMore.\\n7 Related Work\\nOthers."
    >>> a, b = section_span(t, ("section", "6.2")); t[a:b].split("\\n")
    ['6.2 Results', 'It works.', '6.2.1 Detail', 'More.', '']
    >>> t = "CHAPTER III.\\nThey rode.\\nCHAPTER IV. THE CAMP.\\nThey slept.\\nCIVIL WAR\\nCHAPTER V.\\nThey woke."
    >>> a, b = section_span(t, ("chapter", "iv")); t[a:b]
    'CHAPTER IV. THE CAMP.\\nThey slept.\\nCIVIL WAR\\n'
    >>> section_span("Contents\\n3 Results ..... 5\\n4 Discussion 9\\n", ("section", "3")) is None
    True
    """
    word, num = ref
    own = next((m for m in _headings(text) if m.group("num").lower() == num
                and (num[0].isdigit() or (m.group("kw") or "").strip().lower() == word)), None)
    if own is None:
        return None
    end = len(text)
    for m in _headings(text, own.end()):
        other = m.group("num").lower()
        if num[0].isdigit():
            if not other[0].isdigit() or other.startswith(num + "."):
                continue
            depth = num.count(".") + 1
            if _numeric(other)[:depth] > _numeric(num):
                end = m.start()
                break
        elif (m.group("kw") or "").strip().lower() == word and other != num:
            end = m.start()
            break
    refs = _END_HEAD.search(text, own.end(), end)
    return own.start(), refs.start() if refs else end


def in_section(payload: dict, ref: tuple[str, str]) -> bool:
    """Is a passage (its payload: ``headings``, ``text``) inside the section ``ref``: a heading of its path, or its
    first line, is that section's heading ("6.2 Results", "Section 6.2: Results", "CHAPTER IV. BOSTON"; section 6's
    "6 Experiments" holds 6.2; "6.2" is not section 6's heading, nor "1.2 Data" section 1's)?

    >>> in_section({"headings": ["6 Experiments", "6.2 Results"], "text": "We report …"}, ("section", "6"))
    True
    >>> in_section({"headings": ["1.2 Data"], "text": "x"}, ("section", "1"))
    False
    >>> in_section({"text": "CHAPTER IV. Home\\nThey came back."}, ("chapter", "iv"))
    True
    """
    word, num = ref
    head = re.compile(rf"^[\s#|*]*(?:{word}\s+)?{re.escape(num)}(?:[.):]?\s+[A-Z]|[.):]?$)", re.I if not
                      num[0].isdigit() else 0)
    first = (payload.get("text") or "").lstrip().split("\n", 1)[0]
    return any(head.match(h.strip()) for h in [*(payload.get("headings") or []), first])


@dataclass
class Digest:
    """A summary: the ``retrieval`` whose sources are the chosen passages (document order) and the ``lines`` quoted,
    one per passage."""

    retrieval: Retrieval
    lines: list[str]
    doc_id: str
    section: tuple[str, str] | None = None


def summarize(ctx, retrieval: Retrieval, question: str = "") -> Digest | None:
    """The summary of the document of ``retrieval``'s first source, or of the section ``question`` names (see the
    module doc); None when its passages cannot be read (an index without vectors, a document gone), no passage is
    in the section named, or no passage holds a statement."""
    if not retrieval.sources:
        return None
    top = retrieval.sources[0]
    ref = section_asked(question)
    try:
        span, within = None, None
        if ref is not None:
            text = (ctx.store.text(top.doc_hash) if top.doc_hash else "") or ""
            span = section_span(text, ref)
            within = " ".join(text[span[0]:span[1]].split()) if span else None
        points = passages(ctx, top.doc_id, span)
        if ref is not None and span is None:
            points = [p for p in points if in_section(p.payload, ref)]
        chosen = central(points, ctx.embedder, within=within)
    except Exception:  # a summary only replaces an abstention: a failure here leaves the usual answer
        log.exception("summarising %s failed", top.doc_id)
        return None
    sources: list[Source] = []
    lines = []
    for p, sentence in chosen:
        pl = p.payload
        lo, hi = sentence_span(pl["text"], sentence)
        src = Source(len(sources) + 1, pl.get("doc_id", top.doc_id), str(p.id), pl["start"], pl["end"], pl["text"],
                     float(p.score), PARENT_LEVEL, pl["start"] + lo, pl["start"] + hi, sentence).with_payload(pl, pl)
        src.name = top.name
        sources.append(src)
        lines.append(f"“{sentence}” [{src.rank}]")
    if not lines:
        return None
    return Digest(replace(retrieval, sources=sources), lines, top.doc_id, ref)


def passages(ctx, doc_id: str, span: tuple[int, int] | None = None) -> list:
    """The document's parent passages in the live index (those overlapping ``span`` when given), with their
    vectors, in the document's order; at most :data:`MAX_PASSAGES_READ`, at even steps through the document."""
    live = ctx.catalog.live_generation()
    if live is None:
        return []
    spans = ctx.catalog.chunk_spans(live.gen, doc_id, PARENT_LEVEL)
    if span is not None:
        spans = [x for x in spans if x[1] < span[1] and x[2] > span[0]]
    if len(spans) > MAX_PASSAGES_READ:
        step = len(spans) / MAX_PASSAGES_READ
        spans = [spans[int(i * step)] for i in range(MAX_PASSAGES_READ)]
    ids = [x[0] for x in spans]
    points = ctx.index.retrieve(PARENT_LEVEL, ids, gen=live.gen, with_vectors=True) if ids else []
    return sorted((p for p in points if p.vector is not None), key=lambda p: p.payload.get("start", 0))


def central(points: Sequence, embedder, k: int = SUMMARY_PASSAGES, lam: float = MMR_LAMBDA,
            within: str | None = None) -> list[tuple]:
    """``(passage, sentence)`` for ``k`` passages in :func:`mmr`'s order around the passages' mean vector, each
    with its statement nearest that mean (:func:`central_sentence`; only one ``within`` a section's text, spaces
    collapsed, when given), in the document's order; a passage without a statement gives way to the next one. Each
    passage's ``score`` is set to its cosine with the mean."""
    if not points:
        return []
    V = normalise(np.asarray([p.vector for p in points], dtype=np.float32))
    centre = normalise(V.mean(axis=0, keepdims=True))[0]
    out = []
    for j in mmr(V, centre, len(points), lam):
        sentence = central_sentence(embedder, points[j].payload["text"], centre, within)
        if sentence:
            points[j].score = float(V[j] @ centre)
            out.append((j, points[j], sentence))
            if len(out) == k:
                break
    return [(p, s) for _, p, s in sorted(out, key=lambda x: x[0])]


def mmr(V: np.ndarray, centre: np.ndarray, k: int, lam: float = MMR_LAMBDA) -> list[int]:
    """The rows of ``V`` (unit vectors) chosen one by one for ``lam`` × their cosine with ``centre`` less
    (1 − ``lam``) × their highest cosine with a row already chosen (``lam`` 1: by cosine alone).

    >>> V = normalise(np.array([[1, 0, 0], [0.95, 0.31, 0], [0.8, 0, 0.6]], dtype=np.float32))
    >>> centre = np.array([0.971, 0.11, 0.212], dtype=np.float32)  # their mean; cosines 0.971, 0.957, 0.904
    >>> mmr(V, centre, 2, 0.7), mmr(V, centre, 2, 1.0)  # with novelty the near copy of the first is passed over
    ([0, 2], [0, 1])
    """
    rel = V @ centre
    if lam >= 1.0:
        return [int(j) for j in np.argsort(-rel, kind="stable")[:k]]
    chosen: list[int] = []
    near = np.full(len(V), -np.inf)
    while len(chosen) < min(k, len(V)):
        score = lam * rel - (1 - lam) * np.maximum(near, 0.0)
        score[chosen] = -np.inf
        j = int(np.argmax(score))
        chosen.append(j)
        near = np.maximum(near, V @ V[j])
    return chosen


def central_sentence(embedder, text: str, centre: np.ndarray, within: str | None = None) -> str | None:
    """The statement of ``text`` (:func:`statements`) nearest ``centre``; only one that is ``within`` a section's
    text, when given."""
    sents = [x for x in statements(text) if within is None or x in within]
    if not sents:
        return None
    S = normalise(np.asarray(embedder.embed_passages(sents), dtype=np.float32))
    return sents[int(np.argmax(S @ centre))]


def statements(text: str) -> list[str]:
    """The sentences of ``text`` a summary may quote, spaces collapsed: those the reader may quote
    (:func:`app.grounding.answerable_text`: not a heading, a title line, garbled layout or an order to an AI) of
    :data:`SENTENCE_MIN_WORDS` words or more, not a table row, a question nor boilerplate (the lexicon's
    safe-harbour phrases).

    >>> statements("Results | 2023 | 2024\\nRevenue grew 12% on strong demand for the new product line. Why?")
    ['Revenue grew 12% on strong demand for the new product line.']
    """
    boiler = lexicon()["boilerplate_phrases"]
    out = []
    for s, e in split_sentences(text):
        line = " ".join(text[s:e].split())
        # what the reader may quote (app.grounding: no heading or title line, no garbled layout, no order to an AI)
        if (len(line.split()) >= SENTENCE_MIN_WORDS and not is_table_line(text[s:e]) and answerable_text(text, s, e)
                and not line.endswith("?") and not any(ph in line.lower() for ph in boiler)):
            out.append(line)
    return out


def sentence_span(text: str, sentence: str) -> tuple[int, int]:
    """Where ``sentence`` (spaces collapsed) is in ``text``: (start, end) offsets; the whole text when not found.

    >>> sentence_span("Title\\nIt rained  all\\nday. Then sun.", "It rained all day.")
    (6, 25)
    """
    m = re.search(r"\s+".join(re.escape(w) for w in sentence.split()), text)
    return (m.start(), m.end()) if m else (0, len(text))


def summary_reply(digest: Digest, sources: Sequence) -> str:
    """The reply's first line names what is summarised ("Section 6.2 of dpr.pdf", "Chapter IV of otto.epub"); the
    quoted lines follow."""
    name = next((getattr(s, "name", "") for s in sources if getattr(s, "name", "")), "") or digest.doc_id
    part = name
    if digest.section is not None:
        word, num = digest.section
        part = f"{word.capitalize()} {num if num[0].isdigit() else num.upper()} of {name}"
    return f"{part}, in its own most central sentences:\n\n" + "\n\n".join(digest.lines)
