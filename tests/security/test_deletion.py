"""A deleted document is removed from every place it was kept: points, BM25, catalog rows and versions, its
original and text in the document store (unless another document has the same content), and the evidence quoted
from it in evaluations."""
from __future__ import annotations

from ui.service import UiService, browser_owner

SECRET = "The night code for the boathouse is 7734. Only the keeper may use it. The code changes on Fridays.\n"
BROWSER = "deleting-browser-0123456789ab"


def test_deleted_upload_leaves_no_trace(make_ctx, tmp_path):
    svc = UiService(make_ctx(chunker="recursive", theta=20, synth_backend="extractive"), upload_root=tmp_path)
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
    assert ctx.bm25.level(gen, 0).n == 0
    ev = svc.feedback.rows()[0]
    assert ev["evidence"] == [] and ev["doc_id"] == "" and ev["rating"] == "good"


def test_shared_content_stays_for_the_other_document(make_ctx, tmp_path, write):
    from ingest.pipeline import Ingestor

    ctx = make_ctx(chunker="recursive", theta=20)
    Ingestor(ctx).ingest_paths([write("a.md", SECRET)], owner="browser:one")
    r = Ingestor(ctx).ingest_bytes([("b.md", SECRET.encode())], owner="browser:two")  # same bytes, another owner
    assert r.results[0].status == "ingested"
    h = ctx.catalog.documents(None)[0]["hash"]
    Ingestor(ctx).delete("b.md")
    assert ctx.store.has(h) and ctx.catalog.find_document("a.md") == "a.md"
