"""Extractive backend (no LLM): the context sentences closest to the question, each with its citation."""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence

import numpy as np

from app.grounding import SentenceVectors, sentence_vectors_of, source_sentences
from app.reader import read
from core.components import registered


@registered
class ExtractiveSynthesizer:
    """Answers from the passages' own words, read by :mod:`app.reader`: one answer first (a table cell with its row
    and period, a change between two periods computed, or the one sentence), its supporting quote, then at most two
    further quotes, each cited; nothing when no passage answers (the caller abstains)."""

    @classmethod
    def from_context(cls, ctx, kept) -> ExtractiveSynthesizer:
        """The backend of ``ctx`` (``make_synthesizer``): one per embedder, kept on the context (``kept(key, build)``)
        with its sentence-vector cache, shared with grounding."""
        emb = ctx.embedder

        def profile_of(src):  # its document's profile: the names it is about, the periods its cover states
            return ctx.profiles.one(getattr(src, "doc_hash", ""), src.doc_id, getattr(src, "name", ""))

        def boilerplate():  # sentences printed word for word in three or more of the library's documents
            live = ctx.catalog.live_gen()
            rows = [r for r in ctx.catalog.documents(live) if r["n_l0"] is not None] if live is not None else []
            return ctx.profiles.recurring(rows)

        return kept(("extractive", id(emb)), lambda: cls(emb, vectors=sentence_vectors_of(ctx), text_of=ctx.store.text,
                                                         profile_of=profile_of, boilerplate=boilerplate))

    @staticmethod
    def why_not(settings) -> str | None:
        """Always runs: no model of its own."""
        return None

    def __init__(self, embedder, max_sentences: int = 3, cache_size: int = 20_000, vectors=None, text_of=None,
                 profile_of=None, boilerplate=None):
        self.embedder = embedder
        self.max_sentences = max_sentences  # the answer and at most this many quotes in all
        # sentence vectors of recent contexts (LRU), shared with grounding: embedding the same passages again
        # was most of this backend's cost under concurrent load
        self.vectors = vectors if vectors is not None else SentenceVectors(embedder, cache_size)
        self.text_of = text_of  # a document's text by content hash: tables' titles and units above a passage
        self.profile_of = profile_of  # a passage's document's profile (app.routing): its names, its cover's periods
        self.boilerplate = boilerplate  # () -> a test of a sentence printed in several of the library's documents
        self._texts: OrderedDict[str, str] = OrderedDict()
        self._texts_lock = threading.Lock()

    def _passage_vectors(self, texts: list[str]) -> np.ndarray:
        return self.vectors.passages(texts)

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

    def reading(self, question: str, sources: Sequence, history: Sequence | None = None):
        """What :func:`app.reader.read` finds in ``sources`` for ``question``."""
        sents = source_sentences(sources)
        q = self.vectors.query(question)

        def similarity(texts):
            return (self._passage_vectors(list(texts)) @ q).tolist() if texts else []

        known: set[str] = set()
        cover: dict[int, set[str]] = {}
        for src in sources if self.profile_of is not None else ():
            try:
                p = self.profile_of(src)
            except Exception:  # no profile (a document deleted meanwhile): the passages' own words and dates only
                p = None
            if p is not None:
                known |= p.tokens
                cover[src.rank] = set(p.periods)
        here = _recurring(sources, sents)
        try:
            everywhere = self.boilerplate() if self.boilerplate is not None else None
        except Exception:  # the catalog is busy or gone: the passages' own recurrences only
            everywhere = None

        def foreign(text: str) -> bool:
            return here(text) or bool(everywhere and everywhere(text))

        return read(question, sources, sentences=sents, similarity=similarity, doc_text=self._doc_text,
                    history=list(history or []), foreign=foreign, known_names=known,
                    known_years={t for t in known if len(t) == 4 and t.isdigit()}, cover_dates=cover)

    def stream(self, question: str, sources: Sequence, history: Sequence | None = None) -> Iterator[str]:
        r = self.reading(question, sources, history)
        if r.answer is None:
            # the reason stays out of the reply (it may echo the question's words); reading() gives it
            yield "I cannot find an answer in the documents."
            return
        best = r.best
        yield f"{r.answer} [{best.source}]"
        if best.kind == "cell" or r.answer != best.text:
            yield f"\n\nSupporting: “{best.text}” [{best.source}]"
        for c in r.more[: max(0, self.max_sentences - 1)]:
            yield f"\n\nAlso: “{c.text}” [{c.source}]"


def _recurring(sources: Sequence, sents: Sequence):
    """A test for boilerplate: a sentence that the passages of two or more documents hold word for word (a
    certification, a safe-harbour paragraph)."""
    docs: dict[str, set] = {}
    by_rank = {s.rank: getattr(s, "doc_id", "") for s in sources}
    for x in sents:
        key = " ".join(x.shown.lower().split())
        if len(key) > 40:
            docs.setdefault(key, set()).add(by_rank.get(x.source, ""))
    return lambda text: len(docs.get(" ".join(text.lower().split()), ())) >= 2
