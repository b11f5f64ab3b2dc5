"""Keywords as sparse vectors: BM25 inside the vector store (issue 48).

Every point carries, beside its dense vector, a sparse vector named :data:`KEYWORDS`: one entry per distinct token of
the chunk's indexed text (its context line and its text, :func:`ingest.text.chunk_context.indexed_text`), the
token's id a stable 31-bit hash (:func:`term_id`) and its value BM25's saturated term frequency
``tf·(k1+1) / (tf + k1·(1 − b + b·len/avg_len))`` (:func:`document_weights`). The store applies the idf itself
(Qdrant's ``Modifier.Idf``, Edge and server alike), and Qdrant's idf is Lucene's ``log(1 + (N − df + .5)/(df + .5))``,
the one :mod:`retrieval.bm25` uses; a query is its tokens with their counts (:func:`query_weights`), so a point's
score is ``Σ idf(t)·count_q(t)·weight_d(t)``: the BM25 of :class:`retrieval.bm25.Bm25Level`, up to ``avg_len``.

``avg_len`` is a constant per level, not the collection's running mean (a point's weights are written once and
never rewritten when other documents come): :data:`TOKENS_PER_WORD` × the level's size bound in words (θ, θ/2,
θ/4). Measured on the two dev indexes (the seven-kind answers corpus and the filings set, θ = 300): a chunk's mean
token count is 0.54–0.69 of its level's bound (`bench/keyword_store.py` prints it); 0.6 is used.

>>> tokenize("The ferry leaves at noon.")
['ferry', 'leaves', 'noon']
>>> idx, val = document_weights(["ferry", "ferry", "pier"], avg_len=3.0)
>>> [round(v, 3) for v in val]
[1.429, 1.0]
>>> query_weights(["ferry", "pier", "ferry"])[1]
[2.0, 1.0]
"""
from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Sequence

KEYWORDS = "bm25"  # the sparse vector's name in every collection (shard) that has keywords
K1 = 1.5  # BM25's saturation, as rank_bm25 and retrieval.bm25
B = 0.75  # BM25's length normalisation
TOKENS_PER_WORD = 0.6  # a chunk's mean tokens per word of its level's bound (measured: 0.54-0.69, see above)

_TOKEN_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]|[^\W_]+", re.UNICODE)
STOPWORDS = frozenset(
    "a an and are as at be but by for from has have he her his i in is it its of on or she that the their them "
    "there they this to was were what when where which who whom why will with you your".split()
)


def tokenize(text: str) -> list[str]:
    """Lowercased word tokens (CJK characters one by one), English stopwords removed."""
    return [t for t in _TOKEN_RE.findall(text.lower()) if t not in STOPWORDS]


def term_id(token: str) -> int:
    """A token's index in the sparse vectors: the first 31 bits of its BLAKE2b hash (stable across processes and
    machines, unlike ``hash``; two of a million distinct tokens collide with odds ~1 in 4,000)."""
    return int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=4).digest(), "little") & 0x7FFFFFFF


def avg_len(theta: int, level: int) -> float:
    """The reference length (tokens) of a chunk of ``level`` under bound ``theta``."""
    return max(1.0, TOKENS_PER_WORD * theta / 2 ** level)


def document_weights(tokens: Sequence[str], avg_len: float) -> tuple[list[int], list[float]]:
    """(indices, values) of a chunk's sparse vector: BM25's saturated term frequency of each distinct token."""
    counts = Counter(tokens)
    norm = K1 * (1 - B + B * len(tokens) / avg_len)
    merged: dict[int, float] = {}
    for t, tf in counts.items():
        i = term_id(t)
        merged[i] = merged.get(i, 0.0) + tf * (K1 + 1) / (tf + norm)
    return list(merged), list(merged.values())


def query_weights(tokens: Sequence[str]) -> tuple[list[int], list[float]]:
    """(indices, values) of a query's sparse vector: each distinct token with its count (a repeated term counts
    again, as rank_bm25)."""
    merged: dict[int, float] = {}
    for t in tokens:
        i = term_id(t)
        merged[i] = merged.get(i, 0.0) + 1.0
    return list(merged), list(merged.values())
