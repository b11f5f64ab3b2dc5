"""Keywords inside the store (issue 48): every point carries its BM25 term weights as a sparse vector the store
weighs by idf, on Qdrant Edge and on qdrant-client alike. A keyword search gives exactly the scores of the in-memory
BM25 (:class:`retrieval.bm25.Bm25Level`, rank_bm25's scoring with Lucene's idf) when the reference length equals the
collection's mean; it keeps to the documents and the reader asked for; copies (export, re-ingest of unchanged
documents) carry keywords; deleted points leave them; a level written before keywords were stored answers nothing
and says once to re-ingest, while dense writes and searches go on."""
from __future__ import annotations

import logging
from collections import Counter

import numpy as np
import pytest

from ingest.store.index import ClientIndex, EdgeIndex
from ingest.text.chunk_context import indexed_text
from ingest.text.keywords import TOKENS_PER_WORD, tokenize
from ingest.types import Chunk, content_hash
from retrieval.bm25 import Bm25Level

DIM = 8
SENTENCES = ["The ferry leaves at noon from the east pier daily.", "The bakery opens at five and the ferry crew buys",
             "Revenue grew twelve percent in the third quarter.",
             "The pier was rebuilt in 1998 after the winter storm.",
             "Ferry ferry ferry schedules change in winter months."]


def chunks_of(doc_id: str, sentences, context: str = ""):
    text = " ".join(sentences)
    h = content_hash(text + doc_id)
    out, at = [], 0
    for s in sentences:
        a = text.index(s, at)
        out.append(Chunk(s, a, a + len(s), 0, a, a + len(s), doc_id, h, meta={"context": context} if context else {}))
        at = a + len(s)
    rng = np.random.default_rng(len(doc_id))
    v = rng.standard_normal((len(out), DIM)).astype(np.float32)
    return out, v / np.linalg.norm(v, axis=1, keepdims=True)


class Live:
    gen = None

    def __call__(self):
        return self.gen


def theta_for_mean(chunks) -> float:
    """The θ whose level-0 reference length is the chunks' mean token count (so scores equal Bm25Level's)."""
    mean = np.mean([len(tokenize(indexed_text(c.meta.get("context", ""), c.text))) for c in chunks])
    return mean / TOKENS_PER_WORD


@pytest.fixture(params=["edge", "client"])
def make(request, tmp_path):
    made = []

    def open_(theta, root="edge"):
        live = Live()
        if request.param == "edge":
            idx = EdgeIndex(tmp_path / root, live, hnsw_min_points=10_000, theta=theta)
        else:
            from qdrant_client import QdrantClient

            idx = ClientIndex(QdrantClient(":memory:"), live, "t", theta=theta)
        made.append(idx)
        return idx, live
    yield open_
    for m in made:
        m.close()


def test_keyword_scores_are_bm25s_and_keep_to_the_documents_and_the_reader(make):
    a, va = chunks_of("a.txt", SENTENCES, context="Harbour notes")
    b, vb = chunks_of("b.txt", SENTENCES[:2])
    idx, live = make(theta_for_mean(a + b))
    idx.create_generation(1, DIM, 1)
    live.gen = 1
    idx.upsert(1, a, va, 1)
    idx.upsert(1, b, vb, 1, owner="user:bob")
    q = tokenize("When does the ferry leave the pier?")
    ref = Bm25Level([c.id for c in a + b], [Counter(tokenize(indexed_text(c.meta.get("context", ""), c.text)))
                                             for c in a + b])
    want = [(ref.ids[i], s) for i, s in ref.top_indices(q, 10)]
    got = [(p.id, p.score) for p in idx.keyword_search(0, q, 10)]
    assert [i for i, _ in got] == [i for i, _ in want]
    assert np.allclose([s for _, s in got], [s for _, s in want], rtol=1e-5)
    assert all(p.payload["doc_id"] == "b.txt" for p in idx.keyword_search(0, q, 10, doc_ids=["b.txt"]))
    assert {p.payload["doc_id"] for p in idx.keyword_search(0, q, 10, visible_to="user:alice")} == {"a.txt"}
    assert {p.payload["doc_id"] for p in idx.keyword_search(0, q, 10, visible_to="user:bob")} == {"a.txt", "b.txt"}
    # the context line is searchable: only a.txt's chunks have it
    assert {p.payload["doc_id"] for p in idx.keyword_search(0, tokenize("harbour notes"), 10)} == {"a.txt"}
    assert idx.keyword_search(0, tokenize("zeppelin"), 10) == []


def test_copies_carry_keywords_and_deleted_points_leave_them(make):
    a, va = chunks_of("a.txt", SENTENCES)
    idx, live = make(300)
    idx.create_generation(1, DIM, 1)
    idx.create_generation(2, DIM, 1)
    idx.upsert(1, a, va, 1)
    idx.upsert_points(2, 0, list(idx.points(1, 0, with_vectors=True)))  # a copy, as export and re-ingest make
    live.gen = 2
    hits = idx.keyword_search(0, tokenize("rebuilt pier"), 10)
    assert hits and hits[0].payload["text"].startswith("The pier was rebuilt")
    copied = {p.id: p.vector for p in idx.points(2, 0, with_vectors=True)}
    assert all(np.allclose(copied[c.id], v, atol=1e-6) for c, v in zip(a, va))  # the dense vectors came along
    idx.delete(2, {0: [hits[0].id]})
    assert all(p.id != hits[0].id for p in idx.keyword_search(0, tokenize("rebuilt pier"), 10))


def test_a_level_written_before_keywords_answers_nothing_and_says_to_reingest(make, caplog, request):
    a, va = chunks_of("a.txt", SENTENCES)
    idx, live = make(300)
    idx.create_generation(1, DIM, 1)
    if isinstance(idx, EdgeIndex):  # a shard of an older version: its config has no sparse vectors
        from qdrant_edge import Distance, EdgeConfig, EdgeShard, EdgeVectorParams

        idx.drop_generation(1)
        p = idx.path(1, 0)
        p.parent.mkdir(parents=True, exist_ok=True)
        EdgeShard.create(str(p), EdgeConfig(vectors=EdgeVectorParams(size=DIM, distance=Distance.Cosine))).close()
    else:
        from qdrant_client import models

        name = idx.collection(1, 0)
        idx.client.delete_collection(name)
        idx.client.create_collection(name, vectors_config=models.VectorParams(size=DIM,
                                                                              distance=models.Distance.COSINE))
    live.gen = 1
    idx.upsert(1, a, va, 1)  # dense writes go on
    assert idx.search(0, va[0], 1)[0].id == a[0].id
    with caplog.at_level(logging.WARNING):
        assert idx.keyword_search(0, tokenize("ferry"), 5) == []
        assert idx.keyword_search(0, tokenize("pier"), 5) == []
    said = [r.getMessage() for r in caplog.records if "mgrag reingest" in r.getMessage()]
    assert len(said) == 1


def test_the_pickles_of_an_older_data_dir_go_once_the_live_generation_has_keywords(make_ctx, write):
    """A data dir of a version that kept BM25 in pickles beside the store: the next open's consistency check removes
    them when the live generation has its keywords in the store, and keyword search answers from the store."""
    from app.context import AppContext
    from ingest.jobs.queue import ingest_files
    from retrieval.search import retrieve

    ctx = make_ctx(theta=40)
    ingest_files(ctx, [write("t.txt", "Zebras graze on the savanna. Lions watch them from the ridge.")])
    old = ctx.settings.data_dir / "bm25"
    old.mkdir()
    (old / "g1_L0.pkl").write_bytes(b"old state")
    settings, embedder = ctx.settings, ctx.embedder
    ctx.close()
    again = AppContext(settings, embedder=embedder)
    try:
        assert again.index.has_keywords(again.catalog.live_gen(), 0)  # opening the store runs the check
        assert not old.exists()
        assert retrieve(again, "zebras savanna", retriever="bm25").sources[0].doc_id == "t.txt"
    finally:
        again.close()



def test_reingest_copy_gives_an_older_index_its_keywords_without_embedding(tmp_path, monkeypatch, capsys):
    """`mgrag reingest --copy` on a data dir whose live levels have no keywords (an earlier version's): every
    document copied into a new generation, chunks and vectors as they were, the keywords computed on the way;
    nothing is chunked or embedded again."""
    from qdrant_edge import Distance, EdgeConfig, EdgeShard, EdgeVectorParams, PayloadSchemaType, Point, UpdateOperation

    from app.context import AppContext
    from cli.main import main
    from core.settings import Settings
    from ingest.embed import HashingEmbedder
    from retrieval.search import retrieve

    for k, v in (("MGRAG_EMBEDDER", "hashing"), ("MGRAG_CHUNKER", "recursive"), ("MGRAG_THETA", "40")):
        monkeypatch.setenv(k, v)
    doc = tmp_path / "zebras.md"
    doc.write_text("Zebras graze on the savanna at dawn. Lions watch them from the ridge. " * 4, encoding="utf-8")
    data = tmp_path / "data"
    assert main(["--data-dir", str(data), "ingest", "--quiet", str(doc)]) == 0
    settings = Settings(data_dir=data, embedder="hashing", chunker="recursive", theta=40)

    ctx = AppContext(settings)
    live = ctx.catalog.live_generation()
    kept = {lv: list(ctx.index.points(live.gen, lv, with_vectors=True)) for lv in range(live.n_levels)}
    ctx.index.drop_generation(live.gen)
    for lv, pts in kept.items():  # the same points in shards of an earlier version: no sparse vectors
        p = ctx.index.path(live.gen, lv)
        p.parent.mkdir(parents=True, exist_ok=True)
        sh = EdgeShard.create(str(p), EdgeConfig(vectors=EdgeVectorParams(size=live.dim, distance=Distance.Cosine)))
        for key in ("doc_id", "owner"):
            sh.update(UpdateOperation.create_field_index(key, PayloadSchemaType.Keyword))
        sh.update(UpdateOperation.upsert_points([Point(x.id, x.vector.tolist(), x.payload) for x in pts]))
        sh.flush()
        sh.close()
    ctx.close()

    ctx = AppContext(settings)
    assert not ctx.index.has_keywords(live.gen, 0)
    assert retrieve(ctx, "zebras savanna", retriever="bm25").sources == []  # keywords off until the copy
    assert retrieve(ctx, "zebras savanna", retriever="dense").sources  # dense search goes on
    ctx.close()

    def no_embedding(self, texts):
        raise AssertionError("reingest --copy embedded text")

    monkeypatch.setattr(HashingEmbedder, "embed_passages", no_embedding)
    assert main(["--data-dir", str(data), "reingest", "--copy", "--quiet"]) == 0
    ctx = AppContext(settings)
    try:
        now = ctx.catalog.live_generation()
        assert now.gen != live.gen and all(ctx.index.has_keywords(now.gen, lv) for lv in range(now.n_levels))
        assert retrieve(ctx, "zebras savanna", retriever="bm25").sources[0].doc_id == "zebras.md"
        for lv, pts in kept.items():  # the same chunks and vectors
            copied = {x.id: x.vector for x in ctx.index.points(now.gen, lv, with_vectors=True)}
            assert set(copied) == {x.id for x in pts}
            assert all(np.allclose(copied[x.id], x.vector, atol=1e-6) for x in pts)
    finally:
        ctx.close()
    assert main(["--data-dir", str(data), "reingest", "--copy", "--theta", "20"]) == 2
    assert "--copy keeps every document's chunks" in capsys.readouterr().err


def test_the_in_memory_bm25_given_the_store_reference_lengths_scores_as_the_store(make):
    """bench/fusion_weight.py scores BM25 in memory as the store does: each chunk against its level's fixed
    reference length (``avg_lens``), not the running mean (which differs here: the chunks are short for θ = 300)."""
    from ingest.text.keywords import avg_len

    a, va = chunks_of("a.txt", SENTENCES)
    idx, live = make(300)
    idx.create_generation(1, DIM, 1)
    live.gen = 1
    idx.upsert(1, a, va, 1)
    q = tokenize("When does the ferry leave the pier?")
    counts = [Counter(tokenize(c.text)) for c in a]
    fixed = Bm25Level([c.id for c in a], counts, avg_lens=[avg_len(300, 0)] * len(a))
    mean = Bm25Level([c.id for c in a], counts)
    got = {p.id: p.score for p in idx.keyword_search(0, q, 10)}
    assert np.allclose([got[c.id] for c in a if c.id in got], [fixed.scores(q)[i] for i, c in enumerate(a)
                                                                if c.id in got], rtol=1e-5)
    assert not np.allclose(fixed.scores(q), mean.scores(q))
