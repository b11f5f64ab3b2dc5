"""Caches that let one LM pass serve many chunking rules, and one embedding serve many chunkings (benchmarks only).

:class:`CachedScorer` stands in for :class:`ingest.text.lm.LogitsScorer` in the LG chunkers. It remembers, per document
and segmentation, the streaming probabilities (one pass over the document) and every exact-mode window it was asked
for (keyed by the window's first sentence: the pass is causal, so the probabilities of a shorter window starting
there are the first entries of a longer one's). Only a miss loads the LM (``load_scorer``) and runs it, so the
cutting rules of ``ingest.text.boundary.cut_scores`` (structure-aware scores, a size prior, children sized by the
parent) are compared on the very same probabilities at the cost of re-cutting, not re-reading. Entries live in
``<cache_dir>/bench/probs/<lm key>/<doc hash>-<segmentation hash>.npz``, written after every new LM result.

:class:`VectorCache` keeps embedding vectors on disk by text (SQLite), so chunks shared by several chunkings of a
document (children of the same parent, recursive spans) are embedded once across runs.
"""
from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)


def _digest(obj) -> str:
    blob = obj if isinstance(obj, bytes) else json.dumps(obj, sort_keys=True, ensure_ascii=False).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()[:16]


@dataclass
class CachedDoc:
    """A document as the cached scorer sees it: its text, segmentation and stored probabilities."""

    text: str
    sentences: list[tuple[int, int]]
    path: Path
    stream: np.ndarray | None = None
    windows: dict[int, np.ndarray] = field(default_factory=dict)
    inner: object | None = None  # the real scorer's DocumentTokens, made on the first miss

    @property
    def n_sentences(self) -> int:
        return len(self.sentences)


class CachedScorer:
    """The LogitsScorer interface (``tokenize``, ``window_probs``, ``stream_probs``) over a disk cache.

    ``key`` names everything that changes the probabilities (LM, prompt, boundary tokens, streaming block sizes);
    ``load_scorer()`` builds the real scorer on the first cache miss. ``hits``/``misses`` count windows and
    streams served from the cache or computed; ``lm_seconds`` is the time spent computing.
    """

    def __init__(self, cache_dir: str | Path, key: dict, load_scorer: Callable[[], object]):
        self.key = dict(key)
        self.root = Path(cache_dir) / "bench" / "probs" / _digest(self.key)
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "key.json").write_text(json.dumps(self.key, indent=1, ensure_ascii=False), encoding="utf-8")
        self._load = load_scorer
        self._scorer = None
        self.hits = self.misses = 0
        self.lm_seconds = 0.0
        self.prompt = key.get("prompt")
        self.boundary_tokens = tuple(key.get("boundary_tokens", ()))

    @property
    def scorer(self):
        if self._scorer is None:
            self._scorer = self._load()
        return self._scorer

    @property
    def tokens_processed(self) -> int:
        return self._scorer.tokens_processed if self._scorer is not None else 0

    @property
    def forward_passes(self) -> int:
        return self._scorer.forward_passes if self._scorer is not None else 0

    def tokenize(self, text: str, sentences: Sequence[tuple[int, int]]) -> CachedDoc:
        sentences = [tuple(s) for s in sentences]
        name = f"{_digest(text.encode('utf-8'))}-{_digest(sentences)}.npz"
        doc = CachedDoc(text, sentences, self.root / name)
        if doc.path.exists():
            with np.load(doc.path) as z:
                for k in z.files:
                    if k == "stream":
                        doc.stream = z[k]
                    elif k.startswith("w"):
                        doc.windows[int(k[1:])] = z[k]
        return doc

    def _inner(self, doc: CachedDoc):
        if doc.inner is None:
            doc.inner = self.scorer.tokenize(doc.text, doc.sentences)
        return doc.inner

    def _save(self, doc: CachedDoc) -> None:
        if doc.path.exists():  # another process may have added entries since this one read the file: keep them
            with np.load(doc.path) as z:
                for k in z.files:
                    if k == "stream" and doc.stream is None:
                        doc.stream = z[k]
                    elif k.startswith("w") and int(k[1:]) not in doc.windows:
                        doc.windows[int(k[1:])] = z[k]
        arrays = {f"w{i}": a for i, a in doc.windows.items()}
        if doc.stream is not None:
            arrays["stream"] = doc.stream
        tmp = doc.path.with_name(doc.path.name + ".tmp.npz")
        np.savez(tmp, **arrays)
        tmp.replace(doc.path)

    def window_probs(self, doc: CachedDoc, i: int, j: int) -> np.ndarray:
        have = doc.windows.get(i)
        if have is not None and len(have) >= j - i:
            self.hits += 1
            return have[: j - i]
        self.misses += 1
        t = time.perf_counter()
        probs = np.asarray(self.scorer.window_probs(self._inner(doc), i, j), dtype=np.float64)
        self.lm_seconds += time.perf_counter() - t
        doc.windows[i] = probs
        self._save(doc)
        return probs

    def stream_probs(self, doc: CachedDoc, **kw) -> np.ndarray:
        if doc.stream is not None and len(doc.stream) == doc.n_sentences:
            self.hits += 1
            return doc.stream
        self.misses += 1
        t = time.perf_counter()
        doc.stream = np.asarray(self.scorer.stream_probs(self._inner(doc), **kw), dtype=np.float64)
        self.lm_seconds += time.perf_counter() - t
        self._save(doc)
        return doc.stream


class VectorCache:
    """Embedding vectors by text on disk: ``get_many(texts, embed)`` embeds only the texts it has not seen."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(self.path))
        self.db.execute("CREATE TABLE IF NOT EXISTS v (k TEXT PRIMARY KEY, d INTEGER, v BLOB)")
        self.embedded_words = 0
        self.seconds = 0.0

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha1(text.encode("utf-8")).hexdigest()

    def get_many(self, texts: Sequence[str], embed: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        keys = [self._key(t) for t in texts]
        found: dict[str, np.ndarray] = {}
        uniq = list(dict.fromkeys(keys))
        for s in range(0, len(uniq), 500):
            part = uniq[s:s + 500]
            q = f"SELECT k, v FROM v WHERE k IN ({','.join('?' * len(part))})"
            for k, blob in self.db.execute(q, part):
                found[k] = np.frombuffer(blob, dtype=np.float32)
        todo = list(dict.fromkeys(t for t, k in zip(texts, keys) if k not in found))
        if todo:
            t0 = time.perf_counter()
            vecs = np.asarray(embed(todo), dtype=np.float32)
            self.seconds += time.perf_counter() - t0
            self.embedded_words += sum(len(t.split()) for t in todo)
            rows = []
            for t, v in zip(todo, vecs):
                k = self._key(t)
                found[k] = v
                rows.append((k, len(v), v.tobytes()))
            self.db.executemany("INSERT OR REPLACE INTO v VALUES (?, ?, ?)", rows)
            self.db.commit()
        if not texts:
            return np.zeros((0, 0), np.float32)
        return np.stack([found[k] for k in keys])


class DiskCachedEmbedder:
    """An embedder whose passage vectors come from a :class:`VectorCache` (queries are cheap: always embedded)."""

    def __init__(self, inner, cache: VectorCache):
        self.inner, self.cache = inner, cache
        self.name = getattr(inner, "name", "embedder")
        self.dim = inner.dim
        self._q: dict[str, np.ndarray] = {}

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return self.cache.get_many(texts, self.inner.embed_passages)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        missing = [t for t in dict.fromkeys(texts) if t not in self._q]
        if missing:
            self._q.update(zip(missing, np.asarray(self.inner.embed_queries(missing), dtype=np.float32)))
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return np.stack([self._q[t] for t in texts])
