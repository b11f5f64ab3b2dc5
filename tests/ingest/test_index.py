"""The index contract, run on both implementations: Qdrant Edge (the embedded default) and qdrant-client
(in-memory, standing in for a server; local mode on disk where persistence matters). Every result is checked
against a numpy reference over the same vectors."""
from __future__ import annotations

import numpy as np
import pytest

from ingest.store.index import ClientIndex, EdgeIndex, StoredPoint, _payload
from ingest.types import Chunk, content_hash

DIM = 16


def make_chunks(doc_id: str, n_parents: int = 4, seed: int = 0):
    """``n_parents`` parents of 20 chars, each with two level-1 and four level-2 children, and random vectors."""
    text = "".join(f"{doc_id[:4]:<4}{i:03d} lorem ipsum." for i in range(n_parents))  # 20 chars per parent
    h = content_hash(text)
    chunks = []
    for p in range(n_parents):
        s, e = 20 * p, 20 * p + 20
        for level, parts in ((0, 1), (1, 2), (2, 4)):
            w = 20 // parts
            for k in range(parts):
                a = s + k * w
                chunks.append(Chunk(text[a:a + w], a, a + w, level, s, e, doc_id, h))
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((len(chunks), DIM)).astype(np.float32)
    return chunks, v / np.linalg.norm(v, axis=1, keepdims=True)


class Live:
    def __init__(self):
        self.gen = None

    def __call__(self):
        return self.gen


@pytest.fixture(params=["edge", "client"])
def backend(request, tmp_path):
    """(kind, open(): a fresh or reopened index on the same storage, live)"""
    live = Live()
    made = []
    if request.param == "edge":
        def open_():
            for m in made:
                m.close()
            made.append(EdgeIndex(tmp_path / "edge", live, hnsw_min_points=10_000))
            return made[-1]
    else:
        from qdrant_client import QdrantClient

        client = QdrantClient(":memory:")

        def open_():
            made.append(ClientIndex(client, live, "t", owns_client=False))
            return made[-1]
    yield request.param, open_, live
    for m in made:
        m.close()


def reference(chunks, vectors, level, q, limit, doc_ids=None):
    rows = [(c.id, float(v @ q)) for c, v in zip(chunks, vectors)
            if c.level == level and (doc_ids is None or c.doc_id in doc_ids)]
    return sorted(rows, key=lambda r: -r[1])[:limit]


def test_create_upsert_search_count_retrieve(backend):
    _, open_, live = backend
    idx = open_()
    idx.create_generation(1, DIM, 3)
    live.gen = 1
    a, va = make_chunks("a.txt", seed=1)
    b, vb = make_chunks("b.txt", seed=2)
    idx.upsert(1, a, va, 1)
    idx.upsert(1, b, vb, 1)
    idx.flush(1)
    assert [idx.count(1, lv) for lv in range(3)] == [8, 16, 32]
    assert idx.count(1, 2, doc_ids=["a.txt"]) == 16
    q = np.random.default_rng(9).standard_normal(DIM).astype(np.float32)
    q /= np.linalg.norm(q)
    allc, allv = a + b, np.vstack([va, vb])
    for level in range(3):
        hits = idx.search(level, q, 5)
        ref = reference(allc, allv, level, q, 5)
        assert [h.id for h in hits] == [r[0] for r in ref]
        assert [h.score for h in hits] == pytest.approx([r[1] for r in ref], abs=1e-5)
        assert all(isinstance(h.id, str) and h.payload["level"] == level for h in hits)
    got = idx.retrieve(0, [a[0].id, "00000000-0000-0000-0000-000000000000"], with_vectors=True)
    assert [p.id for p in got] == [a[0].id]
    assert got[0].payload == {"doc_id": "a.txt", "doc_hash": a[0].doc_hash, "doc_version": 1, "level": 0,
                              "parent_id": a[0].parent_id, "start": 0, "end": 20, "text": a[0].text, "owner": "*"}
    assert np.allclose(got[0].vector, va[0], atol=1e-6)
    assert {p.id for p in idx.points(1, 1, limit=3)} == {c.id for c in allc if c.level == 1}  # paged


def test_filtered_search_keeps_to_the_documents(backend):
    _, open_, live = backend
    idx = open_()
    idx.create_generation(1, DIM, 3)
    live.gen = 1
    docs = {f"d{i}.txt": make_chunks(f"d{i}.txt", seed=i) for i in range(5)}
    for c, v in docs.values():
        idx.upsert(1, c, v, 1)
    allc = [c for c, _ in docs.values() for c in c]
    allv = np.vstack([v for _, v in docs.values()])
    q = allv[3]
    for scope in (["d2.txt"], ["d0.txt", "d4.txt"]):
        hits = idx.search(2, q, 7, doc_ids=scope)
        assert {h.payload["doc_id"] for h in hits} <= set(scope) and len(hits) == 7
        assert [h.id for h in hits] == [r[0] for r in reference(allc, allv, 2, q, 7, scope)]
    assert idx.search(2, q, 7, doc_ids=[]) == []
    assert idx.search(2, q, 7, doc_ids=["nope.txt"]) == []


def test_a_reader_sees_its_own_documents_and_the_shared_library(backend):
    """``visible_to``: one payload condition (the point's owner is the reader or the shared library), alone or
    with a chosen scope; another reader's private document never comes back."""
    _, open_, live = backend
    idx = open_()
    idx.create_generation(1, DIM, 3)
    live.gen = 1
    owners = {"lib.txt": None, "mine.txt": "browser:me", "theirs.txt": "browser:them"}
    docs = {d: make_chunks(d, seed=i) for i, d in enumerate(owners)}
    for d, (c, v) in docs.items():
        idx.upsert(1, c, v, 1, owners[d])
    allc = [c for c, _ in docs.values() for c in c]
    allv = np.vstack([v for _, v in docs.values()])
    q = allv[40]  # a chunk of theirs.txt
    hits = idx.search(2, q, 50, visible_to="browser:me")
    assert {h.payload["doc_id"] for h in hits} == {"lib.txt", "mine.txt"}
    assert [h.id for h in hits] == [r[0] for r in reference(allc, allv, 2, q, 50, ["lib.txt", "mine.txt"])]
    assert {h.payload["doc_id"] for h in idx.search(2, q, 50, visible_to="browser:them")} == {"lib.txt", "theirs.txt"}
    assert {h.payload["doc_id"] for h in idx.search(2, q, 50, visible_to="user:nobody")} == {"lib.txt"}
    assert {h.payload["doc_id"] for h in idx.search(2, q, 50)} == set(owners)  # unrestricted: the admin, the CLI
    # a chosen scope narrows it and never widens it
    assert {h.payload["doc_id"] for h in idx.search(2, q, 50, doc_ids=["theirs.txt", "mine.txt"],
                                                    visible_to="browser:me")} == {"mine.txt"}
    assert idx.search(2, q, 50, doc_ids=["theirs.txt"], visible_to="browser:me") == []


def test_the_visibility_filter_does_not_grow_with_the_documents(backend):
    """A reader's filter is the same whatever the number of documents (500 private ones of others here): the
    search carries no list of visible document ids."""
    kind, _, _ = backend
    cls = EdgeIndex if kind == "edge" else ClientIndex
    flt = cls._doc_filter(None, "browser:me")
    assert repr(flt) == repr(cls._doc_filter(None, "browser:me"))
    assert "browser:me" in repr(flt) and "doc_id" not in repr(flt)
    assert cls._doc_filter(None, None) is None
    scoped = repr(cls._doc_filter(["a.txt"], "browser:me"))
    assert "a.txt" in scoped and "browser:me" in scoped


def test_the_shared_librarys_mark_is_no_owner():
    from ingest.store.index import SHARED, owner_payload

    assert owner_payload(None) == SHARED and owner_payload("user:ann") == "user:ann"
    with pytest.raises(ValueError, match="cannot be an owner"):
        owner_payload(SHARED)


def test_points_stored_without_an_owner_get_it_from_the_catalog(backend):
    """A store written before the owner was in the payload: no reader's search matches its points (they fail
    closed) until ``backfill_owners`` gives them their documents' owners, once."""
    kind, open_, live = backend
    idx = open_()
    idx.create_generation(1, DIM, 2)
    live.gen = 1
    owners = {"lib.txt": None, "mine.txt": "browser:me", "theirs.txt": "browser:them"}
    for i, d in enumerate(owners):
        c, v = make_chunks(d, seed=i)
        old = [p for p in zip(c, v) if p[0].level < 2]
        for level in (0, 1):  # the payload of before: no owner
            pts = [StoredPoint(ch.id, {k: x for k, x in _payload(ch, 1).items() if k != "owner"}, vector=vec)
                   for ch, vec in old if ch.level == level]
            idx.upsert_points(1, level, pts)
    q = make_chunks("mine.txt", seed=1)[1][0]
    assert idx.search(0, q, 20, visible_to="browser:me") == []  # fail closed
    assert len(idx.search(0, q, 20)) == 12
    assert idx.backfill_owners(1, owners) == 2
    assert {h.payload["doc_id"] for h in idx.search(0, q, 20, visible_to="browser:me")} == {"lib.txt", "mine.txt"}
    assert {p.payload["owner"] for p in idx.points(1, 1)} == {"*", "browser:me", "browser:them"}
    assert idx.backfill_owners(1, owners) == 0  # done: nothing to do on the next open
    if kind == "edge":
        assert "owner" in idx._shard(1, 0).info().payload_schema
    idx.set_owner(1, "theirs.txt", None)  # the document joins the shared library: its points follow
    assert {h.payload["doc_id"] for h in idx.search(0, q, 20, visible_to="browser:me")} == set(owners)


def test_delete_and_delete_unowned(backend):
    _, open_, live = backend
    idx = open_()
    idx.create_generation(1, DIM, 3)
    live.gen = 1
    a, va = make_chunks("a.txt")
    b, vb = make_chunks("b.txt", seed=3)
    idx.upsert(1, a, va, 1)
    idx.upsert(1, b, vb, 1)
    idx.delete(1, {0: [a[0].id], 2: [c.id for c in a if c.level == 2]})
    assert [idx.count(1, lv, ["a.txt"]) for lv in range(3)] == [3, 8, 0]
    keep = {0: [c.id for c in a if c.level == 0][1:2], 1: [c.id for c in a if c.level == 1][:1]}
    idx.delete_unowned(1, "a.txt", keep)
    left = {p.id for lv in range(3) for p in idx.points(1, lv) if p.payload["doc_id"] == "a.txt"}
    assert left == set(keep[0] + keep[1])
    idx.delete_unowned(1, "a.txt", {})
    assert [idx.count(1, lv, ["a.txt"]) for lv in range(3)] == [0, 0, 0]
    assert [idx.count(1, lv, ["b.txt"]) for lv in range(3)] == [4, 8, 16]  # the other document untouched
    idx.delete(1, {5: ["x"]})  # a level the generation does not have: nothing to do


def test_copy_between_generations_switch_and_drop(backend):
    kind, open_, live = backend
    idx = open_()
    idx.create_generation(1, DIM, 3)
    live.gen = 1
    a, va = make_chunks("a.txt", seed=4)
    idx.upsert(1, a, va, 7)
    idx.create_generation(2, DIM, 3)
    assert idx.generations() == {1, 2} and idx.levels(2) == [0, 1, 2]
    for lv in range(3):  # copy a document's points, vectors and payloads, into the new generation
        ids = [c.id for c in a if c.level == lv]
        idx.upsert_points(2, lv, idx.retrieve(lv, ids, gen=1, with_vectors=True))
    q = va[5]
    before = [(h.id, round(h.score, 5)) for h in idx.search(1, q, 4)]
    idx.switch(2, 3)
    live.gen = 2  # the catalog's transaction is the switch
    assert [(h.id, round(h.score, 5)) for h in idx.search(1, q, 4)] == before
    assert idx.retrieve(0, [a[0].id])[0].payload["doc_version"] == 7
    if kind == "client":
        assert idx.live_collections()[idx.alias(0)] == idx.collection(2, 0)
    idx.drop_generation(1)
    assert idx.generations() == {2} and idx.count(1, 0) == 0
    assert len(idx.search(0, q, 10)) == 4
    live.gen = None
    assert idx.search(0, q, 10) == []


def test_points_survive_reopen(backend):
    kind, open_, live = backend
    idx = open_()
    idx.create_generation(3, DIM, 2)
    live.gen = 3
    a, va = make_chunks("a.txt", seed=5)
    two = [(c, v) for c, v in zip(a, va) if c.level < 2]
    idx.upsert(3, [c for c, _ in two], np.array([v for _, v in two]), 1)
    idx.flush(3)
    idx = open_()  # Edge: closed and loaded again from disk
    assert idx.generations() == {3} and idx.levels(3) == [0, 1]
    assert [idx.count(3, lv) for lv in range(2)] == [4, 8]
    assert idx.search(0, va[0], 1)[0].id == a[0].id


def test_edge_second_open_of_a_shard_fails(tmp_path):
    live = Live()
    first = EdgeIndex(tmp_path / "edge", live)
    first.create_generation(1, DIM, 1)
    second = EdgeIndex(tmp_path / "edge", live)
    with pytest.raises(Exception, match="WouldBlock"):
        second.count(1, 0)
    first.close()


def test_local_mode_persists_through_the_same_interface(tmp_path):
    """qdrant-client's local mode on disk (MGRAG_QDRANT_ENGINE=local) behind the same contract."""
    from ingest.store.index import make_client

    live = Live()
    idx = ClientIndex(make_client(None, None, tmp_path / "q"), live)
    idx.create_generation(1, DIM, 1)
    live.gen = 1
    a, va = make_chunks("a.txt")
    lv0 = [(c, v) for c, v in zip(a, va) if c.level == 0]
    idx.upsert(1, [c for c, _ in lv0], np.array([v for _, v in lv0]), 1)
    idx.close()
    idx = ClientIndex(make_client(None, None, tmp_path / "q"), live)
    assert idx.count(1, 0) == 4 and idx.search(0, va[0], 1, doc_ids=["a.txt"])[0].id == a[0].id
    idx.close()



def test_edge_builds_hnsw_only_above_hnsw_min_points(tmp_path):
    """optimize() after an ingestion: a level at or below ``hnsw_min_points`` stays a plain (exact) scan, one
    above it gets an HNSW graph; searches through the graph still find the reference neighbours here."""
    live = Live()
    idx = EdgeIndex(tmp_path / "edge", live, hnsw_min_points=300)
    idx.create_generation(1, DIM, 2)
    live.gen = 1
    chunks, vecs = [], []
    for i in range(30):
        c, v = make_chunks(f"d{i:03d}.txt", seed=100 + i)
        chunks += c
        vecs.append(v)
    vecs = np.vstack(vecs)
    keep = [k for k, c in enumerate(chunks) if c.level < 2]  # 120 parents, 240 at level 1
    chunks, vecs = [chunks[k] for k in keep], vecs[keep]
    idx.upsert(1, chunks, vecs, 1)
    idx.optimize(1)
    # indexed_vectors_count counts the keywords' sparse vectors too (always in an inverted index): one per point
    assert idx._shard(1, 0).info().indexed_vectors_count == 120
    assert idx._shard(1, 1).info().indexed_vectors_count == 240  # 240 <= 300: no dense graph
    more, mv = make_chunks("late.txt", n_parents=40, seed=7)  # 80 more at level 1
    two = [(c, v) for c, v in zip(more, mv) if c.level == 1]
    idx.upsert(1, [c for c, _ in two], np.array([v for _, v in two]), 1)
    idx.optimize(1)
    assert idx._shard(1, 1).info().indexed_vectors_count == 2 * 320  # the dense graph and the keywords
    allc, allv = chunks + [c for c, _ in two], np.vstack([vecs, [v for _, v in two]])
    for q in allv[:5]:
        assert [h.id for h in idx.search(1, q, 5)] == [r[0] for r in reference(allc, allv, 1, q, 5)]
    idx.close()
