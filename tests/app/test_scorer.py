"""The fitted scorer's file (app/scorer.py): the answer and its confidence from the softmax share, or from a
calibrator stage when one is fitted (`bench/fit_reader.py calibrate`); a file fitted on other features is refused."""
from __future__ import annotations

import json

import numpy as np
import pytest

from app.features import FEATURES
from app.scorer import (
    CALIBRATION_FEATURES,
    Calibrator,
    ModelMismatch,
    ReaderModel,
    answer_key,
    answer_mass,
    calibration_features,
)


def _model(calibrator=None) -> ReaderModel:
    n = len(FEATURES)
    coef = [0.0] * n
    coef[FEATURES.index("sim")] = 2.0
    return ReaderModel(FEATURES, [0.0] * n, [1.0] * n, coef, 0.5, 0.3, form="listwise", calibrator=calibrator)


def _rows() -> tuple[np.ndarray, list[str]]:
    X = np.zeros((3, len(FEATURES)))
    X[:, FEATURES.index("sim")] = [0.9, 0.2, 0.1]
    X[:, FEATURES.index("cov")] = [0.5, 0.0, 0.0]
    return X, ["Revenue was 530.", "Costs were 12.", "A heading"]


def test_without_a_calibrator_the_confidence_is_the_answer_s_share_and_the_threshold_the_model_s():
    m = _model()
    X, lines = _rows()
    j, conf, threshold = m.decide(X, lines)
    assert (j, conf) == answer_mass(m.probabilities(X), [answer_key(x) for x in lines]) and threshold == 0.3
    assert m.decide(np.zeros((0, len(FEATURES))), []) == (-1, 0.0, 0.3)


def test_a_calibrator_reads_the_whole_question_and_holds_the_answer_to_its_own_threshold():
    k = len(CALIBRATION_FEATURES)
    coef = [0.0] * k
    coef[CALIBRATION_FEATURES.index("sim_margin")] = 3.0  # sure when the answer stands out from the next candidate
    cal = Calibrator(CALIBRATION_FEATURES, [0.0] * k, [1.0] * k, coef, -1.0, 0.45)
    m = _model(cal)
    X, lines = _rows()
    j, conf, threshold = m.decide(X, lines)
    f = calibration_features(X, m.logits(X), j, answer_mass(m.probabilities(X), lines)[1], FEATURES)
    assert j == 0 and threshold == 0.45
    assert f[CALIBRATION_FEATURES.index("sim_margin")] == pytest.approx(0.7)
    assert conf == pytest.approx(1 / (1 + np.exp(-(3.0 * 0.7 - 1.0))))
    X[:, FEATURES.index("sim")] = [0.9, 0.85, 0.1]  # the runner-up as close to the question: less sure
    assert m.decide(X, lines)[1] < conf


def test_a_calibrator_round_trips_through_the_file_and_one_fitted_on_other_features_is_refused():
    k = len(CALIBRATION_FEATURES)
    m = _model(Calibrator(CALIBRATION_FEATURES, [0.0] * k, [1.0] * k, [0.1] * k, 0.0, 0.4))
    back = ReaderModel.from_dict(json.loads(m.to_json()))
    X, lines = _rows()
    assert back.decide(X, lines) == m.decide(X, lines)
    d = json.loads(m.to_json())
    d["calibrator"]["features"] = list(CALIBRATION_FEATURES[:-1]) + ["log_candidates"]
    with pytest.raises(ModelMismatch, match="calibrate"):
        ReaderModel.from_dict(d)


def test_an_answer_s_confidence_counts_the_candidates_that_quote_it_or_that_it_quotes():
    s1 = "Which port to listen on."
    s2 = "Default: 6432."
    other = "The maximum number of client connections allowed."
    lines = [s1, f"{s1} {s2}", s2, other, f"{other} {s1}"]
    probs = [0.30, 0.20, 0.05, 0.25, 0.10]
    keys = [answer_key(x) for x in lines]
    j, conf = answer_mass(probs, keys)
    # the answer is the most probable line; its confidence adds both windows that quote it, not the sentence that
    # only shares a window with it nor the unrelated one; what is shown is the likelier of those windows, the one
    # that says what the sentence asks ("Default: 6432.")
    assert lines[j] == f"{s1} {s2}" and conf == pytest.approx(0.30 + 0.20 + 0.10)
    # with no window holding it, the sentence itself
    assert answer_mass([0.3, 0.1, 0.2], [s1, s2, other]) == (0, 0.3)
    # a window's confidence holds its two sentences, not the other window that shares one of them
    j, conf = answer_mass([0.1, 0.5, 0.05, 0.25, 0.1], keys)
    assert j == 1 and conf == pytest.approx(0.1 + 0.5 + 0.05)
    # word for word, not characters: "6" is not quoted by "6432"
    assert answer_mass([0.4, 0.3], ["default: 6", "default: 6432."]) == (0, 0.4)
