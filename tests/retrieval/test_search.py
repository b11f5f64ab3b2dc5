import numpy as np
import pytest

from ingest.jobs.queue import ingest_files
from ingest.jobs.rebuild import reingest
from ingest.store.write import delete_document
from retrieval.scoring import Hit, assemble_context, rank_parents, weights_or_uniform
from retrieval.search import EmptyIndexError, retrieve

DOC = "\n\n".join(
    f"Topic {t} paragraph. "
    + " ".join(f"The {w} of topic {t} is notable." for w in ("owl", "fox", "elk", "cod", "yak"))
    for t in ("alpha", "bravo", "charlie", "delta")
)


def brute_force(hits, weights):
    best = {}
    for h in hits:
        best[h.parent_id] = max(best.get(h.parent_id, -np.inf), weights[h.level] * h.score)
    return best


def test_rank_parents_matches_brute_force():
    rng = np.random.default_rng(0)
    hits = [Hit(f"c{i}", f"p{rng.integers(0, 7)}", int(rng.integers(0, 3)), float(rng.random())) for i in range(200)]
    w = [0.5, 1.0, 0.8]
    ranked = rank_parents(hits, w)
    ref = brute_force(hits, w)
    assert {p: s for p, s, _ in ranked} == pytest.approx(ref)
    assert [s for _, s, _ in ranked] == sorted(ref.values(), reverse=True)


def test_assemble_context_respects_budget_and_order():
    parents = [("a", "w " * 900), ("b", "w " * 700), ("c", "w " * 500), ("d", "w " * 100)]
    assert [p for p, _ in assemble_context(parents, 1500)] == ["a", "c", "d"]


def test_weights_validation():
    assert weights_or_uniform(None, 3) == [1.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="got 2 level weights for an index with 3 levels"):
        weights_or_uniform([1, 2], 3)


def test_qdrant_path_equals_reference(make_ctx, write):
    ctx = make_ctx(theta=40)
    ingest_files(ctx, [write("t.txt", DOC)])
    live = ctx.catalog.live_generation()
    q = "Where is the elk of topic charlie?"
    res = retrieve(ctx, q, k=1000, budget_words=10_000, retriever="dense")
    # reference: score every point of every level in numpy, max over children and itself
    qv = ctx.embedder.embed_queries([q])[0]
    hits = []
    for lv in range(live.n_levels):
        for p in ctx.index.points(live.gen, lv, with_vectors=True):
            hits.append(Hit(str(p.id), p.payload["parent_id"], lv, float(np.dot(qv, p.vector))))
    ref = rank_parents(hits)
    assert [s.parent_id for s in res.sources] == [p for p, _, _ in ref]
    assert [s.score for s in res.sources] == pytest.approx([s for _, s, _ in ref], abs=1e-5)
    assert "charlie" in res.sources[0].text


def test_empty_question_and_empty_index(make_ctx):
    ctx = make_ctx(theta=40)
    with pytest.raises(ValueError, match="the question is empty"):
        retrieve(ctx, "  ")
    with pytest.raises(EmptyIndexError, match="the index is empty; ingest documents first"):
        retrieve(ctx, "anything?")


@pytest.mark.parametrize("retriever", ["dense", "bm25", "hybrid"])
def test_each_retriever_finds_the_topic(make_ctx, write, retriever):
    ctx = make_ctx(theta=40)
    ingest_files(ctx, [write("t.txt", DOC)])
    res = retrieve(ctx, "yak of topic delta", retriever=retriever, budget_words=60)
    assert res.retriever == retriever and res.sources
    assert "delta" in res.sources[0].text
    top = res.sources[0]
    assert top.start <= top.matched_start < top.matched_end <= top.end
    assert DOC[top.matched_start:top.matched_end] == top.matched_text
    assert sum(len(s.text.split()) for s in res.sources) <= 60
    if retriever != "dense":
        assert top.bm25_level_scores


def test_bm25_follows_updates_and_deletes(make_ctx, write):
    ctx = make_ctx(theta=40)
    p = write("t.txt", DOC)
    ingest_files(ctx, [p, write("u.txt", "Zebras graze on the savanna. Lions watch them.")])
    assert retrieve(ctx, "zebras savanna", retriever="bm25").sources[0].doc_id == "u.txt"
    delete_document(ctx, "u.txt")
    assert all(s.doc_id != "u.txt" for s in retrieve(ctx, "zebras savanna", retriever="bm25").sources)
    p.write_text("Quokkas smile on the island. " * 3, encoding="utf-8")
    ingest_files(ctx, [p])
    res = retrieve(ctx, "quokkas island topic alpha", retriever="bm25")
    assert [s.doc_id for s in res.sources] == ["t.txt"] and "Quokkas" in res.sources[0].text
    reingest(ctx, chunker="recursive", theta=20)
    assert "Quokkas" in retrieve(ctx, "quokkas", retriever="bm25").sources[0].text


def test_long_question_refused(make_ctx, write):
    from retrieval.search import QuestionError

    ctx = make_ctx(theta=40)
    with pytest.raises(QuestionError, match="the question is 10,000 characters; the limit is 2,000"):
        retrieve(ctx, "x" * 10_000)


def test_no_retrieval_context_truncates_at_sentence():
    from retrieval.search import no_retrieval_context

    text = " ".join(f"Sentence {i} has five words." for i in range(1000))
    ctx = no_retrieval_context(text, 3500)
    assert len(ctx.split()) <= 3500 and ctx.endswith(".") and text.startswith(ctx)
    assert len(ctx.split()) > 3490


@pytest.mark.parametrize("retriever", ["dense", "bm25", "hybrid"])
def test_doc_ids_scope_the_search_to_those_documents(make_ctx, write, retriever):
    ctx = make_ctx(theta=40)
    other = DOC.replace("charlie", "echo").replace("Topic", "Subject")
    ingest_files(ctx, [write("t.txt", DOC), write("u.txt", other), write("v.txt", DOC.replace("yak", "gnu"))])
    q = "Where is the elk of topic charlie?"
    everywhere = retrieve(ctx, q, k=50, budget_words=10_000, retriever=retriever)
    assert {s.doc_id for s in everywhere.sources} == {"t.txt", "u.txt", "v.txt"}
    for scope in (["u.txt"], ["t.txt", "v.txt"]):
        res = retrieve(ctx, q, k=50, budget_words=10_000, retriever=retriever, doc_ids=scope)
        assert res.sources and {s.doc_id for s in res.sources} <= set(scope)
        # the scoped ranking is the global ranking restricted to those documents (dense: exact search)
        if retriever == "dense":
            assert [s.parent_id for s in res.sources] == [s.parent_id for s in everywhere.sources if s.doc_id in scope]
    assert retrieve(ctx, q, retriever=retriever, doc_ids=["nope.txt"]).sources == []


def test_the_keyword_weight_moves_hybrid_between_dense_and_keywords(make_ctx, write):
    """``bm25_weight`` (chosen on dev, bench/fusion_weight.py) weighs the keyword ranking in the fusion: at 0 the
    hybrid ranking is the dense one; at 1 both rankings count alike (plain RRF)."""
    from retrieval.search import _rrf

    assert _rrf([["a", "b"], ["b", "a"]], 60, [1.0, 0.0]) == {"a": 1 / 61, "b": 1 / 62}
    assert _rrf([["a", "b"], ["b", "a"]], 60) == _rrf([["a", "b"], ["b", "a"]], 60, [1.0, 1.0])
    ctx = make_ctx(theta=40, bm25_weight=0.0)
    ingest_files(ctx, [write("t.txt", DOC)])
    dense = retrieve(ctx, "yak of topic delta", retriever="dense", budget_words=400)
    hybrid = retrieve(ctx, "yak of topic delta", retriever="hybrid", budget_words=400)
    assert [s.text for s in hybrid.sources] == [s.text for s in dense.sources]
