"""Chat: answering over the documents the asker may search, the conversations kept server side, and the viewer
links of an answer's sources (tokens signed with the data dir's browser-state secret). A part of
:class:`services.service.AppService`."""
from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Iterator

from core.private import write_secret
from services.base import ADMIN
from services.conversations import ConversationStore
from services.part import ServicePart
from services.viewer import PageRenderer, View, ViewTokens

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): app.answer, retrieval.search

log = logging.getLogger("services.service")  # the name it always had (log filters, tests)


class ChatPart(ServicePart):
    """Asking, conversations and viewer links."""

    @property
    def conversations(self):
        """Conversations kept server side (:class:`services.conversations.ConversationStore`)."""
        if getattr(self, "_conversations", None) is None:
            self._conversations = ConversationStore(self.ctx.settings.data_dir / "conversations.sqlite")
        return self._conversations

    def ask(self, question: str, *, k: int | None = None, budget_words: int | None = None,
            retriever: str | None = None, backend: str | None = None, owner=ADMIN,
            scope: list[str] | None = None, history: list[dict] | None = None) -> Iterator[tuple[str, object]]:
        """:func:`app.answer.ask` over the documents ``owner`` may search (within ``scope`` if given; ``history``:
        the conversation's earlier turns), retried once if retrieval failed because a re-ingestion switched the
        index under it (the old generation's collections dropped between reading the live generation and
        searching)."""
        from app.answer import AskOptions, ask
        from retrieval.search import EmptyIndexError

        if scope and not self.doc_filter(owner, scope):
            raise ValueError("none of the documents this conversation is limited to can be searched any more; "
                             "choose others under 'Search in'")
        visible_to = self.reader(owner)
        for attempt in (1, 2):
            gen = self.ctx.catalog.live_generation()
            opts = AskOptions(k=k, budget_words=budget_words, retriever=retriever, backend=backend,
                              doc_ids=scope or None, visible_to=visible_to)
            events = ask(self.ctx, question, opts, history=history)
            first: list = []
            try:  # up to the retrieval: the status events before it are passed on after it succeeded
                for ev in events:
                    first.append(ev)
                    if ev[0] == "sources":
                        break
            except (ValueError, EmptyIndexError):
                raise
            except Exception:
                now = self.ctx.catalog.live_generation()
                if attempt == 1 and (gen is None or now is None or now.gen != gen.gen or self.job.running):
                    log.info("retrieval raced a re-ingestion; retrying once")
                    time.sleep(0.05)
                    continue
                raise
            yield from first
            yield from events
            return

    def state_secret(self) -> str:
        """A random secret kept in the data dir (mode 0600) that encrypts what the browser stores (its id), stable
        across restarts so a browser keeps its uploads."""
        p = self.ctx.settings.data_dir / ".secrets" / "browser_state.key"
        if not p.exists():
            write_secret(p, secrets.token_urlsafe(32))
        return p.read_text().strip()

    @property
    def view_tokens(self):
        if getattr(self, "_view_tokens", None) is None:
            self._view_tokens = ViewTokens(self.state_secret())
        return self._view_tokens

    @property
    def page_renderer(self):
        """Renders the viewer's PDF page images (:class:`services.viewer.PageRenderer`): one per service, so its render
        slots and its cache are shared by every request."""
        with self._renderer_lock:
            if getattr(self, "_page_renderer", None) is None:
                self._page_renderer = PageRenderer()
            return self._page_renderer

    def view_link(self, source: dict, support: list[tuple[int, int]] | None = None) -> str | None:
        """The viewer path (relative to the app's root) of one source of an answer (a Citation as a dict): its
        document at the page of the matched passage, the passage, the child and the supporting sentences marked."""
        if not source.get("doc_hash") or source.get("matched_level", 0) < 0:
            return None
        pages = source.get("matched_pages") or source.get("pages")
        view = View(source["doc_id"], source["doc_hash"], source["start"], source["end"],
                    (source["matched_start"], source["matched_end"]), tuple((a, b) for a, b in support or ()),
                    pages[0] if pages else None, name=source.get("name") or "")
        return "mgrag/view/" + self.view_tokens.mint(view)

    def open_view(self, token: str):
        """(view, version row) of a viewer token; :class:`services.viewer.InvalidViewToken` (bad or expired) or
        ValueError (the document is gone); the caller reads the text or the original (``ctx.store``) as it needs."""
        view = self.view_tokens.check(token)
        row = self.ctx.catalog.version_of(view.doc_id, view.hash)
        if row is None or not self.ctx.store.has(view.hash):
            raise ValueError("this document is no longer in the library")
        return view, row
