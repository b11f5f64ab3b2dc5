"""What the web app does, without Gradio: uploads, asking, admin actions behind a login, evaluations, benchmarks.

One :class:`AppService` per server process wraps the one :class:`~app.context.AppContext`, shared by every
session. Writes to the index (uploads, deletions, re-ingestion) are serialised by one lock, so two admins or an
upload and a re-ingestion never interleave; questions never take that lock, and re-ingestion builds beside the
live index, so chat keeps answering meanwhile. Admin actions check a session token on every call
(:class:`AdminAuth`: registered at login, ended by logout, idleness or age), whatever the page shows.


The service is put together from parts, one module each under ``services/``: ``uploads`` (names, the upload
cache, the ingestion queue), ``documents`` (the write lock, ownership, deletion), ``chat`` (searching, asking,
conversations, the viewer), ``evaluation`` (evaluations, benchmarks), ``admin`` (the Admin tab's actions), ``llm``
(the LLM endpoint), and ``auth`` (the admin's login and its throttle). This module is the entry point: the doors
(``ui/``, ``api/``, ``cli/``) reach the stages only through :class:`AppService`, :func:`start_service`, the names
callers import from here and those the parts re-export (``tests/test_layers.py`` holds them to it); ``commands``
holds what only the command line does (ingesting paths and waiting, the queue's worker, re-ingestion, the export).
"""
from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

from app.context import AppContext as AppContext  # the command line opens one per command (cli/main.py)
from core.settings import Settings
from services.admin import AdminPart
from services.auth import AdminAuth, LoginThrottle, stored_admin_password
from services.base import ADMIN, AdminRequired, JobState, Progress, browser_owner, new_browser_id
from services.chat import ChatPart
from services.commands import CommandsPart
from services.documents import DocumentsPart
from services.evaluation import (
    BENCH_INTERVAL_S,
    MY_EVALUATIONS,
    SAMPLES_QUESTIONS,
    SAMPLES_SET,
    EvaluationPart,
)
from services.llm import LlmPart
from services.uploads import (
    UPLOAD_EMPTY_S,
    UPLOAD_MAX_AGE_S,
    UploadRefused,
    UploadsPart,
    check_upload_name,
)

__all__ = ["ADMIN", "AppContext", "BENCH_INTERVAL_S", "MY_EVALUATIONS", "SAMPLES_QUESTIONS", "SAMPLES_SET",
           "UPLOAD_EMPTY_S", "UPLOAD_MAX_AGE_S", "AdminAuth", "AdminRequired", "JobState", "LoginThrottle", "Progress",
           "AppService", "UploadRefused", "browser_owner", "check_upload_name", "new_browser_id", "start_service",
           "stored_admin_password"]

log = logging.getLogger("ui.app")  # the name the start's messages always had (log filters, tests)


class AppService(UploadsPart, DocumentsPart, ChatPart, EvaluationPart, AdminPart, LlmPart, CommandsPart):
    """The web app's one service per process: the parts share ``ctx``, ``auth`` (the admin's sessions), the upload
    folder, the write lock with the job it guards, and the locks made here."""

    def __init__(self, ctx: AppContext, admin_password: str | None = None, upload_root: str | Path | None = None,
                 saved_llm: bool = True):
        """``upload_root``: the only folder uploads are read from (Gradio's upload cache; default ``GRADIO_TEMP_DIR``
        or ``data_dir/tmp/gradio``, where :func:`ui.app.launch` puts it). ``saved_llm``: answer through the LLM
        endpoint set on the Admin tab, which wins over mgrag.toml and the environment (the web app); False: the
        settings' own (a command line's, which says what it uses with its flags and settings)."""
        self.ctx = ctx
        s = ctx.settings
        pw = admin_password if admin_password is not None else (
            s.admin_password.get_secret_value() if s.admin_password else None)
        self.auth = AdminAuth(s.admin_user, pw, idle_s=s.admin_idle_s, max_s=s.admin_session_s)
        root = upload_root or os.environ.get("GRADIO_TEMP_DIR") or s.data_dir / "tmp" / "gradio"
        self.upload_root = Path(root).resolve()
        saved = self._read_llm() if saved_llm else None
        if saved:  # the endpoint the admin set on the Admin tab wins over mgrag.toml and the environment
            self._apply_llm(saved)
        self.write_lock = ctx.write_lock  # the context's: the ingestion queue's commits take it too
        self.job = JobState()
        self.reingest_lock = threading.Lock()  # one re-ingestion at a time (it takes the write lock per commit)
        # the ingestion queue's runner (ingest/jobs/queue.py), started by the first upload or `serve`
        self.runner = None
        self._runner_lock = threading.Lock()
        self._feedback = None
        self._feedback_lock = threading.Lock()
        self._bench_lock = threading.Lock()  # one benchmark at a time: it embeds every passage of its documents
        self._bench_last: dict[str, float] = {}  # when each client last started one (see run_benchmark)
        self._renderer_lock = threading.Lock()

    @property
    def settings(self) -> Settings:
        """The context's settings (what the doors read: limits, defaults, the server's address)."""
        return self.ctx.settings


def start_service(settings: Settings | None = None) -> AppService:
    """The web app's service on a context of its own (``mgrag serve``; :meth:`AppService.close` with ``context=True``
    closes both). The admin password is the ``admin_password`` setting, else the one kept in the data dir
    (:func:`stored_admin_password`), logged only when it is made."""
    ctx = AppContext(settings)
    s = ctx.settings
    password = s.admin_password.get_secret_value() if s.admin_password else None
    if not password:
        password, made = stored_admin_password(s.data_dir)
        where = s.data_dir / ".secrets" / "admin_password"
        if made:
            log.warning("MGRAG_ADMIN_PASSWORD is not set; the Admin tab's password (user %s) is: %s (kept in %s; "
                        "`mgrag admin password` shows it, `--reset` changes it)", s.admin_user, password, where)
        else:
            log.info("the Admin tab's password (user %s) is the one kept in %s (`mgrag admin password` shows it)",
                     s.admin_user, where)
    return AppService(ctx, admin_password=password)
