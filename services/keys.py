"""API keys for the HTTP API (``/v1``): made and revoked by the admin (``mgrag keys``, the Admin tab), kept in
``data_dir/.secrets/keys.sqlite`` as SHA-256 hashes (a key is 32 random bytes, so a plain hash is enough: there is
nothing to guess), shown once when made. A key belongs to a user: it sees what that user sees in the web app (the
shared library and the user's own uploads) and what it uploads is the user's. A key is bound to the account's id
(:mod:`services.users`), not its name: removing the user revokes it, and a new account given the name later is
someone else. Without accounts a key's user is only a name; its keys share an id of their own, which no account
ever gets."""
from __future__ import annotations

import hashlib
import re
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from services.users import Users, account_owner, check_name, new_account_id, open_secret_db

PREFIX = "mgrag-"
_KEY = re.compile(r"^mgrag-[A-Za-z0-9_-]{8}-[A-Za-z0-9_-]{40,60}$")


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class ApiKey:
    name: str
    user: str  # the user's name when the key was made (for the lists)
    user_id: str  # the account's id (services.users), what the key sees and owns
    prefix: str  # the key's first characters, to recognise it in a list (never enough to use it)
    created: float
    last_used: float | None
    revoked: float | None

    @property
    def owner(self) -> str:
        """The owner its uploads get and its searches see: its account's, as the web app's for a logged-in user."""
        return account_owner(self.user_id)


_COLS = "name, user, user_id, prefix, created, last_used, revoked"


class Keys:
    def __init__(self, path: Path, users: Users | None = None):
        """``users``: the web app's accounts (default: ``users.sqlite`` beside the keys)."""
        self.path = Path(path)
        self.db = open_secret_db(self.path, "CREATE TABLE IF NOT EXISTS keys (digest TEXT PRIMARY KEY, name TEXT NOT "
                                            "NULL UNIQUE, user TEXT NOT NULL, prefix TEXT NOT NULL, created REAL NOT "
                                            "NULL, last_used REAL, revoked REAL, user_id TEXT)")
        self._lock = threading.Lock()
        with self._lock:
            if "user_id" not in {r[1] for r in self.db.execute("PRAGMA table_info(keys)")}:  # made before ids
                self.db.execute("ALTER TABLE keys ADD COLUMN user_id TEXT")
            # a key made before ids: its user's id is the name, as it is for an account made then (services.users)
            self.db.execute("UPDATE keys SET user_id=user WHERE user_id IS NULL")
        self.users = users if users is not None else Users(self.path.parent / "users.sqlite")

    def _account_id(self, user: str) -> str:
        """The id a new key for ``user`` is bound to: the account's; without accounts, the one the user's active keys
        share, else a new one (never an account's, nor a removed account's: it is random)."""
        account_id = self.users.id_of(user)
        if account_id is not None:
            return account_id
        if self.users:
            raise ValueError(f"no user {user!r}; a key belongs to one of the web app's users "
                             f"({', '.join(self.users.names())})")
        row = self.db.execute("SELECT user_id FROM keys WHERE user=? AND revoked IS NULL ORDER BY created DESC "
                              "LIMIT 1", (user,)).fetchone()
        return row[0] if row else new_account_id()

    def add(self, name: str, user: str) -> str:
        """Make a key called ``name`` for ``user`` and return it (the only time it can be read)."""
        check_name(name, "key name")
        check_name(user)
        key = f"{PREFIX}{secrets.token_urlsafe(6)[:8]}-{secrets.token_urlsafe(32)}"
        with self._lock:
            try:
                self.db.execute(f"INSERT INTO keys (digest, {_COLS}) VALUES (?,?,?,?,?,?,NULL,NULL)",
                                (_digest(key), name, user, self._account_id(user), key[:14], time.time()))
            except sqlite3.IntegrityError:
                raise ValueError(f"a key called {name!r} exists; revoke it or choose another name") from None
        return key

    def list(self) -> list[ApiKey]:
        rows = self.db.execute(f"SELECT {_COLS} FROM keys ORDER BY created")
        return [ApiKey(*r) for r in rows]

    def revoke(self, name: str) -> None:
        with self._lock:
            n = self.db.execute("UPDATE keys SET revoked=? WHERE name=? AND revoked IS NULL",
                                (time.time(), name)).rowcount
        if n == 0:
            raise ValueError(f"no active key called {name!r}")

    def revoke_user(self, account_id: str) -> int:
        """Revoke every key of the account ``account_id`` (the user was removed)."""
        with self._lock:
            return self.db.execute("UPDATE keys SET revoked=? WHERE user_id=? AND revoked IS NULL",
                                   (time.time(), account_id)).rowcount

    def check(self, key: str | None) -> ApiKey | None:
        """The active key ``key`` is, or None (malformed, unknown or revoked)."""
        if not key or not _KEY.match(key):
            return None
        row = self.db.execute(f"SELECT {_COLS} FROM keys WHERE digest=?", (_digest(key),)).fetchone()
        if row is None or row[6] is not None:
            return None
        now = time.time()
        if row[5] is None or now - row[5] > 60:  # written at most once a minute per key
            with self._lock:
                self.db.execute("UPDATE keys SET last_used=? WHERE digest=?", (now, _digest(key)))
        return ApiKey(*row)
