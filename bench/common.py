"""Shared benchmark code for the scripts under ``bench/``: a re-export of :mod:`app.evaluation.bench`.

``python bench/x.py`` puts ``bench/`` first on ``sys.path``, not the project root; this module fixes that and
sets the offline flags before anything imports transformers.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from app.evaluation.bench import *  # noqa: E402,F401,F403
