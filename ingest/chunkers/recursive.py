"""Recursive chunker: the papers' baseline. Paragraphs, then sentences, then words, up to θ words a chunk."""
from __future__ import annotations

from dataclasses import dataclass

from core.components import registered
from ingest.chunkers.base import Chunker, check_theta, recursive_spans


@registered
@dataclass(frozen=True)
class RecursiveChunker(Chunker):
    theta: int = 300

    def __post_init__(self) -> None:
        check_theta(self.theta)

    def _spans(self, text: str) -> list[tuple[int, int]]:
        return recursive_spans(text, 0, len(text), self.theta)

    def describe(self) -> dict:
        return {"chunker": self.name, "theta": self.theta}
