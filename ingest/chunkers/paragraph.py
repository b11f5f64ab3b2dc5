"""Paragraph chunker (LumberChunker/LGMGC's "Para Chunker"): one chunk per paragraph.

Paragraphs have no size parameter in the papers; a paragraph longer than ``max_words`` is still split
recursively (by sentences) so that every chunk can be embedded and fits the synthesizer's context.
"""
from __future__ import annotations

from dataclasses import dataclass

from core.components import registered
from ingest.chunkers.base import Chunker, check_theta, paragraph_spans, recursive_spans


@registered
@dataclass(frozen=True)
class ParagraphChunker(Chunker):
    max_words: int = 300
    size_field = "max_words"  # θ sets it (build)

    def __post_init__(self) -> None:
        check_theta(self.max_words)

    def _spans(self, text: str) -> list[tuple[int, int]]:
        out = []
        for s, e in paragraph_spans(text):
            out.extend(recursive_spans(text, s, e, self.max_words))
        return out

    def describe(self) -> dict:
        return {"chunker": self.name, "max_words": self.max_words}
