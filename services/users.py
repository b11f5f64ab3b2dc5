"""User accounts for the web app (``data_dir/.secrets/users.sqlite``), managed by the admin (Admin tab or
``mgrag users``). When at least one exists at start, ``mgrag serve`` asks every visitor to log in, and documents and
conversations belong to the user instead of the browser. Passwords are stored as salted PBKDF2-SHA256 hashes."""
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
                                            "NULL)")
        self._lock = threading.Lock()
        self._dummy_salt = secrets.token_bytes(16)

    def names(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT name FROM users ORDER BY name")]

    def __bool__(self) -> bool:
        return self.db.execute("SELECT 1 FROM users LIMIT 1").fetchone() is not None

    def add(self, name: str, password: str) -> None:
        """Add a user or set a user's password."""
        check_name(name)
        if len(password or "") < 8:
            raise ValueError(f"the password of {name!r} must have at least 8 characters")
        salt = secrets.token_bytes(16)
        with self._lock:
            self.db.execute("INSERT INTO users VALUES (?,?,?,?,?) ON CONFLICT(name) DO UPDATE SET salt=excluded.salt, "
                            "hash=excluded.hash, iterations=excluded.iterations",
                            (name, salt, _hash(password, salt), ITERATIONS, time.time()))

    def remove(self, name: str) -> None:
        with self._lock:
            if self.db.execute("DELETE FROM users WHERE name=?", (name,)).rowcount == 0:
                raise ValueError(f"no user {name!r}")

    def check(self, name: str, password: str) -> bool:
        """Whether ``password`` is ``name``'s (constant time; an unknown name costs the same as a wrong password)."""
        row = self.db.execute("SELECT salt, hash, iterations FROM users WHERE name=?", (name or "",)).fetchone()
        if row is None:
            _hash(password or "", self._dummy_salt)
            return False
        salt, want, iterations = row
        return hmac.compare_digest(_hash(password or "", salt, iterations), want)
