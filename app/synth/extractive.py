"""Extractive backend (no LLM): the context sentences closest to the question, each with its citation."""
from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from app.grounding import SentenceVectors

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
    from app.synth.guard import looks_like_instruction

    sentence = text[start:end].strip()
    if len(sentence.split()) < MIN_WORDS:
        return False
    if not text[:start].strip() and sentence[:1].islower():
        return False
    return not looks_like_instruction(sentence)  # a document's orders to an AI are never an answer


class ExtractiveSynthesizer:
    name = "extractive"

    def __init__(self, embedder, max_sentences: int = 3, cache_size: int = 20_000, vectors=None):
        self.embedder = embedder
        self.max_sentences = max_sentences
        # sentence vectors of recent contexts (LRU), shared with grounding: embedding the same passages again
        # was most of this backend's cost under concurrent load
        self.vectors = vectors if vectors is not None else SentenceVectors(embedder, cache_size)

    def _passage_vectors(self, texts: list[str]) -> np.ndarray:
        return self.vectors.passages(texts)

    def select(self, question: str, sources: Sequence) -> list[tuple[str, int]]:
        """The sentences to quote: the ``max_sentences`` answerable sentences of the sources closest to the question
        (a table row quoted with its column headers; never a heading or a title line), in source order."""
        from app.grounding import source_sentences

        cands = [(x.shown, x.source, x.start) for x in source_sentences(sources) if x.answerable]
        if not cands:
            return []
        q = self.vectors.query(question)
        v = self._passage_vectors([c for c, _, _ in cands])
        order, seen = [], []
        for i in np.argsort(-(v @ q), kind="stable").tolist():
            t = " ".join(cands[i][0].split()).lower()
            if any(t in u or u in t for u in seen):  # a sentence quoted already, or a piece of one: said once
                continue
            order.append(i)
            seen.append(t)
            if len(order) == self.max_sentences:
                break
        picked = sorted(order, key=lambda i: (cands[i][1], cands[i][2]))  # source order, then text order
        return [(cands[i][0], cands[i][1]) for i in picked]

    def stream(self, question: str, sources: Sequence, history: Sequence | None = None) -> Iterator[str]:
        picked = self.select(question, sources)
        if not picked:
            yield "I cannot find an answer in the documents."
            return
        for i, (sentence, rank) in enumerate(picked):
            yield ("" if i == 0 else " ") + f"{sentence} [{rank}]"
