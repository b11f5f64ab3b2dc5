"""What every part of :class:`services.service.AppService` relies on, declared once for the type checker.

The parts (``uploads``, ``documents``, ``chat``, ``evaluation``, ``admin``, ``llm``) are mixins: each uses what
:meth:`AppService.__init__ <services.service.AppService.__init__>` sets (the context, the admin's sessions, the
locks) and methods another part defines (the write lock's guard, who may read what, the stores). :class:`ServicePart`
is their one base: its annotations name those attributes and, for the checker only, those methods; at run time it
adds nothing (the methods come from the parts, the attributes from ``AppService.__init__``).
"""
from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

from services.base import JobState, Progress

if TYPE_CHECKING:
    from collections.abc import Callable

    from app.context import AppContext
    from ingest.jobs.queue import Runner
    from ingest.pipeline import IngestReport
    from services.auth import AdminAuth
    from services.conversations import ConversationStore
    from services.feedback import FeedbackStore


class ServicePart:
    """The attributes :class:`~services.service.AppService` sets and the methods one part calls on another."""

    ctx: AppContext
    auth: AdminAuth  # the admin's sessions
    upload_root: Path  # the only folder uploads are read from
    write_lock: threading.Lock  # the context's: one index write at a time
    job: JobState  # the job holding the write lock (or the running re-ingestion), for progress displays
    reingest_lock: threading.Lock  # one re-ingestion at a time
    runner: Runner | None  # the ingestion queue's runner, once started
    _runner_lock: threading.Lock
    _feedback: FeedbackStore | None
    _feedback_lock: threading.Lock
    _bench_lock: threading.Lock  # one benchmark at a time
    _bench_last: dict[str, float]  # when each client last started one
    _renderer_lock: threading.Lock

    if TYPE_CHECKING:  # defined by one part (named), called by others
        def _writing(self, kind: str) -> AbstractContextManager[JobState]: ...  # documents

        def _reingesting(self) -> AbstractContextManager[JobState]: ...  # documents

        def _reingest(self, progress: Progress | None, on_step: Callable | None = None,
                      **kw: object) -> IngestReport: ...  # documents

        def _delete(self, doc_ids: list[str]) -> list[str]: ...  # documents

        def ensure_runner(self, on_busy: Callable[[Exception], None] | None = None) -> Runner | None: ...  # uploads

        def close(self, context: bool = False) -> None: ...  # uploads

        @staticmethod
        def reader(owner: object) -> str | None: ...  # documents

        def doc_filter(self, owner: object, scope: list[str] | None = None) -> list[str] | None: ...  # documents

        def live_chunks(self, owner: object = ...) -> tuple[dict[str, str], dict[str, list]]: ...  # documents

        @property
        def conversations(self) -> ConversationStore: ...  # chat

        @property
        def feedback(self) -> FeedbackStore: ...  # evaluation

        def export_feedback(self, path: Path | None = None, owner: object = ...) -> tuple[Path, int]: ...  # evaluation

        def bench_sets(self) -> list[str]: ...  # evaluation
