"""The admin's login: credentials from the settings, a session token per login (:class:`AdminAuth`), failed
logins slowed down per client (:class:`LoginThrottle`), the user accounts' login slowed down per account and client
(:class:`ThrottledLogin`), and the password kept in the data dir when none is set
(:func:`stored_admin_password`)."""
from __future__ import annotations

import contextvars
import hashlib
import hmac
import logging
import os
import re
import secrets
import threading
import time
from collections.abc import Callable
from pathlib import Path

from core.private import write_secret
from services.base import AdminRequired

log = logging.getLogger("services.service")  # the name it always had (log filters, tests)


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


# The address of the client a login comes from: Gradio's /login calls its ``auth`` with the name and password only,
# so an ASGI middleware (:class:`ui.rooms.context.LoginClient`) sets it for each request, and the login reads it.
LOGIN_CLIENT: contextvars.ContextVar[str] = contextvars.ContextVar("mgrag_login_client", default="")


class ThrottledLogin:
    """A user accounts' login (``check(name, password)``) slowed down per account *and* client address: after 5
    failures of one name from one address, each further attempt from there waits 2, 4, 8 … s (at most 15 min), and
    one made earlier is refused without checking the password (a hostile run guessed 30 passwords in 5.2 s). Another
    address is not held back by them: counted per name alone, anyone who knew a user's name could keep them locked out
    for 15 minutes at a time, the right password refused. Across addresses, a name with many failures gets a short
    wait before each check (:meth:`delay_s`, at most ``name_max_s``), never a refusal: spreading guesses over many
    addresses costs time, and the real user still gets in, a few seconds late at worst."""

    def __init__(self, check: Callable[[str, str], bool], throttle: LoginThrottle | None = None,
                 per_name: LoginThrottle | None = None, name_max_s: float = 3.0):
        self.check = check
        self.throttle = throttle or LoginThrottle()  # per (name, address): refuses while the address must wait
        self.per_name = per_name or LoginThrottle(free=10, base_s=0.25, max_s=name_max_s,
                                                  clock=self.throttle.clock)  # per name: a bounded wait

    @staticmethod
    def _key(name: str, client: str) -> str:
        return f"account:{name}|{client}"

    def delay_s(self, name: str) -> float:
        """How long an attempt at ``name`` waits before its password is checked, from any address (0 until the name
        has 10 failures in 15 minutes, then up to ``name_max_s``)."""
        return self.per_name.wait_s(name or "")

    def wait_s(self, name: str, client: str = "") -> float:
        """Seconds ``client`` must wait before its next attempt at ``name`` (0: go ahead)."""
        return self.throttle.wait_s(self._key(name or "", client or ""))

    def __call__(self, name: str, password: str, client: str | None = None) -> bool:
        """Whether ``password`` is ``name``'s, checked now unless ``client`` (default: the request's,
        :data:`LOGIN_CLIENT`) must wait, which refuses it unchecked."""
        name, client = name or "", LOGIN_CLIENT.get() if client is None else client
        key = self._key(name, client)
        wait = self.throttle.wait_s(key)
        if wait > 0:
            log.warning("login for %r from %s refused: too many failed attempts, wait %.0f s", name[:64],
                        client or "(unknown client)", wait)
            return False
        ok = bool(self.check(name, password))
        if ok:
            self.throttle.succeeded(key)
        else:
            self.throttle.failed(key)
            self.per_name.failed(name)
        return ok

    async def gradio(self, name: str, password: str) -> bool:
        """What Gradio's /login awaits as ``auth``, for the address the request came from: refused at once while
        that address must wait, else the name's bounded wait (asleep, holding no thread), then the check in a worker
        thread (the hash takes a while; the event loop serves others meanwhile)."""
        import anyio

        client = LOGIN_CLIENT.get()
        if self.wait_s(name, client) == 0:  # it will be checked (one that must wait is refused at once, no sleep)
            wait = self.delay_s(name)
            if wait > 0:
                await anyio.sleep(wait)
        return await anyio.to_thread.run_sync(self.__call__, name, password, client)


def throttled_login(check: Callable[[str, str], bool], throttle: LoginThrottle | None = None) -> ThrottledLogin:
    """The user accounts' login: ``check`` throttled per account and address (:class:`ThrottledLogin`)."""
    return ThrottledLogin(check, throttle)


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
