"""Other libraries' chunkers and retrievers, run in the benchmark beside ours with the same embedder.

* ``li-sentence``: llama-index ``SentenceSplitter`` (its default RAG chunker).
* ``li-semantic``: llama-index ``SemanticSplitterNodeParser`` (buffer 1, 95th-percentile breakpoints; it has no
  size parameter, so θ does not change it).
* ``li-hierarchical``: llama-index ``HierarchicalNodeParser`` (θ, θ/2, θ/4) searched by its own
  ``AutoMergingRetriever`` (leaves retrieved, merged into their parent when more than half of its children are
  retrieved): llama-index's own multi-granularity.
* ``lc-recursive``: LangChain ``RecursiveCharacterTextSplitter``, the papers' recursive baseline.
* ``chonkie-recursive``: chonkie's ``RecursiveChunker`` with its default rules (paragraphs, sentences, pauses,
  words) and its default minimum of 24 characters per split.

Sizes are counted in **whitespace words** (``tokenizer=str.split`` / ``length_function``) so θ means the same
for every chunker, and overlap is 0 everywhere (the papers' setting; our chunkers have none). Every chunk is
located in the document by character offsets; a chunk that cannot be located exactly raises.

Their libraries are the ``bench`` extra (``pip install 'mgrag[bench]'``; ``make setup`` installs it): the app does
not need them, so they are imported only here, when a peer runs (:func:`peer_unavailable` says when one cannot).
"""
from __future__ import annotations

import contextlib
import importlib
import io
from collections.abc import Sequence

import numpy as np

from ingest.types import Chunk

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): llama_index,
# langchain_text_splitters, chonkie, pydantic

PEERS = ("li-sentence", "li-semantic", "li-hierarchical", "lc-recursive", "chonkie-recursive")
BENCH_EXTRA = "pip install 'mgrag[bench]'"
# a peer's name prefix -> the module it imports and the distribution that provides it
_LIBRARY = {"lc-": ("langchain_text_splitters", "langchain-text-splitters"), "chonkie-": ("chonkie", "chonkie"),
            "li-": ("llama_index.core", "llama-index-core")}


def peer_unavailable(name: str) -> str | None:
    """None when peer chunker ``name`` can run, else why not: its library (the ``bench`` extra) is not installed."""
    module, dist = next(lib for prefix, lib in _LIBRARY.items() if name.startswith(prefix))
    try:
        importlib.import_module(module)
    except ImportError:
        return (f"{name} runs {dist}, a benchmark-only package the app does not install: {BENCH_EXTRA} "
                "(or `make setup`), or leave the peers out of --chunkers")
    return None


def _quiet():
    """llama-index prints a warning to stdout whenever a chunk size is under 50 tokens (θ/4 often is)."""
    return contextlib.redirect_stdout(io.StringIO())


def _words(s: str) -> int:
    return len(s.split())


def _locate(text: str, piece: str, hint: int) -> tuple[int, int]:
    """Offsets of ``piece`` in ``text``, searching from ``hint`` first (pieces come in document order)."""
    i = text.find(piece, max(0, hint))
    if i < 0:
        i = text.find(piece)
    if i < 0:
        raise ValueError(f"a peer chunk could not be located in the document: {piece[:60]!r}")
    return i, i + len(piece)


def _node_span(text: str, node, hint: int) -> tuple[int, int]:
    content = node.get_content()
    s, e = node.start_char_idx, node.end_char_idx
    if s is not None and e is not None and text[s:e] == content:
        return s, e
    return _locate(text, content, hint)


def li_sentence_spans(text: str, theta: int) -> list[tuple[int, int]]:
    from llama_index.core import Document
    from llama_index.core.node_parser import SentenceSplitter

    with _quiet():
        nodes = SentenceSplitter(chunk_size=theta, chunk_overlap=0, tokenizer=str.split).get_nodes_from_documents(
            [Document(text=text)])
    out, hint = [], 0
    for n in nodes:
        s, e = _node_span(text, n, hint)
        out.append((s, e))
        hint = s
    return out


def lc_recursive_spans(text: str, theta: int) -> list[tuple[int, int]]:
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    sp = RecursiveCharacterTextSplitter(chunk_size=theta, chunk_overlap=0, length_function=_words,
                                        add_start_index=True, strip_whitespace=True)
    out = []
    for d in sp.create_documents([text]):
        s = int(d.metadata["start_index"])
        if text[s:s + len(d.page_content)] != d.page_content:
            s, _ = _locate(text, d.page_content, s)
        out.append((s, s + len(d.page_content)))
    return out


def _chonkie_words():
    """A chonkie ``Tokenizer`` whose tokens are whitespace words (each with the whitespace after it, so decoding a
    run of tokens gives back the exact text): sizes are counted as for the other peers, and chonkie's last rule
    (cut by token count, for a run with no delimiter it splits at) works, which a plain counting function does not
    (it cannot encode)."""
    import re

    from chonkie.tokenizer import Tokenizer

    piece = re.compile(r"\S+\s*|\s+")

    class WhitespaceWords(Tokenizer):
        def __repr__(self) -> str:
            return f"WhitespaceWords(vocab_size={len(self.vocab)})"

        def tokenize(self, text: str) -> list[str]:
            return piece.findall(text)

        def encode(self, text: str) -> list[int]:
            out = []
            for token in self.tokenize(text):
                i = self.token2id[token]
                if i == len(self.vocab):
                    self.vocab.append(token)
                out.append(i)
            return out

        def decode(self, tokens) -> str:
            return "".join(self.vocab[t] for t in tokens)

        def count_tokens(self, text: str) -> int:
            return _words(text)

    return WhitespaceWords()


def chonkie_recursive_spans(text: str, theta: int) -> list[tuple[int, int]]:
    """chonkie's ``RecursiveChunker`` (default rules) at θ whitespace words; its chunks tile the text."""
    from chonkie import RecursiveChunker

    out, hint = [], 0
    for c in RecursiveChunker(tokenizer=_chonkie_words(), chunk_size=theta).chunk(text):
        s = c.start_index
        if text[s:c.end_index] != c.text:
            s, _ = _locate(text, c.text, hint)
        out.append((s, s + len(c.text)))
        hint = s
    return out


class _Embedding:
    """Builds a llama-index ``BaseEmbedding`` around one of our embedders (the same vectors as our chunkers)."""

    @staticmethod
    def make(embedder):
        from llama_index.core.base.embeddings.base import BaseEmbedding
        from pydantic import PrivateAttr

        class OurEmbedding(BaseEmbedding):
            _inner: object = PrivateAttr()

            def __init__(self, inner, **kw):
                super().__init__(model_name=getattr(inner, "name", "mgrag"), embed_batch_size=256, **kw)
                self._inner = inner

            def _get_query_embedding(self, query: str):
                return np.asarray(self._inner.embed_queries([query])[0], dtype=float).tolist()

            async def _aget_query_embedding(self, query: str):
                return self._get_query_embedding(query)

            def _get_text_embedding(self, text: str):
                return np.asarray(self._inner.embed_passages([text])[0], dtype=float).tolist()

            def _get_text_embeddings(self, texts: list[str]):
                return np.asarray(self._inner.embed_passages(list(texts)), dtype=float).tolist()

        return OurEmbedding(embedder)


def li_semantic_spans(text: str, embedder) -> list[tuple[int, int]]:
    from llama_index.core import Document
    from llama_index.core.node_parser import SemanticSplitterNodeParser

    parser = SemanticSplitterNodeParser.from_defaults(embed_model=_Embedding.make(embedder), buffer_size=1,
                                                      breakpoint_percentile_threshold=95)
    out, hint = [], 0
    for n in parser.get_nodes_from_documents([Document(text=text)]):
        if not n.get_content().strip():
            continue
        s, e = _node_span(text, n, hint)
        out.append((s, e))
        hint = s
    return out


class Hierarchy:
    """llama-index's HierarchicalNodeParser output for one document, with absolute offsets."""

    def __init__(self, text: str, theta: int):
        from llama_index.core import Document
        from llama_index.core.node_parser import HierarchicalNodeParser, SentenceSplitter

        sizes = [theta, max(1, theta // 2), max(1, theta // 4)]
        ids = [f"level_{i}" for i in range(3)]
        with _quiet():
            parser = HierarchicalNodeParser.from_defaults(
                node_parser_ids=ids,
                node_parser_map={i: SentenceSplitter(chunk_size=c, chunk_overlap=0, tokenizer=str.split)
                                 for i, c in zip(ids, sizes)})
            self.nodes = parser.get_nodes_from_documents([Document(text=text)])
        self.text = text
        self.by_id = {n.node_id: n for n in self.nodes}
        self.level: dict[str, int] = {}
        self.span: dict[str, tuple[int, int]] = {}
        for n in self.nodes:  # parents come before their children, so a child is searched inside its parent
            parent = n.parent_node
            level = 0 if parent is None else self.level[parent.node_id] + 1
            hint = self.span[parent.node_id][0] if parent is not None else 0
            self.level[n.node_id] = level
            self.span[n.node_id] = _node_span(text, n, hint)

    def root_of(self, node_id: str) -> str:
        n = self.by_id[node_id]
        while n.parent_node is not None:
            n = self.by_id[n.parent_node.node_id]
        return n.node_id

    def chunks(self) -> list[Chunk]:
        """Every node as a Chunk of its level, linked to its root (θ) node: our max-over-children can use it."""
        out = []
        for n in self.nodes:
            s, e = self.span[n.node_id]
            ps, pe = self.span[self.root_of(n.node_id)]
            out.append(Chunk(self.text[s:e], s, e, self.level[n.node_id], ps, pe))
        return out

    def leaf_spans(self) -> list[tuple[int, int]]:
        from llama_index.core.node_parser import get_leaf_nodes

        return [self.span[n.node_id] for n in get_leaf_nodes(self.nodes)]

    def automerging(self, embedding, top_k: int):
        """A ``retrieve(question) -> ranked spans`` function: llama-index's AutoMergingRetriever over the leaves."""
        from llama_index.core import StorageContext, VectorStoreIndex
        from llama_index.core.node_parser import get_leaf_nodes
        from llama_index.core.retrievers import AutoMergingRetriever

        storage = StorageContext.from_defaults()
        storage.docstore.add_documents(self.nodes)
        index = VectorStoreIndex(get_leaf_nodes(self.nodes), storage_context=storage, embed_model=embedding,
                                 show_progress=False)
        retriever = AutoMergingRetriever(index.as_retriever(similarity_top_k=top_k), storage, verbose=False)

        def retrieve(question: str) -> list[tuple[int, int]]:
            return [self.span[r.node.node_id] for r in retriever.retrieve(question)]

        return retrieve


def peer_spans(name: str, text: str, theta: int, embedder=None) -> list[tuple[int, int]]:
    if name == "li-sentence":
        return li_sentence_spans(text, theta)
    if name == "lc-recursive":
        return lc_recursive_spans(text, theta)
    if name == "li-semantic":
        return li_semantic_spans(text, embedder)
    if name == "chonkie-recursive":
        return chonkie_recursive_spans(text, theta)
    raise ValueError(f"unknown peer {name!r}; choose one of {', '.join(PEERS)}")


def spans_to_chunks(text: str, spans: Sequence[tuple[int, int]]) -> list[Chunk]:
    return [Chunk(text[s:e], s, e, 0, s, e) for s, e in spans if text[s:e].strip()]
