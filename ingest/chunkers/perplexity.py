"""Perplexity chunking (Meta-Chunking, seed 004): split where a sentence's perplexity is a local minimum.

Sentence perplexity is the mean token loss of the sentence given all the text before it, from one pass over
the document with the KV cache carried across blocks (:func:`ingest.text.lm.token_logprobs`). Sentence i closes a
segment when both neighbours exceed it by more than ``threshold``:
``min(PPL[i-1], PPL[i+1]) - PPL[i] > threshold``. Segments are then merged greedily up to θ words (longer
ones split recursively). Unlike the reference code, long sentences are not truncated: every token counts.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from core.components import registered
from ingest.chunkers.base import Chunker, check_theta, merge_units, recursive_spans
from ingest.text.lm import token_logprobs
from ingest.text.sentences import sentences_cached


def local_minima(ppl: Sequence[float], threshold: float) -> list[int]:
    """Indices i (1 <= i < n-1) whose neighbours both exceed ``ppl[i]`` by more than ``threshold``.

    >>> local_minima([3.0, 1.0, 2.5, 2.6, 0.5, 4.0], 0.5)
    [1, 4]
    """
    p = np.asarray(ppl, dtype=float)
    if len(p) < 3:
        return []
    mid = p[1:-1]
    ok = (np.minimum(p[:-2], p[2:]) - mid) > threshold
    return [int(i) + 1 for i in np.nonzero(ok)[0]]


SENTENCE_CAP = 100  # words
_MEMO: dict = {}  # the last few documents' results: re-chunking one text at another θ costs no LM pass


def sentence_perplexities(scorer, text: str, sentences: Sequence[tuple[int, int]], **kw) -> np.ndarray:
    """Mean token loss of each sentence given everything before it (one streamed pass over the document).

    The result does not depend on θ, so it is memoised for the last 8 (scorer, text, sentences, options).
    """
    key = (id(scorer), text, tuple(sentences), tuple(sorted(kw.items())))
    if key in _MEMO:
        return _MEMO[key].copy()
    out = _sentence_perplexities(scorer, text, sentences, **kw)
    while len(_MEMO) >= 8:
        _MEMO.pop(next(iter(_MEMO)))
    _MEMO[key] = out
    return out.copy()


def _sentence_perplexities(scorer, text: str, sentences: Sequence[tuple[int, int]], **kw) -> np.ndarray:
    doc = scorer.tokenize(text, sentences)
    ids = list(scorer.prompt_ids)
    owner = [-1] * len(ids)
    for k in range(len(doc.segments)):
        seg = scorer._opening(doc, 0) if k == 0 else doc.segments[k]
        ids.extend(seg)
        owner.extend([k] * len(seg))
    lp, _ = token_logprobs(scorer, ids, **kw)
    owner_arr = np.asarray(owner)
    out = np.zeros(len(sentences))
    for k in range(len(sentences)):
        m = owner_arr == k
        out[k] = -lp[m].mean() if m.any() else 0.0
    return out


@registered
@dataclass(frozen=True)
class PerplexityChunker(Chunker):
    scorer: object = field(compare=False)
    theta: int = 300
    threshold: float = 0.0
    block_tokens: int = 512
    max_context: int = 4096

    def __post_init__(self) -> None:
        check_theta(self.theta)

    def _spans(self, text: str) -> list[tuple[int, int]]:
        # sentences longer than SENTENCE_CAP words are split at word boundaries; a cap independent of θ
        # (when θ >= it) keeps the LM scores reusable across a θ sweep
        sents = list(sentences_cached(text, min(self.theta, SENTENCE_CAP)))
        if not sents:
            return []
        ppl = sentence_perplexities(self.scorer, text, sents, block_tokens=self.block_tokens,
                                    max_context=self.max_context)
        ends = local_minima(ppl, self.threshold) + [len(sents) - 1]
        segments, start = [], 0
        for i in sorted(set(ends)):
            segments.extend(recursive_spans(text, sents[start][0], sents[i][1], self.theta))
            start = i + 1
        return merge_units(text, segments, self.theta)

    def describe(self) -> dict:
        return {"chunker": self.name, "theta": self.theta, "threshold": self.threshold}
