"""An upload never replaces a document it does not own. Chat uploads belong to the browser that made them: a
same-named upload from another browser is a new document, only its owner (and the admin) can search or delete it,
and identical content in another owner's private document is neither reported (no existence oracle) nor shared.
The CLI names files by their path relative to the folder it was given, so same-named files coexist."""
from __future__ import annotations

import pytest

from app.synth.base import format_sources
from ingest.jobs.queue import ingest_files
from services import render
from services.service import ADMIN, AppService, browser_owner
from tests.security.conftest import ADMIN_PASSWORD, BROWSER_A, BROWSER_B, ask, upload

A_TEXT = "Tide tables: the spring tide on the fourteenth reaches 5.2 metres at the west quay.\n"
B_TEXT = "Mooring fees: a visiting yacht pays forty euros a night at the east basin.\n"


@pytest.fixture
def svc(make_ctx, tmp_path):
    ctx = make_ctx(chunker="recursive", theta=20, synth_backend="extractive")
    return AppService(ctx, admin_password="pw", upload_root=tmp_path)


def _up(svc, tmp_path, name, text, browser):
    d = tmp_path / f"up-{browser[:9]}"
    d.mkdir(exist_ok=True)
    p = d / name
    p.write_text(text, encoding="utf-8")
    return svc.ingest_files([p], owner=browser_owner(browser))[0]


def _doc_text(svc, doc_id):
    row = next(r for r in svc.ctx.catalog.documents(None) if r["doc_id"] == doc_id)
    return svc.ctx.store.text(row["hash"])


def test_same_name_from_another_browser_is_a_new_document(svc, tmp_path):
    a = _up(svc, tmp_path, "notes.md", A_TEXT, BROWSER_A)
    b = _up(svc, tmp_path, "notes.md", B_TEXT, BROWSER_B)
    assert a["status"] == "ready" and b["status"] == "ready"
    assert _doc_text(svc, "notes.md") == A_TEXT and _doc_text(svc, "notes (2).md") == B_TEXT
    # nothing B sees tells that another browser has a notes.md: its upload row, its document lists, its answers
    assert "(2)" not in b["message"] and "stored as" not in b["message"]
    owner_b = browser_owner(BROWSER_B)
    assert svc.searchable_choices(owner_b) == [("notes.md", "notes (2).md")]
    assert svc.own_choices(owner_b) == [("notes.md", "notes (2).md")]
    events = dict(svc.ask("How much does a visiting yacht pay a night?", backend="extractive", owner=owner_b))
    found, got = events["sources"], events["done"].to_dict()
    assert found.sources[0].doc_id == "notes (2).md" and found.sources[0].name == "notes.md"
    assert "[1] (from notes.md)" in format_sources(found.sources)  # what an LLM is shown as the source's name
    shown = render.sources_html(got["sources"], {1})
    assert got["sources"][0]["name"] == "notes.md" and "notes.md" in shown and "(2)" not in shown
    # the admin sees both, told apart by their ids
    assert svc.document_labels(ADMIN) == {"notes.md": "notes.md", "notes (2).md": "notes (2).md"}
    # the owner's own re-upload is a new version of its own document
    a2 = _up(svc, tmp_path, "notes.md", A_TEXT + "Neap tides reach 3.1 metres.\n", BROWSER_A)
    assert a2["status"] == "ready" and "new version 2" in a2["message"]
    assert _doc_text(svc, "notes.md").endswith("3.1 metres.\n")
    assert _doc_text(svc, "notes (2).md") == B_TEXT


def test_identical_content_in_another_browsers_document_is_not_revealed(svc, tmp_path):
    _up(svc, tmp_path, "tides.md", A_TEXT, BROWSER_A)
    b = _up(svc, tmp_path, "copy.md", A_TEXT, BROWSER_B)
    assert b["status"] == "ready" and "tides" not in b["message"]  # no "same content as 'tides.md'"
    again = _up(svc, tmp_path, "copy2.md", A_TEXT, BROWSER_B)
    assert again["status"] == "duplicate" and "copy.md" in again["message"]  # its own copy is


def test_private_uploads_are_searched_only_by_their_owner(svc, tmp_path):
    _up(svc, tmp_path, "tides.md", A_TEXT, BROWSER_A)
    _up(svc, tmp_path, "fees.md", B_TEXT, BROWSER_B)
    q = "How much does a visiting yacht pay a night?"
    for retriever in ("dense", "bm25", "hybrid"):
        a_docs = {s.doc_id for kind, v in svc.ask(q, backend="extractive", retriever=retriever,
                                                   owner=browser_owner(BROWSER_A)) if kind == "sources"
                  for s in v.sources}
        b_docs = {s.doc_id for kind, v in svc.ask(q, backend="extractive", retriever=retriever,
                                                   owner=browser_owner(BROWSER_B)) if kind == "sources"
                  for s in v.sources}
        assert a_docs <= {"tides.md"} and b_docs == {"fees.md"}, retriever  # BM25 finds no yacht in the tides
    assert {h["document"] for h in svc.level_hits(q, owner=browser_owner(BROWSER_A))} == {"tides.md"}
    assert set(svc.live_chunks(browser_owner(BROWSER_A))[0]) == {"tides.md"}
    assert set(svc.live_chunks(ADMIN)[0]) == {"tides.md", "fees.md"}


def test_only_the_owner_or_the_admin_deletes(svc, tmp_path):
    _up(svc, tmp_path, "tides.md", A_TEXT, BROWSER_A)
    with pytest.raises(ValueError, match="'tides.md' is not one of your uploads; only the admin can delete it"):
        svc.delete_own(browser_owner(BROWSER_B), ["tides.md"])
    assert svc.ctx.catalog.find_document("tides.md") == "tides.md"
    assert svc.delete_own(browser_owner(BROWSER_A), ["tides.md"]) == ["tides.md"]
    _up(svc, tmp_path, "tides.md", A_TEXT, BROWSER_A)
    assert svc.delete(svc.login("admin", "pw"), ["tides.md"]) == ["tides.md"]


def test_the_shared_library_is_not_replaced_by_a_chat_upload(svc, tmp_path, write):

    ingest_files(svc.ctx, [write("rules.md", A_TEXT)])  # `mgrag ingest`: the shared library
    r = _up(svc, tmp_path, "rules.md", B_TEXT, BROWSER_A)
    assert r["status"] == "ready" and r["message"].count("stored as 'rules (2).md'") == 1  # said once
    assert _doc_text(svc, "rules.md") == A_TEXT


def test_over_the_api_a_same_named_upload_does_not_replace(sec_server, client, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "minutes.md").write_text("The harbour board met on Tuesday and approved a new crane.\n", encoding="utf-8")
    (b / "minutes.md").write_text("Wipe: this replaces the minutes with nothing of value at all.\n", encoding="utf-8")
    assert "ready" in str(upload(client, a / "minutes.md", BROWSER_A))
    b_rows = str(upload(client, b / "minutes.md", BROWSER_B))
    assert "ready" in b_rows and "(2)" not in b_rows  # B is not told that A has a minutes.md
    assert "approved a new crane" in ask(client, "What did the harbour board approve?", BROWSER_A)
    assert "approved a new crane" not in ask(client, "What did the harbour board approve?", BROWSER_B)
    # an upload without a browser id is refused rather than given to no one
    from gradio_client import handle_file
    from gradio_client.exceptions import AppError
    with pytest.raises(AppError, match="no valid id"):
        client.predict([handle_file(str(a / "minutes.md"))], "short", api_name="/upload")
    tok = sec_server.service.login("admin", ADMIN_PASSWORD)
    owners = {r["document"]: r["owner"] for r in sec_server.service.documents(tok)[1]}
    assert owners["harbour.md"] == "library" and owners["minutes.md"] != owners["minutes (2).md"]


def test_cli_names_files_by_their_path_in_the_folder(make_ctx, tmp_path):

    root = tmp_path / "docs"
    for sub, text in (("sub1", A_TEXT), ("sub2", B_TEXT)):
        (root / sub).mkdir(parents=True)
        (root / sub / "notes.md").write_text(text, encoding="utf-8")
    ctx = make_ctx(chunker="recursive", theta=20)
    report = ingest_files(ctx, [root])
    assert [(r.name, r.status) for r in report.results] == [("sub1/notes.md", "ingested"),
                                                            ("sub2/notes.md", "ingested")]
    docs = {r["doc_id"]: ctx.store.text(r["hash"]) for r in ctx.catalog.documents(None)}
    assert docs == {"sub1/notes.md": A_TEXT, "sub2/notes.md": B_TEXT}
    assert [r.status for r in ingest_files(ctx, [root]).results] == ["duplicate", "duplicate"]


def test_a_scope_limits_the_search_and_never_widens_it(svc, tmp_path):
    _up(svc, tmp_path, "tides.md", A_TEXT, BROWSER_A)
    _up(svc, tmp_path, "fees.md", B_TEXT, BROWSER_A)
    _up(svc, tmp_path, "secret.md", "The other browser's mooring code is 4471.\n", BROWSER_B)
    owner = browser_owner(BROWSER_A)
    q = "How much does a visiting yacht pay a night?"
    scoped = next(v for k, v in svc.ask(q, backend="extractive", owner=owner, scope=["tides.md"]) if k == "sources")
    assert {s.doc_id for s in scoped.sources} == {"tides.md"}
    assert svc.doc_filter(owner, ["tides.md", "secret.md"]) == ["tides.md"]  # another's document stays out
    with pytest.raises(ValueError, match="none of the documents this conversation is limited to"):
        list(svc.ask(q, backend="extractive", owner=owner, scope=["secret.md"]))
    assert set(svc.searchable_documents(owner)) == {"tides.md", "fees.md"}


def test_names_shown_tell_apart_only_what_the_reader_can_see(svc, tmp_path, write):
    """Catalog.labels: a document is shown by its file's name unless another document its reader can search has
    that name; then both by their ids (a chat upload named like a library file is told apart from it)."""

    ingest_files(svc.ctx, [write("rules.md", A_TEXT)])  # the shared library
    _up(svc, tmp_path, "rules.md", B_TEXT, BROWSER_A)  # stored as rules (2).md: A sees the library's rules.md
    _up(svc, tmp_path, "fees.md", B_TEXT + "Fees rise in June.\n", BROWSER_B)
    cat = svc.ctx.catalog
    a, b = browser_owner(BROWSER_A), browser_owner(BROWSER_B)
    assert cat.labels(a) == {"rules.md": "rules.md", "rules (2).md": "rules (2).md"}
    assert cat.labels(b) == {"rules.md": "rules.md", "fees.md": "fees.md"}
    for reader in (a, b, None):  # an answer's few sources are labelled as the whole list labels them
        everything = cat.labels(reader)
        assert cat.labels(reader, list(everything)[:1]) == dict(list(everything.items())[:1])
        assert cat.labels(reader, everything) == everything and cat.labels(reader, []) == {}
    # a queued upload, not in the catalog yet: B's "rules.md" would be told apart from the library's, C's
    # "fees.md" (stored as fees (2).md: B has one) would not, since C cannot see B's
    assert cat.label_of("rules (3).md", "rules.md", b) == "rules (3).md"
    assert cat.label_of("fees (2).md", "fees.md", "browser:c") == "fees.md"
    assert cat.label_of("fees (2).md", "fees.md", None) == "fees (2).md"  # the admin sees B's fees.md
