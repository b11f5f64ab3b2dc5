"""Multi-Granular (MG) chunker, LGMGC §3.2: parents of θ words, each split recursively into θ/2 and θ/4 children.

Children never split a sentence (unless the sentence alone is longer than the child size), are nested
(each θ/4 child lies inside one θ/2 child), and together cover their parent exactly: the first child
starts where the parent starts, the last ends where it ends, and only whitespace lies between them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from core.components import registered
from ingest.chunkers.base import Chunker, check_theta, recursive_spans
from ingest.chunkers.recursive import RecursiveChunker
from ingest.text.sentences import count_words
from ingest.types import Chunk


def children_of(text: str, parent: tuple[int, int], theta: int, blocks: bool = True) -> list[Chunk]:
    """Level-1 (θ/2) and level-2 (θ/4) children of one parent span (pass the parent's own word count as ``theta``
    to size the children by the parent; ``blocks``: as :func:`recursive_spans`)."""
    ps, pe = parent
    half, quarter = max(1, theta // 2), max(1, theta // 4)
    out: list[Chunk] = []
    for hs, he in recursive_spans(text, ps, pe, half, blocks):
        out.append(Chunk(text[hs:he], hs, he, 1, ps, pe))
        for qs, qe in recursive_spans(text, hs, he, quarter, blocks):
            out.append(Chunk(text[qs:qe], qs, qe, 2, ps, pe))
    return out


def with_children(text: str, parents: list[tuple[int, int]], theta: int, by_parent: bool = False,
                  blocks: bool = True) -> list[Chunk]:
    """Parents (level 0) and their children, ordered by (level, start). Children have at most θ/2 and θ/4 words,
    or, ``by_parent``, half and a quarter of their own parent's words (rounded up)."""
    chunks = [Chunk(text[s:e], s, e, 0) for s, e in parents]
    for p in parents:
        size = theta
        if by_parent:
            size = max(4, count_words(text[p[0]:p[1]]) + 1) // 2 * 2  # even, so half is its ceiling
            size = min(size, theta)
        chunks.extend(children_of(text, p, size, blocks))
    chunks.sort(key=lambda c: (c.level, c.start))
    return chunks


@registered
@dataclass(frozen=True)
class MultiGranularChunker(Chunker):
    """MG baseline: recursive parents of θ words + children. Pass ``parent_chunker`` to use other parents."""

    theta: int = 300
    parent_chunker: Chunker | None = field(default=None, compare=False)
    blocks: bool = True  # False: the cut before blank-line blocks counted (recorded only then)
    n_levels = 3

    def __post_init__(self) -> None:
        check_theta(self.theta)

    def _parents(self) -> Chunker:
        return self.parent_chunker or RecursiveChunker(self.theta, self.blocks)

    def _spans(self, text: str) -> list[tuple[int, int]]:
        return self._parents()._spans(text)

    def chunk(self, text: str) -> list[Chunk]:
        return with_children(text, self._spans(text), self.theta, blocks=self.blocks)

    def describe(self) -> dict:
        return {**self._parents().describe(), "chunker": self.name, "theta": self.theta,
                **({} if self.blocks else {"blocks": False})}
