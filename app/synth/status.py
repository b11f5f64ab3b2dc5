"""Which answer backends can run here, and why the others cannot, without loading any model (the chat's backend
menu shows the runnable ones and the reasons for the rest)."""
from __future__ import annotations

from core.components import BACKENDS


def backend_status(settings) -> dict[str, str | None]:
    """``{backend: None}`` when it can run, else ``{backend: why not}``, for every backend of the registry
    (:data:`core.components.BACKENDS`): each class's ``why_not(settings)``."""
    return {name: entry.resolve().why_not(settings) for name, entry in BACKENDS.items()}
