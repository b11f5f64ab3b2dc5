"""Documents and who may see them: the index writes behind the one write lock (:meth:`DocumentsPart._writing`),
what an owner may search or delete, and the live index's chunks. A part of :class:`services.service.AppService` (it uses
``self.ctx``, ``self.job``, ``self.write_lock``, ``self.feedback`` and ``self.conversations``)."""
from __future__ import annotations

import contextlib
import logging
import threading
import time

from ingest.jobs.queue import document_states as queue_states
from ingest.store.catalog import live_chunks
from services.base import ADMIN, JobState, Progress
from services.part import ServicePart

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): ingest.pipeline,
# ingest.store.write

log = logging.getLogger("services.service")  # the name it always had (log filters, tests)


class DocumentsPart(ServicePart):
    """Writing to the index and the ownership of documents."""

    def _reingest(self, progress: Progress | None, on_step=None, **kw):
        """:func:`ingest.jobs.rebuild.reingest` with ``kw`` (chunker, theta, only, allow_partial), reporting per
        document to ``progress(done, total, name)`` and within each file to ``on_step(step)``
        (:class:`ingest.pipeline.Step`), and to :attr:`job` for the admin's displays. The caller holds
        :meth:`_reingesting`; the write lock is taken for each commit and for the switch."""
        from ingest.jobs.rebuild import reingest

        def on(done: int, total: int, name: str) -> None:
            self._on_progress(done, total, name)
            if progress is not None:
                progress(done, total, name)

        def step(st) -> None:
            self.job.message = st.message()
            if on_step is not None:
                on_step(st)

        return reingest(self.ctx, on_progress=on, on_step=step, lock=self.write_lock, **kw)

    def resume_interrupted(self) -> threading.Thread | None:
        """A re-ingestion a stopped server left unfinished (:func:`ingest.jobs.rebuild.resume`), finished in the
        background as the Admin's re-ingestion runs (uploads go on meanwhile); the thread, or None when there is
        none to resume."""
        if self.ctx.catalog.interrupted_reingestion() is None:
            return None

        def run() -> None:
            from ingest.jobs.rebuild import resume

            try:
                with self._reingesting():
                    report = resume(self.ctx, lock=self.write_lock, on_progress=self._on_progress)
                if report is not None:
                    log.info("the interrupted re-ingestion is finished: %d documents, %d failed",
                             len(report.results), len(report.failed))
            except Exception:  # the live index is untouched; the next start tries again
                log.exception("resuming the interrupted re-ingestion failed")

        t = threading.Thread(target=run, name="mgrag-resume-reingest", daemon=True)
        t.start()
        return t

    def _on_progress(self, done: int, total: int, name: str) -> None:
        self.job.done, self.job.total, self.job.name = done, total, name

    def _writing(self, kind: str):
        """The write lock for one write (a deletion, a hand-over), shown as the running job unless a re-ingestion is
        (it runs beside such writes: :meth:`_reingesting`)."""
        return self._holding(self.write_lock, kind)

    def _reingesting(self):
        """One re-ingestion at a time, shown as the running job. It does not hold the write lock: it takes it for
        each commit and for the switch (:func:`ingest.jobs.rebuild.reingest` with ``lock``), so uploads, deletions
        and hand-overs go on meanwhile and the re-ingestion catches up with them before it switches."""
        return self._holding(self.reingest_lock, "reingest")

    @contextlib.contextmanager
    def _holding(self, lock: threading.Lock, kind: str):
        """``lock`` held for a job of ``kind`` (waiting for the one holding it, with a log line), the job shown in
        :attr:`job` unless a running re-ingestion is shown there."""
        if not lock.acquire(timeout=0.1):
            log.info("%s waits for the running %s", kind, self.job.kind)
            lock.acquire()
        job = JobState(kind, True, started=time.time())
        if kind == "reingest" or not (self.job.running and self.job.kind == "reingest"):
            self.job = job
        try:
            yield job
        finally:
            job.running = False
            lock.release()

    @staticmethod
    def reader(owner) -> str | None:
        """Whom a search is for (the index filters on it): None for the admin, who sees every document."""
        return None if owner is ADMIN else owner

    def doc_filter(self, owner, scope: list[str] | None = None) -> list[str] | None:
        """The documents ``owner`` may search (the shared library and its own uploads), limited to ``scope`` when
        one is chosen; None when that is every document (no scope, and no one else has private uploads or the
        caller is the admin)."""
        cat = self.ctx.catalog
        allowed = None if owner is ADMIN or not cat.has_hidden_docs(owner) else cat.visible_doc_ids(owner)
        if scope:
            allowed = [d for d in scope if allowed is None or d in allowed]
        return allowed

    def searchable_documents(self, owner) -> list[str]:
        """Every document ``owner`` may search (the choices of a conversation's scope)."""
        cat = self.ctx.catalog
        return [r["doc_id"] for r in cat.documents(None)] if owner is ADMIN else cat.visible_doc_ids(owner)

    def document_labels(self, owner) -> dict[str, str]:
        """``{doc id: name shown}`` of the documents ``owner`` may search (:meth:`ingest.store.catalog.Catalog.labels`):
        a private upload is shown by its file's name even when another user's file of that name made its id
        ``name (2).ext``."""
        return self.ctx.catalog.labels(self.reader(owner))

    def document_states(self, owner: str) -> list[dict]:
        """The documents ``owner`` may see (the shared library and its own uploads) with their state
        (:func:`ingest.jobs.queue.document_states`), each with ``label``: the name ``owner`` knows it by (a private
        upload keeps its file's name even when another user's file of that name gave it an internal id
        ``name (2).ext``)."""
        rows = queue_states(self.ctx, owner, everyone=False)
        labels = self.document_labels(owner)
        cat = self.ctx.catalog
        return [{**r, "label": labels.get(r["doc_id"]) or cat.label_of(r["doc_id"], r["name"], owner)} for r in rows]

    def searchable_choices(self, owner) -> list[tuple[str, str]]:
        """(name shown, doc id) of every document ``owner`` may search, by name."""
        labels = self.document_labels(owner)
        return sorted(((labels.get(d, d), d) for d in self.searchable_documents(owner)), key=lambda x: x[0].lower())

    def own_documents(self, owner: str) -> list[str]:
        """The documents ``owner`` uploaded."""
        return [r["doc_id"] for r in self.ctx.catalog.documents(None) if r["owner"] == owner]

    def own_choices(self, owner: str) -> list[tuple[str, str]]:
        """(name shown, doc id) of the documents ``owner`` uploaded."""
        labels = self.document_labels(owner)
        return [(labels.get(d, d), d) for d in self.own_documents(owner)]

    def delete_own(self, owner: str, doc_ids: list[str]) -> list[str]:
        """Delete documents ``owner`` uploaded; another owner's or the shared library's are refused (an admin
        action)."""
        if not doc_ids:
            raise ValueError("select the documents to delete")
        for d in doc_ids:
            exists, who = self.ctx.catalog.owner_of(d)
            if not exists:
                raise ValueError(f"no document {d!r}")
            if who != owner:
                raise ValueError(f"{d!r} is not one of your uploads; only the admin can delete it")

        return self._delete(doc_ids)

    def _delete(self, doc_ids: list[str]) -> list[str]:
        """Delete documents everywhere they are kept: points, BM25, catalog rows and versions, originals no other
        document shares, and the evidence quoted from them in evaluations."""
        from ingest.store.write import delete_document

        with self._writing("delete"):
            deleted = [delete_document(self.ctx, d) for d in doc_ids]
        for d in deleted:
            self.feedback.forget_document(d)
            self.conversations.forget_document(d)
        return deleted

    def live_chunks(self, owner=ADMIN) -> tuple[dict[str, str], dict[str, list]]:
        """(text per document, chunks per document) of the live index among ``owner``'s searchable documents, from
        the catalog and the document store."""
        return live_chunks(self.ctx.catalog, self.ctx.store, self.doc_filter(owner))
