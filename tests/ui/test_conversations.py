"""Conversations kept server side, per owner: created, listed (most recent first), reopened with their turns and
scope, renamed and deleted; another owner's conversation is not found."""
from __future__ import annotations

import pytest

from services.conversations import ConversationNotFound, ConversationStore, title_of
from services.users import Users


def test_conversation_lifecycle(tmp_path):
    st = ConversationStore(tmp_path / "c.sqlite")
    a = st.create("browser:a")
    st.add_turn("browser:a", a, "When does the ferry leave the east pier every day?", {"text": "At noon. [1]"})
    st.add_turn("browser:a", a, "And when does it return?", {"text": "At six. [1]"})
    b = st.create("browser:a", title="Fees")
    conv = st.get("browser:a", a)
    assert conv["title"] == "When does the ferry leave the east pier every day?"
    assert [t["question"] for t in conv["turns"]] == ["When does the ferry leave the east pier every day?",
                                                     "And when does it return?"]
    assert conv["turns"][1]["answer"]["text"] == "At six. [1]"
    assert [c["id"] for c in st.list("browser:a")] == [b, a]
    st.add_turn("browser:a", a, "How much is a ticket?", {"text": "Eight euros. [1]"})
    assert [c["id"] for c in st.list("browser:a")][0] == a  # the most recently used first
    st.rename("browser:a", a, "Ferry times")
    st.set_scope("browser:a", a, ["ferry.md"])
    again = ConversationStore(tmp_path / "c.sqlite").get("browser:a", a)  # survives a restart
    assert again["title"] == "Ferry times" and again["scope"] == ["ferry.md"] and len(again["turns"]) == 3
    st.delete("browser:a", a)
    with pytest.raises(ConversationNotFound):
        st.get("browser:a", a)


def test_two_conversations_begun_with_the_same_question_are_told_apart(tmp_path):
    st = ConversationStore(tmp_path / "c.sqlite")
    q = "What did the President say about late fees?"
    ids = []
    for title in ("", "", q):  # untitled, then titled by its first question as the chat creates one
        ids.append(st.create("browser:a", title=title))
        st.add_turn("browser:a", ids[-1], q, {"text": "x"})
    other = st.create("browser:b")
    st.add_turn("browser:b", other, q, {"text": "x"})
    assert [st.get("browser:a", i)["title"] for i in ids] == [q, f"{q} (2)", f"{q} (3)"]
    assert st.get("browser:b", other)["title"] == q  # another owner's titles are not counted
    st.add_turn("browser:a", ids[0], "And overdraft fees?", {"text": "y"})
    assert st.get("browser:a", ids[0])["title"] == q  # only the first turn titles a conversation


def test_another_owners_conversation_is_not_found(tmp_path):
    st = ConversationStore(tmp_path / "c.sqlite")
    a = st.create("browser:a")
    for call in (lambda: st.get("browser:b", a), lambda: st.add_turn("browser:b", a, "q", {}),
                 lambda: st.rename("browser:b", a, "x"), lambda: st.delete("browser:b", a)):
        with pytest.raises(ConversationNotFound, match="no such conversation"):
            call()
    assert st.list("browser:b") == [] and st.get("browser:a", a)["turns"] == []


def test_deleted_document_leaves_scopes_and_titles_are_short(tmp_path):
    st = ConversationStore(tmp_path / "c.sqlite")
    a = st.create("u", scope=["a.md", "b.md"])
    st.forget_document("a.md")
    assert st.get("u", a)["scope"] == ["b.md"]
    assert len(title_of("word " * 100)) == 80 and title_of("  two\nlines ") == "two lines"


def test_users_hash_passwords_and_check_them(tmp_path):
    users = Users(tmp_path / ".secrets" / "users.sqlite")
    assert not users
    users.add("ines", "harbour-master-1")
    assert users and users.names() == ["ines"]
    assert users.check("ines", "harbour-master-1") and not users.check("ines", "wrong-password")
    assert not users.check("nobody", "harbour-master-1")
    raw = (tmp_path / ".secrets" / "users.sqlite").read_bytes()
    assert b"harbour-master-1" not in raw
    with pytest.raises(ValueError, match="at least 8 characters"):
        users.add("jonas", "short")
    with pytest.raises(ValueError, match="use 1–64 letters"):
        users.add("../etc", "long-enough-pw")
    users.remove("ines")
    assert not users.check("ines", "harbour-master-1")
    with pytest.raises(ValueError, match="no user 'ines'"):
        users.remove("ines")
