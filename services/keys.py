"""API keys for the HTTP API (``/v1``): made and revoked by the admin (``mgrag keys``, the Admin tab), kept in
``data_dir/.secrets/keys.sqlite`` as SHA-256 hashes (a key is 32 random bytes, so a plain hash is enough: there is
nothing to guess), shown once when made. A key belongs to a user: it sees what that user sees in the web app (the
shared library and the user's own uploads) and what it uploads is the user's."""
from __future__ import annotations

import hashlib
import re
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from services.users import check_name, open_secret_db

PREFIX = "mgrag-"
_KEY = re.compile(r"^mgrag-[A-Za-z0-9_-]{8}-[A-Za-z0-9_-]{40,60}$")


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class ApiKey:
    name: str
    user: str
    prefix: str  # the key's first characters, to recognise it in a list (never enough to use it)
    created: float
    last_used: float | None
    revoked: float | None

    @property
    def owner(self) -> str:
        """The owner its uploads get and its searches see, as the web app names a logged-in user."""
        return "user:" + self.user


class Keys:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.db = open_secret_db(self.path, "CREATE TABLE IF NOT EXISTS keys (digest TEXT PRIMARY KEY, name TEXT NOT "
                                            "NULL UNIQUE, user TEXT NOT NULL, prefix TEXT NOT NULL, created REAL NOT "
                                            "NULL, last_used REAL, revoked REAL)")
        self._lock = threading.Lock()

    def add(self, name: str, user: str) -> str:
        """Make a key called ``name`` for ``user`` and return it (the only time it can be read)."""
        check_name(name, "key name")
        check_name(user)
        key = f"{PREFIX}{secrets.token_urlsafe(6)[:8]}-{secrets.token_urlsafe(32)}"
        with self._lock:
            try:
                self.db.execute("INSERT INTO keys VALUES (?,?,?,?,?,NULL,NULL)",
                                (_digest(key), name, user, key[:14], time.time()))
            except sqlite3.IntegrityError:
                raise ValueError(f"a key called {name!r} exists; revoke it or choose another name") from None
        return key

    def list(self) -> list[ApiKey]:
        rows = self.db.execute("SELECT name, user, prefix, created, last_used, revoked FROM keys ORDER BY created")
        return [ApiKey(*r) for r in rows]

    def revoke(self, name: str) -> None:
        with self._lock:
            n = self.db.execute("UPDATE keys SET revoked=? WHERE name=? AND revoked IS NULL",
                                (time.time(), name)).rowcount
        if n == 0:
            raise ValueError(f"no active key called {name!r}")

    def revoke_user(self, user: str) -> int:
        """Revoke every key of ``user`` (the user was removed)."""
        with self._lock:
            return self.db.execute("UPDATE keys SET revoked=? WHERE user=? AND revoked IS NULL",
                                   (time.time(), user)).rowcount

    def check(self, key: str | None) -> ApiKey | None:
        """The active key ``key`` is, or None (malformed, unknown or revoked)."""
        if not key or not _KEY.match(key):
            return None
        row = self.db.execute("SELECT name, user, prefix, created, last_used, revoked FROM keys WHERE digest=?",
                              (_digest(key),)).fetchone()
        if row is None or row[5] is not None:
            return None
        now = time.time()
        if row[4] is None or now - row[4] > 60:  # written at most once a minute per key
            with self._lock:
                self.db.execute("UPDATE keys SET last_used=? WHERE digest=?", (now, _digest(key)))
        return ApiKey(*row)
