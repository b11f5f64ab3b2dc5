"""MGRAG from LlamaIndex and LangChain (app/adapters), with the real libraries of the bench extra: the chunkers as a
NodeParser and a TextSplitter, and a retriever over an MGRAG index."""
from __future__ import annotations

import pytest

pytest.importorskip("llama_index.core")
pytest.importorskip("langchain_text_splitters")

from llama_index.core import Document  # noqa: E402
from llama_index.core.ingestion import IngestionPipeline  # noqa: E402
from llama_index.core.node_parser import get_leaf_nodes, get_root_nodes  # noqa: E402
from llama_index.core.schema import MetadataMode, NodeRelationship, QueryBundle  # noqa: E402

from app.adapters.langchain import MGRAGTextSplitter  # noqa: E402
from app.adapters.llamaindex import MGRAGNodeParser, MGRAGRetriever  # noqa: E402
from ingest.chunkers.multigranular import MultiGranularChunker  # noqa: E402
from ingest.text.words import count_words  # noqa: E402

TOPICS = {
    "lighthouse": "The keeper has tended the light for twenty-two years. She logs the weather at dawn and at dusk, "
                  "trims the wick, and writes each passing ship into a book that fills a shelf by the door.",
    "orchard": "The orchard has forty apple trees and six pear trees. The pears ripen late in the autumn, and the "
               "apples are pressed for cider in the barn at the bottom of the hill every October.",
    "harbour": "The harbour holds eleven fishing boats in winter. Their nets are mended on the quay, and the "
               "harbour master counts the catch before the auction opens at six in the morning.",
    "mill": "The mill on the river grinds oats and barley. Its wheel was rebuilt after the flood, and the miller "
            "sells flour to the bakers of three villages along the valley road each week.",
}
TEXT = "\n\n".join(f"# The {name}\n\n{body} {body}" for name, body in TOPICS.items())


def _words(s: str) -> list[str]:
    return s.split()


# -- LlamaIndex NodeParser -----------------------------------------------------------------------------------------

def test_node_parser_gives_parents_covering_the_text_and_children_linked_to_them():
    doc = Document(text=TEXT, metadata={"title": "village"})
    nodes = MGRAGNodeParser(theta=40).get_nodes_from_documents([doc])
    by_id = {n.node_id: n for n in nodes}
    levels = {lv: [n for n in nodes if n.metadata["level"] == lv] for lv in (0, 1, 2)}
    assert all(levels.values()) and sum(map(len, levels.values())) == len(nodes)
    # exact offsets, the document's metadata and source; MGRAG's own keys stay out of the embedded and LLM text
    for n in nodes:
        assert TEXT[n.start_char_idx:n.end_char_idx] == n.text
        assert n.ref_doc_id == doc.doc_id and n.metadata["title"] == "village" and n.metadata["chunker"] == "mg"
        assert "level" not in n.get_content(MetadataMode.EMBED) and "title: village" in n.get_content(MetadataMode.LLM)
    # the parents are LlamaIndex's roots and cover the text up to whitespace, in order, each within θ words
    parents = levels[0]
    assert get_root_nodes(nodes) == parents and get_leaf_nodes(nodes) == levels[2]
    assert _words(" ".join(p.text for p in parents)) == _words(TEXT)
    assert len(parents) > 1 and all(count_words(p.text) <= 40 for p in parents)
    assert [p.start_char_idx for p in parents] == sorted(p.start_char_idx for p in parents)
    # every child's PARENT is the chunk one level up that holds it, whose CHILD list names it; children cover it
    for lv in (1, 2):
        for c in levels[lv]:
            up = by_id[c.parent_node.node_id]
            assert up.metadata["level"] == lv - 1
            assert up.start_char_idx <= c.start_char_idx and c.end_char_idx <= up.end_char_idx
            assert c.node_id in [r.node_id for r in up.child_nodes]
    for p in parents + levels[1]:
        kids = [by_id[r.node_id] for r in p.child_nodes]
        assert _words(" ".join(k.text for k in kids)) == _words(p.text)
    # neighbours are of one level: the last parent's NEXT is no child
    for n in nodes:
        nxt = n.relationships.get(NodeRelationship.NEXT)
        assert nxt is None or by_id[nxt.node_id].metadata["level"] == n.metadata["level"]
    assert NodeRelationship.NEXT not in parents[-1].relationships


def test_node_parser_runs_in_an_ingestion_pipeline_with_a_one_level_chunker():
    docs = [Document(text=TEXT, doc_id="village"), Document(text="Short note. Nothing else.", doc_id="note")]
    nodes = IngestionPipeline(transformations=[MGRAGNodeParser("recursive", 40)]).run(documents=docs)
    assert {n.ref_doc_id for n in nodes} == {"village", "note"}
    assert all(n.metadata["level"] == 0 and n.parent_node is None and n.child_nodes is None for n in nodes)
    village = [n for n in nodes if n.ref_doc_id == "village"]
    assert _words(" ".join(n.text for n in village)) == _words(TEXT)
    assert [n.text for n in nodes if n.ref_doc_id == "note"] == ["Short note. Nothing else."]


def test_node_parser_of_an_lm_chunker_needs_its_model(make_ctx):
    with pytest.raises(ValueError, match="LogitsScorer"):
        MGRAGNodeParser("lgmgc", 40)
    parser = MGRAGNodeParser.from_context(make_ctx(chunker="lgmgc", theta=40))  # the tiny LM of the fixtures
    nodes = parser.get_nodes_from_documents([Document(text=TEXT)])
    assert (parser.chunker, parser.theta, parser.n_levels) == ("lgmgc", 40, 3)
    assert parser.params["chunker"] == "lgmgc" and parser.params != MGRAGNodeParser(theta=40).params
    parents = [n for n in nodes if n.metadata["level"] == 0]
    assert _words(" ".join(p.text for p in parents)) == _words(TEXT)
    assert all(n.parent_node is not None for n in nodes if n.metadata["level"] > 0)


# -- LangChain TextSplitter ----------------------------------------------------------------------------------------

def test_text_splitter_gives_the_mg_parents_that_concatenate_back_to_the_text():
    splitter = MGRAGTextSplitter(theta=40)
    pieces = splitter.split_text(TEXT)
    assert pieces == [c.text for c in MultiGranularChunker(40).chunk(TEXT) if c.level == 0]
    assert len(pieces) > 1 and _words(" ".join(pieces)) == _words(TEXT)
    assert all(count_words(p) <= 40 for p in pieces)
    children = MGRAGTextSplitter(theta=40, level=2).split_text(TEXT)
    assert len(children) > len(pieces) and _words(" ".join(children)) == _words(TEXT)
    assert all(count_words(p) <= 10 for p in children)
    with pytest.raises(ValueError, match="levels 0..0"):
        MGRAGTextSplitter("recursive", 40, level=1)


def test_text_splitter_splits_langchain_documents_with_exact_offsets():
    from langchain_core.documents import Document as LCDocument

    splitter = MGRAGTextSplitter(theta=40, level=1, add_start_index=True)
    docs = splitter.split_documents([LCDocument(page_content=TEXT, metadata={"source": "village.md"})])
    assert len(docs) > 1
    for d in docs:
        i = d.metadata["start_index"]
        assert TEXT[i:i + len(d.page_content)] == d.page_content and d.metadata["source"] == "village.md"
    assert [d.page_content for d in docs] == splitter.split_text(TEXT)
    assert [d.page_content for d in splitter.transform_documents(docs[:1])] == [docs[0].page_content]


# -- LlamaIndex retriever ------------------------------------------------------------------------------------------

@pytest.fixture
def village(make_ctx, write):
    """A context holding village.md (TEXT) and notes.md, MG at θ = 40, and the document id of village.md."""
    from ingest.jobs.queue import ingest_files

    ctx = make_ctx(chunker="mg", theta=40, router="none")
    report = ingest_files(ctx, [write("village.md", TEXT), write("notes.md", "Buy bread. Call the plumber.\n")])
    assert [r.status for r in report.results] == ["ingested", "ingested"]
    return ctx, report.results[0].doc_id


def test_retriever_returns_the_passage_that_answers_first_with_its_level_scores(village):
    ctx, doc_id = village
    retriever = MGRAGRetriever(ctx, top_n=3)
    found = retriever.retrieve("How many apple trees does the orchard have?")
    assert 1 <= len(found) <= 3
    top = found[0]
    assert "forty apple trees" in top.node.text and top.node.ref_doc_id == doc_id
    assert top.score == pytest.approx(retriever.last.sources[0].score)
    assert [n.score for n in found] == sorted((n.score for n in found), reverse=True)
    meta = top.node.metadata
    assert meta["doc_id"] == doc_id and meta["name"] == "village.md" and meta["pages"] is None
    assert meta["level_scores"] and set(meta["level_scores"]) <= {0, 1, 2} and meta["bm25_level_scores"]
    assert meta["level_weights"] == [1.0, 1.0, 1.0] and meta["retriever"] == "hybrid"
    # the passage is the parent the document holds at those offsets, and the scores stay out of the LLM's text
    assert TEXT[top.node.start_char_idx:top.node.end_char_idx] == top.node.text
    assert "level_scores" not in top.node.get_content(MetadataMode.LLM)
    assert "name: village.md" in top.node.get_content(MetadataMode.LLM)
    # a QueryBundle and a limit to documents work as LlamaIndex and MGRAG mean them
    harbour = MGRAGRetriever(ctx, retriever="dense").retrieve(QueryBundle("How many fishing boats in winter?"))
    assert "eleven fishing boats" in harbour[0].node.text
    assert MGRAGRetriever(ctx).retrieve("bread plumber")[0].node.metadata["name"] == "notes.md"
    limited = MGRAGRetriever(ctx, doc_ids=[doc_id]).retrieve("bread plumber")
    assert limited and {n.node.ref_doc_id for n in limited} == {doc_id}
    retriever.close()  # a context given to it stays open
    assert MGRAGRetriever(ctx).retrieve("pear trees ripen")[0].node.ref_doc_id == doc_id


def test_retriever_on_a_data_dir_opens_and_closes_its_own_context(village, monkeypatch):
    ctx, doc_id = village
    data_dir = ctx.settings.data_dir
    ctx.close()  # the embedded store is one process's at a time
    monkeypatch.setenv("MGRAG_EMBEDDER", "hashing")
    monkeypatch.setenv("MGRAG_ROUTER", "none")
    with MGRAGRetriever(data_dir=data_dir) as retriever:
        found = retriever.retrieve("Who rebuilt the wheel of the mill after the flood?")
        assert "mill" in found[0].node.text and found[0].node.metadata["doc_id"] == doc_id
    assert not retriever.ctx.loaded("index")
    with pytest.raises(ValueError, match="not both"):
        MGRAGRetriever(ctx, data_dir=data_dir)
