"""The project's SQLite files (catalog, conversations, feedback) open one way."""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path


def open_db(path: Path, schema: str) -> sqlite3.Connection:
    """A connection to ``path`` (its folder made if needed) shared across threads (callers hold their own lock),
    in autocommit mode with write-ahead logging and foreign keys on, ``schema`` applied (``CREATE … IF NOT
    EXISTS`` statements)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    # owner-only (conversations, the catalog of private uploads); SQLite gives its WAL files the database's mode
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        try:
            if os.stat(path).st_mode & 0o077:
                os.chmod(path, 0o600)
        except PermissionError:  # another user's database, opened to read
            pass
    # another process may hold the write lock for a moment (`mgrag ingest` queueing beside `mgrag serve`): wait for it
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30.0)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA foreign_keys=ON")
    db.executescript(schema)
    return db


def inserted_id(cur: sqlite3.Cursor) -> int:
    """The id of the row an ``INSERT`` through ``cur`` made (``lastrowid``, which is None before any insert)."""
    if cur.lastrowid is None:
        raise sqlite3.InterfaceError("no row was inserted")
    return cur.lastrowid
