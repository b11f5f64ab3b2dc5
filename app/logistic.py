"""A logistic regression over named, standardised features with the threshold its probability is held to: the
reader's calibrator (:class:`app.scorer.Calibrator`) and the follow-up reading
(:class:`app.conversation.FollowupModel`).

>>> LogisticStage(("a",), [1.0], [2.0], [4.0], 0.0, 0.5).probability([1.0])
0.5
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def sigmoid(z: np.ndarray) -> np.ndarray:
    """1 / (1 + e^−z), ``z`` clipped to ±40 (beyond it the result is 0 or 1 to double precision)."""
    return 1.0 / (1.0 + np.exp(-np.clip(z, -40, 40)))


@dataclass
class LogisticStage:
    """``features`` standardised by ``mean`` and ``scale``, weighted by ``coef`` plus ``intercept``; ``threshold``
    on the probability."""

    features: Sequence[str]
    mean: Sequence[float]
    scale: Sequence[float]
    coef: Sequence[float]
    intercept: float
    threshold: float

    def probability(self, f: Sequence[float] | np.ndarray) -> float:
        z = (np.asarray(f, dtype=np.float64) - np.asarray(self.mean)) / np.asarray(self.scale)
        return float(sigmoid(z @ np.asarray(self.coef) + self.intercept))
