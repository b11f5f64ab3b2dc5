"""The Gradio app: Chat (upload, streamed answers with sources), Admin (behind a login), Evaluate.

``build_app(service)`` makes the Blocks from the rooms under ``ui/rooms/`` (one per tab: :mod:`ui.rooms.chat` with
its conversations and upload panels, :mod:`ui.rooms.admin` with the LLM endpoint panel, :mod:`ui.rooms.evaluate`;
:mod:`ui.rooms.viewer` adds the viewer's HTTP routes), which share a :class:`ui.rooms.context.RoomContext`;
``launch(service)`` serves them (``mgrag serve``). Every admin handler calls :meth:`AppService` methods that check
the session's admin token server side, so hiding the admin panel is only cosmetic: a direct API call without a
login gets "admin login required".
"""

import functools
import logging
import os
import sys
from pathlib import Path

from services import render
from services.auth import throttled_login
from services.service import AppService, start_service
from ui.rooms.context import LoginClient, end_sessions
from ui.rooms.viewer import add_viewer_routes

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): gradio, fastapi, starlette
# and ui.rooms.admin, ui.rooms.chat, ui.rooms.context, ui.rooms.evaluate, ui.rooms.uploads, api.v1

log = logging.getLogger(__name__)

__all__ = ["CSS", "add_viewer_routes", "build_app", "launch", "render_css", "serve", "start_service"]

CSS = """
.mg-source {border-left: 3px solid #f97316; padding: 4px 8px; margin: 6px 0;}
.mg-src-head {font-size: 0.9em;}
.mg-scores {font-size: 0.8em; color: #666;}
.mg-passage {font-size: 0.85em; white-space: pre-wrap;}
.mg-passage mark {background: @CHILD;}
.mg-passage mark.mg-support {background: @SUPPORT; border-bottom: 2px solid @LINE;}
.mg-passage mark.mg-support.mg-match {background: @SUPPORT; box-shadow: inset 0 -0.35em @CHILD;}
.mg-support-key {background: @SUPPORT; border-bottom: 2px solid @LINE; padding: 0 2px;}
.mg-passage table.mg-table {border-collapse: collapse; margin: 4px 0; font-size: 0.95em; white-space: normal;
  display: block; max-width: 100%; overflow-x: auto;}
.mg-passage .mg-table td, .mg-passage .mg-table th {border: 1px solid #d4d4d8; padding: 1px 5px; text-align: right;
  word-break: keep-all; overflow-wrap: normal; hyphens: none;}
.mg-passage .mg-table td:first-child, .mg-passage .mg-table th:first-child {text-align: left;}
.mg-passage tr.mg-match {background: @CHILD;} .mg-passage tr.mg-support {background: @SUPPORT;}
.mg-abstain {font-size: 0.9em; margin: 4px 0;}
.mg-weights {font-size: 0.85em; margin-top: 4px;}
.mg-wlab {display: inline-block; width: 3em;}
""".replace("@SUPPORT", render.HIGHLIGHT["support"]).replace("@LINE", render.HIGHLIGHT["support_line"]).replace(
    "@CHILD", render.HIGHLIGHT["child"])


def build_app(service: AppService):
    """The rooms laid out tab by tab, then their events. The events are registered in the order the page has always
    had (a client may call an event by its index), so the rooms' wiring interleaves: the page's load, the Chat
    tab's conversations and settings, the Admin tab's LLM endpoint, the Chat tab's uploads and questions, the
    Evaluate tab, the rest of the Admin tab."""
    import gradio as gr

    from ui.rooms.admin import AdminRoom
    from ui.rooms.chat import ChatRoom
    from ui.rooms.context import RoomContext
    from ui.rooms.evaluate import EvaluateRoom

    c = RoomContext(service)
    chat, admin, evaluate = ChatRoom(c), AdminRoom(c), EvaluateRoom(c)
    with gr.Blocks(title="MGRAG") as demo:
        c.make_states()
        gr.Markdown("## MGRAG: chat with your documents")
        with gr.Tabs():
            chat.layout()
            admin.layout()
            evaluate.layout()
        _wire_page_load(demo, c, chat)
        chat.wire_conversations()
        chat.wire_settings()
        admin.llm.wire()
        chat.wire_uploads()
        chat.wire_ask()
        evaluate.wire()
        admin.wire()
    return demo


def _wire_page_load(demo, c, chat) -> None:
    """A (re)loaded page, across the tabs: the browser's id (made in the page when its storage has none), its
    uploads, its conversation and session settings, the backend menu, the Evaluate tab's answer menu."""
    from ui.rooms.context import BROWSER_ID_JS, pick_choices

    demo.load(None, [c.browser], [c.browser], js=BROWSER_ID_JS, api_visibility="private").then(
        chat.uploads.mine, [c.browser], [chat.uploads.my_docs], api_visibility="private").then(
        chat.conversations.on_restore, [c.browser, c.current, c.saved_settings, chat.chatbot], chat.restored(),
        api_visibility="private").then(
        c.backend_menu, [c.saved_backend], [c.backend_in, c.backend_note], api_visibility="private").then(
        lambda answers: pick_choices(answers), [c.answers_state], [c.answer_pick], api_visibility="private")


def launch(service: AppService, *, host: str | None = None, port: int | None = None, block: bool = True):
    """Serve the app. Gradio's upload cache goes under the data dir (``data_dir/tmp/gradio``) unless
    ``GRADIO_TEMP_DIR`` is set, so uploads write nothing outside it; uploads over ``max_file_mb`` are cut off by
    Gradio itself and refused again by the service. Every request first passes :func:`own_middleware` (the body
    limit, the security headers), which Gradio's app takes as it is made, so no route is ever served without it."""
    s = service.settings
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    tmp = (s.data_dir / "tmp" / "gradio").resolve()
    tmp.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("GRADIO_TEMP_DIR", str(tmp))
    service.upload_root = Path(os.environ["GRADIO_TEMP_DIR"]).resolve()  # the only folder uploads are read from
    # uvicorn (which Gradio runs) takes the client's address from X-Forwarded-For when the peer is in
    # FORWARDED_ALLOW_IPS, by default loopback: any local caller could then name itself anew with every request and
    # escape the login slow-down. Only the configured proxies are trusted; none by default.
    os.environ["FORWARDED_ALLOW_IPS"] = s.trusted_proxies
    from ui.rooms.uploads import clean_uploads

    clean_uploads(service)  # what the last run left: uploads never submitted or cut off by a stop
    demo = build_app(service)
    demo.queue(default_concurrency_limit=8, max_size=256)

    # accounts made by the admin: everyone logs in, and guessing a password is slowed down like the admin's
    # (per account and client address: LoginClient hands the login each request's address, see own_middleware)
    auth = throttled_login(service.users.check).gradio if service.users else None
    service.end_sessions = functools.partial(end_sessions, demo)  # a removed user's logins end with the account
    service.logins_required = auth is not None
    app, url, _ = demo.launch(server_name=host or s.ui_host, server_port=port or s.ui_port, prevent_thread_lock=True,
                              max_file_size=int(s.max_file_mb * 2**20), quiet=True, show_error=True,
                              footer_links=["api"], css=render_css(), max_threads=64, auth=auth,
                              auth_message="MGRAG: log in with the account your admin gave you.",
                              app_kwargs={"routes": own_routes(service), "middleware": own_middleware(service)})
    if block:
        try:
            demo.block_thread()
        finally:
            demo.close()
    return demo, url


def own_routes(service: AppService) -> list:
    """The server's routes besides Gradio's, handed to the app Gradio makes so that they exist before it listens
    (mounted after ``launch``, ``/v1`` answered 404 for a moment while ``/`` already answered): the viewer's
    pages (``/mgrag/...``) and the HTTP API (``/v1``: OpenAI-compatible chat, documents, search; API keys)."""
    from fastapi import APIRouter
    from starlette.routing import Mount

    from api.v1 import build_api

    viewer = APIRouter()
    add_viewer_routes(viewer, service)
    return [*viewer.routes, Mount("/v1", app=build_api(service))]  # its bodies capped by own_middleware's BodyLimit


# Gradio's routes that take files: the upload the page makes of dropped files (all of them in one request) and a
# microphone recording. Every other route of the server, Gradio's or ours, takes a body of at most MAX_JSON_BODY.
GRADIO_UPLOADS = ("/gradio_api/upload", "/gradio_api/process_recording")
# The Content-Security-Policy of the Gradio page and of every response but the viewer's (services.viewer.VIEWER_CSP)
# and the API explorer's: the page runs Gradio's inline scripts and styles and shows plots and images as data: or
# blob: URLs; everything else it loads or calls is on this server, so a passage that got past the escaping could
# not load a tracker, post a form elsewhere or frame the page.
APP_CSP = ("default-src 'self'; script-src 'self' 'unsafe-inline' 'unsafe-eval'; style-src 'self' 'unsafe-inline'; "
           "img-src 'self' data: blob:; media-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; "
           "worker-src 'self' blob:; frame-src 'self' blob: data:; object-src 'none'; base-uri 'self'; "
           "form-action 'self'; frame-ancestors 'self'")
# /v1/docs is FastAPI's Swagger UI, which loads its script and style from cdn.jsdelivr.net and its icon elsewhere
DOCS_CSP = ("default-src 'none'; script-src 'unsafe-inline' https://cdn.jsdelivr.net; style-src 'unsafe-inline' "
            "https://cdn.jsdelivr.net; img-src 'self' data: https://fastapi.tiangolo.com; connect-src 'self'; "
            "base-uri 'none'; form-action 'none'; frame-ancestors 'self'")


def own_middleware(service: AppService) -> list:
    """What wraps every route of the server, Gradio's included (its login, its upload, its queue, before its auth
    checks), handed to the app Gradio makes: the security headers (outermost, so a refusal carries them too), then
    one :class:`api.v1.BodyLimit` (uploads up to ``max_file_mb`` times the file count, everything else up to
    2 MB)."""
    from starlette.middleware import Middleware

    from api.v1 import UPLOAD_ROUTE, BodyLimit, upload_limit

    uploads = (*GRADIO_UPLOADS, "/v1" + UPLOAD_ROUTE)
    return [Middleware(SecurityHeaders), Middleware(BodyLimit, limit=upload_limit(service.settings),
                                                    uploads=uploads), Middleware(LoginClient)]


class SecurityHeaders:
    """ASGI middleware: every response gets ``X-Content-Type-Options: nosniff`` (a browser never guesses a type
    the server did not send), ``Referrer-Policy: same-origin`` (a viewer link's token never leaves in a Referer)
    and a Content-Security-Policy: the viewer's strict one under ``/mgrag/``, the API explorer's at ``/v1/docs``,
    :data:`APP_CSP` elsewhere. A header the route set itself is kept."""

    def __init__(self, app):
        self.app = app

    @staticmethod
    def policy(path: str) -> str:
        from services.viewer import VIEWER_CSP

        if path.startswith("/mgrag/"):
            return VIEWER_CSP
        return DOCS_CSP if path.rstrip("/") == "/v1/docs" else APP_CSP

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path, root = scope.get("path", ""), scope.get("root_path", "")
        added = {b"x-content-type-options": b"nosniff", b"referrer-policy": b"same-origin",
                 b"content-security-policy": self.policy(path[len(root):] if root and path.startswith(root) else
                                                         path).encode()}

        async def with_headers(message):
            if message["type"] == "http.response.start":
                have = {k.lower() for k, _ in message.get("headers") or ()}
                message = {**message, "headers": [*(message.get("headers") or ()),
                                                  *((k, v) for k, v in added.items() if k not in have)]}
            await send(message)

        await self.app(scope, receive, with_headers)


def render_css() -> str:
    return CSS


def _exit_on_sigterm() -> None:
    """A SIGTERM (`docker stop`, systemd, `kill`) ends the serve loop as Ctrl-C does, so that the service closes: a
    refinement in flight goes back to the queue and the LM check's llama-server stops with the app instead of
    outliving it (the default SIGTERM ends the process without running ``finally`` or ``atexit``)."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))


def serve(settings=None, *, host: str | None = None, port: int | None = None) -> int:
    """``mgrag serve``: one context and one service for the process (:func:`services.service.start_service`)."""
    import time

    service = start_service(settings)
    try:  # from here on a stop (Ctrl-C, SIGTERM) closes the service, whenever it comes
        _exit_on_sigterm()
        service.ensure_runner()  # jobs a stopped server (or `mgrag ingest --no-wait`) left queued resume now
        service.warm_checker()  # the LM check's model loads while the page opens
        service.resume_interrupted()  # a re-ingestion a stopped server left half-done finishes in the background
        _, url = launch(service, host=host, port=port, block=False)
        log.info("MGRAG is serving on %s", url)
        print(f"MGRAG web app: {url}", flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0
    finally:
        service.close(context=True)  # a refinement in flight goes back to the queue; the next start resumes it
