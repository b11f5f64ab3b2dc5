"""Private uploads and conversations stay private on disk: every file and folder the app keeps under its data dir
(originals, texts, catalog, conversations, feedback, the index, the queue's spool) is owner-only, and a document's
name cannot carry bidirectional or control characters that make it read as another name ("invoice‮fdp.md")."""
from __future__ import annotations

import os
import stat

from ingest.jobs.queue import ingest_files
from services.service import AppService, browser_owner

NOTE = "The boathouse key hangs behind the blue door. Only the keeper may take it at night.\n"
BROWSER = "private-files-browser-0123456789"


def _loose(root) -> list[str]:
    """Paths under ``root`` (and ``root`` itself) that the group or others may read, write or enter."""
    paths = [root, *root.rglob("*")]
    return [f"{p} {stat.filemode(p.lstat().st_mode)}" for p in paths
            if not p.is_symlink() and p.lstat().st_mode & 0o077]


def test_data_dir_is_owner_only_after_an_upload_and_a_question(make_ctx, tmp_path):
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    svc = AppService(make_ctx(chunker="recursive", theta=20, synth_backend="extractive"), upload_root=uploads)
    owner = browser_owner(BROWSER)
    p = uploads / "boathouse.md"
    p.write_text(NOTE, encoding="utf-8")
    assert svc.ingest_files([p], owner=owner)[0]["status"] == "ready"
    q = "Where does the boathouse key hang?"
    answer = next(v for k, v in svc.ask(q, backend="extractive", owner=owner) if k == "done")
    conv = svc.conversations.create(owner, "key")
    svc.conversations.add_turn(owner, conv, q, answer.to_dict())
    svc.evaluate(answer.to_dict(), rating="good", owner=owner)
    svc.close()
    data = svc.ctx.settings.data_dir
    for name in ("catalog.sqlite", "conversations.sqlite", "feedback.sqlite", "originals"):
        assert (data / name).exists()
    assert _loose(data) == []


def test_a_data_dir_made_before_is_made_owner_only_on_open(make_ctx, write):
    """Files an older version left group/world-readable are tightened when a writer opens the data dir."""

    ctx = make_ctx(chunker="recursive", theta=20)
    ingest_files(ctx, [write("a.md", NOTE)])
    data = ctx.settings.data_dir
    ctx.close()
    for p in [data, *data.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    ctx2 = make_ctx(chunker="recursive", theta=20)
    ctx2.writer_lock()
    assert _loose(data) == []


def test_bidi_and_control_characters_are_stripped_from_document_names(make_ctx, tmp_path, write):

    ctx = make_ctx(chunker="recursive", theta=20)
    tricky = "invoice\u202efdp.md"  # shows as "invoicedm.pdf" where the override is honoured
    r = ingest_files(ctx, [write(tricky, NOTE)])
    assert [x.status for x in r.results] == ["ingested"]
    assert [d["doc_id"] for d in ctx.catalog.documents(None)] == ["invoicefdp.md"]

    uploads = tmp_path / "uploads"
    uploads.mkdir()
    svc = AppService(ctx, upload_root=uploads)
    up = uploads / "x.md"
    up.write_text("The ferry leaves at noon.\n", encoding="utf-8")
    rows = svc.ingest_files([up], names=["notes\u2066\u200f\u202e.md"], owner=browser_owner(BROWSER))
    assert rows[0]["status"] == "ready" and rows[0]["name"] == "notes.md"
    assert "notes.md" in [d["doc_id"] for d in ctx.catalog.documents(None)]
    svc.close()
