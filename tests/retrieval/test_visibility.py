"""What a reader may see is a payload condition on every point (its owner is the reader or the shared library), not
a list of the visible documents: another reader's private document never comes back, whatever the retriever; a
store written before the owner was in the payload is given it on open."""
import pytest

from ingest.jobs.queue import ingest_files
from ingest.jobs.rebuild import reingest
from retrieval.search import retrieve

DOC = "\n\n".join(
    f"Topic {t} paragraph. "
    + " ".join(f"The {w} of topic {t} is notable." for w in ("owl", "fox", "elk", "cod", "yak"))
    for t in ("alpha", "bravo", "charlie", "delta")
)
Q = "Where is the elk of topic charlie?"


def _three_owners(ctx, write):
    ingest_files(ctx, [write("lib.txt", DOC)])
    ingest_files(ctx, [write("mine.txt", DOC.replace("yak", "gnu"))], owner="browser:me")
    ingest_files(ctx, [write("theirs.txt", DOC.replace("owl", "emu"))], owner="browser:them")


@pytest.mark.parametrize("retriever", ["dense", "bm25", "hybrid"])
def test_a_reader_never_gets_another_readers_private_document(make_ctx, write, retriever):
    ctx = make_ctx(theta=40)
    _three_owners(ctx, write)
    kw = dict(k=50, budget_words=10_000, retriever=retriever)
    assert {s.doc_id for s in retrieve(ctx, Q, **kw).sources} == {"lib.txt", "mine.txt", "theirs.txt"}
    assert {s.doc_id for s in retrieve(ctx, Q, visible_to="browser:me", **kw).sources} == {"lib.txt", "mine.txt"}
    assert {s.doc_id for s in retrieve(ctx, Q, visible_to="browser:them", **kw).sources} == {"lib.txt", "theirs.txt"}
    assert {s.doc_id for s in retrieve(ctx, Q, visible_to="user:new", **kw).sources} == {"lib.txt"}
    # a chosen scope narrows what the reader sees and never widens it
    scoped = retrieve(ctx, Q, visible_to="browser:me", doc_ids=["theirs.txt", "mine.txt"], **kw)
    assert {s.doc_id for s in scoped.sources} == {"mine.txt"}
    assert retrieve(ctx, Q, visible_to="browser:me", doc_ids=["theirs.txt"], **kw).sources == []


def test_the_search_carries_the_reader_not_the_visible_documents(make_ctx, write, monkeypatch):
    """Each level's search gets the reader (one payload condition) and no document list, however many documents
    others keep private."""
    ctx = make_ctx(theta=40)
    _three_owners(ctx, write)
    for i in range(500):  # 500 private documents of others, in the catalog
        ctx.catalog.db.execute("INSERT INTO documents (doc_id, name, current_version, created, updated, owner) "
                               "VALUES (?,?,1,0,0,?)", (f"p{i}.txt", f"p{i}.txt", f"browser:u{i}"))
    ctx.catalog.db.commit()
    calls = []
    search = ctx.index.search
    monkeypatch.setattr(ctx.index, "search", lambda *a, **kw: calls.append(kw) or search(*a, **kw))
    res = retrieve(ctx, Q, k=50, budget_words=10_000, visible_to="browser:me")
    assert {s.doc_id for s in res.sources} == {"lib.txt", "mine.txt"}
    live = ctx.catalog.live_generation()
    assert calls == [{"doc_ids": None, "visible_to": "browser:me"}] * live.n_levels


def test_points_of_an_index_made_before_get_their_owners_on_open(make_ctx, write, tmp_path):
    """An index whose points carry no owner (made before it was stored): its private documents stay hidden from
    other readers and the next open gives every point its document's owner from the catalog."""
    from qdrant_edge import FieldCondition, Filter, MatchAny, UpdateOperation

    ctx = make_ctx(theta=40)
    _three_owners(ctx, write)
    live = ctx.catalog.live_generation()
    for lv in range(live.n_levels):  # as an index of before: no owner in any payload
        ctx.index._shard(live.gen, lv).update(UpdateOperation.delete_payload_by_filter(
            Filter(must=[FieldCondition("doc_id", match=MatchAny(["lib.txt", "mine.txt", "theirs.txt"]))]),
            ["owner"]))
    assert not any("owner" in p.payload for p in ctx.index.points(live.gen, 0))
    assert retrieve(ctx, Q, visible_to="browser:me", retriever="dense").sources == []  # fail closed: nothing
    # keywords find documents by the catalog's owners, which the index's points lost: only what the reader may see
    assert {s.doc_id for s in retrieve(ctx, Q, visible_to="browser:me").sources} <= {"lib.txt", "mine.txt"}
    data_dir = ctx.settings.data_dir
    ctx.close()
    again = make_ctx(theta=40, data_dir=data_dir)
    again.index  # noqa: B018 - the open runs the consistency check
    assert again.check_report.owners_backfilled == live.n_levels
    owners = {p.payload["doc_id"]: p.payload["owner"] for p in again.index.points(live.gen, 1)}
    assert owners == {"lib.txt": "*", "mine.txt": "browser:me", "theirs.txt": "browser:them"}
    kw = dict(k=50, budget_words=10_000)
    assert {s.doc_id for s in retrieve(again, Q, visible_to="browser:me", **kw).sources} == {"lib.txt", "mine.txt"}
    again.close()
    third = make_ctx(theta=40, data_dir=data_dir)
    third.index  # noqa: B018
    assert third.check_report.owners_backfilled == 0  # once


def test_a_reingestion_keeps_each_documents_owner(make_ctx, write):
    ctx = make_ctx(theta=40)
    _three_owners(ctx, write)
    reingest(ctx, theta=30)
    live = ctx.catalog.live_generation()
    owners = {p.payload["doc_id"]: p.payload["owner"] for p in ctx.index.points(live.gen, 0)}
    assert owners == {"lib.txt": "*", "mine.txt": "browser:me", "theirs.txt": "browser:them"}
    res = retrieve(ctx, Q, k=50, budget_words=10_000, visible_to="browser:them")
    assert {s.doc_id for s in res.sources} == {"lib.txt", "theirs.txt"}
