"""BM25 over each granularity level, persisted per index generation and updated on ingest.

Scoring is ``rank_bm25.BM25Okapi``'s (same k1/b saturation, same treatment of repeated query terms) with
one deliberate change: the idf is Lucene's ``log(1 + (N - df + .5) / (df + .5))``, always positive. rank_bm25's
``log((N - df + .5) / (df + .5))`` is 0 for a term in exactly half of the chunks and negative above, which on a
small collection (one short document: every term in every chunk) makes BM25 return nothing at all. Scores
are precomputed into a sparse doc × term matrix, so a query costs one sparse mat-vec instead of a Python loop
over every document per query term. The tests compare against rank_bm25's ``get_scores`` with that idf.

Each level's state (chunk ids and term counts) is pickled to ``data/bm25/g{gen}_L{level}.pkl`` with an
atomic rename; the matrix is built when the level is first searched in a process and rebuilt only after an
ingest changes that file — never per query.
"""
from __future__ import annotations

import math
import os
import pickle
import re
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ingest.text.chunk_context import indexed_text

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): scipy

_TOKEN_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]|[^\W_]+", re.UNICODE)
STOPWORDS = frozenset(
    "a an and are as at be but by for from has have he her his i in is it its of on or she that the their them "
    "there they this to was were what when where which who whom why will with you your".split()
)


def lucene_idf(n_docs: int, df: int) -> float:
    """Always-positive idf: ``log(1 + (N - df + 0.5) / (df + 0.5))``."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def tokenize(text: str) -> list[str]:
    """Lowercased word tokens (CJK characters one by one), English stopwords removed."""
    return [t for t in _TOKEN_RE.findall(text.lower()) if t not in STOPWORDS]


@dataclass
class Bm25Level:
    """Searchable BM25 over one level's chunks."""

    ids: list[str]
    counts: list[Counter]
    parents: list[str] | None = None  # parent id of each chunk
    docs: list[str | None] | None = None  # document id of each chunk (for searches limited to some documents)
    k1: float = 1.5
    b: float = 0.75
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
        rows, cols, vals = [], [], []
        for d, c in enumerate(self.counts):
            norm = self.k1 * (1 - self.b + self.b * doc_len[d] / avgdl)
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


class Bm25Store:
    """Per-generation, per-level BM25 state on disk with an in-process cache of built indexes."""

    def __init__(self, root: Path, doc_of=None):
        """``doc_of(gen, chunk_ids) -> {chunk id: doc id}`` fills in the documents of chunks stored without one."""
        self.root = Path(root)
        self.doc_of = doc_of
        self._cache: dict[tuple[int, int], tuple[float, Bm25Level]] = {}
        self._lock = threading.Lock()

    def path(self, gen: int, level: int) -> Path:
        return self.root / f"g{gen}_L{level}.pkl"

    def _read(self, gen: int, level: int) -> dict[str, tuple[str, Counter]]:
        p = self.path(gen, level)
        if not p.exists():
            return {}
        with p.open("rb") as f:
            return pickle.load(f)

    def _write(self, gen: int, level: int, state: dict[str, tuple[str, Counter]]) -> None:
        p = self.path(gen, level)
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_suffix(f".{os.getpid()}.tmp")
        try:
            with tmp.open("wb") as f:
                pickle.dump(state, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, p)
        finally:
            tmp.unlink(missing_ok=True)

    def update(self, gen: int, add: Iterable, remove: dict[int, list[str]] | None = None) -> None:
        """Add chunks (with id, level, text, parent_id) and remove ids, level by level; one write per level."""
        by_level: dict[int, list] = {}
        for c in add:
            by_level.setdefault(c.level, []).append(c)
        levels = set(by_level) | set((remove or {}).keys())
        with self._lock:
            for level in levels:
                state = self._read(gen, level)
                for cid in (remove or {}).get(level, []):
                    state.pop(cid, None)
                for c in by_level.get(level, []):
                    text = indexed_text((getattr(c, "meta", None) or {}).get("context", ""), c.text)
                    state[c.id] = (c.parent_id, Counter(tokenize(text)), getattr(c, "doc_id", None))
                self._write(gen, level, state)

    def retain(self, gen: int, keep: dict[int, set[str]]) -> int:
        """Remove every chunk of ``gen`` whose id is not in ``keep[level]`` (the consistency check); how many."""
        removed = 0
        with self._lock:
            for level, ids in keep.items():
                state = self._read(gen, level)
                stale = [cid for cid in state if cid not in ids]
                for cid in stale:
                    del state[cid]
                if stale:
                    self._write(gen, level, state)
                    removed += len(stale)
        return removed

    def level(self, gen: int, level: int) -> Bm25Level:
        p = self.path(gen, level)
        mtime = p.stat().st_mtime_ns if p.exists() else -1
        with self._lock:
            hit = self._cache.get((gen, level))
            if hit and hit[0] == mtime:
                return hit[1]
        state = self._read(gen, level)
        docs = [v[2] if len(v) > 2 else None for v in state.values()]
        if self.doc_of is not None and any(d is None for d in docs):  # written before documents were recorded
            found = self.doc_of(gen, [k for k, d in zip(state, docs) if d is None])
            docs = [d if d is not None else found.get(k) for k, d in zip(state, docs)]
        built = Bm25Level(list(state.keys()), [v[1] for v in state.values()], [v[0] for v in state.values()], docs)
        with self._lock:
            self._cache[(gen, level)] = (mtime, built)
        return built

    def drop(self, gen: int) -> None:
        for p in self.root.glob(f"g{gen}_L*.pkl"):
            p.unlink(missing_ok=True)
        with self._lock:
            for key in [k for k in self._cache if k[0] == gen]:
                del self._cache[key]
