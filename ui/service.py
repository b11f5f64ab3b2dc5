"""What the web app does, without Gradio: uploads, asking, admin actions behind a login, evaluations, benchmarks.

One :class:`UiService` per server process wraps the one :class:`~app.context.AppContext`, shared by every
session. Writes to the index (uploads, deletions, re-ingestion) are serialised by one lock, so two admins or an
upload and a re-ingestion never interleave; questions never take that lock, and re-ingestion builds beside the
live index, so chat keeps answering meanwhile. Admin actions check a session token on every call
(:class:`AdminAuth`: registered at login, ended by logout, idleness or age), whatever the page shows.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from app.context import AppContext
from app.core.private import write_secret
from app.core.questions import Question, read_questions
from ingest.loaders import SUPPORTED, IngestError

log = logging.getLogger(__name__)

Progress = Callable[[int, int, str], None]
_BAD_NAME = re.compile(r"[\x00-\x1f\x7f]")


class AdminRequired(PermissionError):
    """An admin action called without a valid admin session."""


class UploadRefused(ValueError):
    def __init__(self, name: str, problem: str):
        super().__init__(f"{name}: {problem}")
        self.name, self.problem = name, problem


# -- who is asking ---------------------------------------------------------------------------------------------
_BROWSER_ID = re.compile(r"^[A-Za-z0-9_-]{22,128}$")
ADMIN = object()  # the owner argument of an admin action: sees and may change every document
SAMPLES_SET = "samples (shipped: questions over samples/)"
MY_EVALUATIONS = "my evaluations"
SAMPLES_QUESTIONS = Path(__file__).resolve().parents[1] / "app" / "evaluation" / "sets" / "samples.jsonl"
BENCH_INTERVAL_S = 60.0
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[\\/][^\s'\"\\/:]+)+[\\/]([^\s'\"\\/:]+)")


def _no_paths(message: str) -> str:
    """``message`` with every file path cut to its last part (an error shown to a user names the file, never the
    server's folders).

    >>> _no_paths("no bench set at /srv/mgrag/data/exports/ab/feedback.jsonl: expected questions.jsonl")
    'no bench set at feedback.jsonl: expected questions.jsonl'
    """
    return _PATH.sub(r"\1", message)


def new_browser_id() -> str:
    """A random id a browser keeps in its local storage; documents uploaded from it belong to it."""
    return secrets.token_urlsafe(24)


def browser_owner(browser_id: str | None) -> str:
    """The owner key of a browser id (a hash: the id itself, a bearer secret, is never stored), or ValueError for a
    missing or malformed id."""
    if not isinstance(browser_id, str) or not _BROWSER_ID.match(browser_id):
        raise ValueError("this browser has no valid id yet: reload the page (API clients: pass a random string of "
                         "22 to 128 letters, digits, - or _ as the browser id, the same one on every call)")
    return "browser:" + hashlib.sha256(browser_id.encode()).hexdigest()[:32]


class LoginThrottle:
    """Failed admin logins per client: after ``free`` failures within ``window_s``, each further attempt is refused
    for ``base_s * 2 ** (failures - free)`` seconds (at most ``max_s``), without checking the password, so guessing
    costs time; a success clears the client's count."""

    def __init__(self, free: int = 5, base_s: float = 2.0, max_s: float = 900.0, window_s: float = 900.0,
                 clock: Callable[[], float] = time.monotonic):
        self.free, self.base_s, self.max_s, self.window_s, self.clock = free, base_s, max_s, window_s, clock
        self._fails: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    def wait_s(self, client: str) -> float:
        """Seconds ``client`` must wait before its next attempt (0: go ahead)."""
        now = self.clock()
        with self._lock:
            fails = [t for t in self._fails.get(client, []) if now - t < self.window_s]
            self._fails[client] = fails
            if len(fails) < self.free:
                return 0.0
            until = fails[-1] + min(self.max_s, self.base_s * 2 ** (len(fails) - self.free))
            return max(0.0, until - now)

    def failed(self, client: str) -> None:
        with self._lock:
            self._fails.setdefault(client, []).append(self.clock())
            if len(self._fails) > 10_000:  # a flood of addresses: forget the oldest
                for k in list(self._fails)[:5_000]:
                    del self._fails[k]

    def succeeded(self, client: str) -> None:
        with self._lock:
            self._fails.pop(client, None)


# -- admin login ------------------------------------------------------------------------------------------------
_ADMIN_TOKEN = re.compile(r"^[A-Za-z0-9_-]{32,128}$")


class AdminAuth:
    """Credentials from the settings; a successful login registers a random token, which every admin call must
    present. The page makes the token itself (in the browser, so it never travels from the server to the page) and
    keeps it in its storage; it is sent only in request bodies, never in a URL. A token ends after ``idle_s``
    without use or ``max_s`` after the login, whichever comes first, and at logout. Only a hash of each token is
    kept. Comparisons are constant-time."""

    def __init__(self, user: str, password: str | None, idle_s: float = 1800.0, max_s: float = 8 * 3600.0,
                 throttle: LoginThrottle | None = None, clock: Callable[[], float] | None = None):
        self.user = user
        self.password = password
        self.idle_s, self.max_s = idle_s, max_s
        self.throttle = throttle or LoginThrottle()
        self.clock = clock or time.monotonic
        self._tokens: dict[str, tuple[float, float]] = {}  # token hash: (logged in at, last used at)
        self._lock = threading.Lock()

    @staticmethod
    def _key(token: str | None) -> str:
        return hashlib.sha256((token or "").encode()).hexdigest()

    def _password_ok(self, password: str | None, client: str, what: str) -> None:
        """The admin password, throttled per ``client`` like a login; AdminRequired saying ``what`` was refused."""
        if not self.password:
            raise AdminRequired("admin is disabled: set MGRAG_ADMIN_PASSWORD and restart `mgrag serve`")
        wait = self.throttle.wait_s(client)
        if wait > 0:
            raise AdminRequired(f"too many failed logins; try again in {wait:.0f} s")
        if not hmac.compare_digest((password or "").encode(), self.password.encode()):
            self.throttle.failed(client)
            log.warning("wrong admin password for %s from %s", what, client or "(unknown client)")
            raise AdminRequired(f"wrong admin password: {what} refused, nothing changed")
        self.throttle.succeeded(client)

    def login(self, user: str, password: str, client: str = "", token: str | None = None) -> str:
        """Register ``token`` (32 to 128 letters, digits, - or _; None: a new random one) for the right
        credentials and return it. ``client`` (the caller's address) is throttled after repeated failures: while it
        waits, every attempt is refused, the right password included."""
        if not self.password:
            raise AdminRequired("admin is disabled: set MGRAG_ADMIN_PASSWORD and restart `mgrag serve`")
        if token is None:
            token = secrets.token_urlsafe(32)
        elif not isinstance(token, str) or not _ADMIN_TOKEN.match(token):
            raise AdminRequired("the login needs a new random token of 32 to 128 letters, digits, - or _ (the page "
                                "makes one; API clients pass their own, the same one on every admin call)")
        wait = self.throttle.wait_s(client)
        if wait > 0:
            raise AdminRequired(f"too many failed logins; try again in {wait:.0f} s")
        ok_user = hmac.compare_digest((user or "").encode(), self.user.encode())
        ok_pw = hmac.compare_digest((password or "").encode(), self.password.encode())
        if not (ok_user and ok_pw):
            self.throttle.failed(client)
            log.warning("failed admin login from %s", client or "(unknown client)")
            raise AdminRequired("wrong user name or password")
        self.throttle.succeeded(client)
        now = self.clock()
        with self._lock:
            for k, (since, used) in list(self._tokens.items()):  # forget the ended ones
                if self._ended(since, used, now):
                    del self._tokens[k]
            self._tokens[self._key(token)] = (now, now)
        return token

    def _ended(self, since: float, used: float, now: float) -> bool:
        return now - used > self.idle_s or now - since > self.max_s

    def check(self, token: str | None) -> None:
        """Refuse a token that was never issued, is logged out, unused for ``idle_s`` or older than ``max_s``; a
        valid one counts as used now."""
        now = self.clock()
        key = self._key(token)
        with self._lock:
            got = self._tokens.get(key) if token else None
            if got is not None and self._ended(*got, now):
                del self._tokens[key]
                got = None
            if got is not None:
                self._tokens[key] = (got[0], now)
        if got is None:
            raise AdminRequired("admin login required: log in on the Admin tab")

    def confirm(self, password: str | None, client: str = "", what: str = "the change") -> None:
        """The admin password typed again before a sensitive change, throttled like a login."""
        if not (password or "").strip():
            raise AdminRequired(f"type the admin password again: {what} needs it (nothing changed)")
        self._password_ok(password, client, what)

    def logout(self, token: str | None) -> None:
        with self._lock:
            self._tokens.pop(self._key(token), None)


def stored_admin_password(data_dir: str | Path, *, reset: bool = False) -> tuple[str, bool]:
    """The Admin tab's password when the ``admin_password`` setting is unset: kept in ``data_dir/.secrets/
    admin_password`` (mode 0600) until reset. ``(password, made)``: ``made`` when it was made now (none was kept,
    or ``reset``), so the caller shows it this once."""
    p = Path(data_dir) / ".secrets" / "admin_password"
    if not reset and p.exists():
        pw = p.read_text(encoding="utf-8").strip()
        if pw:
            if p.stat().st_mode & 0o077:  # copied with looser rights: only the owner reads it
                os.chmod(p, 0o600)
            return pw, False
    pw = secrets.token_urlsafe(15)
    write_secret(p, pw + "\n")
    return pw, True


# -- uploads ----------------------------------------------------------------------------------------------------
UPLOAD_MAX_AGE_S = 3600.0  # an upload cache file not submitted within this is removed
UPLOAD_EMPTY_S = 60.0  # an empty file in the upload cache this old is no upload in progress


def check_upload_name(name: str) -> str:
    """The plain file name to store ``name`` under (bidirectional and invisible characters removed), or
    :class:`UploadRefused` for a path-like or odd name."""
    from ingest.loaders import clean_name

    raw = name or ""
    if not _BAD_NAME.search(raw):  # a name with C0 controls is refused below, as before
        raw = clean_name(raw)
    if not raw.strip():
        raise UploadRefused("(unnamed)", "the file has no name")
    if "/" in raw or "\\" in raw or raw in (".", "..") or raw.startswith(".") or _BAD_NAME.search(raw):
        raise UploadRefused(raw, "the file name looks like a path or a hidden file; upload it under a plain name "
                                 "such as notes.md")
    if len(raw) > 255:
        raise UploadRefused(raw[:40] + "…", "the file name is over 255 characters; rename it")
    suffix = Path(raw).suffix.lower()
    if suffix not in SUPPORTED:
        raise UploadRefused(raw, f"unsupported file type {suffix or '(no extension)'!r}; supported: "
                                 f"{', '.join(sorted(SUPPORTED))}")
    return raw


@dataclass
class JobState:
    """The one index-writing job at a time (upload, delete, re-ingestion), for progress displays."""

    kind: str = ""
    running: bool = False
    done: int = 0
    total: int = 0
    name: str = ""
    message: str = ""
    started: float = 0.0


class UiService:
    def __init__(self, ctx: AppContext, admin_password: str | None = None, upload_root: str | Path | None = None):
        """``upload_root``: the only folder uploads are read from (Gradio's upload cache; default ``GRADIO_TEMP_DIR``
        or ``data_dir/tmp/gradio``, where :func:`ui.app.launch` puts it)."""
        self.ctx = ctx
        s = ctx.settings
        pw = admin_password if admin_password is not None else (
            s.admin_password.get_secret_value() if s.admin_password else None)
        self.auth = AdminAuth(s.admin_user, pw, idle_s=s.admin_idle_s, max_s=s.admin_session_s)
        root = upload_root or os.environ.get("GRADIO_TEMP_DIR") or s.data_dir / "tmp" / "gradio"
        self.upload_root = Path(root).resolve()
        saved = self._read_llm()
        if saved:  # the endpoint the admin set on the Admin tab wins over mgrag.toml and the environment
            self._apply_llm(saved)
        self.write_lock = ctx.write_lock  # the context's: the ingestion queue's commits take it too
        self.job = JobState()
        self.runner = None  # the ingestion queue's runner (ingest/queue.py), started by the first upload or `serve`
        self._runner_lock = threading.Lock()
        self._feedback = None
        self._feedback_lock = threading.Lock()
        self._bench_lock = threading.Lock()  # one benchmark at a time: it embeds every passage of its documents
        self._bench_last: dict[str, float] = {}  # when each client last started one (see run_benchmark)
        self._renderer_lock = threading.Lock()

    # -- shared helpers ----------------------------------------------------------------------------------------
    @property
    def feedback(self):
        from ui.feedback import FeedbackStore

        with self._feedback_lock:
            if self._feedback is None:
                self._feedback = FeedbackStore(self.ctx.settings.data_dir / "feedback.sqlite")
            return self._feedback

    def _ingestor(self, progress: Progress | None, on_step=None):
        """An Ingestor reporting per document to ``progress(done, total, name)`` and within each file to
        ``on_step(step)`` (:class:`ingest.pipeline.Step`), and to :attr:`job` for the admin's displays."""
        from ingest.pipeline import Ingestor

        def on(done: int, total: int, name: str) -> None:
            self.job.done, self.job.total, self.job.name = done, total, name
            if progress is not None:
                progress(done, total, name)

        def step(st) -> None:
            self.job.message = st.message()
            if on_step is not None:
                on_step(st)

        return Ingestor(self.ctx, on_progress=on, on_step=step)

    def _writing(self, kind: str):
        service = self

        class _Guard:
            def __enter__(self_inner):
                if not service.write_lock.acquire(timeout=0.1):
                    log.info("%s waits for the running %s", kind, service.job.kind)
                    service.write_lock.acquire()
                service.job = JobState(kind, True, started=time.time())
                return service.job

            def __exit__(self_inner, *exc):
                service.job.running = False
                service.write_lock.release()

        return _Guard()

    # -- ownership -----------------------------------------------------------------------------------------------
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

    def own_documents(self, owner: str) -> list[str]:
        """The documents ``owner`` uploaded."""
        return [r["doc_id"] for r in self.ctx.catalog.documents(None) if r["owner"] == owner]

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
        from ingest.pipeline import Ingestor

        with self._writing("delete"):
            deleted = [Ingestor(self.ctx).delete(d) for d in doc_ids]
        for d in deleted:
            self.feedback.forget_document(d)
            self.conversations.forget_document(d)
        return deleted

    @property
    def users(self):
        """The web app's user accounts (:class:`ui.users.Users`); with any, `mgrag serve` requires a login."""
        from ui.users import Users

        if getattr(self, "_users", None) is None:
            self._users = Users(self.ctx.settings.data_dir / ".secrets" / "users.sqlite")
        return self._users

    @property
    def api_keys(self):
        """The HTTP API's keys (:class:`ui.keys.Keys`)."""
        from ui.keys import Keys

        if getattr(self, "_api_keys", None) is None:
            self._api_keys = Keys(self.ctx.settings.data_dir / ".secrets" / "keys.sqlite")
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

    @property
    def conversations(self):
        """Conversations kept server side (:class:`ui.conversations.ConversationStore`)."""
        from ui.conversations import ConversationStore

        if getattr(self, "_conversations", None) is None:
            self._conversations = ConversationStore(self.ctx.settings.data_dir / "conversations.sqlite")
        return self._conversations

    def user_names(self, token: str) -> list[str]:
        self.auth.check(token)
        return self.users.names()

    def add_user(self, token: str, name: str, password: str) -> list[str]:
        self.auth.check(token)
        self.users.add((name or "").strip(), password or "")
        return self.users.names()

    def remove_user(self, token: str, name: str) -> list[str]:
        self.auth.check(token)
        self.users.remove(name)
        self.api_keys.revoke_user(name)  # a removed user's keys stop working with the user
        return self.users.names()

    @property
    def view_tokens(self):
        from ui.viewer import ViewTokens

        if getattr(self, "_view_tokens", None) is None:
            self._view_tokens = ViewTokens(self.state_secret())
        return self._view_tokens

    @property
    def page_renderer(self):
        """Renders the viewer's PDF page images (:class:`ui.viewer.PageRenderer`): one per service, so its render
        slots and its cache are shared by every request."""
        with self._renderer_lock:
            if getattr(self, "_page_renderer", None) is None:
                from ui.viewer import PageRenderer

                self._page_renderer = PageRenderer()
            return self._page_renderer

    def view_link(self, source: dict, support: list[tuple[int, int]] | None = None) -> str | None:
        """The viewer path (relative to the app's root) of one source of an answer (a Citation as a dict): its
        document at the page of the matched passage, the passage, the child and the supporting sentences marked."""
        from ui.viewer import View

        if not source.get("doc_hash") or source.get("matched_level", 0) < 0:
            return None
        pages = source.get("matched_pages") or source.get("pages")
        view = View(source["doc_id"], source["doc_hash"], source["start"], source["end"],
                    (source["matched_start"], source["matched_end"]), tuple(tuple(x) for x in support or ()),
                    pages[0] if pages else None)
        return "mgrag/view/" + self.view_tokens.mint(view)

    def open_view(self, token: str):
        """(view, version row) of a viewer token; :class:`ui.viewer.InvalidViewToken` (bad or expired) or
        ValueError (the document is gone); the caller reads the text or the original (``ctx.store``) as it needs."""
        view = self.view_tokens.check(token)
        row = self.ctx.catalog.version_of(view.doc_id, view.hash)
        if row is None or not self.ctx.store.has(view.hash):
            raise ValueError("this document is no longer in the library")
        return view, row

    def state_secret(self) -> str:
        """A random secret kept in the data dir (mode 0600) that encrypts what the browser stores (its id), stable
        across restarts so a browser keeps its uploads."""
        p = self.ctx.settings.data_dir / ".secrets" / "browser_state.key"
        if not p.exists():
            write_secret(p, secrets.token_urlsafe(32))
        return p.read_text().strip()

    # -- chat ----------------------------------------------------------------------------------------------------
    def _read_upload(self, path: Path, name: str) -> bytes:
        """The bytes of an uploaded file, which must lie inside the upload folder once every symlink is resolved."""
        from ingest.loaders import read_regular_file

        try:
            real = Path(path).resolve(strict=True)
        except (OSError, RuntimeError) as e:
            raise UploadRefused(name, "cannot be read (the upload is gone)") from e
        if not real.is_relative_to(self.upload_root):
            log.warning("refused an upload outside the upload folder %s: %s", self.upload_root, path)
            raise UploadRefused(name, "is not a file uploaded to this server; refused")
        try:
            return read_regular_file(real, int(self.ctx.settings.max_file_mb * 2**20))
        except IngestError as e:
            raise UploadRefused(name, e.problem) from e

    def clean_uploads(self, max_age_s: float = UPLOAD_MAX_AGE_S, empty_after_s: float = UPLOAD_EMPTY_S) -> int:
        """Remove from the upload folder what no upload needs any more (the app calls it on start and on each
        upload): files not written for ``max_age_s`` (uploaded but never submitted, or cut off by a stop), empty
        files not written for ``empty_after_s`` (Gradio's File component leaves one per upload; an upload in
        progress writes to its file), and then-empty folders. Only when the upload folder is a data dir's own cache (the
        default): a ``GRADIO_TEMP_DIR`` elsewhere may hold other files. Returns how many files went."""
        root = self.upload_root
        # a data dir's own upload cache (data_dir/tmp/gradio: this one's, or another MGRAG data dir's when two apps
        # share a process and Gradio's one upload folder); never a GRADIO_TEMP_DIR the user pointed elsewhere
        ours = root.is_relative_to(self.ctx.settings.data_dir.resolve()) or (
            root.name == "gradio" and root.parent.name == "tmp" and (root.parent.parent / "catalog.sqlite").is_file())
        if not root.is_dir() or not ours:
            return 0
        now, removed = time.time(), 0
        for folder, _, files in os.walk(root, topdown=False):
            emptied = False
            for name in files:
                p = Path(folder) / name
                try:
                    st = p.lstat()
                    age = now - st.st_mtime
                    if age >= max_age_s or (st.st_size == 0 and age >= empty_after_s):
                        p.unlink()
                        removed += 1
                        emptied = True
                except OSError:
                    continue
            d = Path(folder)
            try:  # an empty folder goes when this emptied it or it is old (a fresh one may be about to be filled)
                if d != root and (emptied or now - d.stat().st_mtime >= empty_after_s):
                    d.rmdir()  # only an empty one (else OSError)
            except OSError:
                continue
        return removed

    # -- the ingestion queue ---------------------------------------------------------------------------------------
    def ensure_runner(self):
        """The queue's runner in this process (started once; it resumes what a stopped server left queued)."""
        from ingest.queue import Runner

        with self._runner_lock:
            if self.runner is None:  # with MGRAG_QUEUE_URL, its jobs are computed by `mgrag worker` processes
                self.runner = Runner(self.ctx).start()
            return self.runner

    def close(self) -> None:
        with self._runner_lock:
            if self.runner is not None:
                self.runner.stop()
                self.runner = None

    def enqueue_files(self, paths: list[str | Path], names: list[str] | None = None, owner: str | None = None
                      ) -> tuple[list[dict], list[int]]:
        """Queue uploaded files (in the upload folder: Gradio's upload cache) for ``owner`` (a browser or user; None:
        the shared library) and return at once: one row per file (refused and duplicate files say why) and the ids
        of the jobs made. The queue's runner extracts them in a child process with limits, outside the write lock,
        so one slow or hostile file holds up no one else's upload."""
        from ingest.queue import enqueue

        rows: dict[int, dict] = {}
        named: list[tuple[int, str, bytes]] = []
        for i, p in enumerate(paths):
            p = Path(p)
            name = names[i] if names else p.name
            try:
                name = check_upload_name(name)
                named.append((i, name, self._read_upload(p, name)))
            except UploadRefused as e:
                rows[i] = {"name": e.name, "status": "refused", "message": e.problem, "chunks": "", "job_id": None}
        runner = self.ensure_runner() if named else None
        queued = enqueue(self.ctx, [(n, d) for _, n, d in named], owner, source="upload")
        for (i, _, _), q in zip(named, queued):
            rows[i] = {"name": q.name, "status": q.status, "message": q.message, "chunks": "",
                       "job_id": q.job.job_id if q.job else None}
        if runner is not None:
            runner.wake()
        out = [rows[i] for i in sorted(rows)]
        return out, [r["job_id"] for r in out if r["job_id"] is not None]

    def upload_rows(self, rows: list[dict]) -> list[dict]:
        """``rows`` of :meth:`enqueue_files` with their jobs' states now: the state, what is being done (with the
        progress and the time left), the chunks per level once the document is searchable."""
        live = self.ctx.catalog.live_generation()
        out = []
        for r in rows:
            job = self.ctx.jobs.get(r["job_id"]) if r.get("job_id") else None
            if job is None:
                out.append(dict(r))
                continue
            chunks = ""
            if job.searchable and live is not None:
                d = self.ctx.catalog.indexed_doc(live.gen, job.doc_id)
                if d is not None:
                    counts = self.ctx.catalog.chunk_counts_of(live.gen, job.doc_id)
                    chunks = "/".join(str(counts.get(lv, 0)) for lv in range(live.n_levels))
            message = job.describe() if job.state != "ready" else (job.message or "")
            if job.state == "queued":
                ahead = self.ctx.jobs.position(job)
                message = f"queued ({ahead} ahead)" if ahead else "queued (next)"
            if job.doc_id != job.name and job.state not in ("failed", "cancelled"):
                message = "; ".join(x for x in (message, f"stored as {job.doc_id!r}") if x and x != job.state)
            out.append({**r, "status": job.state, "message": message, "chunks": chunks})
        return out

    def ingest_files(self, paths: list[str | Path], names: list[str] | None = None, owner: str | None = None,
                     until: str = "searchable", timeout_s: float = 3600.0) -> list[dict]:
        """:meth:`enqueue_files`, then wait until every file is searchable (``until="ready"``: refined too) or ended;
        the rows as they are then (the API's upload and the tests use it; the Chat tab shows the rows as they move)."""
        from ingest.queue import wait

        rows, ids = self.enqueue_files(paths, names, owner)
        if ids:
            wait(self.ctx.jobs, ids, until, timeout_s=timeout_s)
        return self.upload_rows(rows)

    def cancel_jobs(self, owner, job_ids: list[int]) -> list[str]:
        """Cancel queued or running ingestion jobs: ``owner``'s own (the admin: any). What happened, per job."""
        from ingest.jobs import JobError

        out = []
        for i in job_ids:
            job = self.ctx.jobs.get(int(i))
            if job is None or (owner is not ADMIN and job.owner != owner):
                out.append(f"job {i}: not one of your uploads")
                continue
            try:
                out.append(f"{job.name}: {self.ctx.jobs.request_cancel(job.job_id)}")
            except JobError as e:
                out.append(f"{job.name}: {e}")
        return out

    def queue_rows(self, token: str) -> list[dict]:
        """The Admin tab's view of the queue: every active job and the last finished ones."""
        from ingest.jobs import ACTIVE

        self.auth.check(token)
        active = self.ctx.jobs.jobs(ACTIVE)
        done = [j for j in self.ctx.jobs.jobs(limit=50) if j.state not in ACTIVE][-20:]
        return [{"job": j.job_id, "document": j.doc_id, "owner": _owner_label(j.owner), "state": j.state,
                 "detail": j.describe(), "attempts": j.attempts,
                 "queued": time.strftime("%H:%M:%S", time.localtime(j.created)) if j.created else ""}
                for j in active + done]

    def ask(self, question: str, *, k: int | None = None, budget_words: int | None = None,
            retriever: str | None = None, backend: str | None = None, owner=ADMIN,
            scope: list[str] | None = None, history: list[dict] | None = None) -> Iterator[tuple[str, object]]:
        """:func:`app.answer.ask` over the documents ``owner`` may search (within ``scope`` if given; ``history``:
        the conversation's earlier turns), retried once if retrieval failed because a re-ingestion switched the
        index under it (the old generation's collections dropped between reading the live generation and
        searching)."""
        from app.answer import ask
        from retrieval.search import EmptyIndexError

        docs = self.doc_filter(owner, scope)
        if docs is not None and not docs:
            raise ValueError("none of the documents this conversation is limited to can be searched any more; "
                             "choose others under 'Search in'")
        kw = dict(k=k, budget_words=budget_words, retriever=retriever, backend=backend, doc_ids=docs, history=history)
        for attempt in (1, 2):
            gen = self.ctx.catalog.live_generation()
            events = ask(self.ctx, question, **kw)
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

    # -- evaluation ----------------------------------------------------------------------------------------------
    def level_hits(self, question: str, k: int = 5, retriever: str = "dense", owner=ADMIN) -> list[dict]:
        """The chunks retrieved at every level for ``question`` among ``owner``'s searchable documents, best first
        per level, with their scores."""
        from retrieval.bm25 import tokenize
        from retrieval.search import check_question

        q = check_question(question, self.ctx.settings.max_question_chars)
        live = self.ctx.catalog.live_generation()
        if live is None:
            return []
        rows = []
        docs = self.doc_filter(owner)
        if retriever in ("dense", "hybrid"):
            qv = self.ctx.embedder.embed_queries([q])[0]
            for level in range(live.n_levels):
                for rank, p in enumerate(self.ctx.index.search(level, qv, k, doc_ids=docs), 1):
                    pl = p.payload
                    rows.append({"retriever": "dense", "level": level, "rank": rank, "score": round(float(p.score), 4),
                                 "document": pl["doc_id"], "chars": f"{pl['start']}-{pl['end']}", "text": pl["text"]})
        if retriever in ("bm25", "hybrid"):
            qt = tokenize(q)
            for level in range(live.n_levels):
                lv = self.ctx.bm25.level(live.gen, level)
                top = lv.top_indices(qt, k, allowed=docs)
                found = {str(p.id): p.payload for p in self.ctx.index.retrieve(level, [lv.ids[i] for i, _ in top])}
                for rank, (i, score) in enumerate(top, 1):
                    pl = found.get(lv.ids[i])
                    if pl is None:
                        continue
                    rows.append({"retriever": "bm25", "level": level, "rank": rank, "score": round(score, 4),
                                 "document": pl["doc_id"], "chars": f"{pl['start']}-{pl['end']}", "text": pl["text"]})
        return rows

    def evaluate(self, answer: dict, *, reference: str = "", rating: str | None = None, comment: str = "",
                 relevant: list[int] | None = None, owner: str | None = None) -> tuple[int, float | None, int]:
        """Store an evaluation of ``answer`` (an :class:`~app.answer.Answer` as a dict). ``relevant``: the numbers
        of the sources that hold the answer (default: the cited ones when rated good). Their matched passages
        become the evidence, restricted to the first relevant source's document. Returns (id, F1, n evidence)."""
        from app.evaluation.metrics import qa_f1_score
        from ui.feedback import Evaluation

        if not answer:
            raise ValueError("no answer to evaluate yet: ask a question on the Chat tab first")
        reference = (reference or "").strip()
        f1 = qa_f1_score(answer.get("text", ""), reference) if reference else None
        sources = {s["number"]: s for s in answer.get("sources", [])}
        if relevant is None:  # an API caller that names none; the page always sends what the user ticked
            relevant = [c["number"] for c in answer.get("citations", [])] if rating == "good" else []
        bad = [n for n in relevant if n not in sources]
        if bad:
            raise ValueError(f"no source numbered {bad[0]} in this answer (it has {len(sources)})")
        doc_id, evidence = "", []
        for n in relevant:
            s = sources[n]
            doc_id = doc_id or s["doc_id"]
            if s["doc_id"] != doc_id or s["matched_level"] < 0:
                continue
            text = s["matched_text"]
            if s.get("shortened") and self.ctx.store.has(s.get("doc_hash", "")):  # cut for the page: the whole one
                text = self.ctx.store.text(s["doc_hash"])[s["matched_start"]:s["matched_end"]]
            e = {"text": text, "start": s["matched_start"], "end": s["matched_end"]}
            if e not in evidence:
                evidence.append(e)
        ev = Evaluation(answer.get("question", ""), answer.get("text", ""), rating or None, comment or "", reference,
                        f1, doc_id, evidence, answer.get("backend", ""), answer.get("retriever", ""),
                        list(answer.get("weights") or []), owner=owner)
        return self.feedback.add(ev), f1, len(evidence)

    def export_feedback(self, path: Path | None = None, owner=ADMIN) -> tuple[Path, int]:
        """Evaluations with evidence as bench-format JSONL: the caller's own (``owner``), or everyone's for the
        admin (router training). Each owner's export has its own file."""
        if owner is ADMIN:
            path = Path(path or self.ctx.settings.data_dir / "exports" / "feedback.jsonl")
            return path, self.feedback.export_jsonl(path)
        key = hashlib.sha256(str(owner).encode()).hexdigest()[:16]
        path = Path(path or self.ctx.settings.data_dir / "exports" / key / "feedback.jsonl")
        return path, self.feedback.export_jsonl(path, owner=owner)

    def bench_sets(self) -> list[str]:
        """The sets the Evaluate tab offers: the one shipped for the sample documents, the user's own saved
        evaluations (questions over their documents, with the evidence they ticked), and the development sets of
        ``../shared/bench`` where that folder exists (beside a checkout of this repository)."""
        from app.evaluation.bench import BENCH_DIR

        shared = sorted(p.name for p in BENCH_DIR.iterdir() if (p / "questions.jsonl").is_file()) \
            if BENCH_DIR.is_dir() else []
        return [SAMPLES_SET, MY_EVALUATIONS, *shared]

    def live_chunks(self, owner=ADMIN) -> tuple[dict[str, str], dict[str, list]]:
        """(text per document, chunks per document) of the live index among ``owner``'s searchable documents, from
        the catalog and the document store."""
        from ingest.catalog import live_chunks

        return live_chunks(self.ctx.catalog, self.ctx.store, self.doc_filter(owner))

    def run_benchmark(self, set_ref: str | Path, *, k: int = 20, budget_words: int | None = None,
                      max_questions: int = 200, owner=ADMIN, client: str = "") -> dict:
        """Retrieval metrics of a bench set over the live index (its chunks, embedded in memory). Questions whose
        document is not in the index are skipped and counted. ``set_ref``: :data:`SAMPLES_SET`,
        :data:`MY_EVALUATIONS` (``owner``'s saved evaluations), a set name under ``../shared/bench``, a set's
        folder, or an uploaded ``questions.jsonl`` whose ``doc_id``s name documents in the index.

        A run embeds every passage of the documents its questions name, so one runs at a time on the server, and
        a client (``client``: its address; else its owner id) other than the admin starts one per
        :data:`BENCH_INTERVAL_S`; errors name files, never the server's folders."""
        key = client or ("" if owner is ADMIN else str(owner))
        if key and time.monotonic() - self._bench_last.get(key, -1e9) < BENCH_INTERVAL_S:
            wait = BENCH_INTERVAL_S - (time.monotonic() - self._bench_last[key])
            raise ValueError(f"a benchmark embeds every passage of its documents: one run per {BENCH_INTERVAL_S:.0f} s "
                             f"per client; try again in {wait:.0f} s")
        if not self._bench_lock.acquire(blocking=False):
            raise ValueError("a benchmark is already running on this server; try again when it has finished")
        try:
            if key:
                self._bench_last[key] = time.monotonic()
            return self._run_benchmark(set_ref, k=k, budget_words=budget_words, max_questions=max_questions,
                                       owner=owner)
        except (ValueError, FileNotFoundError, OSError) as e:
            raise ValueError(_no_paths(str(e))) from e
        finally:
            self._bench_lock.release()

    def _run_benchmark(self, set_ref, *, k, budget_words, max_questions, owner) -> dict:
        from app.evaluation.bench import BenchSet, evaluate_retrieval, load_set

        texts, chunks = self.live_chunks(owner)
        if not chunks:
            raise ValueError("the index is empty; ingest the bench set's documents first")
        by_stem = {Path(d).stem: d for d in texts} | {d: d for d in texts}
        if set_ref == SAMPLES_SET:
            p = SAMPLES_QUESTIONS
        elif set_ref == MY_EVALUATIONS:
            if owner is None:
                raise ValueError("your evaluations are kept per browser: this browser has none")
            p, n = self.export_feedback(owner=owner)
            if not n:
                raise ValueError("you have no saved evaluations with evidence yet: ask on the Chat tab, then save an "
                                 "evaluation here with the sources that hold the answer ticked")
        else:
            p = Path(str(set_ref))
        if p.is_file():
            questions = read_questions(p, require_doc_id=True)
            docs_src = {}
        else:
            bench = load_set(str(set_ref))
            questions, docs_src = bench.questions, bench.docs
        kept, skipped, mismatched = [], set(), set()
        for q in questions:
            d = by_stem.get(q.doc_id)
            if d is None:
                skipped.add(q.doc_id)
                continue
            if q.doc_id in docs_src and docs_src[q.doc_id] != texts[d]:
                mismatched.add(q.doc_id)
                continue
            bad = [e for e in q.evidence if e.located and texts[d][e.start:e.end] != e.text]
            if bad:
                mismatched.add(q.doc_id)
                continue
            kept.append(Question(q.id, q.question, d, q.answers, q.evidence, q.dataset))
        if not kept:
            missing = ", ".join(sorted(skipped | mismatched)[:5])
            if set_ref == SAMPLES_SET:
                raise ValueError(f"the sample documents are not in the index ({missing}): upload field_notes.md and "
                                 "mgrag_overview.md from the samples folder of MGRAG (`make demo` ingests them)")
            raise ValueError(f"none of the set's documents are in the index ({missing}): upload them first (the "
                             "documents a question names by its doc_id)")
        kept = kept[:max_questions]
        used = {q.doc_id for q in kept}
        bench = BenchSet(Path(str(set_ref)).stem, {d: texts[d] for d in used}, kept)
        res = evaluate_retrieval(bench, {d: chunks[d] for d in used}, self.ctx.embedder, top_k=k,
                                 budget_words=budget_words or self.ctx.settings.context_words)
        res["skipped_docs"] = sorted(skipped)
        res["mismatched_docs"] = sorted(mismatched)
        return res

    # -- the LLM endpoint (Admin tab) --------------------------------------------------------------------------------
    @property
    def _llm_path(self) -> Path:
        return self.ctx.settings.data_dir / ".secrets" / "llm.json"

    def _read_llm(self) -> dict | None:
        p = self._llm_path
        return json.loads(p.read_text(encoding="utf-8")) if p.exists() else None

    def _apply_llm(self, cfg: dict) -> None:
        self.ctx.settings = self.ctx.settings.model_copy(update={
            "openai_base_url": cfg.get("base_url") or None, "openai_model": cfg.get("model") or "default",
            "openai_api_key": cfg.get("api_key") or None})

    def backends(self) -> dict[str, str | None]:
        """Every answer backend: None when it can run here, else why not (no model is loaded to tell)."""
        from app.synth.status import backend_status

        return backend_status(self.ctx.settings)

    def llm_endpoint(self, token: str) -> dict:
        """The OpenAI-compatible endpoint in use: base URL, model, and whether a key is set (never the key)."""
        self.auth.check(token)
        s = self.ctx.settings
        return {"base_url": s.openai_base_url or "", "model": s.openai_model if s.openai_base_url else "",
                "key_set": bool(s.openai_api_key)}

    def _key_for(self, base_url: str, api_key: str | None) -> str | None:
        """The key typed in, else the stored one when it is for the same endpoint."""
        if api_key:
            return api_key
        s = self.ctx.settings
        same = (base_url or "").rstrip("/") == (s.openai_base_url or "").rstrip("/")
        return s.openai_api_key if same else None

    def llm_models(self, token: str, base_url: str, api_key: str | None = None) -> list[str]:
        """The models the endpoint serves (``GET /v1/models``), or ValueError naming what failed."""
        from app.synth import SynthesisError
        from app.synth.openai_compat import list_models

        self.auth.check(token)
        try:
            return list_models(base_url, self._key_for(base_url, api_key))
        except SynthesisError as e:
            raise ValueError(str(e)) from e

    def llm_test(self, token: str, base_url: str, model: str, api_key: str | None = None) -> str:
        """List the models and ask ``model`` for a few tokens; what worked, or ValueError naming the failed step."""
        from app.synth import SynthesisError
        from app.synth.openai_compat import check_endpoint

        self.auth.check(token)
        try:
            return check_endpoint(base_url, model, self._key_for(base_url, api_key),
                                  timeout=self.ctx.settings.llm_read_timeout_s)
        except SynthesisError as e:
            raise ValueError(str(e)) from e

    def set_llm(self, token: str, base_url: str, model: str, api_key: str | None = None,
                clear_key: bool = False, *, password: str | None = None, client: str = "") -> dict:
        """Save the endpoint for this server (``data_dir/.secrets/llm.json``, mode 0600) and use it from the next
        question on; an empty ``api_key`` keeps the stored one (for the same endpoint), ``clear_key`` drops it. An
        empty base URL removes the endpoint. The stored key goes to the endpoint saved, so besides the session
        token the admin ``password`` is asked again (failures throttled per ``client`` like logins)."""
        self.auth.check(token)
        self.auth.confirm(password, client, "saving the LLM endpoint")
        base_url = (base_url or "").strip().rstrip("/")
        if base_url and not base_url.startswith(("http://", "https://")):
            raise ValueError(f"{base_url!r} is not an http:// or https:// address")
        key = None if clear_key else self._key_for(base_url, (api_key or "").strip() or None)
        cfg = {"base_url": base_url, "model": (model or "").strip(), "api_key": key}
        write_secret(self._llm_path, json.dumps(cfg))
        self._apply_llm(cfg)
        log.info("LLM endpoint set to %s (model %s)", base_url or "(none)", cfg["model"] or "-")
        return self.llm_endpoint(token)

    # -- admin ---------------------------------------------------------------------------------------------------
    def login(self, user: str, password: str, client: str = "", token: str | None = None) -> str:
        return self.auth.login(user, password, client, token)

    def logout(self, token: str | None) -> None:
        """The admin session ends: its token is refused from now on."""
        self.auth.logout(token)

    def documents(self, token: str) -> tuple[dict | None, list[dict]]:
        from ingest.queue import document_states

        self.auth.check(token)
        live = self.ctx.catalog.live_generation()
        rows = document_states(self.ctx)
        params = {"chunker": live.chunker, "theta": live.theta, **live.params} if live else {}
        out = [{"document": r["doc_id"], "state": r["detail"], "size (KB)": round((r["size"] or 0) / 1024, 1),
                "version": r["version"] or "",
                "parents": r["n_l0"] or 0, "θ/2": r["n_l1"] or 0, "θ/4": r["n_l2"] or 0,
                "ingest s": round(r["seconds"] or 0.0, 2),
                "indexed": time.strftime("%Y-%m-%d %H:%M", time.localtime(r["indexed_at"])) if r["indexed_at"] else "",
                "parameters": json.dumps(_own_params(r["chunking"]) or params, ensure_ascii=False, sort_keys=True),
                "owner": _owner_label(r["owner"])}
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
        with self._writing("reingest"):
            ing = self._ingestor(progress, on_step)
            if doc_ids:
                return ing.reingest(chunker or None, theta, only=doc_ids)
            return ing.reingest(chunker, theta)

    def chunk_lengths(self, token: str) -> dict[int, list[int]]:
        """Chunk lengths in words per level of the live index (for the histograms)."""
        from ingest.sentences import count_words

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
        from app.inspect import inspect_text, render_html, render_png

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
        from app.evaluation.bench import BENCH_DIR
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
            self.ctx.__dict__.pop("router", None)  # the next question loads the new router
        return report


def _own_params(chunking: dict | None) -> dict | None:
    """A document's own chunking parameters (see ``Ingestor.reingest(only=...)``) as the documents table shows them."""
    if not chunking:
        return None
    return {**(chunking.get("params") or {}), "chunker": chunking["chunker"], "theta": chunking["theta"]}


def _owner_label(owner: str | None) -> str:
    """``library`` or the owner's kind and the end of its id (``browser 3f9a1c``), for the admin's tables."""
    return "library" if owner is None else owner.split(":")[0] + " " + owner[-6:]
