"""The fitted scorer: which candidate answers, and how sure the answer is.

A linear model over the named features of :mod:`app.features`, fitted on the train split of the answers corpus
(``bench/fit_reader.py``) and shipped as ``app/data/reader_model.json``: the feature names, their standardisation,
the weights, its ``form``, and the **threshold** on the answer's confidence below which the reply abstains, chosen on
the dev split for a target precision of the answers given. Two forms are fitted and the better on dev is shipped:
``pointwise``, a logistic regression per candidate (a candidate's probability is its sigmoid), and ``listwise``, a
conditional logit over one question's candidates and a "none of them" option whose score is the intercept, plus
``none_slope`` × the log of the number of candidates when that is fitted (a candidate's probability is its share of
the softmax, "none" included). With the LM check (:mod:`app.checker`) on, a
second small fit combines the scorer's score with the LM's yes/no margin for the top candidates, with its own
threshold. The file's ``card`` says what it was fitted on, when, with which command, and what it scored on dev.

>>> m = ReaderModel(("a", "b"), [0.0, 0.0], [1.0, 1.0], [2.0, -1.0], 0.0, 0.5)
>>> [round(p, 3) for p in m.probabilities(np.array([[1.0, 0.0], [0.0, 1.0]]))]
[0.881, 0.269]
"""
from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from app.logistic import LogisticStage, sigmoid

MODEL_PATH = Path(__file__).resolve().parent / "data" / "reader_model.json"


@dataclass
class CheckStage:
    """The LM check's stage: the top ``top_k`` candidates that say different things re-scored by ``w_score`` × the
    log-odds of the scorer's share (its probability, "none of them" included) + ``w_lm`` × the LM's yes-minus-no
    log-probability + ``intercept``; ``threshold`` on the result's probability."""

    top_k: int
    w_score: float
    w_lm: float
    intercept: float
    threshold: float

    def probability(self, share: float, lm_margin: float) -> float:
        return float(sigmoid(np.asarray(self.w_score * log_odds(share) + self.w_lm * lm_margin + self.intercept)))


SHARE_EPS = 1e-6  # a share of 0 or 1 has no finite log-odds: clipped this far inside


def log_odds(p: float) -> float:
    """log(p / (1 − p)), ``p`` clipped to [SHARE_EPS, 1 − SHARE_EPS].

    >>> round(log_odds(0.5), 6), round(log_odds(0.9), 3)
    (0.0, 2.197)
    """
    p = min(max(float(p), SHARE_EPS), 1 - SHARE_EPS)
    return float(np.log(p / (1 - p)))


# not the number of candidates: in the training data a short context is mostly a 300-word cut of a longer one
# (bench/fit_reader.py --budget-words) that often cuts the answer away, so it would teach "a short document is
# less sure" -- and a one-page report's plain table figure was refused
CALIBRATION_FEATURES = ("log_confidence", "answer_logit", "logit_margin", "answer_sim", "max_sim", "sim_margin",
                        "answer_cov", "max_cov", "answer_kind_fit", "answer_period_other", "answer_ent_doc")


def calibration_features(X: np.ndarray, logits: np.ndarray, j: int, confidence: float,
                         features: Sequence[str]) -> np.ndarray:
    """What the calibrator reads of one question's candidates: the scorer's confidence in the answer ``j`` (log), its
    score and its margin over the next best, how close the answer and the closest candidate come to the question
    (cosine and key-term coverage) and how far the answer stands out, and the answer's kind fit, other-period and
    document-name signals."""
    X = np.asarray(X, dtype=np.float64)
    at = {f: i for i, f in enumerate(features)}
    order = np.sort(logits)[::-1]
    sim, cov = X[:, at["sim"]], X[:, at["cov"]]
    sims = np.sort(sim)[::-1]
    return np.array([np.log(confidence + 1e-6), logits[j], logits[j] - (order[1] if len(order) > 1 else order[0] - 5),
                     sim[j], sim.max(), sim[j] - sims[min(1, len(sims) - 1)], cov[j], cov.max(),
                     X[j, at["kind_fit"]], X[j, at["period_other"]], X[j, at["ent_doc"]]])


@dataclass
class Calibrator(LogisticStage):
    """How sure the answer is, read from the whole question (:func:`calibration_features`) rather than from the
    answer's share of the scorer's softmax alone: a logistic regression fitted on the train split (the answer right
    or not), its ``threshold`` chosen on dev. The softmax share falls when the question's words are not the
    document's (a reworded question's right answer: median 0.27 against 0.56 as written) while the answer still
    stands out among the candidates; this stage reads both."""


@dataclass
class ReaderModel:
    features: Sequence[str]
    mean: Sequence[float]
    scale: Sequence[float]
    coef: Sequence[float]
    intercept: float
    threshold: float  # abstain below this confidence (chosen on dev)
    check: CheckStage | None = None
    card: dict = field(default_factory=dict)
    form: str = "pointwise"
    none_slope: float = 0.0  # listwise: "none" scores intercept + none_slope × log(number of candidates)
    calibrator: Calibrator | None = None  # when fitted: the confidence and the threshold are its

    def decide(self, X: np.ndarray, lines: Sequence[str], probs: Sequence[float] | None = None
               ) -> tuple[int, float, float]:
        """(the candidate that answers, the confidence in its answer, the threshold it is held to) for one
        question's candidates (feature rows ``X``, answer lines ``lines``; ``probs``: their :meth:`probabilities`
        when the caller has them): :func:`answer_mass` over the scorer's probabilities, then the calibrator's reading
        of the question when one is fitted."""
        X = np.asarray(X, dtype=np.float64)
        if X.size == 0:
            return -1, 0.0, self.threshold
        j, conf = answer_mass(self.probabilities(X) if probs is None else probs, [answer_key(x) for x in lines])
        if self.calibrator is None:
            return j, conf, self.threshold
        f = calibration_features(X, self.logits(X), j, conf, self.features)
        return j, round(self.calibrator.probability(f), 12), self.calibrator.threshold

    def logits(self, X: np.ndarray) -> np.ndarray:
        """Each candidate's score (log-odds for ``pointwise``; for ``listwise``, against "none" at 0)."""
        X = np.asarray(X, dtype=np.float64)
        if X.size == 0:
            return np.zeros(0)
        z = (X - np.asarray(self.mean)) / np.asarray(self.scale)
        if self.form == "pointwise":
            return z @ np.asarray(self.coef) + self.intercept
        return z @ np.asarray(self.coef) - self.intercept - self.none_slope * np.log(len(X))

    def probabilities(self, X: np.ndarray) -> list[float]:
        s = self.logits(X)
        if self.form == "pointwise" or s.size == 0:
            return sigmoid(s).tolist()
        m = max(float(s.max()), 0.0)
        e = np.exp(s - m)
        return (e / (e.sum() + np.exp(-m))).tolist()

    def to_json(self) -> str:
        d = asdict(self)
        d["features"] = list(self.features)
        if self.calibrator is not None:
            d["calibrator"]["features"] = list(self.calibrator.features)
        return json.dumps(d, indent=1)

    @classmethod
    def from_dict(cls, d: dict) -> ReaderModel:
        check = CheckStage(**d["check"]) if d.get("check") else None
        cal = d.get("calibrator")
        if cal is not None:
            cal = Calibrator(tuple(cal["features"]), cal["mean"], cal["scale"], cal["coef"], float(cal["intercept"]),
                             float(cal["threshold"]))
            if tuple(cal.features) != CALIBRATION_FEATURES:
                raise ModelMismatch(f"the reader's calibrator was fitted on other features than the code computes "
                                    f"({sorted(set(cal.features) ^ set(CALIBRATION_FEATURES))}): refit it with "
                                    "`python bench/fit_reader.py calibrate`")
        return cls(tuple(d["features"]), d["mean"], d["scale"], d["coef"], float(d["intercept"]),
                   float(d["threshold"]), check, d.get("card", {}), d.get("form", "pointwise"),
                   float(d.get("none_slope", 0.0)), cal)


def answer_key(line: str) -> str:
    """What makes two candidates one answer: the same answer line, case and spacing aside."""
    return " ".join(line.lower().split())[:300]


def holds(outer: str, inner: str) -> bool:
    """Does answer line ``outer`` hold all of ``inner``, word for word (both :func:`answer_key`, so both cut at 300
    characters: the second sentence of a long window is not seen in it)? An empty line holds nothing.

    >>> holds("gross margin was down. pay rates rose.", "gross margin was down."), holds("a 20 b", "2")
    (True, False)
    """
    return bool(inner.strip()) and f" {inner} " in f" {outer} "


def answer_mass(probs: Sequence[float], keys: Sequence[str]) -> tuple[int, float]:
    """(the candidate shown as the answer, the confidence in its answer): candidates that give the same answer line
    (one sentence in two copies of a file, a figure printed twice) are one answer, and the answer with the most
    probability is chosen. Its confidence is the probability of every candidate that quotes it or that it quotes
    (:func:`holds`: a sentence and the two-sentence windows around it), capped at 1: the scorer's share of one answer
    is spread over the candidates that hold its words, and the fit's objective counts a question as answered by any
    of its positive candidates. What is shown is what that confidence is about: the likeliest candidate that quotes
    the answer with more words (the window holding a sentence: "Gross margin was down 190 basis points." is shown with
    the sentence after it, which says why), else the answer's own most probable candidate.

    >>> answer_mass([0.3, 0.2, 0.2, 0.2], ["a", "b", "b", "b"])
    (1, 0.6)
    >>> answer_mass([0.3, 0.2, 0.1], ["x.", "w. x.", "z."])
    (1, 0.5)
    >>> answer_mass([0.3, 0.2, 0.1], ["x. y.", "x.", "z."])
    (0, 0.5)
    """
    if not len(probs):
        return -1, 0.0
    mass: dict[str, float] = {}
    for p, k in zip(probs, keys):
        mass[k] = mass.get(k, 0.0) + float(p)
    best_key = max(mass, key=lambda k: (mass[k], max(p for p, kk in zip(probs, keys) if kk == k)))
    outer = [i for i, k in enumerate(keys) if k != best_key and holds(k, best_key)]
    j = max(outer or (i for i, k in enumerate(keys) if k == best_key), key=lambda i: probs[i])
    held = sum(m for k, m in mass.items() if k == best_key or holds(k, best_key) or holds(best_key, k))
    return j, round(min(1.0, held), 12)


class ModelMismatch(ValueError):
    pass


@functools.cache
def load(path: str | None = None) -> ReaderModel:
    """The shipped model (or the one at ``path``); its features must be :data:`app.features.FEATURES`."""
    from app.features import FEATURES

    p = Path(path) if path else MODEL_PATH
    m = ReaderModel.from_dict(json.loads(p.read_text(encoding="utf-8")))
    if tuple(m.features) != tuple(FEATURES):
        raise ModelMismatch(f"the reader's model ({p.name}) was fitted on other features than the code computes "
                            f"({sorted(set(m.features) ^ set(FEATURES))}): refit it with `python bench/fit_reader.py`")
    return m
