"""What every part of the service shares: who is asking (a browser, a user, or :data:`ADMIN`), the admin
refusal, and the one index-writing job at a time."""
from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass

Progress = Callable[[int, int, str], None]


class AdminRequired(PermissionError):
    """An admin action called without a valid admin session."""


_BROWSER_ID = re.compile(r"^[A-Za-z0-9_-]{22,128}$")
ADMIN = object()  # the owner argument of an admin action: sees and may change every document


def new_browser_id() -> str:
    """A random id a browser keeps in its local storage; documents uploaded from it belong to it."""
    return secrets.token_urlsafe(24)


def browser_owner(browser_id: str | None) -> str:
    """The owner key of a browser id (a hash: the id itself, a bearer secret, is never stored), or ValueError for a
    missing or malformed id."""
    if not isinstance(browser_id, str) or not _BROWSER_ID.match(browser_id):
        raise ValueError("this browser has no valid id yet: reload the page (API clients: pass a random string of "
                         "22 to 128 letters, digits, - or _ as the browser id, the same one on every call)")
    return "browser:" + hashlib.sha256(browser_id.encode()).hexdigest()[:32]


@dataclass
class JobState:
    """The one index-writing job at a time (upload, delete, re-ingestion), for progress displays."""

    kind: str = ""
    running: bool = False
    done: int = 0
    total: int = 0
    name: str = ""
    message: str = ""
    started: float = 0.0
