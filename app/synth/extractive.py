"""Extractive backend (no LLM): the answer the reader (:mod:`app.reader`) finds in the passages, with its citation."""
from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence

import numpy as np

from app import reader as R
from app.features import Signals, WordVectors
from app.grounding import SentenceVectors, sentence_vectors_of, source_sentences
from app.question import Question, read_question
from app.scorer import ReaderModel, load
from core.components import registered

log = logging.getLogger(__name__)

NO_ANSWER = "I cannot find an answer in the documents."


@registered
class ExtractiveSynthesizer:
    """Answers from the passages' own words, read by :mod:`app.reader`: one answer first (a table cell with its row
    and period, a change between two periods computed, or the one sentence), its supporting quote, then at most two
    further quotes, each cited; nothing when the reader's confidence is below its threshold (the caller abstains)."""

    @classmethod
    def from_context(cls, ctx, kept) -> ExtractiveSynthesizer:
        """The backend of ``ctx`` (``make_synthesizer``): one per embedder, kept on the context (``kept(key, build)``)
        with its sentence- and word-vector caches, shared with grounding."""
        emb = ctx.embedder

        def profile_of(src):  # its document's profile: the names it is about, the periods its cover states
            return ctx.profiles.one(getattr(src, "doc_hash", ""), src.doc_id, getattr(src, "name", ""))

        def boilerplate():  # sentences printed word for word in three or more of the library's documents
            live = ctx.catalog.live_gen()
            rows = [r for r in ctx.catalog.documents(live) if r["n_l0"] is not None] if live is not None else []
            return ctx.profiles.recurring(rows)

        words = ctx.cache("word_vectors")
        if id(emb) not in words:
            words[id(emb)] = WordVectors(emb)
        return kept(("extractive", id(emb)), lambda: cls(emb, vectors=sentence_vectors_of(ctx), text_of=ctx.store.text,
                                                         profile_of=profile_of, boilerplate=boilerplate,
                                                         words=words[id(emb)]))

    @staticmethod
    def why_not(settings) -> str | None:
        """Always runs: no model of its own."""
        return None

    def __init__(self, embedder, max_sentences: int = 3, cache_size: int = 20_000, vectors=None, text_of=None,
                 profile_of=None, boilerplate=None, words: WordVectors | None = None, model: ReaderModel | None = None):
        self.embedder = embedder
        self.max_sentences = max_sentences  # the answer and at most this many quotes in all
        self.vectors = vectors if vectors is not None else SentenceVectors(embedder, cache_size)
        self.words = words if words is not None else WordVectors(embedder)
        self.text_of = text_of  # a document's text by content hash: tables' titles and units above a passage
        self.profile_of = profile_of  # a passage's document's profile (app.routing): its names, its cover's periods
        self.boilerplate = boilerplate  # () -> a test of a sentence printed in several of the library's documents
        self.model = model
        self._texts: OrderedDict[str, str] = OrderedDict()
        self._texts_lock = threading.Lock()

    def _doc_text(self, src) -> str | None:
        """A passage's whole document (its tables' titles and units lie above the passage), the 32 latest kept: the
        synthesizer is shared by the server's threads, so the cache is changed under a lock."""
        h = getattr(src, "doc_hash", "")
        if not h or self.text_of is None:
            return None
        with self._texts_lock:
            if h in self._texts:
                self._texts.move_to_end(h)
                return self._texts[h] or None
        try:
            text = self.text_of(h) or ""
        except Exception:  # the text is gone (a document deleted meanwhile): titles from the passage only
            text = ""
        with self._texts_lock:
            self._texts[h] = text
            while len(self._texts) > 32:
                self._texts.popitem(last=False)
        return text or None

    def signals(self, sources: Sequence) -> Signals:
        """What the reader's features read besides the passages (:class:`app.features.Signals`)."""
        here = _recurring(sources, source_sentences(sources))
        try:
            everywhere = self.boilerplate() if self.boilerplate is not None else None
        except Exception:  # the catalog is busy or gone: the passages' own recurrences only
            everywhere = None

        def embed(question: str, texts: Sequence[str]):
            qv = self.vectors.query(question)
            return qv, (self.vectors.passages(list(texts)) if texts else np.zeros((0, len(qv)), np.float32))

        def doc_years(src) -> set[int]:
            try:
                p = self.profile_of(src) if self.profile_of is not None else None
            except Exception:  # no profile (a document deleted meanwhile)
                p = None
            return set(p.years) if p is not None else set()

        return Signals(embed, self.words, self._doc_text, doc_years,
                       lambda text: here(text) or bool(everywhere and everywhere(text)))

    def read(self, q: Question, sources: Sequence, extra_cells: Sequence = (), checker=None) -> R.Reading:
        """What the reader finds in ``sources`` (and the looked-up rows ``extra_cells``) for ``q``."""
        model = self.model or load()
        return R.read(q, sources, self.signals(list(sources) + [s for _, s in extra_cells]), model, extra_cells,
                      checker)

    def stream(self, question: str, sources: Sequence, history: Sequence | None = None,
               reading: R.Reading | None = None) -> Iterator[str]:
        r = reading or self.read(read_question(question, list(history or [])), sources)
        if r.answer is None:
            # the reason stays out of the reply (it may echo the question's words); the reading gives it
            yield NO_ANSWER
            return
        yield from lines(r, self.max_sentences)


def lines(r: R.Reading, max_sentences: int = 3) -> Iterator[str]:
    """The extractive reply of a reading: the answer line, its supporting quote when the line is not the quote
    itself, and further quotes (``max_sentences`` in all)."""
    best = r.best
    yield f"{r.answer} [{best.source}]"
    if best.cell is not None or r.answer != best.text:
        yield f"\n\nSupporting: “{best.text}” [{best.source}]"
    for c in r.more[: max(0, max_sentences - 1)]:
        yield f"\n\nAlso: “{c.text}” [{c.source}]"


def _recurring(sources: Sequence, sents: Sequence):
    """A test for boilerplate: a sentence that the passages of two or more documents hold word for word (a
    certification, a safe-harbour paragraph). Copies of one file (the same content hash under two names, an upload
    made twice) are one document."""
    docs: dict[str, set] = {}
    by_rank = {s.rank: getattr(s, "doc_hash", "") or getattr(s, "doc_id", "") for s in sources}
    for x in sents:
        key = " ".join(x.shown.lower().split())
        if len(key) > 40:
            docs.setdefault(key, set()).add(by_rank.get(x.source, ""))
    return lambda text: len(docs.get(" ".join(text.lower().split()), ())) >= 2


