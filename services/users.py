"""User accounts for the web app (``data_dir/.secrets/users.sqlite``), managed by the admin (Admin tab or
``mgrag users``). When at least one exists at start, ``mgrag serve`` asks every visitor to log in, and documents and
conversations belong to the user instead of the browser. Passwords are stored as salted PBKDF2-SHA256 hashes.

What a user owns is owned by the account's id, never by its name (``user:<id>``, :meth:`Users.owner`): a name can
be removed and given to someone else, an id never comes back. A new account's id is random and starts with ``_``,
which no name may, so it can never equal a name; an account made before ids existed keeps its name as its id, so
what it already owns (``user:<name>``) stays its own."""
from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import sqlite3
import threading
import time
from pathlib import Path

ITERATIONS = 200_000
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
OWNER_PREFIX = "user:"  # an account's owner: this and its id (the catalog, the index payload, conversations, keys)


def new_account_id() -> str:
    """A fresh account id: random, and never a name (a name starts with a letter or digit)."""
    return "_" + secrets.token_hex(16)


def account_owner(account_id: str) -> str:
    """The owner of what the account ``account_id`` uploads and asks."""
    return OWNER_PREFIX + account_id


def _hash(password: str, salt: bytes, iterations: int = ITERATIONS) -> bytes:
    return hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)


def open_secret_db(path: Path, schema: str) -> sqlite3.Connection:
    """A SQLite file under ``.secrets`` (folder 0700, file 0600) with ``schema`` made if missing, shared by threads
    (writers take the owner's lock)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    db.execute(schema)
    path.chmod(0o600)
    return db


def check_name(name: str, what: str = "user name") -> None:
    if not _NAME.match(name or ""):
        raise ValueError(f"{what} {name!r}: use 1–64 letters, digits, '.', '_', '@' or '-'")


class Users:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.db = open_secret_db(self.path, "CREATE TABLE IF NOT EXISTS users (name TEXT PRIMARY KEY, salt BLOB NOT "
                                            "NULL, hash BLOB NOT NULL, iterations INTEGER NOT NULL, created REAL NOT "
                                            "NULL, id TEXT)")
        self._lock = threading.Lock()
        with self._lock:
            if "id" not in {r[1] for r in self.db.execute("PRAGMA table_info(users)")}:  # made before ids existed
                self.db.execute("ALTER TABLE users ADD COLUMN id TEXT")
            # an account without an id was made before ids: its id is its name, so "user:<name>" stays its own
            self.db.execute("UPDATE users SET id=name WHERE id IS NULL")
            self.db.execute("CREATE UNIQUE INDEX IF NOT EXISTS users_id ON users(id)")
            # the ids of removed accounts: never given again, never adopted (:meth:`_adoptable_id`)
            self.db.execute("CREATE TABLE IF NOT EXISTS retired (id TEXT PRIMARY KEY, removed REAL NOT NULL)")
        self._dummy_salt = secrets.token_bytes(16)

    def names(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT name FROM users ORDER BY name")]

    def id_of(self, name: str | None) -> str | None:
        """The id of the account called ``name``, or None when there is none."""
        row = self.db.execute("SELECT id FROM users WHERE name=?", (name or "",)).fetchone()
        return row[0] if row else None

    def owner(self, name: str | None) -> str | None:
        """The owner of what the account called ``name`` uploads and asks (``user:<id>``), or None when there is no
        such account (removed since the login, say). The one way from a logged-in name to an owner."""
        account_id = self.id_of(name)
        return None if account_id is None else account_owner(account_id)

    def name_of(self, account_id: str | None) -> str | None:
        """The current name of the account ``account_id``, or None when it was removed."""
        row = self.db.execute("SELECT name FROM users WHERE id=?", (account_id or "",)).fetchone()
        return row[0] if row else None

    def accounts(self) -> dict[str, str]:
        """``{account id: name}`` of every account."""
        return dict(self.db.execute("SELECT id, name FROM users"))

    def __bool__(self) -> bool:
        return self.db.execute("SELECT 1 FROM users LIMIT 1").fetchone() is not None

    def add(self, name: str, password: str) -> None:
        """Add a user or set a user's password (the id stays). A new account's id is new and random, unless the
        admin already made API keys for the name while there were no accounts (:mod:`services.keys`): the account
        then takes the id those keys share, so what they uploaded stays theirs (:meth:`_adoptable_id`)."""
        check_name(name)
        if len(password or "") < 8:
            raise ValueError(f"the password of {name!r} must have at least 8 characters")
        salt = secrets.token_bytes(16)
        with self._lock:
            account_id = self._adoptable_id(name) or new_account_id()
            self.db.execute("INSERT INTO users (name, salt, hash, iterations, created, id) VALUES (?,?,?,?,?,?) "
                            "ON CONFLICT(name) DO UPDATE SET salt=excluded.salt, hash=excluded.hash, "
                            "iterations=excluded.iterations",
                            (name, salt, _hash(password, salt), ITERATIONS, time.time(), account_id))

    def _adoptable_id(self, name: str) -> str | None:
        """The id that the active API keys of ``name`` share (``keys.sqlite`` beside this file), if no account has
        it and none ever had it: keys the admin made for a name before accounts existed. A removed account's id is
        retired (its keys revoked too), so a name given to someone else never adopts it."""
        keys = self.path.parent / "keys.sqlite"
        if not keys.exists():
            return None
        db = sqlite3.connect(f"file:{keys}?mode=ro", uri=True)
        try:
            rows = db.execute("SELECT DISTINCT user_id FROM keys WHERE user=? AND revoked IS NULL AND user_id IS NOT "
                              "NULL", (name,)).fetchall()
        except sqlite3.OperationalError:  # a keys file older than ids: its keys take the name as their id
            rows = db.execute("SELECT DISTINCT user FROM keys WHERE user=? AND revoked IS NULL", (name,)).fetchall()
        finally:
            db.close()
        if len(rows) != 1:
            return None
        taken = self.db.execute("SELECT 1 FROM users WHERE id=? UNION SELECT 1 FROM retired WHERE id=?",
                                (rows[0][0], rows[0][0])).fetchone()
        return None if taken else rows[0][0]

    def remove(self, name: str) -> str:
        """Remove the account called ``name``; returns its id (what it owned is still owned by that id, which is
        retired: never given or adopted again)."""
        with self._lock:
            rows = self.db.execute("DELETE FROM users WHERE name=? RETURNING id", (name or "",)).fetchall()
            if rows:
                self.db.execute("INSERT OR IGNORE INTO retired VALUES (?,?)", (rows[0][0], time.time()))
        if not rows:
            raise ValueError(f"no user {name!r}")
        return rows[0][0]

    def check(self, name: str, password: str) -> bool:
        """Whether ``password`` is ``name``'s (constant time; an unknown name costs the same as a wrong password)."""
        row = self.db.execute("SELECT salt, hash, iterations FROM users WHERE name=?", (name or "",)).fetchone()
        if row is None:
            _hash(password or "", self._dummy_salt)
            return False
        salt, want, iterations = row
        return hmac.compare_digest(_hash(password or "", salt, iterations), want)
