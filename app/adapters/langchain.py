"""MGRAG for LangChain: its chunkers as a ``TextSplitter``.

``MGRAGTextSplitter().split_text(text)`` is the parents of MG at θ = 300 words (level 0); ``level=1`` or ``2`` the
θ/2 or θ/4 children of a multi-level chunker. The pieces of one level do not overlap and cover the text up to
whitespace; ``add_start_index=True`` puts each piece's exact offset in its Document's metadata.

LangChain's text splitters are the ``langchain`` extra (``pip install 'mgrag[langchain]'``, also in ``bench``);
without them this module does not import.
"""
from __future__ import annotations

import copy
from typing import Any

from app.adapters import chunker_theta, missing
from ingest.chunkers import build_chunker
from ingest.jobs.work import chunker_for
from ingest.text.words import count_words
from ingest.types import Chunk

try:
    from langchain_core.documents import Document
    from langchain_text_splitters import TextSplitter
except ImportError as e:
    raise missing("app.adapters.langchain", "langchain-text-splitters", "langchain") from e


class MGRAGTextSplitter(TextSplitter):
    """The chunks of one level of an MGRAG chunker (``chunker``, ``theta``; or a built one, ``mgrag_chunker``)."""

    def __init__(self, chunker: str = "mg", theta: int = 300, level: int = 0, *, mgrag_chunker=None,
                 add_start_index: bool = False) -> None:
        self.chunker = mgrag_chunker if mgrag_chunker is not None else build_chunker(chunker, theta)
        if not 0 <= level < self.chunker.n_levels:
            raise ValueError(f"the {self.chunker.name} chunker has levels 0..{self.chunker.n_levels - 1}, "
                             f"not {level}")
        self.level = level
        # sizes in words, as MGRAG counts them; no overlap (MGRAG's chunks have none)
        super().__init__(chunk_size=chunker_theta(self.chunker, theta), chunk_overlap=0, length_function=count_words,
                         add_start_index=add_start_index)

    @classmethod
    def from_context(cls, ctx, level: int = 0, **kwargs: Any) -> "MGRAGTextSplitter":
        """The chunker and θ of an MGRAG context's settings, with its models."""
        s = ctx.settings
        return cls(s.chunker, s.theta, level, mgrag_chunker=chunker_for(ctx, s.chunker, s.theta), **kwargs)

    def chunks(self, text: str) -> list[Chunk]:
        """The MGRAG chunks of this splitter's level, in document order, with their offsets."""
        return [c for c in self.chunker.chunk(text) if c.level == self.level]

    def split_text(self, text: str) -> list[str]:
        return [c.text for c in self.chunks(text)]

    def create_documents(self, texts: list[str], metadatas: list[dict[Any, Any]] | None = None) -> list[Document]:
        """As TextSplitter's, with the exact offset as ``start_index`` (LangChain's searches the text for it)."""
        metadatas = metadatas or [{}] * len(texts)
        out = []
        for text, meta in zip(texts, metadatas):
            for c in self.chunks(text):
                m = copy.deepcopy(meta)
                if self._add_start_index:
                    m["start_index"] = c.start
                out.append(Document(page_content=c.text, metadata=m))
        return out
