"""Grounding: does the context support an answer at all, does the answer's cited source support it, and which
sentence of that source does. Pure functions over texts and vectors; the embedder is called by the caller
(:mod:`app.answer`) through :class:`SentenceVectors`.

Two checks, each a measured threshold (``mgrag bench answers``; the defaults per embedder are in
:data:`FLOORS`, and the settings ``context_floor`` / ``support_floor`` override them):

* **Context floor**: how close the context sentence closest to the question is: the mean of their cosine and
  the share of the question's content words found in the sentence or its neighbours (the support score below of
  a claim that is the question alone). Below the floor, no sentence of the retrieved passages is about the
  question: the reply abstains before any generation. The score reads sentences, not the retriever's scores,
  so one floor serves the dense, BM25 and hybrid retrievers.
* **Support**: for the answer (citations removed) and each sentence of a source, *answer recall* is the share of
  the answer's content words found in that sentence or its neighbours, *question overlap* the share of the
  question's content words found there, and *similarity* the cosine between "question + answer" and the
  sentence. ``support = answer recall × (similarity + question overlap) / 2``: a sentence supports the answer
  when it contains what the answer says *and* is about what was asked (a made-up "Russia. [3]" matches a
  sentence that names Russia but not the question). An answer without content words of its own ("Yes") is
  judged on the other two factors alone.

>>> round(support_score(1.0, 0.5, 0.7), 3)
0.6
"""
from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from app.guard import looks_like_instruction
from ingest.text.sentences import PASSAGE_MIN_LINES, split_sentences
from ingest.text.tables import is_header_row, is_table_line, row_quote
from retrieval.bm25 import tokenize

_CITE_RE = re.compile(r"\s*\[\d+\](?:\s*\[\d+\])*")
# words that carry no claim of their own in an answer
_ANSWER_FILLER = frozenset("yes no not answer source sources document documents according text passage".split())
_QUESTION_WORDS = frozenset("what which who whom whose when where why how does did do is are was were can could "
                            "would should will may might".split())
_ABSTAIN_RE = re.compile(
    r"\b(cannot|can ?not|can't|could not|couldn't|unable to) (find|answer|determine|tell)|"
    r"\b(do|does|did) not (say|contain|mention|provide|specify|state|include)|"
    r"\bnot (mentioned|stated|specified|provided|given|found|in the (documents|sources|context|text))|"
    r"\bno (information|mention|answer)\b|\bi don'?t know\b|\bnot enough information\b|\bunknown\b", re.I)

ABSTAIN_TEXT = ("The documents do not say. None of the retrieved passages supports an answer to this question; "
                "the closest ones are listed below.")


@dataclass(frozen=True)
class Floors:
    context: float  # question vs its closest context sentence
    support: float  # support score of the answer's best sentence
    reader: float | None = None  # the reader's confidence threshold; None: the fitted scorer's own (MiniLM's)


# Measured with `mgrag bench answers` (BENCHMARKS.md, "Answers") and `bench/chroma_abstention.py`: the context floor
# was first set just above the highest context score of an unanswerable question (0.46), but on chroma's 418
# questions with evidence in their context that turned 10% away (54% of the State of the Union's, a speech of short
# sentences); at 0.40 chroma loses 5.5% and the answers benchmark still abstains on 42 of its 43 unanswerable
# questions (97.7%) while answering 21 of 22 answerable ones with evidence (was 20). The support floor is where the
# answerable questions with evidence stop being answered (the sweep). The hashing embedder (tests only) gets values
# fitted on a fixture corpus of its own that no unit test asks questions of (tests/fixtures/hashing_floors/derive.py:
# the middle of the gap between unanswerable and answerable questions' context scores, and between made-up and right
# answers' support; tests/app/test_grounding.py checks that these are what it derives). Its reader threshold too:
# the scorer's confidences and threshold were fitted with MiniLM; under the hashing embedder an answerable question's
# confidence reaches 0.2-0.6 and an unanswerable one's stays near 0, so MiniLM's threshold means nothing there.
FLOORS: dict[str, Floors] = {
    "all-MiniLM-L6-v2": Floors(context=0.40, support=0.3),
    "hashing": Floors(context=0.35, support=0.33, reader=0.0755),
}
UNKNOWN_EMBEDDER = Floors(context=0.0, support=0.3)


def floors_for(embedder_name: str, context: float | None = None, support: float | None = None) -> Floors:
    """The thresholds for an embedder: the settings' values where given, else the measured ones."""
    base = FLOORS.get(embedder_name) or FLOORS.get(embedder_name.rsplit("/", 1)[-1]) or UNKNOWN_EMBEDDER
    return Floors(base.context if context is None else context, base.support if support is None else support,
                  base.reader)


def reader_floor(embedder_name: str, *overrides: float | None) -> float | None:
    """The reader's threshold: the first override given (a question's, the settings' ``context_floor``), else the
    embedder's measured one (:data:`FLOORS`), else None (the fitted scorer's own)."""
    given = [f for f in overrides if f is not None]
    return given[0] if given else floors_for(embedder_name).reader


def strip_citations(text: str) -> str:
    """``text`` without its ``[n]`` markers.

    >>> strip_citations("Maria Lopez [1][2], in 1990 [3].")
    'Maria Lopez, in 1990.'
    """
    return _CITE_RE.sub("", text).strip()


def is_abstention(text: str) -> bool:
    """True when a generated answer says it cannot answer (or says nothing).

    >>> is_abstention("I cannot find it in the documents."), is_abstention("Paris [1]")
    (True, False)
    """
    t = strip_citations(text)
    return not re.search(r"\w", t) or bool(_ABSTAIN_RE.search(t))


def answer_terms(answer: str, question: str = "") -> set[str]:
    """The content words of an answer that make its claim (stopwords, yes/no and the like removed)."""
    return {t for t in tokenize(strip_citations(answer)) if t not in _ANSWER_FILLER}


def question_terms(question: str) -> set[str]:
    return {t for t in tokenize(question) if t not in _QUESTION_WORDS}


def support_score(answer_recall: float, similarity: float, question_overlap: float) -> float:
    return answer_recall * (max(similarity, 0.0) + question_overlap) / 2


@dataclass(frozen=True)
class Sentence:
    """A sentence of a source: the source's number, document offsets and text; ``quote`` is how an answer shows it
    (a table row with its column headers), ``answerable`` False for what is never an answer on its own (a heading,
    a title line, a running header)."""

    source: int
    start: int
    end: int
    text: str
    quote: str = ""
    answerable: bool = True

    @property
    def shown(self) -> str:
        """What an answer quotes: :attr:`quote`, else the text on one line (a PDF's line ends as spaces)."""
        return self.quote or " ".join(self.text.split())


def source_sentences(sources: Sequence, max_words: int = 80) -> list[Sentence]:
    """Every sentence of every source, with document offsets (``source.start`` + offset in its text): a table row
    is a sentence, quoted with its column headers (a header row is none); headings and title lines are sentences
    that are not :attr:`Sentence.answerable`."""
    out = []
    for src in sources:
        base = getattr(src, "start", 0)  # a source without ``start`` is bare text: its offsets are its own
        heads = [(b[0] - base, b[1] - base) for b in getattr(src, "blocks", None) or () if b[2] == "heading"]
        for s, e in split_sentences(src.text, max_words=max_words, min_lines=PASSAGE_MIN_LINES, table_rows=True):
            if is_header_row(src.text, s, e):
                continue
            if is_table_line(src.text[s:e]):
                quote = row_quote(src.text, s, e)
                # a row with values (a label-only row, "Net sales:", is no answer), and no order to an AI in a cell
                ok = " — " in quote and not looks_like_instruction(quote)
            else:
                s, e = _without_empty_cells(src.text, s, e)
                if s >= e:
                    continue
                quote = ""
                ok = not any(hs <= s and e <= he for hs, he in heads) and answerable_text(src.text, s, e)
            out.append(Sentence(src.rank, base + s, base + e, src.text[s:e], quote, ok))
    return out


def _without_empty_cells(text: str, start: int, end: int) -> tuple[int, int]:
    """A sentence cut out of a table cell without the empty cells around it ("… field staff in FY 2016. | | | |":
    a PDF's paragraph laid out as the first cell of a wide row)."""
    while start < end and text[start] in "| \t\n":
        start += 1
    while end > start and text[end - 1] in "| \t\n":
        end -= 1
    return start, end


_TITLE_START = re.compile(r"^(exhibit|item|part|note|section|schedule|appendix|article|chapter|table)\s+"
                          r"(\d+[\w.]*|[IVXLC]+\b|[A-Z]\b)", re.I)


def is_title_line(sentence: str) -> bool:
    """A heading, a title or a running header rather than a statement: no sentence end, and mostly capitals or
    capitalised words ("EXHIBIT 21 The Boeing Company Subsidiaries", "BEST BUY CO., INC. FORM 10-Q FOR THE QUARTER
    ENDED JULY 29, 2023", "Item 1A. Risk Factors").

    >>> is_title_line("Best Buy Co., Inc. Shareholders' Equity"), is_title_line("Net sales rose 5% in the quarter.")
    (True, False)
    """
    t = " ".join(sentence.split())
    if not t or t.endswith((".", "!", "?", ";", "”", '"')) and not _TITLE_START.match(t):
        return False
    words = re.findall(r"[A-Za-z][A-Za-z'’.&-]*", t)
    if not words or len(t.split()) > 25:
        return False
    letters = [c for c in t if c.isalpha()]
    if letters and sum(c.isupper() for c in letters) / len(letters) >= 0.7:
        return True
    small = {"a", "an", "and", "as", "at", "by", "for", "from", "in", "of", "on", "or", "the", "to", "with", "per"}
    content = [w for w in words if w.lower() not in small]
    caps = sum(1 for w in content if w[0].isupper())
    return bool(content) and caps / len(content) >= 0.75 or bool(_TITLE_START.match(t) and len(t.split()) <= 12)


MIN_WORDS = 4


def answerable_sentence(text: str, start: int, end: int) -> bool:
    """Can ``text[start:end]`` be quoted as an answer? Not a title or heading (fewer than :data:`MIN_WORDS` words),
    not the tail of a sentence cut off before the passage began (it starts in lower case at the passage's start,
    e.g. after a PDF page break), and not a document's instruction to an AI.

    >>> answerable_sentence("said was a good bill? The Senate passed it.", 0, 21)
    False
    >>> answerable_sentence("Valkyria Chronicles III", 0, 23)
    False
    >>> answerable_sentence("The game was released in 2011.", 0, 30)
    True
    """
    sentence = text[start:end].strip()
    if len(sentence.split()) < MIN_WORDS:
        return False
    if not text[:start].strip() and sentence[:1].islower():
        return False
    if garbled(sentence):
        return False
    return not looks_like_instruction(sentence)  # a document's orders to an AI are never an answer


_REPEAT = re.compile(r"\b(\S+(?:\s+\S+){1,3})\s+\1\b")


def garbled(sentence: str) -> bool:
    """Text read out of a laid-out page in the wrong order (an infographic's boxes, side by side): the same words
    twice in a row, again and again ("Gross margin Gross margin Diluted EPS Diluted EPS … from Q3 2022 from Q3
    2022"). Prose repeats a phrase at once seldom, and not twice.

    >>> garbled("Revenue down $1.2B or 8% Gross margin Gross margin Diluted EPS Diluted EPS Operating cash")
    True
    >>> garbled("Net sales rose 8% in the quarter, and net sales rose 5% in the nine months.")
    False
    """
    return len(_REPEAT.findall(sentence)) >= 2


def answerable_text(text: str, start: int, end: int) -> bool:
    """Can ``text[start:end]`` be quoted as an answer? (:func:`answerable_sentence`, and not a title line.)"""
    return answerable_sentence(text, start, end) and not is_title_line(text[start:end])


@dataclass(frozen=True)
class SentenceSupport:
    sentence: Sentence
    score: float
    answer_recall: float
    similarity: float
    question_overlap: float


def score_sentences(question: str, answer: str, sentences: Sequence[Sentence], sentence_vectors: np.ndarray,
                    claim_vector: np.ndarray, window: int = 1) -> list[SentenceSupport]:
    """The support of ``answer`` (to ``question``) by each sentence; words are looked for in the sentence and its
    ``window`` neighbours in the same source, so a claim spread over two adjacent sentences is found."""
    a_terms = answer_terms(answer, question)
    q_terms = question_terms(question)
    toks = [set(tokenize(s.text)) for s in sentences]
    sims = (sentence_vectors @ claim_vector) if len(sentences) else np.zeros(0)
    out = []
    for i, s in enumerate(sentences):
        near: set[str] = set()
        for j in range(max(0, i - window), min(len(sentences), i + window + 1)):
            if sentences[j].source == s.source:
                near |= toks[j]
        a_rec = len(a_terms & near) / len(a_terms) if a_terms else 1.0
        q_ov = len(q_terms & near) / len(q_terms) if q_terms else 0.0
        sim = float(sims[i])
        out.append(SentenceSupport(s, support_score(a_rec, sim, q_ov), a_rec, sim, q_ov))
    return out


def best_per_source(scored: Sequence[SentenceSupport]) -> dict[int, SentenceSupport]:
    best: dict[int, SentenceSupport] = {}
    for x in scored:
        b = best.get(x.sentence.source)
        if b is None or x.score > b.score:
            best[x.sentence.source] = x
    return best


def split_claims(answer: str) -> list[str]:
    r"""The answer's sentences (a short answer is one claim). Citation markers standing alone ("… (2002)\n [1]")
    cite the claim before them and are joined to it; a claim needs a word of its own.

    >>> split_claims("The Abduction Club (2002)\n [1]. Wooden Crosses [2].")
    ['The Abduction Club (2002) [1].', 'Wooden Crosses [2].']
    >>> split_claims("“It rained.” [1] “It snowed.” [2]")
    ['“It rained.” [1]', '“It snowed.” [2]']
    """
    text = answer.strip()
    pieces = [text[s:e] for s, e in split_sentences(text)] or ([text] if text else [])
    out: list[str] = []
    for p in pieces:
        lead = re.match(r"(\s*\[\d+\])+", p)  # markers after the previous sentence's end belong to it
        if lead and out:
            out[-1] = out[-1].rstrip() + " " + lead.group().strip()
            p = p[lead.end():].strip()
        if re.search(r"\w", strip_citations(p)):
            out.append(p)
        elif out and p.strip():
            out[-1] = out[-1].rstrip() + ("" if p.strip()[0] in ".!?;:," else " ") + p.strip()
    return out


@dataclass
class Verdict:
    """What grounding decided about a draft answer."""

    abstained: bool
    text: str  # the reply to show
    cited: list[int]  # source numbers cited by the reply, in order
    support: dict[int, list[SentenceSupport]]  # per cited source: the sentences that support the reply
    reason: str = ""
    dropped: int = 0  # claims of the draft left out as unsupported


def ground(question: str, draft: str, scored_by_claim: Sequence[tuple[str, list[int], list[SentenceSupport]]],
           floor: float) -> Verdict:
    """Keep the claims of ``draft`` whose cited source supports them (or, uncited, the source that does), with
    only those citations; abstain when none is supported.

    ``scored_by_claim``: for each claim of the draft, its text, the source numbers it cites, and the support of
    every context sentence for it (:func:`score_sentences`). A claim citing a source that does not support it is
    re-cited to the best supporting source when one passes ``floor``, never left with the wrong citation.
    """
    if is_abstention(draft):
        return Verdict(True, ABSTAIN_TEXT, [], {}, "the model said the documents do not answer it")
    kept: list[str] = []
    cited: list[int] = []
    support: dict[int, list[SentenceSupport]] = {}
    dropped = 0
    for claim, cites, scored in scored_by_claim:
        best = best_per_source(scored)
        ok = [n for n in cites if n in best and best[n].score >= floor]
        if not ok:  # the cited source does not support it (or nothing was cited): the best one that does, if any
            top = max(best.values(), key=lambda x: x.score, default=None)
            ok = [top.sentence.source] if top is not None and top.score >= floor else []
        if not ok:
            dropped += 1
            continue
        body = strip_citations(claim)
        end = len(body.rstrip(".!?;:"))
        kept.append(body[:end] + " " + "".join(f"[{n}]" for n in ok) + body[end:])
        for n in ok:
            cited.append(n) if n not in cited else None
            sents = [x for x in scored if x.sentence.source == n and x.score >= floor]
            sents.sort(key=lambda x: -x.score)
            support.setdefault(n, [])
            for x in sents[:2]:
                if all(y.sentence != x.sentence for y in support[n]):
                    support[n].append(x)
    if not kept:
        return Verdict(True, ABSTAIN_TEXT, [], {}, "no source supports the generated answer", dropped)
    return Verdict(False, " ".join(kept), cited, support, "", dropped)


class SentenceVectors:
    """Sentence vectors of recent contexts (LRU): the same passages come back question after question."""

    def __init__(self, embedder, cache_size: int = 20_000):
        self.embedder = embedder
        self.cache_size = cache_size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        with self._lock:
            missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            vecs = np.asarray(self.embedder.embed_passages(missing), dtype=np.float32)
            with self._lock:
                self._cache.update(zip(missing, vecs))
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        out = []
        with self._lock:
            for t in texts:
                v = self._cache.get(t)
                if v is not None:
                    self._cache.move_to_end(t)
                out.append(v)
        for i, v in enumerate(out):  # evicted meanwhile by another thread's insert: embed it again
            if v is None:
                out[i] = np.asarray(self.embedder.embed_passages([texts[i]]), dtype=np.float32)[0]
        return np.stack(out) if out else np.zeros((0, getattr(self.embedder, "dim", 1)), np.float32)

    def query(self, text: str) -> np.ndarray:
        """The query vector of ``text``; the last few are kept (grounding and the extractive backend ask for the
        same question's vector)."""
        with self._lock:
            v = self._queries.get(text)
        if v is None:
            v = np.asarray(self.embedder.embed_queries([text]), dtype=np.float32)[0]
            with self._lock:
                self._queries[text] = v
                while len(self._queries) > 64:
                    self._queries.popitem(last=False)
        return v


def sentence_vectors_of(ctx) -> SentenceVectors:
    """The context's sentence-vector cache (one per embedder), shared by grounding and the extractive backend."""
    emb = ctx.embedder
    caches = ctx.cache("sentence_vectors")
    if id(emb) not in caches:
        caches[id(emb)] = SentenceVectors(emb)
    return caches[id(emb)]
