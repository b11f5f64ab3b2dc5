"""What a user owns belongs to the account, not to its name: a name removed and given again is a new account that
sees none of the old one's private documents, by its login or by its API key, and finds none of their text; an
account made before ids existed keeps what it owns; removing a user who owns documents makes the admin say what
becomes of them: deleted (gone from catalog and searches), handed to another user (who then finds them), or kept
(nobody but the admin sees them, the Admin tab says "removed account")."""
from __future__ import annotations

import sqlite3
from types import SimpleNamespace

import pytest

from retrieval.search import retrieve
from services.service import AppService
from ui.rooms.context import RoomContext

DIARY = "The vault combination of the lighthouse keeper is seven nine three one, written under the oil lamp.\n"
QUESTION = "What is the vault combination of the lighthouse keeper?"
LIBRARY = "Harbour rules: boats longer than twelve metres must book a berth a day ahead at the harbour office.\n"


@pytest.fixture
def svc(make_ctx, tmp_path):
    from ingest.jobs.queue import ingest_files

    ctx = make_ctx(chunker="recursive", theta=20, synth_backend="extractive", top_k=5)
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "harbour.md").write_text(LIBRARY, encoding="utf-8")
    ingest_files(ctx, [tmp_path / "lib" / "harbour.md"])  # the shared library: everyone sees it
    service = AppService(ctx, admin_password="pw", upload_root=tmp_path)
    service.users.add("solo", "solo-password-1")
    service.users.add("ines", "harbour-master-1")
    return service


def login_owner(svc, name):
    """The owner the web app gives a visitor logged in as ``name`` (Gradio's request carries the name)."""
    return RoomContext(svc).owner_of(None, SimpleNamespace(username=name))


def upload(svc, tmp_path, owner, name="solo-diary.md", text=DIARY):
    d = tmp_path / "up"
    d.mkdir(exist_ok=True)
    (d / name).write_text(text, encoding="utf-8")
    [row] = svc.ingest_files([d / name], owner=owner)
    assert row["status"] in ("searchable", "ready"), row
    return row


def found_text(svc, owner) -> str:
    """Every passage a search for the diary returns to ``owner`` (dense and BM25)."""
    return " ".join(s.text for r in ("dense", "bm25")
                    for s in retrieve(svc.ctx, QUESTION, k=5, retriever=r, visible_to=owner).sources)


def token(svc):
    return svc.login("admin", "pw", token="t" * 40)


def test_a_name_given_again_inherits_nothing(svc, tmp_path):
    old = login_owner(svc, "solo")
    upload(svc, tmp_path, old)
    old_key = svc.api_keys.check(svc.api_keys.add("solo-laptop", "solo"))
    assert old_key.owner == old and "seven nine three" in found_text(svc, old)
    # `mgrag users remove solo --documents keep`, then `mgrag users add solo` for someone else
    svc.users.remove("solo")
    svc.users.add("solo", "another-person-9")
    new = login_owner(svc, "solo")
    new_key = svc.api_keys.check(svc.api_keys.add("solo-phone", "solo"))
    assert new != old and new_key.owner == new
    for owner in (new, new_key.owner):
        assert "solo-diary.md" not in svc.searchable_documents(owner)
        assert "seven nine three" not in found_text(svc, owner)
    assert "twelve metres" in found_text(svc, new)  # the shared library still is everyone's


def test_an_account_made_before_ids_keeps_its_documents_and_its_name_is_not_reused(svc, tmp_path):
    """A users.sqlite of before (no id column), a document and a key of that account: after the upgrade both are
    still its own; removed and added again, the name gets a fresh random id, never the name."""
    from services.keys import Keys
    from services.users import ITERATIONS, Users, _hash

    old_dir = tmp_path / "old-secrets"
    old_dir.mkdir()
    db = sqlite3.connect(old_dir / "users.sqlite")
    db.execute("CREATE TABLE users (name TEXT PRIMARY KEY, salt BLOB NOT NULL, hash BLOB NOT NULL, iterations "
               "INTEGER NOT NULL, created REAL NOT NULL)")
    db.execute("INSERT INTO users VALUES ('veteran', ?, ?, ?, 0)", (b"s" * 16, _hash("veteran-pw-1", b"s" * 16),
                                                                   ITERATIONS))
    db.commit()
    db = sqlite3.connect(old_dir / "keys.sqlite")
    db.execute("CREATE TABLE keys (digest TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, user TEXT NOT NULL, prefix "
               "TEXT NOT NULL, created REAL NOT NULL, last_used REAL, revoked REAL)")
    key = "mgrag-abcdefgh-" + "k" * 43
    import hashlib

    db.execute("INSERT INTO keys VALUES (?, 'old-key', 'veteran', ?, 0, NULL, NULL)",
               (hashlib.sha256(key.encode()).hexdigest(), key[:14]))
    db.commit()
    users = Users(old_dir / "users.sqlite")
    assert users.check("veteran", "veteran-pw-1") and users.owner("veteran") == "user:veteran"
    keys = Keys(old_dir / "keys.sqlite", users)
    assert keys.check(key).owner == "user:veteran"
    upload(svc, tmp_path, "user:veteran")  # what the account uploaded before the upgrade
    assert "solo-diary.md" in svc.searchable_documents(users.owner("veteran"))
    users.remove("veteran")
    users.add("veteran", "a-newcomer-pw")
    assert users.id_of("veteran") != "veteran" and users.owner("veteran") != "user:veteran"
    assert "solo-diary.md" not in svc.searchable_documents(users.owner("veteran"))
    assert "seven nine three" not in found_text(svc, users.owner("veteran"))


def test_removing_a_user_who_owns_documents_needs_a_choice(svc, tmp_path):
    owner = login_owner(svc, "solo")
    upload(svc, tmp_path, owner)
    with pytest.raises(ValueError, match="delete, keep or to:OTHER"):
        svc.remove_user(token(svc), "solo")
    with pytest.raises(ValueError, match="delete, keep or to:OTHER"):
        svc.remove_user(token(svc), "solo", "shred")
    with pytest.raises(ValueError, match="name another user"):
        svc.remove_user(token(svc), "solo", "to:nobody")
    assert "solo" in svc.users.names() and login_owner(svc, "solo") == owner  # nothing changed
    assert "solo-diary.md" in svc.searchable_documents(owner)


def test_delete_removes_the_documents_everywhere(svc, tmp_path):
    owner = login_owner(svc, "solo")
    upload(svc, tmp_path, owner)
    conv = svc.conversations.create(owner, "about the vault")
    key = svc.api_keys.add("solo-laptop", "solo")
    svc.remove_user(token(svc), "solo", "delete")
    assert "solo" not in svc.users.names() and svc.api_keys.check(key) is None
    assert "solo-diary.md" not in {r["doc_id"] for r in svc.ctx.catalog.documents(None)}
    assert "seven nine three" not in found_text(svc, None)  # not even the admin's search finds it
    assert not svc.conversations.list(owner)
    with pytest.raises(KeyError):
        svc.conversations.get(owner, conv)


def test_hand_over_gives_the_documents_to_the_other_user(svc, tmp_path):
    owner = login_owner(svc, "solo")
    upload(svc, tmp_path, owner)
    svc.conversations.create(owner, "about the vault")
    svc.remove_user(token(svc), "solo", "to:ines")
    ines = login_owner(svc, "ines")
    assert "solo-diary.md" in svc.searchable_documents(ines)
    for r in ("dense", "bm25"):  # the index's owner (dense) and the catalog's (BM25) both moved
        got = retrieve(svc.ctx, QUESTION, k=5, retriever=r, visible_to=ines).sources
        assert any("seven nine three" in s.text for s in got), r
    assert [c["title"] for c in svc.conversations.list(ines)] == ["about the vault"]
    svc.users.add("solo", "another-person-9")  # and a new solo sees none of it
    assert "seven nine three" not in found_text(svc, login_owner(svc, "solo"))
    _, rows = svc.documents(token(svc))
    assert {r["document"]: r["owner"] for r in rows}["solo-diary.md"] == "user ines"


def test_kept_documents_are_nobody_s_and_the_admin_sees_a_removed_account(svc, tmp_path):
    owner = login_owner(svc, "solo")
    upload(svc, tmp_path, owner)
    svc.remove_user(token(svc), "solo", "keep")
    _, rows = svc.documents(token(svc))
    labels = {r["document"]: r["owner"] for r in rows}
    assert labels["solo-diary.md"] == "removed account" and labels["harbour.md"] == "library"
    assert "seven nine three" not in found_text(svc, login_owner(svc, "ines"))
    svc.delete(token(svc), ["solo-diary.md"])  # the admin can still delete them
    assert "solo-diary.md" not in {r["doc_id"] for r in svc.ctx.catalog.documents(None)}


def test_a_login_of_a_removed_account_owns_nothing(svc):
    import gradio as gr

    svc.remove_user(token(svc), "solo")  # owns nothing: no choice needed
    with pytest.raises(gr.Error, match="no longer exists"):
        login_owner(svc, "solo")
    assert RoomContext(svc).reader_of(None, SimpleNamespace(username="solo")) is None  # the shared library only


def test_the_command_line_removes_with_a_choice(svc, tmp_path, capsys, monkeypatch):
    from cli.main import main

    owner = login_owner(svc, "solo")
    upload(svc, tmp_path, owner)
    svc.ctx.close()  # the data dir's writer lock is free for the command
    monkeypatch.setenv("MGRAG_EMBEDDER", "hashing")
    d = str(svc.ctx.settings.data_dir)
    assert main(["--data-dir", d, "users", "remove", "solo"]) == 2
    assert "owns 1 document(s)" in capsys.readouterr().err
    assert main(["--data-dir", d, "users", "remove", "solo", "--documents", "to:ines"]) == 0
    assert "handed to ines" in capsys.readouterr().out
    from core.settings import Settings
    from ingest.store.catalog import Catalog

    cat = Catalog(Settings(data_dir=d).data_dir / "catalog.sqlite")
    assert cat.owner_of("solo-diary.md") == (True, svc.users.owner("ines"))


def test_keys_made_before_accounts_keep_their_uploads_when_the_account_is_made(make_ctx, tmp_path):
    """Keys for a name made while there were no accounts: the account the admin then makes for that name takes the
    keys' id, so the key still works and what it uploaded stays its own; a removed account's id is never adopted."""
    ctx = make_ctx(chunker="recursive", theta=20, synth_backend="extractive", top_k=5)
    svc = AppService(ctx, admin_password="pw", upload_root=tmp_path)
    key = svc.api_keys.check(svc.api_keys.add("ines-laptop", "ines"))
    upload(svc, tmp_path, key.owner)
    svc.users.add("ines", "harbour-master-1")
    assert login_owner(svc, "ines") == key.owner
    assert svc.api_keys.check(svc.api_keys.add("ines-phone", "ines")).owner == key.owner
    assert "seven nine three" in found_text(svc, login_owner(svc, "ines"))
    # removed (its keys left active, as a bare `Users.remove` leaves them) and the name given again: a new id
    svc.users.remove("ines")
    svc.users.add("ines", "someone-else-22")
    assert login_owner(svc, "ines") != key.owner
    assert "seven nine three" not in found_text(svc, login_owner(svc, "ines"))
