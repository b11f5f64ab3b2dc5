"""Chat: searching and answering over the documents the asker may search, the conversations kept server side, and
the viewer of an answer's sources (its links, tokens signed with the data dir's browser-state secret, and what it
shows). A part of
:class:`services.service.AppService`."""
from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from core.private import write_secret
from ingest.readers.layout import Layout, page_span, place_label
from ingest.readers.sandbox import SandboxError
from retrieval.search import RETRIEVERS as RETRIEVERS  # the doors' choices of retriever
from retrieval.search import EmptyIndexError, Retrieval, retrieve
from services.base import ADMIN
from services.conversations import ConversationStore
from services.part import ServicePart
from services.viewer import PageRenderer, RenderFailed, View, ViewNotFound, ViewTokens, view_page

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): app.answer

log = logging.getLogger("services.service")  # the name it always had (log filters, tests)


class ChatPart(ServicePart):
    """Searching and asking (one retry when a search raced a re-ingestion), conversations, and the viewer: its links
    and what it shows (the page, a PDF page's image, the original)."""

    @property
    def conversations(self):
        """Conversations kept server side (:class:`services.conversations.ConversationStore`)."""
        if getattr(self, "_conversations", None) is None:
            self._conversations = ConversationStore(self.ctx.settings.data_dir / "conversations.sqlite")
        return self._conversations

    def _raced(self, gen) -> bool:
        """Whether a retrieval that failed, started with ``gen`` live, may have raced a re-ingestion (the index
        switched under it, or one is running: the old generation's collections dropped between reading the live
        generation and searching); then it is worth one more try, after a moment."""
        now = self.ctx.catalog.live_generation()
        if gen is None or now is None or now.gen != gen.gen or self.job.running:
            log.info("retrieval raced a re-ingestion; retrying once")
            time.sleep(0.05)
            return True
        return False

    def _check_scope(self, owner, scope: list[str] | None) -> None:
        """ValueError when a search is limited to documents of which ``owner`` may search none any more."""
        if scope and not self.doc_filter(owner, scope):
            raise ValueError("none of the documents this conversation is limited to can be searched any more; "
                             "choose others under 'Search in'")

    def search(self, query: str, *, k: int | None = None, retriever: str | None = None, owner=ADMIN,
               scope: list[str] | None = None) -> Retrieval:
        """The sources for ``query`` (:func:`retrieval.search.retrieve`) among the documents ``owner`` may search
        (within ``scope`` if given), retried once, as :meth:`ask` is, if it failed because a re-ingestion switched
        the index under it. ValueError (a question refused) and :class:`EmptyIndexError` are raised as they are."""
        self._check_scope(owner, scope)
        visible_to = self.reader(owner)
        gen = self.ctx.catalog.live_generation()
        try:
            return retrieve(self.ctx, query, k=k, retriever=retriever, doc_ids=scope or None, visible_to=visible_to)
        except (ValueError, EmptyIndexError):
            raise
        except Exception:
            if not self._raced(gen):
                raise
        return retrieve(self.ctx, query, k=k, retriever=retriever, doc_ids=scope or None, visible_to=visible_to)

    def warm_checker(self) -> None:
        """Start the LM check's model in the background (``mgrag serve``), so that the first question does not wait
        for it to load; nothing when the check is off or cannot run here."""
        from app.evidence import warm_checker

        warm_checker(self.ctx)

    def ask(self, question: str, *, k: int | None = None, budget_words: int | None = None,
            retriever: str | None = None, backend: str | None = None, owner=ADMIN,
            scope: list[str] | None = None, history: list[dict] | None = None, no_retrieval: str | None = None
            ) -> Iterator[tuple[str, object]]:
        """:func:`app.answer.ask` over the documents ``owner`` may search (within ``scope`` if given; ``history``:
        the conversation's earlier turns; ``no_retrieval``: the baseline of `mgrag ask --no-retrieval`, that
        document's start instead of a search), retried once if retrieval failed because a re-ingestion switched the
        index under it (:meth:`_raced`)."""
        from app.answer import AskOptions, ask

        self._check_scope(owner, scope)
        visible_to = self.reader(owner)
        for attempt in (1, 2):
            gen = self.ctx.catalog.live_generation()
            opts = AskOptions(k=k, budget_words=budget_words, retriever=retriever, backend=backend,
                              doc_ids=scope or None, visible_to=visible_to, no_retrieval_doc=no_retrieval)
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
                if attempt == 1 and self._raced(gen):
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
        :class:`services.viewer.ViewNotFound` (the document is gone). :meth:`view_html`, :meth:`view_png` and
        :meth:`view_original` read what they show through it."""
        view = self.view_tokens.check(token)
        row = self.ctx.catalog.version_of(view.doc_id, view.hash)
        if row is None or not self.ctx.store.has(view.hash):
            raise ViewNotFound("this document is no longer in the library")
        return view, row

    def view_html(self, token: str, page: int | None = None) -> str:
        """The viewer page of a viewer token (:func:`services.viewer.view_page`): the document's text with the passage,
        the child and the supporting sentences marked, its place, and for a PDF its page ``page`` (default: the
        passage's) with the links to the other pages and the original. Raises as :meth:`open_view` does."""
        view, row = self.open_view(token)
        text = self.ctx.store.text(view.hash)
        lay = Layout.from_json(self.ctx.store.layout(view.hash))
        label = place_label(page_span(lay, view.start, view.end), [], lay.unit)
        n_pages, page_url = None, None
        if row["kind"] == "pdf" and lay.pages:
            view = replace(view, page=page or view.page or 1)
            n_pages = len(lay.pages)
            page_url = f"../page/{token}?page={view.page}"
        return view_page(view, text, row["kind"], n_pages, page_url, f"../original/{token}", label)

    def view_png(self, token: str, page: int = 1) -> bytes:
        """Page ``page`` of a viewer token's PDF as PNG, its highlights drawn (:attr:`page_renderer`). Raises as
        :meth:`open_view` does, :class:`services.viewer.ViewNotFound` for a document that is not a PDF,
        :class:`services.viewer.RenderBusy` when every render slot stays taken, :class:`services.viewer.RenderFailed`
        when the page cannot be rendered within the renderer's limits (logged)."""
        view, row = self.open_view(token)
        if row["kind"] != "pdf":
            raise ViewNotFound("not a PDF")
        store = self.ctx.store
        text = store.text(view.hash)
        spans = [(view.start, view.end, "passage")] + ([(*view.matched, "child")] if view.matched else [])
        highlights = [(text[s:e], k) for s, e, k in spans + [(s, e, "support") for s, e in view.support]]
        try:
            png, _ = self.page_renderer.render(view.hash, lambda: store.original(view.hash), page, highlights)
        except SandboxError as e:
            log.warning("rendering page %s of %s failed: %s", page, view.doc_id, e.problem)
            raise RenderFailed("this page could not be rendered within the viewer's memory and time limits; "
                               "download the original to see it") from e
        return png

    def view_original(self, token: str) -> tuple[bytes, str, str]:
        """(bytes, media type, file name) of a viewer token's original file. Raises as :meth:`open_view` does."""
        view, row = self.open_view(token)
        types = {"pdf": "application/pdf", "html": "text/plain; charset=utf-8", "text": "text/plain; charset=utf-8",
                 "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document"}
        return (self.ctx.store.original(view.hash), types.get(row["kind"], "application/octet-stream"),
                Path(row["name"]).name)
