"""MGRAG for LlamaIndex: its chunkers as a ``NodeParser`` and its search as a retriever.

``MGRAGNodeParser`` cuts documents with an MGRAG chunker (MG at θ = 300 words by default): a multi-level chunker
gives level-0 parents and their θ/2 and θ/4 children, each child linked to the chunk of the level above that holds
it (``PARENT``, and ``CHILD`` back), as LlamaIndex's ``HierarchicalNodeParser`` links them, so ``get_leaf_nodes``,
``get_root_nodes`` and the ``AutoMergingRetriever`` work on them. Offsets are exact: ``start_char_idx`` and
``end_char_idx`` locate every node in its document; ``metadata["level"]`` is its granularity.

``MGRAGRetriever`` searches an MGRAG index (a data dir, or an :class:`app.context.AppContext`) with
:func:`retrieval.search.retrieve` and returns its sources: the top parents, best first, with the document id, name,
pages and the best score of each level in their metadata.

LlamaIndex is the ``llamaindex`` extra (``pip install 'mgrag[llamaindex]'``, also in ``bench``); without it this
module does not import.
"""
from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app.adapters import chunker_theta, missing
from app.context import AppContext
from core.settings import Settings
from ingest.chunkers import build_chunker
from ingest.jobs.work import chunker_for
from ingest.types import LEVEL_NAMES, Chunk
from retrieval.search import retrieve

try:
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.bridge.pydantic import Field, PrivateAttr
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.node_parser import NodeParser
    from llama_index.core.schema import (
        BaseNode,
        Document,
        MetadataMode,
        NodeRelationship,
        NodeWithScore,
        QueryBundle,
        RelatedNodeInfo,
        TextNode,
    )
    from llama_index.core.utils import get_tqdm_iterable
except ImportError as e:
    raise missing("app.adapters.llamaindex", "llama-index-core", "llamaindex") from e

# metadata a parsed node carries for programs, kept out of the text embedded and shown to the LLM
NODE_KEYS = ("level", "level_name", "chunker")
# the retriever's metadata the LLM sees (when set); the rest is for programs
SOURCE_LLM_KEYS = ("name", "pages", "headings")


def _link(parent: BaseNode, child: BaseNode) -> None:
    """``child`` PARENT ``parent``, and ``parent`` CHILD ``child`` (appended), as HierarchicalNodeParser links."""
    parent.relationships[NodeRelationship.CHILD] = [*(parent.child_nodes or []), child.as_related_node_info()]
    child.relationships[NodeRelationship.PARENT] = parent.as_related_node_info()


def _holders(chunks: list[Chunk]) -> list[int | None]:
    """For each chunk, the index of the chunk one level up that holds it (same parent, offsets inside), else of its
    level-0 parent; None for a parent. Chunks of one level do not overlap, so one bisection finds the holder."""
    by_level: dict[int, list[int]] = {}
    for i, c in enumerate(chunks):
        by_level.setdefault(c.level, []).append(i)
    for idx in by_level.values():
        idx.sort(key=lambda i: chunks[i].start)
    starts = {lv: [chunks[i].start for i in idx] for lv, idx in by_level.items()}
    parents = {(chunks[i].start, chunks[i].end): i for i in by_level.get(0, [])}
    out: list[int | None] = []
    for c in chunks:
        if c.level == 0:
            out.append(None)
            continue
        up = by_level.get(c.level - 1, [])
        j = bisect_right(starts.get(c.level - 1, []), c.start) - 1
        h = up[j] if j >= 0 else None
        if h is None or chunks[h].end < c.end or chunks[h].parent_span != c.parent_span:
            h = parents.get(c.parent_span)
        out.append(h)
    return out


class MGRAGNodeParser(NodeParser):
    """Documents cut by an MGRAG chunker into ``TextNode`` s: parents (level 0) and, for a multi-level chunker
    (``mg``, ``lgmgc``), their children, linked PARENT/CHILD; PREVIOUS/NEXT link the neighbours of one level.

    ``MGRAGNodeParser()`` is MG at θ = 300 words; ``MGRAGNodeParser("recursive", 200)`` another chunker that needs
    no model; :meth:`from_chunker` wraps any built chunker (an LM one with its scorer), :meth:`from_context` the
    chunker an MGRAG context's settings name.
    """

    chunker: str = Field(default="mg", description="The MGRAG chunker's name (ingest/chunkers).")
    theta: int = Field(default=300, description="Parent size bound in words; children are θ/2 and θ/4.")
    params: dict = Field(default_factory=dict, description="The chunker's parameters (its describe()), so that "
                                                           "LlamaIndex's ingestion cache tells two chunkers apart.")
    _chunker: Any = PrivateAttr(default=None)

    def __init__(self, chunker: str = "mg", theta: int = 300, *, mgrag_chunker=None, **kwargs: Any) -> None:
        """``mgrag_chunker``: a built :class:`ingest.chunkers.base.Chunker` used as is (``chunker`` and ``theta``
        then only describe it); otherwise ``build_chunker(chunker, theta)``, which refuses a chunker that needs a
        model."""
        built = mgrag_chunker if mgrag_chunker is not None else build_chunker(chunker, theta)
        super().__init__(chunker=chunker, theta=theta, params=built.describe(), **kwargs)
        self._chunker = built

    @classmethod
    def from_chunker(cls, chunker, **kwargs: Any) -> "MGRAGNodeParser":
        return cls(chunker.name, chunker_theta(chunker, 300), mgrag_chunker=chunker, **kwargs)

    @classmethod
    def from_context(cls, ctx, **kwargs: Any) -> "MGRAGNodeParser":
        """The chunker and θ of ``ctx.settings`` (``MGRAG_CHUNKER``, ``MGRAG_THETA``), with the context's models."""
        s = ctx.settings
        return cls(s.chunker, s.theta, mgrag_chunker=chunker_for(ctx, s.chunker, s.theta), **kwargs)

    @classmethod
    def class_name(cls) -> str:
        return "MGRAGNodeParser"

    @property
    def n_levels(self) -> int:
        return self._chunker.n_levels

    def _parse_nodes(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> list[BaseNode]:
        out: list[BaseNode] = []
        for node in get_tqdm_iterable(nodes, show_progress, "Parsing nodes"):
            out.extend(self._nodes_of(node))
        return out

    def _nodes_of(self, node: BaseNode) -> list[TextNode]:
        """``node``'s chunks as TextNodes ordered by (level, start), with offsets in the node's document (a node cut
        from a larger one keeps its ``start_char_idx``), metadata and relationships."""
        text = node.get_content(metadata_mode=MetadataMode.NONE)
        base = getattr(node, "start_char_idx", None) or 0
        chunks = self._chunker.chunk(text)
        source = node.as_related_node_info()
        own = {"chunker": self._chunker.name}
        made: list[TextNode] = []
        for i, c in enumerate(chunks):
            meta = {**own, "level": c.level, "level_name": LEVEL_NAMES[c.level] if c.level < len(LEVEL_NAMES)
                    else f"level {c.level}"}
            made.append(TextNode(
                id_=self.id_func(i, node), text=c.text, start_char_idx=base + c.start, end_char_idx=base + c.end,
                metadata={**node.metadata, **meta} if self.include_metadata else meta,
                excluded_embed_metadata_keys=[*node.excluded_embed_metadata_keys, *NODE_KEYS],
                excluded_llm_metadata_keys=[*node.excluded_llm_metadata_keys, *NODE_KEYS],
                metadata_seperator=node.metadata_separator, metadata_template=node.metadata_template,
                text_template=getattr(node, "text_template", TextNode.model_fields["text_template"].default),
                relationships={NodeRelationship.SOURCE: source}))
        for i, h in enumerate(_holders(chunks)):
            if h is not None:
                _link(made[h], made[i])
        if self.include_prev_next_rel:
            for a, b, ca, cb in zip(made, made[1:], chunks, chunks[1:]):
                if ca.level == cb.level:
                    a.relationships[NodeRelationship.NEXT] = b.as_related_node_info()
                    b.relationships[NodeRelationship.PREVIOUS] = a.as_related_node_info()
        return made

    def _postprocess_parsed_nodes(self, nodes: list[BaseNode], parent_doc_map: dict[str, Document]
                                  ) -> list[BaseNode]:
        """What NodeParser does after parsing, less what :meth:`_nodes_of` did exactly: its offsets are found by
        searching the text (wrong for a child once the parents have moved the search past it), its neighbours cross
        levels, and the metadata is merged already. Left: a document's own source becomes its nodes' source."""
        for node in nodes:
            doc = parent_doc_map.get(node.ref_doc_id or "")
            if doc is not None and doc.source_node is not None:
                node.relationships[NodeRelationship.SOURCE] = doc.source_node
        return nodes


def source_node(source, retrieval) -> TextNode:
    """One MGRAG source (:class:`retrieval.search.Source`) as a TextNode: the parent passage, its id and offsets, and
    in its metadata the document, pages, the best score of each level and the level weights of the question."""
    meta = {"doc_id": source.doc_id, "name": source.name, "pages": source.pages, "unit": source.unit,
            "headings": source.headings, "rank": source.rank, "level_scores": dict(source.level_scores),
            "bm25_level_scores": dict(source.bm25_level_scores), "matched_level": source.matched_level,
            "matched_text": source.matched_text, "level_weights": list(retrieval.weights),
            "retriever": retrieval.retriever, "doc_hash": source.doc_hash}
    hidden = [k for k, v in meta.items() if k not in SOURCE_LLM_KEYS or not v]
    return TextNode(id_=source.parent_id, text=source.text, start_char_idx=source.start, end_char_idx=source.end,
                    metadata=meta, excluded_llm_metadata_keys=hidden, excluded_embed_metadata_keys=hidden,
                    relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=source.doc_id,
                                                                             metadata={"name": source.name})})


class MGRAGRetriever(BaseRetriever):
    """The top parents of an MGRAG index for a question, as ``NodeWithScore`` s (score: MGRAG's, the RRF of dense and
    BM25 by default). ``ctx``: an :class:`app.context.AppContext` (it stays the caller's); or ``data_dir``: the
    retriever opens a context on it with the settings of the environment, and :meth:`close` closes it.

    ``k`` hits per level, ``budget_words`` of context, ``retriever`` (dense, bm25, hybrid), ``doc_ids`` and
    ``visible_to`` are :func:`retrieval.search.retrieve`'s (None: the settings'); ``top_n`` keeps the first n.
    ``last`` is the last search's :class:`retrieval.search.Retrieval` (weights, timings)."""

    def __init__(self, ctx=None, *, data_dir: str | Path | None = None, k: int | None = None,
                 budget_words: int | None = None, top_n: int | None = None, retriever: str | None = None,
                 doc_ids: Sequence[str] | None = None, visible_to: str | None = None,
                 callback_manager: CallbackManager | None = None, verbose: bool = False) -> None:
        if ctx is not None and data_dir is not None:
            raise ValueError("give an MGRAG context or a data dir, not both")
        self._owns = ctx is None
        if ctx is None:
            ctx = AppContext(Settings(data_dir=data_dir) if data_dir is not None else Settings())
        self.ctx = ctx
        self.k, self.budget_words, self.top_n, self.retriever = k, budget_words, top_n, retriever
        self.doc_ids = list(doc_ids) if doc_ids is not None else None
        self.visible_to = visible_to
        self.last = None
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        r = retrieve(self.ctx, query_bundle.query_str, k=self.k, budget_words=self.budget_words,
                     retriever=self.retriever, doc_ids=self.doc_ids, visible_to=self.visible_to)
        self.last = r
        sources = r.sources if self.top_n is None else r.sources[: self.top_n]
        return [NodeWithScore(node=source_node(s, r), score=s.score) for s in sources]

    def close(self) -> None:
        """Close the context this retriever opened (one given to it stays open)."""
        if self._owns:
            self.ctx.close()

    def __enter__(self) -> "MGRAGRetriever":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
