"""Conversations kept server side (``data_dir/conversations.sqlite``): each belongs to one owner (a browser, or a
user when the admin has configured users), has a title, the documents its questions are limited to (its scope),
and its turns (the question and the answer object, its texts bounded: :func:`bounded_answer`). A reload of the
page lists them and reopens the last one. Every call names the owner, and another owner's conversation is "not
found" (its existence is not revealed)."""
from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from core.db import open_db

SCHEMA = """
CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY, owner TEXT NOT NULL, title TEXT NOT NULL, scope TEXT NOT NULL DEFAULT '[]',
    created REAL NOT NULL, updated REAL NOT NULL);
CREATE INDEX IF NOT EXISTS conversations_owner ON conversations(owner, updated);
CREATE TABLE IF NOT EXISTS turns (
    conv_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE, n INTEGER NOT NULL, question TEXT NOT NULL,
    answer TEXT NOT NULL, created REAL NOT NULL, PRIMARY KEY (conv_id, n));
"""
MAX_TITLE = 80
MAX_SOURCE_CHARS = 6_000  # each text of a source kept with an answer: its passage, matched chunk, quoted sentences
MAX_ANSWER_CHARS = 20_000  # any other text of an answer (its reply, its draft)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _capped(value, limit: int, cuts: list | None = None):
    """``value`` (JSON-like) with every string cut to ``limit`` characters; each cut is noted in ``cuts``."""
    if isinstance(value, str):
        if len(value) > limit and cuts is not None:
            cuts.append(len(value))
        return _cut(value, limit)
    if isinstance(value, dict):
        return {k: _capped(v, limit, cuts) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_capped(v, limit, cuts) for v in value]
    return value


def bounded_answer(answer: dict) -> dict:
    """A copy of ``answer`` (an :class:`~app.answer.Answer` as a dict) that is bounded in size, as the page gets it
    and a conversation stores it: every text of a source (its passage, matched chunk, supporting sentences) cut to
    :data:`MAX_SOURCE_CHARS` characters, the source then marked ``"shortened": True`` (the whole passage stays in
    the index and opens in the viewer), and every other text to :data:`MAX_ANSWER_CHARS`. A passage of a normal
    document (θ words) is far under the cap; a file of one 10 MB "word" no longer costs megabytes per question."""
    def source(s: dict) -> dict:
        cuts: list[int] = []
        out = _capped(s, MAX_SOURCE_CHARS, cuts)
        if cuts:
            out["shortened"] = True
        return out

    out = {k: _capped(v, MAX_ANSWER_CHARS) for k, v in answer.items() if k not in ("sources", "citations")}
    for k in ("sources", "citations"):
        if k in answer:
            out[k] = [source(s) for s in answer[k] or ()]
    return out


class ConversationNotFound(KeyError):
    def __str__(self) -> str:
        return "no such conversation (it was deleted, or it is not yours)"


def title_of(question: str) -> str:
    """A conversation's default title: its first question, on one line, at most 80 characters."""
    q = " ".join((question or "").split())
    return q if len(q) <= MAX_TITLE else q[: MAX_TITLE - 1].rstrip() + "…"


class ConversationStore:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.db = open_db(self.path, SCHEMA)
        self._lock = threading.Lock()

    def _own(self, owner: str, conv_id: str) -> None:
        row = self.db.execute("SELECT owner FROM conversations WHERE id=?", (conv_id or "",)).fetchone()
        if row is None or row[0] != owner:
            raise ConversationNotFound(conv_id)

    def create(self, owner: str, title: str = "", scope: list[str] | None = None) -> str:
        conv_id = secrets.token_urlsafe(12)
        now = time.time()
        with self._lock:
            title = self._free_title(owner, conv_id, title_of(title)) if title else ""
            self.db.execute("INSERT INTO conversations VALUES (?,?,?,?,?,?)",
                            (conv_id, owner, title, json.dumps(list(scope or [])), now, now))
        return conv_id

    def list(self, owner: str, limit: int = 200) -> list[dict]:
        """The owner's conversations, the most recently used first: id, title, updated, number of turns."""
        rows = self.db.execute(
            "SELECT c.id, c.title, c.updated, COUNT(t.n) FROM conversations c LEFT JOIN turns t ON t.conv_id=c.id "
            "WHERE c.owner=? GROUP BY c.id ORDER BY c.updated DESC LIMIT ?", (owner, limit)).fetchall()
        return [{"id": i, "title": t or "New chat", "updated": u, "turns": n} for i, t, u, n in rows]

    def get(self, owner: str, conv_id: str) -> dict:
        """id, title, scope and turns (``{"question", "answer"}``, in order) of one of the owner's conversations."""
        self._own(owner, conv_id)
        title, scope = self.db.execute("SELECT title, scope FROM conversations WHERE id=?", (conv_id,)).fetchone()
        turns = [{"question": q, "answer": json.loads(a)} for q, a in self.db.execute(
            "SELECT question, answer FROM turns WHERE conv_id=? ORDER BY n", (conv_id,))]
        return {"id": conv_id, "title": title or "New chat", "scope": json.loads(scope), "turns": turns}

    def add_turn(self, owner: str, conv_id: str, question: str, answer: dict) -> int:
        """Append a turn (the first one titles an untitled conversation); returns its number. The answer is stored
        bounded in size (:func:`bounded_answer`)."""
        answer = bounded_answer(answer)
        with self._lock:
            self._own(owner, conv_id)
            n = self.db.execute("SELECT COALESCE(MAX(n), 0) + 1 FROM turns WHERE conv_id=?", (conv_id,)).fetchone()[0]
            self.db.execute("INSERT INTO turns VALUES (?,?,?,?,?)",
                            (conv_id, n, question, json.dumps(answer, default=str), time.time()))
            self.db.execute("UPDATE conversations SET updated=? WHERE id=?", (time.time(), conv_id))
            if self.db.execute("SELECT title FROM conversations WHERE id=?", (conv_id,)).fetchone()[0] == "":
                self.db.execute("UPDATE conversations SET title=? WHERE id=?",
                                (self._free_title(owner, conv_id, title_of(question)), conv_id))
        return n

    def _free_title(self, owner: str, conv_id: str, title: str) -> str:
        """``title``, or ``title (2)``, ``(3)``… when another of the owner's conversations already has it, so the
        list can tell apart two conversations that began with the same question."""
        taken = {t for (t,) in self.db.execute("SELECT title FROM conversations WHERE owner=? AND id<>?",
                                               (owner, conv_id))}
        free, i = title, 1
        while free in taken:
            i += 1
            free = f"{title} ({i})"
        return free

    def rename(self, owner: str, conv_id: str, title: str) -> None:
        title = title_of(title)
        if not title:
            raise ValueError("a conversation needs a title")
        with self._lock:
            self._own(owner, conv_id)
            self.db.execute("UPDATE conversations SET title=? WHERE id=?", (title, conv_id))

    def set_scope(self, owner: str, conv_id: str, scope: Sequence[str]) -> None:
        with self._lock:
            self._own(owner, conv_id)
            self.db.execute("UPDATE conversations SET scope=? WHERE id=?", (json.dumps(list(scope or [])), conv_id))

    def delete(self, owner: str, conv_id: str) -> None:
        with self._lock:
            self._own(owner, conv_id)
            self.db.execute("DELETE FROM conversations WHERE id=?", (conv_id,))

    def hand_over(self, owner: str, to_owner: str) -> int:
        """Every conversation of ``owner`` becomes ``to_owner``'s (a removed user's, handed to another), a title the
        new owner already has numbered as :meth:`_free_title` does. Returns how many."""
        with self._lock:
            rows = self.db.execute("SELECT id, title FROM conversations WHERE owner=? ORDER BY created",
                                   (owner,)).fetchall()
            for conv_id, title in rows:
                self.db.execute("UPDATE conversations SET owner=?, title=? WHERE id=?",
                                (to_owner, self._free_title(to_owner, conv_id, title) if title else "", conv_id))
        return len(rows)

    def forget_document(self, doc_id: str) -> None:
        """A deleted document leaves every conversation's scope."""
        with self._lock:
            for cid, scope in self.db.execute("SELECT id, scope FROM conversations WHERE scope LIKE ?",
                                              (f'%{json.dumps(doc_id)[1:-1]}%',)).fetchall():
                kept = [d for d in json.loads(scope) if d != doc_id]
                self.db.execute("UPDATE conversations SET scope=? WHERE id=?", (json.dumps(kept), cid))
