"""One writer per data directory: an exclusive ``flock`` on ``DATA_DIR/.lock``, taken before any model loads.

The lock file names its holder (pid, command, start time) so that a second opener (``mgrag ingest`` while
``mgrag serve`` runs on the same directory) gets one line naming the directory and that process instead of a
store error deep inside an ingestion. The kernel drops the lock when the holder dies, even by SIGKILL, so a
crashed run never leaves the directory locked. Within one process the lock is shared (counted), so several
contexts on the same directory (tests, the web app's service) do not lock each other out.
"""
from __future__ import annotations

import fcntl
import json
import os
import sys
import threading
import time
from pathlib import Path

from core.private import make_private

_held: dict[Path, list] = {}  # resolved path -> [fd, count, first open claimed]
_guard = threading.Lock()


class DataDirBusy(RuntimeError):
    """The data directory is held by another process."""

    def __init__(self, data_dir: Path, holder: dict | None):
        self.data_dir, self.holder = data_dir, holder or {}
        h = self.holder
        who = f"process {h['pid']}" if h.get("pid") else "another process"
        if h.get("cmd"):
            who += f" ({h['cmd']}"
            if h.get("started"):
                who += f", since {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(h['started']))}"
            who += ")"
        super().__init__(f"data directory {data_dir} is in use by {who}; stop it first, or use another "
                         f"--data-dir (a running `mgrag serve` answers questions in its web app)")


def _command() -> str:
    """The holder's command line, shortened (``mgrag --data-dir data serve``)."""
    argv = [Path(sys.argv[0]).name] + sys.argv[1:] if sys.argv and sys.argv[0] else []
    line = " ".join(argv) or "python"
    return line if len(line) <= 80 else line[:77] + "..."


def holder(data_dir: Path) -> dict | None:
    """What the lock file says about its holder (whether or not it is still held)."""
    try:
        return json.loads((Path(data_dir) / ".lock").read_text(encoding="utf-8") or "null")
    except (OSError, ValueError):
        return None


class WriterLock:
    def __init__(self, data_dir: Path):
        self.data_dir = Path(data_dir)
        self.key = self.data_dir.resolve()
        self.released = False

    def release(self) -> None:
        if self.released:
            return
        self.released = True
        with _guard:
            entry = _held.get(self.key)
            if entry is None:
                return
            entry[1] -= 1
            if entry[1] == 0:
                del _held[self.key]
                try:
                    os.ftruncate(entry[0], 0)
                finally:
                    os.close(entry[0])  # closing the descriptor releases the flock


def acquire(data_dir: Path) -> WriterLock:
    """Take (or share, within this process) the writer lock of ``data_dir``; :class:`DataDirBusy` if another
    process holds it."""
    data_dir = Path(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = data_dir.resolve()
    with _guard:
        entry = _held.get(key)
        if entry is not None:
            entry[1] += 1
            return WriterLock(data_dir)
        fd = os.open(key / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DataDirBusy(data_dir, holder(data_dir)) from None
        info = json.dumps({"pid": os.getpid(), "cmd": _command(), "started": time.time()}).encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, info, 0)
        _held[key] = [fd, 1, False]
        make_private(key)  # private uploads and conversations: owner-only, and all this process writes from now on
        return WriterLock(data_dir)


def first_open(data_dir: Path) -> bool:
    """True once per taking of the lock by this process (then False until every sharer has released it): the
    caller is the first of this process to open the data dir since, so nothing else writes to it meanwhile (no
    other process holds the lock, no other context of this one has opened the store yet)."""
    with _guard:
        entry = _held.get(Path(data_dir).resolve())
        if entry is None or entry[2]:
            return False
        entry[2] = True
        return True


def held(data_dir: Path) -> bool:
    """Whether this process holds the lock of ``data_dir``."""
    return Path(data_dir).resolve() in _held
