"""LlamaChunk (seed 003): read, from one prefill, how much the model wants to write a section marker.

The model is shown a window of the text and asked to repeat it with the marker "段" at each section end;
instead of generating, the repeated copy is fed in the same prefill, and log p(marker) is read after every
sentence end of the copy. That probability decays along long inputs, so it is normalised by the decay
curve: a straight line fitted to log p(marker) against the position in the copy is subtracted.
Break points are then chosen as in the LG chunker (argmax of the normalised score in each θ-word window),
which keeps every chunk within θ words. Splits are taken at sentence ends only (the write-up's in-token
splits, rare by its own count, are not used).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from core.components import registered
from ingest.chunkers.base import Chunker, check_theta
from ingest.text.boundary import lg_breaks, spans_from_breaks
from ingest.text.sentences import count_words, sentences_cached

INSTRUCTION = ("Your job is to act as a chunker. Repeat the text below exactly, and insert the marker {marker} "
               "at the end of every section, so that the text is separated into semantically coherent groups.")


def detrend(positions: Sequence[float], values: Sequence[float]) -> np.ndarray:
    """``values`` minus their least-squares line against ``positions`` (the decay along the input).

    >>> bool(np.allclose(detrend([0, 1, 2, 3], [0.0, -1.0, -2.0, -3.0]), 0))
    True
    """
    x = np.asarray(positions, dtype=float)
    y = np.asarray(values, dtype=float)
    if len(y) < 3 or np.ptp(x) == 0:
        return y - (y.mean() if len(y) else 0.0)
    slope, intercept = np.polyfit(x, y, 1)
    return y - (slope * x + intercept)


SENTENCE_CAP = 100  # words
_MEMO: dict = {}


@registered
@dataclass(frozen=True)
class LlamaChunkChunker(Chunker):
    scorer: object = field(compare=False)
    theta: int = 300
    window_words: int = 600
    marker: str = "段"

    def __post_init__(self) -> None:
        check_theta(self.theta)
        if self.window_words < self.theta:
            raise ValueError(f"window_words ({self.window_words}) must be at least theta ({self.theta})")

    def marker_id(self) -> int:
        ids = self.scorer.tokenizer.encode(self.marker, add_special_tokens=False)
        if not ids:
            raise ValueError(f"marker {self.marker!r} encodes to no token")
        return ids[0]

    def scores(self, text: str, sentences: Sequence[tuple[int, int]]) -> np.ndarray:
        """Decay-normalised log p(marker) after every sentence, one prefill per window of sentences.

        Independent of θ, so memoised for the last 8 (scorer, text, sentences, window, marker)."""
        key = (id(self.scorer), text, tuple(sentences), self.window_words, self.marker)
        if key in _MEMO:
            return _MEMO[key].copy()
        out = self._scores(text, sentences)
        while len(_MEMO) >= 8:
            _MEMO.pop(next(iter(_MEMO)))
        _MEMO[key] = out
        return out.copy()

    def _scores(self, text: str, sentences: Sequence[tuple[int, int]]) -> np.ndarray:
        sc = self.scorer
        tok = sc.tokenizer
        doc = sc.tokenize(text, sentences)
        words = [count_words(text[s:e]) for s, e in sentences]
        mid = self.marker_id()
        head = tok(INSTRUCTION.format(marker=self.marker) + "\n\nText:\n", add_special_tokens=True)["input_ids"]
        out = np.zeros(len(sentences))
        i = 0
        while i < len(sentences):
            j, total = i, 0
            while j < len(sentences) and (j == i or total + words[j] <= self.window_words):
                total += words[j]
                j += 1
            copy_ids, ends = sc.window_ids(doc, i, j)
            body = copy_ids[len(sc.prompt_ids):]  # the window's text, sentence by sentence
            middle = tok("\n\nThe same text with the marker:\n", add_special_tokens=False)["input_ids"]
            prefix = list(head) + body + middle
            ids = prefix + body
            positions = [len(prefix) + (e - len(sc.prompt_ids)) for e in ends]
            logp = np.log(np.maximum(sc._forward([ids], [positions], token_ids=[mid])[0], 1e-30))
            out[i:j] = detrend(np.asarray(positions) - len(prefix), logp)
            i = j
        return out

    def _spans(self, text: str) -> list[tuple[int, int]]:
        # sentences longer than SENTENCE_CAP words are split at word boundaries; a cap independent of θ
        # (when θ >= it) keeps the LM scores reusable across a θ sweep
        sents = list(sentences_cached(text, min(self.theta, SENTENCE_CAP)))
        if not sents:
            return []
        scores = self.scores(text, sents)
        words = [count_words(text[s:e]) for s, e in sents]
        return spans_from_breaks(sents, lg_breaks(words, self.theta, lambda i, j: scores[i:j]))

    def describe(self) -> dict:
        return {"chunker": self.name, "theta": self.theta, "window_words": self.window_words, "marker": self.marker}
