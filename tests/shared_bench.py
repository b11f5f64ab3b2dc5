"""The development bench sets (``../shared/bench``, or ``MGRAG_BENCH_DIR``) that a few tests read: they are not
part of a clone, so a test that needs them skips with the reason, except where missing data must fail (CI sets
MGRAG_REQUIRE_SERVICES=1 and has the sets)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest


def need_sets(*names: str) -> Path:
    """The bench folder when it holds every set in ``names``; else skip, or fail under MGRAG_REQUIRE_SERVICES=1."""
    from app.evaluation.bench import BENCH_DIR

    missing = [n for n in names if not (BENCH_DIR / n / "questions.jsonl").is_file()]
    if missing:
        why = f"bench set(s) {', '.join(missing)} not found under {BENCH_DIR} (../shared/bench, or MGRAG_BENCH_DIR)"
        if os.environ.get("MGRAG_REQUIRE_SERVICES") == "1":
            pytest.fail(f"{why}; MGRAG_REQUIRE_SERVICES=1 makes missing data a failure")
        pytest.skip(why)
    return BENCH_DIR
