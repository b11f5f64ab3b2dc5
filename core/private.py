"""A data dir holds private uploads, their texts, conversations and feedback: it is owner-only on disk.

A process that writes a data dir (it takes the writer lock, :mod:`core.datalock`) calls :func:`make_private`
once: its umask then also clears the group and other bits, so everything it creates from then on (the store's
files, SQLite databases and their WAL files, the index's files, the queue's spool, uploads) is made owner-only
(folders 0700, files 0600); the data dir and what an older version left in it are tightened the same way.
SQLite databases are created 0600 by whichever process opens them first (:func:`core.db.open_db`).
"""
from __future__ import annotations

import os
import secrets
from pathlib import Path

_PRIVATE = 0o077  # the permission bits of the group and of others


def tighten_umask() -> None:
    """Clear the group and other bits of this process's umask (the owner's stay as they were)."""
    old = os.umask(_PRIVATE)
    os.umask(old | _PRIVATE)


def make_private(data_dir: Path) -> None:
    """Tighten this process's umask, then make ``data_dir`` and everything under it that this user owns
    owner-only (symbolic links are not followed)."""
    tighten_umask()
    data_dir = Path(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    uid = os.geteuid()
    for root, dirs, files in os.walk(data_dir):
        for name in [root, *(os.path.join(root, n) for n in dirs + files)]:
            try:
                st = os.lstat(name)
                if st.st_uid == uid and st.st_mode & _PRIVATE and not os.path.islink(name):
                    os.chmod(name, st.st_mode & 0o7700)
            except FileNotFoundError:  # removed meanwhile
                continue


def write_secret(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` owner-only (0600, its folder 0700) and atomically: a reader sees the old content
    or the new, never a partial file, and never a moment with looser rights."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
