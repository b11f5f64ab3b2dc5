"""Recursive chunker: the papers' baseline. Blocks, lines, then sentences, then words, up to θ words a chunk."""
from __future__ import annotations

from dataclasses import dataclass

from core.components import registered
from ingest.chunkers.base import Chunker, check_theta, recursive_spans


@registered
@dataclass(frozen=True)
class RecursiveChunker(Chunker):
    theta: int = 300
    blocks: bool = True  # False: the cut before blank-line blocks counted (recorded only then)

    def __post_init__(self) -> None:
        check_theta(self.theta)

    def _spans(self, text: str) -> list[tuple[int, int]]:
        return recursive_spans(text, 0, len(text), self.theta, self.blocks)

    def describe(self) -> dict:
        return {"chunker": self.name, "theta": self.theta, **({} if self.blocks else {"blocks": False})}
