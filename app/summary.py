"""Questions about a document as a whole ("Summarize the call.", "What is this report about?", "What are the key
points?"; the kind ``summary`` of :func:`app.question.kind_of`).

The reader answers a question with the sentence nearest its words, and a summary question has none to be near: the
product abstained on the first thing most people ask of a file they upload. Such a question is answered from the
document instead, by a standard extractive method: the document's passages nearest its own mean vector (the centroid
of its passages' vectors, which the index already holds; Radev et al., 2004), and from each passage the sentence
nearest that mean. A novelty term (maximal marginal relevance, Carbonell and Goldstein, 1998) is there and off
(:data:`MMR_LAMBDA`): on the documents that carry their own summary it lowered the overlap with it
(``bench/summary_bench.py``). The sentences are quoted in the document's order, each cited; the passages are the
reply's sources, so a generating backend summarises from them instead. The document's first lines (the lead, the
classic baseline) did as well there, on papers whose introductions restate their abstracts; they are not used
because an earnings call opens with who is on the line and its notices ("We use non-GAAP measures …"), where the
centroid quotes the quarter's results (BENCHMARKS "What a whole document says").

Which document: the one of the search's first passage, so the question's words, the documents ticked and the
route by name decide, as for any question ("Summarize the Nike filing" over several). A section named by number
("Summarize section 6.2", "What does chapter 3 say?") is summarised from its own passages: those whose heading path,
or first line, is that section's heading ("6.2 Results", "CHAPTER III. …"); when no passage is, the reader answers
as for any question. A question about something within a section ("What does section 3 say about costs?") is not a
summary (``kind_of``).
"""
from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from app.question import lexicon
from ingest.text.sentences import split_sentences
from retrieval.search import Retrieval, Source

log = logging.getLogger(__name__)

SUMMARY_PASSAGES = 3  # passages quoted, one sentence each: a summary a reader takes in at a glance
# relevance against novelty in maximal marginal relevance (1: relevance alone). Chosen on bench/summary_bench.py, the
# corpus's 7 documents that carry their own abstract, executive summary or synopsis (the only reference summaries
# here; no held-out split): ROUGE-1 F1 0.166 at 1.0 against 0.143 at 0.7, the weight most implementations use
MMR_LAMBDA = 1.0
MAX_PASSAGES_READ = 600  # a longer document's passages are read at even steps for its mean (a 900-page book)
SENTENCE_MIN_WORDS = 8  # shorter lines are headings, labels and table cells, not statements


_SECTION = re.compile(r"\b(section|chapter|appendix)\s+(\d+(?:\.\d+)*|[ivxlc]+|[a-z])\b", re.I)


def section_asked(question: str) -> tuple[str, str] | None:
    """(``section`` | ``chapter`` | ``appendix``, its number) of the part of a document ``question`` names, or None.

    >>> section_asked("Summarize section 6.2"), section_asked("What does Chapter IV say?"), section_asked("Sum it up")
    (('section', '6.2'), ('chapter', 'iv'), None)
    """
    m = _SECTION.search(question)
    return (m.group(1).lower(), m.group(2).lower()) if m else None


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
    head = re.compile(rf"^[\s#|*]*(?:{word}\s+)?{re.escape(num)}(?:[.):]?\s|[.):]?$)", re.I)
    first = (payload.get("text") or "").lstrip().split("\n", 1)[0]
    return any(head.match(h) for h in [*(payload.get("headings") or []), first])


_NUMBERED_HEAD = re.compile(r"^[ \t#*|]*(?:(?i:section|chapter|appendix)\s+)?(\d+(?:\.\d+)*|[IVXLC]+|[A-Z])"
                            r"(?:[.):]?[ \t]+[A-Z][^\n]{0,80}|[.):]?[ \t]*)$", re.M)
_END_HEAD = re.compile(r"^[ \t#*|]*(references|bibliography|acknowledge?ments?|appendix|appendices)\b[^\n]{0,40}$",
                       re.I | re.M)
HEAD_WORDS = 10  # a heading line has at most this many words and no final full stop


def section_span(text: str, ref: tuple[str, str]) -> tuple[int, int] | None:
    """The character span of the section ``ref`` in ``text``: from its heading line ("6.2 Results", "CHAPTER IV.
    …") to the next heading line of the same or a higher level ("7 Related Work" ends 6.2 and 6; "6.3" ends 6.2;
    "6.2.1" does not), or to the references; None when no line is its heading.

    >>> t = "6 QA\\n6.1 Setup\\nWe train.\\n6.2 Results\\nIt works.\\n6.2.1 Detail\\nMore.\\n7 Related Work\\nOthers."
    >>> a, b = section_span(t, ("section", "6.2")); t[a:b].split("\\n")
    ['6.2 Results', 'It works.', '6.2.1 Detail', 'More.', '']
    >>> t = "CHAPTER III.\\nThey rode.\\nCHAPTER IV. THE CAMP.\\nThey slept.\\nCHAPTER V.\\nThey woke."
    >>> a, b = section_span(t, ("chapter", "iv")); t[a:b]
    'CHAPTER IV. THE CAMP.\\nThey slept.\\n'
    """
    word, num = ref
    own = re.compile(rf"^[ \t#*|]*(?:{word}\s+)?{re.escape(num)}(?:[.):]?[ \t]+\S[^\n]{{0,80}}|[.):]?)[ \t]*$",
                     re.I | re.M)
    start = next((m for m in own.finditer(text) if _heading_like(m.group(0))), None)
    if start is None:
        return None
    depth = num.count(".") + 1
    end = len(text)
    for m in _NUMBERED_HEAD.finditer(text, start.end()):
        other = m.group(1).lower()
        if (_heading_like(m.group(0)) and other != num and not other.startswith(num + ".")
                and other.count(".") + 1 <= depth and (other[0].isdigit() == num[0].isdigit())):
            end = m.start()
            break
    refs = _END_HEAD.search(text, start.end(), end)
    return start.start(), refs.start() if refs else end


def _heading_like(line: str) -> bool:
    """A line of at most :data:`HEAD_WORDS` words that does not end a sentence (a title in capitals may: "CHAPTER
    IV. THE CAMP.")."""
    bare = line.strip(" \t#*|")
    words = bare.split()
    return 0 < len(words) <= HEAD_WORDS and (not bare.endswith(".") or bare.upper() == bare or len(words) <= 2)


@dataclass
class Digest:
    """A summary: the ``retrieval`` whose sources are the chosen passages (document order) and the ``lines`` quoted,
    one per passage that holds a statement."""

    retrieval: Retrieval
    lines: list[str]
    doc_id: str
    section: tuple[str, str] | None = None


def summarize(ctx, retrieval: Retrieval, question: str = "") -> Digest | None:
    """The summary of the document of ``retrieval``'s first source, or of the section ``question`` names (see the
    module doc); None when its passages cannot be read (an index without vectors, a document gone) or no passage is
    in the section named."""
    if not retrieval.sources:
        return None
    top = retrieval.sources[0]
    try:
        points = passages(ctx, top.doc_id)
        ref = section_asked(question)
        within = None
        if ref is not None:
            text = (ctx.store.text(top.doc_hash) if top.doc_hash else "") or ""
            span = section_span(text, ref)
            if span is not None:
                within = " ".join(text[span[0]:span[1]].split())
                points = [p for p in points if p.payload["start"] < span[1] and p.payload["end"] > span[0]]
            else:
                points = [p for p in points if in_section(p.payload, ref)]
    except Exception:  # a summary only replaces an abstention: a failure here leaves the usual answer
        log.exception("reading %s's passages for a summary failed", top.doc_id)
        return None
    sources: list[Source] = []
    lines = []
    for p, sentence in central(points, ctx.embedder, within=within):
        pl = p.payload
        src = Source(len(sources) + 1, pl.get("doc_id", top.doc_id), str(p.id), pl["start"], pl["end"], pl["text"],
                     float(p.score), 0, pl["start"], pl["end"], pl["text"]).with_payload(pl, pl)
        src.name = top.name
        sources.append(src)
        lines.append(f"“{sentence}” [{src.rank}]")
    if not lines:
        return None
    return Digest(replace(retrieval, sources=sources), lines, top.doc_id, ref)


def passages(ctx, doc_id: str) -> list:
    """The document's parent passages in the live index, with their vectors (at most :data:`MAX_PASSAGES_READ`, at
    even steps), in the document's order."""
    live = ctx.catalog.live_generation()
    ids = ctx.catalog.chunk_ids(live.gen, doc_id).get(0, []) if live is not None else []
    if len(ids) > MAX_PASSAGES_READ:
        ids = sorted(ids)
        step = len(ids) / MAX_PASSAGES_READ
        ids = [ids[int(i * step)] for i in range(MAX_PASSAGES_READ)]
    points = ctx.index.retrieve(0, ids, gen=live.gen, with_vectors=True) if ids else []
    return sorted((p for p in points if p.vector is not None), key=lambda p: p.payload.get("start", 0))


def central(points: Sequence, embedder, k: int = SUMMARY_PASSAGES, lam: float = MMR_LAMBDA,
            within: str | None = None) -> list[tuple]:
    """``(passage, sentence)`` for the ``k`` passages :func:`mmr` chooses around the passages' mean vector, each with
    its statement nearest that mean (:func:`central_sentence`; only one ``within`` a section's text, spaces
    collapsed, when given), in the document's order; a passage without one is left out. Each passage's ``score`` is
    set to its cosine with the mean."""
    if not points:
        return []
    V = _unit(np.asarray([p.vector for p in points], dtype=np.float32))
    centre = _unit(V.mean(axis=0, keepdims=True))[0]
    out = []
    for j in sorted(mmr(V, centre, k, lam)):
        sentence = central_sentence(embedder, points[j].payload["text"], centre, within)
        if sentence:
            points[j].score = float(V[j] @ centre)
            out.append((points[j], sentence))
    return out


def mmr(V: np.ndarray, centre: np.ndarray, k: int, lam: float = MMR_LAMBDA) -> list[int]:
    """The rows of ``V`` (unit vectors) chosen one by one for ``lam`` × their cosine with ``centre`` less
    (1 − ``lam``) × their highest cosine with a row already chosen.

    >>> V = _unit(np.array([[1, 0, 0], [0.95, 0.31, 0], [0.8, 0, 0.6]], dtype=np.float32))
    >>> centre = np.array([0.971, 0.11, 0.212], dtype=np.float32)  # their mean; cosines 0.971, 0.957, 0.904
    >>> mmr(V, centre, 2, 0.7)  # the second, nearly the first, is passed over for the third
    [0, 2]
    """
    rel = V @ centre
    chosen: list[int] = []
    while len(chosen) < min(k, len(V)):
        near = (V @ V[chosen].T).max(axis=1) if chosen else np.zeros(len(V))
        score = lam * rel - (1 - lam) * near
        score[chosen] = -np.inf
        chosen.append(int(np.argmax(score)))
    return chosen


def central_sentence(embedder, text: str, centre: np.ndarray, within: str | None = None) -> str | None:
    """The statement of ``text`` nearest ``centre``: a sentence of :data:`SENTENCE_MIN_WORDS` words or more in
    small letters, not a table row nor a question nor boilerplate (the lexicon's safe-harbour phrases)."""
    sents = [x for x in statements(text) if within is None or x in within]
    if not sents:
        return None
    S = _unit(np.asarray(embedder.embed_passages(sents), dtype=np.float32))
    return sents[int(np.argmax(S @ centre))]


def statements(text: str) -> list[str]:
    """The sentences of ``text`` a summary may quote (see :func:`central_sentence`).

    >>> statements("Results | 2023 | 2024\\nRevenue grew 12% on strong demand for the new product line. Why?")
    ['Revenue grew 12% on strong demand for the new product line.']
    """
    boiler = lexicon()["boilerplate_phrases"]
    out = []
    for s, e in split_sentences(text):
        line = " ".join(text[s:e].split())
        if (len(line.split()) >= SENTENCE_MIN_WORDS and re.search(r"[a-z]", line) and line.count("|") < 2
                and not line.endswith("?") and not any(ph in line.lower() for ph in boiler)):
            out.append(line)
    return out


def _unit(M: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(M, axis=1, keepdims=True)
    n[n == 0] = 1.0
    return M / n


def summary_reply(digest: Digest, sources: Sequence) -> str:
    """The reply's first line names what is summarised; the quoted lines follow."""
    name = next((getattr(s, "name", "") for s in sources if getattr(s, "name", "")), "") or digest.doc_id
    part = f"{digest.section[0].capitalize()} {digest.section[1]} of {name}" if digest.section else name
    return f"{part}, in its own most central sentences:\n\n" + "\n\n".join(digest.lines)
