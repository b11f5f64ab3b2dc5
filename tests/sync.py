"""Synchronisation for tests that run threads or processes: they wait for something to happen (bounded, so a
regression fails instead of hanging), never sleep to show that something did not happen."""
from __future__ import annotations

import time
from collections.abc import Callable


def eventually(predicate: Callable[[], object], timeout_s: float = 60.0, what: str = "the condition",
               poll_s: float = 0.01):
    """Poll ``predicate`` until it returns something true, and return that; fail the test if it has not after
    ``timeout_s``. For proving that something happens; the bound only turns a hang into a failure."""
    deadline = time.monotonic() + timeout_s
    while True:
        out = predicate()
        if out:
            return out
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout_s:g} s")
        time.sleep(poll_s)
