"""A deleted document is removed from every place it was kept: points, BM25, catalog rows and versions, its
original and text in the document store (unless another document has the same content), and the evidence quoted
from it in evaluations."""
from __future__ import annotations

import os
import time

from ingest.jobs.queue import ingest_files, ingest_now
from ingest.store.write import delete_document
from ingest.text.keywords import tokenize
from services.service import AppService, browser_owner

SECRET = "The night code for the boathouse is 7734. Only the keeper may use it. The code changes on Fridays.\n"
BROWSER = "deleting-browser-0123456789ab"


def test_deleted_upload_leaves_no_trace(make_ctx, tmp_path):
    svc = AppService(make_ctx(chunker="recursive", theta=20, synth_backend="extractive"), upload_root=tmp_path)
    owner = browser_owner(BROWSER)
    p = tmp_path / "boathouse.md"
    p.write_text(SECRET, encoding="utf-8")
    assert svc.ingest_files([p], owner=owner)[0]["status"] == "ready"
    ctx = svc.ctx
    row = ctx.catalog.documents(None)[0]
    h, gen = row["hash"], ctx.catalog.live_generation().gen
    answer = next(v for k, v in svc.ask("What is the night code for the boathouse?", backend="extractive",
                                        owner=owner) if k == "done")
    svc.evaluate(answer.to_dict(), rating="good", owner=owner)
    assert ctx.store.has(h) and svc.feedback.rows()[0]["evidence"]

    assert svc.delete_own(owner, ["boathouse.md"]) == ["boathouse.md"]
    assert ctx.catalog.documents(None) == [] and ctx.catalog.find_document(h[:12]) is None
    assert ctx.catalog.db.execute("SELECT COUNT(*) FROM versions").fetchone()[0] == 0
    assert not ctx.store.has(h) and not any(f.is_file() for f in ctx.settings.store_path.rglob("*"))
    assert all(ctx.index.count(gen, lv) == 0 for lv in range(1))
    assert ctx.index.keyword_search(0, tokenize("night code boathouse"), 10) == []  # its keywords went too
    ev = svc.feedback.rows()[0]
    assert ev["evidence"] == [] and ev["doc_id"] == "" and ev["rating"] == "good"


def test_shared_content_stays_for_the_other_document(make_ctx, tmp_path, write):
    ctx = make_ctx(chunker="recursive", theta=20)
    ingest_files(ctx, [write("a.md", SECRET)], owner="browser:one")
    r = ingest_now(ctx, [("b.md", SECRET.encode())], owner="browser:two")  # same bytes, another owner
    assert r.results[0].status == "ingested"
    h = ctx.catalog.documents(None)[0]["hash"]
    delete_document(ctx, "b.md")
    assert ctx.store.has(h) and ctx.catalog.find_document("a.md") == "a.md"


def _store_files(ctx) -> set[str]:
    return {p.name for p in ctx.settings.store_path.rglob("*") if p.is_file()}


def test_orphaned_originals_are_removed_on_the_next_open(make_ctx, write):
    """A crash in `mgrag delete` after the catalog forgot the document (its original and text stay), and an
    ingestion killed after storing its original but before recording it: the next open removes both; the
    original a document still refers to stays."""
    from ingest.types import content_hash

    ctx = make_ctx(chunker="recursive", theta=20)
    ingest_files(ctx, [write("kept.md", "The ferry leaves at noon.\n"), write("gone.md", SECRET)])
    kept = ctx.catalog.documents(None)
    h_kept = next(r["hash"] for r in kept if r["doc_id"] == "kept.md")
    h_gone = next(r["hash"] for r in kept if r["doc_id"] == "gone.md")
    ctx.catalog.remove_document("gone.md")  # the delete's catalog step; killed before the store's
    crashed = b"An upload whose ingestion was killed before its catalog row.\n"
    h_crashed = content_hash(crashed)
    ctx.store.put(h_crashed, crashed, crashed.decode())
    assert ctx.store.has(h_gone) and ctx.store.has(h_crashed)
    ctx.close()

    ctx2 = make_ctx(chunker="recursive", theta=20)
    ctx2.writer_lock()  # the next open: the consistency check
    assert not ctx2.store.has(h_gone) and not ctx2.store.has(h_crashed)
    assert {n.split(".")[0] for n in _store_files(ctx2)} == {h_kept}
    assert ctx2.store.text(h_kept) == "The ferry leaves at noon.\n"


def test_a_file_another_context_of_this_process_may_be_writing_stays(make_ctx, write):
    """A second context of the same process shares the writer lock with one that may be storing an upload right
    now: its check leaves unreferenced files younger than the age threshold (an hour), and removes a day-old one."""
    from ingest.types import content_hash

    first = make_ctx(chunker="recursive", theta=20)
    first.writer_lock()
    fresh, old = b"being ingested right now\n", b"left by a crash long ago\n"
    for data in (fresh, old):
        first.store.put(content_hash(data), data, data.decode())
    long_ago = time.time() - 24 * 3600
    for p in first.settings.store_path.rglob(f"{content_hash(old)}.*"):
        os.utime(p, (long_ago, long_ago))
    second = make_ctx(chunker="recursive", theta=20)
    second.writer_lock()
    assert second.store.has(content_hash(fresh)) and not second.store.has(content_hash(old))
