"""The Admin tab's actions, each behind the admin's session token (``self.auth``): the documents table,
deletion and re-ingestion, the ingestion queue, user accounts, index statistics, the chunk inspector and router
training. A part of :class:`services.service.AppService`."""
from __future__ import annotations

import json
import time
from collections.abc import Callable

from app.evaluation.bench import BENCH_DIR
from app.inspect import inspect_text, render_html, render_png
from ingest.jobs.state import ACTIVE, FIRST_PASS
from ingest.text.sentences import count_words
from services.base import Progress
from services.keys import Keys
from services.part import ServicePart
from services.users import Users, account_owner

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): ingest.jobs.queue,
# router.pipeline


class AdminPart(ServicePart):
    """Admin actions (every one checks the token first)."""

    # ends the web app's logins of a user name (set by ui.app.launch): a removed user's open page loses access at once
    end_sessions: Callable[[str], None] | None = None

    def login(self, user: str, password: str, client: str = "", token: str | None = None) -> str:
        return self.auth.login(user, password, client, token)

    def logout(self, token: str | None) -> None:
        """The admin session ends: its token is refused from now on."""
        self.auth.logout(token)

    def documents(self, token: str) -> tuple[dict | None, list[dict]]:
        from ingest.jobs.queue import document_states

        self.auth.check(token)
        live = self.ctx.catalog.live_generation()
        rows = document_states(self.ctx)
        accounts = self.users.accounts()
        params = {"chunker": live.chunker, "theta": live.theta, **live.params} if live else {}
        out = [{"document": r["doc_id"], "state": r["detail"], "size (KB)": round((r["size"] or 0) / 1024, 1),
                "version": r["version"] or "",
                "parents": r["n_l0"] or 0, "θ/2": r["n_l1"] or 0, "θ/4": r["n_l2"] or 0,
                "ingest s": round(r["seconds"] or 0.0, 2),
                "indexed": time.strftime("%Y-%m-%d %H:%M", time.localtime(r["indexed_at"])) if r["indexed_at"] else "",
                "parameters": json.dumps(_own_params(r["chunking"]) or params, ensure_ascii=False, sort_keys=True),
                "owner": _owner_label(r["owner"], accounts)}
               for r in rows]
        return ({"gen": live.gen, **params} if live else None), out

    def delete(self, token: str, doc_ids: list[str]) -> list[str]:
        self.auth.check(token)
        if not doc_ids:
            raise ValueError("select the documents to delete")
        return self._delete(doc_ids)

    def reingest(self, token: str, doc_ids: list[str] | None = None, chunker: str | None = None,
                 theta: int | None = None, progress: Progress | None = None, on_step=None):
        """All documents (``doc_ids`` None or empty): a new generation with ``chunker``/``theta``, built beside the
        live one and switched atomically. Some documents: the same, but only those are re-chunked, with
        ``chunker``/``theta`` if given (recorded for those documents only) or with their own; the others' chunks
        and vectors are copied into the new generation."""
        self.auth.check(token)
        live = self.ctx.catalog.live_generation()
        if live is None:
            raise ValueError("the index is empty; upload documents first")
        if theta is not None and not 4 <= int(theta) <= 100_000:
            raise ValueError(f"θ must be between 4 and 100000 words, got {theta}")
        theta = int(theta) if theta else None
        with self._reingesting():
            if doc_ids:
                return self._reingest(progress, on_step, chunker=chunker or None, theta=theta, only=doc_ids)
            return self._reingest(progress, on_step, chunker=chunker, theta=theta)

    def queue_rows(self, token: str) -> list[dict]:
        """The Admin tab's view of the queue: every active job and the last finished ones."""
        self.auth.check(token)
        active = self.ctx.jobs.jobs(ACTIVE)
        done = [j for j in self.ctx.jobs.jobs(limit=50) if j.state not in ACTIVE][-20:]
        accounts = self.users.accounts()
        return [{"job": j.job_id, "document": j.doc_id, "owner": _owner_label(j.owner, accounts), "state": j.state,
                 "detail": j.describe(), "attempts": j.attempts,
                 "queued": time.strftime("%H:%M:%S", time.localtime(j.created)) if j.created else ""}
                for j in active + done]

    @property
    def users(self):
        """The web app's user accounts (:class:`services.users.Users`); with any, `mgrag serve` requires a login."""
        if getattr(self, "_users", None) is None:
            self._users = Users(self.ctx.settings.data_dir / ".secrets" / "users.sqlite")
        return self._users

    def user_names(self, token: str) -> list[str]:
        self.auth.check(token)
        return self.users.names()

    def add_user(self, token: str, name: str, password: str) -> list[str]:
        self.auth.check(token)
        name = (name or "").strip()
        new = self.users.id_of(name) is None
        self.users.add(name, password or "")
        if new and self.end_sessions is not None:  # logins left by a removed account of that name (say, removed
            self.end_sessions(name)  # with `mgrag users` while serving) never reach the new one
        return self.users.names()

    def remove_user(self, token: str, name: str, documents: str | None = None) -> list[str]:
        """Remove a user (``documents``: what becomes of theirs, see :meth:`remove_account`); the users left."""
        self.auth.check(token)
        self.remove_account((name or "").strip(), documents)
        return self.users.names()

    def remove_account(self, name: str, documents: str | None = None) -> str:
        """Remove the account ``name`` and revoke its API keys; what it owns (documents, conversations) is
        ``documents``: ``delete`` (through the deletion path: store, catalog, files), ``keep`` (kept under the
        removed account's id: nobody but the admin sees them, the Admin tab says "removed account"), or
        ``to:OTHER`` (handed over to user OTHER). None refuses while the account owns any: the removal cannot be
        undone (a new account of that name is someone else), so the admin says what becomes of them. Refused too
        while an upload of theirs is not searchable yet (it would land after the choice). Returns what was done."""
        account_id = self.users.id_of(name)
        if account_id is None:
            raise ValueError(f"no user {name!r}")
        mode, other = removal_mode(documents)
        owner = account_owner(account_id)
        pending = self.ctx.jobs.jobs(FIRST_PASS, owner=owner, all_owners=False)
        if pending:
            raise ValueError(f"{name} has {len(pending)} upload(s) not searchable yet; wait for them or cancel them "
                             "(the Admin tab's queue, `mgrag cancel`), then remove the user; nothing changed")
        docs = [r["doc_id"] for r in self.ctx.catalog.documents(None) if r["owner"] == owner]
        convs = self.conversations.list(owner, limit=1_000_000)
        if mode is None and (docs or convs):
            raise ValueError(f"{name} owns {len(docs)} document(s) and {len(convs)} conversation(s); say what becomes "
                             "of them: delete, keep or to:OTHER (deleted, kept where nobody but the admin sees them, "
                             "or handed to user OTHER); nothing changed")
        to_owner = None
        if mode == "to":
            other_id = self.users.id_of(other)
            if other_id is None or other_id == account_id:
                raise ValueError(f"cannot hand {name}'s documents to {other!r}: name another user "
                                 f"({', '.join(n for n in self.users.names() if n != name) or 'there is none'})")
            to_owner = account_owner(other_id)
        if mode == "delete":
            for c in convs:
                self.conversations.delete(owner, c["id"])
            if docs:
                self._delete(docs)
        elif to_owner is not None:
            self._hand_over(owner, to_owner, docs)
        self.users.remove(name)
        n = self.api_keys.revoke_user(account_id)  # a removed user's keys stop working with the user
        if self.end_sessions is not None:  # and their logins: a page still open would reach a new account of the name
            self.end_sessions(name)
        did = {"delete": "deleted", "keep": "kept", "to": f"handed to {other}"}.get(mode or "", "")
        return (f"removed {name}" + (f" and revoked their {n} API key{'s' * (n != 1)}" if n else "")
                + (f"; their {len(docs)} document(s) and {len(convs)} conversation(s) {did}" if docs or convs else ""))

    def _hand_over(self, owner: str, to_owner: str, docs: list[str]) -> None:
        """``owner``'s documents and conversations become ``to_owner``'s: the index points' owner (what dense
        searches filter on) first, then the catalog's (what the rest reads), a document at a time, under the write
        lock; a failure leaves each document whole with one of the two, and repeating finishes the rest."""
        cat = self.ctx.catalog
        with self._writing("hand over"):
            live = cat.live_generation()
            for d in docs:
                if live is not None:
                    self.ctx.index.set_owner(live.gen, d, to_owner)
                with cat.transaction() as db:
                    db.execute("UPDATE documents SET owner=? WHERE doc_id=? AND owner=?", (to_owner, d, owner))
            if live is not None and docs:
                self.ctx.index.flush(live.gen)
        self.conversations.hand_over(owner, to_owner)

    # -- the HTTP API's keys (api.v1) ------------------------------------------------------------------------------
    @property
    def api_keys(self):
        """The HTTP API's keys (:class:`services.keys.Keys`)."""
        if getattr(self, "_api_keys", None) is None:
            self._api_keys = Keys(self.ctx.settings.data_dir / ".secrets" / "keys.sqlite", self.users)
        return self._api_keys

    def key_rows(self, token: str) -> list[dict]:
        """The API keys for the Admin tab (never a key itself: it is shown once, when made)."""
        self.auth.check(token)
        return [{"name": k.name, "user": k.user, "starts": k.prefix + "…", "created": k.created,
                 "last used": k.last_used, "revoked": k.revoked} for k in self.api_keys.list()]

    def add_key(self, token: str, name: str, user: str) -> str:
        """Make an API key for ``user`` (one of the web app's users when it has any); returns it, once."""
        self.auth.check(token)
        user = (user or "").strip()
        if self.users and user not in self.users.names():
            raise ValueError(f"no user {user!r}; a key belongs to one of the web app's users "
                             f"({', '.join(self.users.names())})")
        return self.api_keys.add((name or "").strip(), user)

    def revoke_key(self, token: str, name: str) -> None:
        self.auth.check(token)
        self.api_keys.revoke(name)

    def chunk_lengths(self, token: str) -> dict[int, list[int]]:
        """Chunk lengths in words per level of the live index (for the histograms)."""
        self.auth.check(token)
        _, chunks = self.live_chunks()
        out: dict[int, list[int]] = {}
        for cs in chunks.values():
            for c in cs:
                out.setdefault(c.level, []).append(count_words(c.text))
        return out

    def inspect(self, token: str, doc_id: str, question: str | None = None, theta: int | None = None,
                words: tuple[int, int] | None = None) -> tuple[bytes, str, dict]:
        """The chunk inspector for one document (``app.inspect``): the PNG, the HTML page and a summary. Admin only:
        it reads any document and runs the chunker LM."""
        self.auth.check(token)

        live = self.ctx.catalog.live_generation()
        rows = {r["doc_id"]: r for r in self.ctx.catalog.documents(live.gen if live else None)}
        if not doc_id or doc_id not in rows:
            raise ValueError(f"no document {doc_id!r}; choose one of the documents table")
        row = rows[doc_id]
        ins = inspect_text(self.ctx, self.ctx.store.text(row["hash"]), row["name"], theta=theta,
                           question=(question or "").strip() or None)
        return render_png(ins, words=words), render_html(ins), ins.summary()

    def train_router(self, token: str, sets: list[str] | None = None) -> dict:
        """Train the Mix-of-Granularity router over the live index (``router.pipeline.train_from_index``) on the
        exported evaluations (``"feedback"``) and/or bench sets by name; saves it to ``data_dir/router``, which the
        chat then uses. Returns the training report (its loss history under ``history``)."""
        self.auth.check(token)
        from router.pipeline import train_from_index

        files = []
        for name in sets or ["feedback"]:
            if name == "feedback":
                path, n = self.export_feedback()
                if not n:
                    raise ValueError("no evaluations with evidence yet: rate answers good (or mark relevant sources) "
                                     "on the Evaluate tab, or pick a bench set")
                files.append(path)
            elif name in self.bench_sets():
                files.append(BENCH_DIR / name / "questions.jsonl")
            else:
                raise ValueError(f"unknown training set {name!r}; choose feedback or one of {self.bench_sets()}")
        with self._writing("train-router"):
            report = train_from_index(self.ctx, files, self.ctx.settings.data_dir / "router", progress=False)
            self.ctx.forget("router")  # the next question loads the new router
        return report


def _own_params(chunking: dict | None) -> dict | None:
    """A document's own chunking parameters (see ``reingest(only=...)``, ingest.pipeline) as the documents table shows
    them."""
    if not chunking:
        return None
    return {**(chunking.get("params") or {}), "chunker": chunking["chunker"], "theta": chunking["theta"]}


def _owner_label(owner: str | None, accounts: dict[str, str] | None = None) -> str:
    """``library``, a user account by its current name (``user bob``; ``accounts``: ``{account id: name}``, see
    :meth:`services.users.Users.accounts`; an id with no account: ``removed account``), or another owner's kind and
    the end of its id (a browser's hashed id: ``browser 3f9a1c``), for the admin's tables.

    >>> _owner_label("user:bob"), _owner_label("browser:" + "ab" * 16), _owner_label(None)
    ('user bob', 'browser ababab', 'library')
    >>> _owner_label("user:_5f0c", {"_5f0c": "solo"}), _owner_label("user:_77aa", {"_5f0c": "solo"})
    ('user solo', 'removed account')
    """
    if owner is None:
        return "library"
    kind, _, ident = owner.partition(":")
    if kind == "user" and accounts is not None:
        return f"user {accounts[ident]}" if ident in accounts else "removed account"
    return f"{kind} {ident if kind == 'user' else ident[-6:]}"


def removal_mode(documents: str | None) -> tuple[str | None, str]:
    """``(mode, other user)`` of a removal's ``documents`` choice (None, delete, keep or to:OTHER)."""
    choice = (documents or "").strip()
    if not choice:
        return None, ""
    if choice in ("delete", "keep"):
        return choice, ""
    if choice.startswith("to:") and choice[3:].strip():
        return "to", choice[3:].strip()
    raise ValueError(f"what becomes of the user's documents is one of delete, keep or to:OTHER (another user), not "
                     f"{choice[:40]!r}")
