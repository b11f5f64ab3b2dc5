"""What the rooms share: the service, who is asking (:meth:`RoomContext.browser_id_of`, ``owner_of``,
``reader_of``), the page's states, and the components more than one tab reads or writes: the conversation's
scope and the backend menu (the Chat tab makes them, the uploads and the Admin tab's LLM endpoint refresh them)
and the answer menu (the Evaluate tab makes it, the Chat tab fills it).
"""
import functools
import html

import gradio as gr

from services import render
from services.auth import LOGIN_CLIENT
from services.service import AdminRequired, AppService, browser_owner

# Secrets the page makes itself, in the browser (``crypto.getRandomValues``): they reach the server only in request
# bodies, never from it over the session's event stream, which anyone who knows the session hash (it is in URLs,
# so in proxy logs) could read. The browser's id, when its storage has none, and a new admin token at every login.
_RANDOM_JS = ("(n) => { const a = new Uint8Array(n); crypto.getRandomValues(a); return btoa(String.fromCharCode(...a))"
              ".replace(/[+]/g, '-').replace(/[/]/g, '_').replace(/=+$/, ''); }")
BROWSER_ID_JS = (f"(b) => (typeof b === 'string' && /^[A-Za-z0-9_-]{{22,128}}$/.test(b)) ? b : ({_RANDOM_JS})(24)")
ADMIN_TOKEN_JS = f"() => ({_RANDOM_JS})(32)"
LOGGED_OUT = "logged-out"  # what a logout leaves in the admin token's storage (the page does not store an empty value)


def error(e: Exception):
    return gr.Error(html.escape(str(e)), print_exception=False)


def client_host(request) -> str:
    """The caller's address: the connection's peer, or what a trusted proxy forwarded (uvicorn's proxy headers
    middleware rewrites the peer only for ``trusted_proxies``, see :func:`ui.app.launch`)."""
    try:
        return request.client.host or ""
    except AttributeError:
        return ""


class LoginClient:
    """ASGI middleware: each request's client address (:func:`client_host`'s, the peer or what a trusted proxy
    forwarded) for the user accounts' login to read (:data:`services.auth.LOGIN_CLIENT`), which Gradio's /login
    calls with the name and password alone. The login's slow-down counts per name and address with it."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        peer = scope.get("client")
        token = LOGIN_CLIENT.set(str(peer[0]) if peer else "")
        try:
            await self.app(scope, receive, send)
        finally:
            LOGIN_CLIENT.reset(token)


def end_sessions(demo, name: str) -> None:
    """End every Gradio login of user ``name`` (its session tokens): a removed user's open page is refused from
    then on, and cannot reach an account given the name later."""
    tokens = getattr(getattr(demo, "server_app", None), "tokens", None) or {}
    for token, user in list(tokens.items()):
        if user == name:
            tokens.pop(token, None)


def admin(fn):
    """Admin and refusal errors as a message on the page (the wrapper keeps the signature and annotations, so
    Gradio still injects ``gr.Request`` and ``gr.Progress``)."""
    @functools.wraps(fn)
    def wrapped(*args, **kw):
        try:
            return fn(*args, **kw)
        except (AdminRequired, ValueError) as e:
            raise error(e) from e
    return wrapped


def pick_choices(answers):
    """The Evaluate tab's answer menu for the answers of the conversation shown (the last one picked)."""
    answers = answers or []
    return gr.update(choices=[(render.answer_label(i, x), i) for i, x in enumerate(answers)],
                     value=len(answers) - 1 if answers else None)


class RoomContext:
    """Handed to every room. The states are made by :meth:`make_states` (first in the page); the shared components
    (``scope_in``, ``backend_in``, ``backend_note``, ``answer_pick``) are set by the room that lays them out."""

    def __init__(self, service: AppService):
        self.service = service
        self.settings = service.settings
        self.allow_links = getattr(self.settings, "answer_links", False)
        self.scope_in = self.backend_in = self.backend_note = self.answer_pick = None

    def make_states(self) -> None:
        service = self.service
        self.answers_state = gr.State([])
        self.conversation_state = gr.State([])  # the turns of the current conversation (plain dicts, storable as is)
        # a random id kept in this browser's local storage (encrypted with a secret from the data dir): documents
        # uploaded from it belong to it, and only it (and the admin) can search, replace or delete them
        self.browser = gr.BrowserState(None, storage_key="mgrag_browser", secret=service.state_secret())
        self.current = gr.BrowserState(None, storage_key="mgrag_conversation", secret=service.state_secret())
        self.saved_settings = gr.BrowserState({}, storage_key="mgrag_settings", secret=service.state_secret())
        self.saved_backend = gr.State(None)
        # the admin's session token: made by the page at login (ADMIN_TOKEN_JS), kept in this browser only and sent
        # in request bodies; a client that knows just the session hash has none (a gr.State would give it this one)
        self.token_state = gr.BrowserState("", storage_key="mgrag_admin", secret=service.state_secret())

    # -- who is asking -----------------------------------------------------------------------------------------
    def browser_id_of(self, browser_id, request):
        """The browser's id: the one the page made and stored (:data:`BROWSER_ID_JS`, on load). The server hands
        out none: one handed per page session went to whoever presented that session's hash. A missing or
        malformed id is refused (ValueError)."""
        browser_owner(browser_id)  # ValueError if missing or malformed
        return browser_id

    def owner_of(self, browser_id, request=None):
        """Who owns what this visitor uploads and asks: the logged-in user's account (by its id, never its name:
        :meth:`services.users.Users.owner`) when the admin has configured users, else the browser. A login whose
        account was removed since is refused."""
        user = getattr(request, "username", None)
        if user:
            owner = self.service.users.owner(user)
            if owner is None:
                raise error(ValueError(f"the account {user!r} no longer exists; log in again"))
            return owner
        try:
            return browser_owner(self.browser_id_of(browser_id, request))
        except ValueError as e:
            raise error(e) from e

    def reader_of(self, browser_id, request=None):
        """The owner whose documents a question may search (a malformed id: the shared library only)."""
        try:
            return self.owner_of(browser_id, request)
        except gr.Error:
            return None

    # -- shared helpers --------------------------------------------------------------------------------------------
    def shown(self, text):  # answer and user text render literally: no HTML, no live link or image from a document
        return render.answer_markdown(text, self.allow_links)

    def backend_menu(self, current=None):
        """The chat's backend menu: the backends that can run here; a note says why each other one cannot."""
        service = self.service
        status = service.backends()
        ok = [b for b, why in status.items() if why is None]
        default = service.settings.synth_backend
        value = current if current in ok else default if default in ok else ok[0]
        note = "\n".join(f"- **{b}** cannot run: {render.plain_text_markdown(why)}" for b, why in status.items() if why)
        return gr.update(choices=ok, value=value), note
