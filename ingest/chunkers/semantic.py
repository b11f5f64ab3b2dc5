"""Semantic chunker: breakpoints where the embedding distance between neighbouring sentences is high.

As llama-index's SemanticSplitterNodeParser: each sentence is embedded together with ``buffer_size``
neighbours on each side; the cosine distance between consecutive groups is computed; a chunk ends where the
distance exceeds the ``breakpoint_percentile`` of the document's distances. Chunks longer than ``max_words``
are split recursively so every chunk fits the synthesizer's budget (the paper reports semantic chunking at
several chunk sizes, so it was bounded there too).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from core.components import registered
from ingest.chunkers.base import Chunker, check_theta, recursive_spans
from ingest.text.sentences import sentences_cached


def semantic_breaks(vectors: np.ndarray, percentile: float) -> list[int]:
    """Indices i such that a chunk ends after sentence i (distance(i, i+1) above the percentile)."""
    if len(vectors) < 2:
        return []
    v = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    dist = 1.0 - np.sum(v[:-1] * v[1:], axis=1)
    threshold = np.percentile(dist, percentile)
    return [i for i, d in enumerate(dist) if d > threshold]


@registered
@dataclass(frozen=True)
class SemanticChunker(Chunker):
    embedder: object = field(compare=False)
    max_words: int = 300
    buffer_size: int = 1
    breakpoint_percentile: float = 95.0
    size_field = "max_words"  # θ sets it (build)

    def __post_init__(self) -> None:
        check_theta(self.max_words)
        if not 0 < self.breakpoint_percentile < 100:
            raise ValueError(f"breakpoint_percentile must be in (0, 100), got {self.breakpoint_percentile}")
        if self.buffer_size < 0:
            raise ValueError(f"buffer_size must be >= 0, got {self.buffer_size}")

    def _spans(self, text: str) -> list[tuple[int, int]]:
        sents = list(sentences_cached(text, self.max_words))
        if not sents:
            return []
        b = self.buffer_size
        groups = [text[sents[max(0, i - b)][0] : sents[min(len(sents) - 1, i + b)][1]] for i in range(len(sents))]
        vecs = np.asarray(self.embedder.embed_passages(groups))
        ends = semantic_breaks(vecs, self.breakpoint_percentile) + [len(sents) - 1]
        out, start = [], 0
        for i in ends:
            out.extend(recursive_spans(text, sents[start][0], sents[i][1], self.max_words))
            start = i + 1
        return out

    def describe(self) -> dict:
        return {
            "chunker": self.name, "max_words": self.max_words, "buffer_size": self.buffer_size,
            "breakpoint_percentile": self.breakpoint_percentile, "embedder": getattr(self.embedder, "name", "?"),
        }
