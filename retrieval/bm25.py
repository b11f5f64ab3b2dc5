"""BM25 in memory over one level's chunks: the reference the store's keywords are checked against, and what the
lab (router labels, the retrieval benchmarks) scores texts with that are not in an index.

The product's keyword search runs inside the vector store (:mod:`ingest.text.keywords`: each point's BM25 term
weights as a sparse vector the store weighs by idf); its scores equal these when the reference length equals the
collection's mean (``tests/ingest/test_keywords_in_store.py``).

Scoring is ``rank_bm25.BM25Okapi``'s (same k1/b saturation, same treatment of repeated query terms) with
one deliberate change: the idf is Lucene's ``log(1 + (N - df + .5) / (df + .5))``, always positive (Qdrant's too).
rank_bm25's ``log((N - df + .5) / (df + .5))`` is 0 for a term in exactly half of the chunks and negative above,
which on a small collection (one short document: every term in every chunk) makes BM25 return nothing at all.
Scores are precomputed into a sparse doc × term matrix, so a query costs one sparse mat-vec instead of a Python
loop over every document per query term. The tests compare against rank_bm25's ``get_scores`` with that idf.
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ingest.text.keywords import STOPWORDS as STOPWORDS
from ingest.text.keywords import tokenize

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): scipy

def lucene_idf(n_docs: int, df: int) -> float:
    """Always-positive idf: ``log(1 + (N - df + 0.5) / (df + 0.5))``."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


@dataclass
class Bm25Level:
    """Searchable BM25 over one level's chunks."""

    ids: list[str]
    counts: list[Counter]
    parents: list[str] | None = None  # parent id of each chunk
    docs: list[str | None] | None = None  # document id of each chunk (for searches limited to some documents)
    k1: float = 1.5
    b: float = 0.75
    # each chunk's reference length (the store's fixed one per level, ingest.text.keywords.avg_len); None: the mean
    avg_lens: Sequence[float] | None = None
    vocab: dict[str, int] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        from scipy.sparse import csc_matrix

        n = len(self.ids)
        self.n = n
        codes = {d: i for i, d in enumerate(dict.fromkeys(self.docs or ()))}
        self._doc_code = codes
        self._doc_codes = np.array([codes[d] for d in self.docs], dtype=np.int64) if self.docs else None
        if n == 0:
            self.matrix, self.idf = None, np.zeros(0)
            return
        df: Counter = Counter()
        for c in self.counts:
            df.update(c.keys())
        self.vocab = {t: i for i, t in enumerate(df)}
        self.idf = np.array([lucene_idf(n, df[t]) for t in self.vocab])
        doc_len = np.array([sum(c.values()) for c in self.counts], dtype=np.float64)
        avgdl = doc_len.sum() / n if doc_len.sum() else 1.0
        ref = np.asarray(self.avg_lens, dtype=np.float64) if self.avg_lens is not None else np.full(n, avgdl)
        rows, cols, vals = [], [], []
        for d, c in enumerate(self.counts):
            norm = self.k1 * (1 - self.b + self.b * doc_len[d] / ref[d])
            for t, tf in c.items():
                rows.append(d)
                cols.append(self.vocab[t])
                vals.append(tf * (self.k1 + 1) / (tf + norm))
        self.matrix = csc_matrix((vals, (rows, cols)), shape=(n, len(self.vocab)), dtype=np.float64)

    def scores(self, query_tokens: Sequence[str]) -> np.ndarray:
        """BM25 score of every chunk (same order as ``ids``); repeated query terms count again, as rank_bm25."""
        if self.n == 0:
            return np.zeros(0)
        q = Counter(t for t in query_tokens if t in self.vocab)
        if not q:
            return np.zeros(self.n)
        cols = np.array([self.vocab[t] for t in q])
        weights = self.idf[cols] * np.array([q[t] for t in q], dtype=np.float64)
        return np.asarray(self.matrix[:, cols] @ weights).ravel()

    def top(self, query: str, k: int) -> list[tuple[str, float]]:
        """The ``k`` best (chunk id, score) pairs with a positive score."""
        return [(self.ids[i], sc) for i, sc in self.top_indices(tokenize(query), k)]

    def top_indices(self, query_tokens: Sequence[str], k: int, allowed=None) -> list[tuple[int, float]]:
        """The ``k`` best (index, score) pairs with a positive score, among the chunks of the documents ``allowed``
        if given (None: all)."""
        s = self.scores(query_tokens)
        if len(s) == 0:
            return []
        if allowed is not None:
            if self._doc_codes is None:
                raise ValueError("this BM25 level has no document ids; re-ingest to search within documents")
            keep = [self._doc_code[d] for d in allowed if d in self._doc_code]
            s = np.where(np.isin(self._doc_codes, keep), s, 0.0)
        k = min(k, len(s))
        idx = np.argpartition(-s, k - 1)[:k]
        idx = idx[np.argsort(-s[idx], kind="stable")]
        return [(int(i), float(s[i])) for i in idx if s[i] > 0]
