"""Fit the reader's scorer (``app/data/reader_model.json``) on the train split, choose it and its threshold on dev.

``collect`` runs the product's own path up to the reader for every row of a split (the question read once, routing,
retrieval, the table lookup: :func:`app.evidence.gather`), builds the candidates and their features exactly as the
product does (:func:`app.features.featurize` with :meth:`app.synth.extractive.ExtractiveSynthesizer.signals`) and
labels each candidate: it answers when its answer line gives a reference answer (``bench/answers_real.gives``; a
short answer such as "3" only in a sentence that overlaps the row's evidence). A follow-up is read after its first
question, with the first's reference answer as the reply it got.

``fit`` fits the candidate models on the train rows' candidates and picks one on dev:

* ``pointwise``: a logistic regression per candidate (scikit-learn), L2 strength C from a small grid;
* ``listwise``: a conditional logit over each question's candidates and a "none of them" option, so that one
  question's many candidates count as one decision and its confidence is the share of the best one;

each scored on dev by the share of answerable rows answered right at the threshold that gives the target precision of
the answers given (right / answered, over answerable and unanswerable rows). The chosen model is written with its
threshold and a card (data, counts, dev figures, the command).

    python bench/fit_reader.py collect --data DATA --split train --out /work/devdata/fit/train.json
    python bench/fit_reader.py collect --data DATA --split dev --out /work/devdata/fit/dev.json
    python bench/fit_reader.py collect --data FILINGS --rows bench/data/filings_qa.jsonl --root KGRAG \\
        --out /work/devdata/fit/filings.json
    python bench/fit_reader.py fit --train /work/devdata/fit/train.json,/work/devdata/fit/filings.json \\
        --dev /work/devdata/fit/dev.json
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import time
from pathlib import Path

import common as B  # noqa: F401  (project root on sys.path, offline flags)
import numpy as np
from answers_real import gives
from qa_set import CORPUS, DATA, load

from app.scorer import answer_key, answer_mass, log_odds

# of the answers given: the operating point the threshold is chosen for on dev. The issue asked for 85-90%; at 0.85
# the fitted scorer answers 26% of dev's answerable questions right (the reader of 3cd4e12: 40%) and the product is
# silent again; at 0.70 it answers 37% right and still abstains on 85% of the unanswerable (3cd4e12: 51%), so 0.70
# is the point shipped (BENCHMARKS "Answers across kinds of documents" shows both).
TARGET_PRECISION = 0.70
MODEL_OUT = Path(__file__).resolve().parents[1] / "app" / "data" / "reader_model.json"
CARD_OUT = Path(__file__).resolve().parent / "results" / "reader_fit.json"
CALIBRATOR_CARD = Path(__file__).resolve().parent / "results" / "reader_calibrator.json"


def _squash(t: str) -> str:
    return " ".join(re.sub(r"[|*_`]", " ", t).lower().split())


def near_evidence(text: str, evidence: list[dict]) -> bool:
    """Does ``text`` share a run of five words with one of the row's evidence snippets?"""
    a = _squash(text).split()
    grams = {" ".join(a[i:i + 5]) for i in range(max(0, len(a) - 4))}
    for e in evidence:
        b = _squash(e.get("text", "")).split()
        if any(" ".join(b[i:i + 5]) in grams for i in range(max(0, len(b) - 4))) or (len(b) < 5 and " ".join(b) in
                                                                                        " ".join(a)):
            return True
    return False


def label(c, row: dict) -> int:
    answers = row.get("answers") or []
    if not answers or not gives(c.line, answers):
        return 0
    short = all(len(re.sub(r"\W", "", a)) <= 3 for a in answers)
    if short and c.cell is None and row.get("evidence") and not near_evidence(c.text, row["evidence"]):
        return 0
    return 1


def scope_of(row: dict, docs_by_kind: dict[str, list[str]]) -> list[str]:
    if row.get("scope", "doc") == "doc":
        return [row["doc"]]
    return docs_by_kind[row.get("kind") or row.get("collection")]


def cmd_collect(a) -> None:
    from app.answer import AskOptions
    from app.candidates import candidates
    from app.checker import passage_of
    from app.context import AppContext
    from app.evidence import gather
    from app.features import FEATURES, featurize
    from app.question import read_question
    from app.synth import make_synthesizer
    from core.settings import Settings

    if a.rows:
        rows = load(Path(a.rows))
        if a.split and any("split" in r for r in rows):  # a row file of the corpus (paraphrased.jsonl): one split
            rows = [r for r in rows if r.get("split") in a.split.split(",")]
        for r in rows:
            r.setdefault("kind", r.get("collection", "sec-10-q/data/v1/docs"))
            r.setdefault("split", "train")
    else:
        rows = [r for s in a.split.split(",") for r in load(DATA / f"{s}.jsonl")]
    ctx = AppContext(Settings(data_dir=Path(a.data)))
    have = {d["doc_id"] for d in ctx.catalog.documents(ctx.catalog.live_gen())}
    docs_by_kind: dict[str, list[str]] = {}
    for r in rows:
        k = r["kind"]
        if k in docs_by_kind:
            continue
        folder = (Path(a.root) / k) if a.rows and a.root else (CORPUS / "docs" / k)
        docs_by_kind[k] = sorted(p.name for p in folder.iterdir() if p.name in have)
    synth = make_synthesizer("extractive", ctx)
    by_id = {r["id"]: r for r in rows}
    out = []
    t0 = time.time()
    try:
        for i, r in enumerate(rows):
            history = []
            first = by_id.get(r.get("followup_of") or "")
            if first is not None:
                history = [{"role": "user", "content": first["question"]},
                           {"role": "assistant", "content": (first.get("answers") or ["The documents do not say."])[0]}]
            q = read_question(r["question"], history)
            gathered = None
            for ev in gather(ctx, q, AskOptions(doc_ids=scope_of(r, docs_by_kind), budget_words=a.budget_words)):
                if ev[0] == "gathered":
                    gathered = ev[1]
            routed, retrieval, extra = gathered
            sources = retrieval.sources
            cands = candidates(q, sources, synth._doc_text, extra) if sources else []
            looked = {getattr(s, "rank", 0): s for _, s in extra}
            X = featurize(q, cands, list(sources) + list(looked.values()), synth.signals(list(sources) +
                                                                                          list(looked.values())))
            y = [label(c, r) for c in cands]
            in_context = bool(r.get("answers")) and gives(" ".join(s.text for s in sources), r["answers"])
            out.append({"id": r["id"], "kind": r["kind"], "split": r.get("split", ""), "doc": r["doc"],
                        "answerable": bool(r.get("answers")), "in_context": in_context,
                        "routed": (routed.doc_ids if routed is not None else None),
                        "X": np.round(X, 5).tolist(), "y": y,
                        "question": r["question"], "lines": [c.line[:300] for c in cands],
                        "passages": [passage_of(c)[:1500] for c in cands], "kinds": [c.kind for c in cands]})
            if i % 20 == 0:
                print(f"{i}/{len(rows)} {time.time() - t0:.0f}s {r['id']} cands={len(cands)} pos={sum(y)}",
                      flush=True)
    finally:
        ctx.close()
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({"features": list(FEATURES), "rows": out}))
    print(f"{len(out)} rows -> {a.out}")


# -- fitting -------------------------------------------------------------------------------------------------------
def load_sets(paths: str) -> list[dict]:
    rows = []
    for p in paths.split(","):
        if p:
            rows += json.loads(Path(p).read_text())["rows"]
    return rows


def without_windows(rows: list[dict], features: list[str]) -> list[dict]:
    """The rows with their two-sentence window candidates left out (``fit --without-windows``: the same collection
    read as the reader had it before windows were candidates, to measure what they add)."""
    i = features.index("is_window")
    out = []
    for r in rows:
        keep = [j for j, x in enumerate(r["X"]) if x[i] == 0]
        out.append({**r, **{k: [r[k][j] for j in keep] for k in ("X", "y", "lines", "passages", "kinds") if k in r}})
    return out


def standardise(rows: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    X = np.concatenate([np.asarray(r["X"], dtype=np.float64) for r in rows if r["X"]])
    mean, scale = X.mean(axis=0), X.std(axis=0)
    scale[scale < 1e-6] = 1.0
    return mean, scale


def fit_pointwise(rows: list[dict], mean, scale, C: float, balanced: bool) -> tuple[np.ndarray, float]:
    from sklearn.linear_model import LogisticRegression

    Xs, ys, ws = [], [], []
    for r in rows:
        if not r["X"]:
            continue
        X = (np.asarray(r["X"]) - mean) / scale
        Xs.append(X)
        ys.append(np.asarray(r["y"]))
        ws.append(np.full(len(X), 1.0 / len(X) if balanced else 1.0))
    X, y, w = np.concatenate(Xs), np.concatenate(ys), np.concatenate(ws)
    m = LogisticRegression(C=C, max_iter=2000)
    m.fit(X, y, sample_weight=w / w.mean())
    return m.coef_[0], float(m.intercept_[0])


def fit_listwise(rows: list[dict], mean, scale, l2: float, by_size: bool = False) -> tuple[np.ndarray, float, float]:
    """A conditional logit with a "none" option of score ``b`` (+ ``beta`` × log of the number of candidates, with
    ``by_size``): P(j) = exp(w·x_j) / (exp(b + beta·log n) + Σ exp(w·x_k)); a question is explained by its positive
    candidates, or by "none" when it has none. Without ``by_size`` "none" competes with the sum over all candidates
    at one score, so a question with few candidates (a short document) gets a low confidence whatever they say."""
    from scipy.optimize import minimize

    qs = [((np.asarray(r["X"]) - mean) / scale, np.asarray(r["y"], dtype=bool)) for r in rows if r["X"]]
    d = len(mean)

    def loss(theta):
        w, b0, beta = theta[:d], theta[d], (theta[d + 1] if by_size else 0.0)
        total, grad = 0.0, np.zeros(len(theta))
        for X, pos in qs:
            s = X @ w
            ln = np.log(len(X))
            b = b0 + beta * ln
            m = max(s.max(), b)
            e = np.exp(s - m)
            eb = np.exp(b - m)
            z = e.sum() + eb
            p, pb = e / z, eb / z
            if pos.any():
                num = e[pos].sum()
                total -= np.log(num / z)
                q = np.where(pos, e / num, 0.0)
                grad[:d] -= X.T @ (q - p)
                gb = -pb
            else:
                total -= np.log(pb)
                grad[:d] -= X.T @ (-p)
                gb = 1 - pb
            grad[d] -= gb
            if by_size:
                grad[d + 1] -= gb * ln
        total += l2 * (w @ w)
        grad[:d] += 2 * l2 * w
        return total / len(qs), grad / len(qs)

    res = minimize(loss, np.zeros(d + 1 + by_size), jac=True, method="L-BFGS-B", options={"maxiter": 500})
    return res.x[:d], float(res.x[d]), (float(res.x[d + 1]) if by_size else 0.0)


def decisions(rows: list[dict], mean, scale, coef, intercept, form: str,
              beta: float = 0.0) -> list[tuple[float, int, bool]]:
    """(confidence, right, answerable) of each row's best candidate."""
    out = []
    for r in rows:
        if not r["X"]:
            out.append((0.0, 0, r["answerable"]))
            continue
        s = ((np.asarray(r["X"]) - mean) / scale) @ coef
        if form == "listwise":
            b = intercept + beta * np.log(len(s))
            m = max(s.max(), b)
            p = np.exp(s - m) / (np.exp(s - m).sum() + np.exp(b - m))
        else:
            p = 1 / (1 + np.exp(-(s + intercept)))
        # as the reader decides: candidates giving the same answer line are one answer (app.scorer.answer_mass)
        j, conf = answer_mass(p.tolist(), [answer_key(x) for x in r["lines"]])
        out.append((conf, int(r["y"][j]), r["answerable"]))
    return out


def operating_point(dec: list[tuple[float, int, bool]], target: float = TARGET_PRECISION) -> dict:
    """The lowest threshold whose answers given are at least ``target`` right (precision), and what it gives."""
    n_ans = sum(a for _, _, a in dec) or 1
    n_un = sum(not a for _, _, a in dec) or 1
    best = None
    for t in sorted({c for c, _, _ in dec} | {1.01}):
        given = [(c, ok, a) for c, ok, a in dec if c >= t]
        right = sum(ok for _, ok, a in given if a)
        prec = right / len(given) if given else 1.0
        if prec >= target:
            best = {"threshold": t, "precision": round(prec, 3), "right": right, "right_share": round(right / n_ans, 3),
                    "unanswerable_abstained": round(1 - sum(1 for _, _, a in given if not a) / n_un, 3),
                    "given": len(given)}
            break
    top1 = sum(ok for _, ok, a in dec if a) / n_ans
    return {"top1_right": round(top1, 3), **(best or {})}


def fit_grid(train: list[dict]) -> tuple[np.ndarray, np.ndarray, list[tuple]]:
    """The standardisation of the train rows and every model of the grid fitted on them: three pointwise L2 strengths,
    each with and without balanced questions, and three listwise ones; each as (form, params, coef, intercept, none
    slope)."""
    mean, scale = standardise(train)
    tried = []
    for C in (0.01, 0.1, 1.0):
        for balanced in (False, True):
            coef, b = fit_pointwise(train, mean, scale, C, balanced)
            tried.append(("pointwise", {"C": C, "balanced": balanced}, coef, b, 0.0))
    # "none" at one score only: the short contexts of the training data are 300-word cuts of longer documents that
    # often cut the answer away, so a size-dependent "none" learns that a short document is less sure (the note on
    # app.scorer.CALIBRATION_FEATURES); with two-sentence windows it won dev's tie-break by one question and then
    # refused the plain answers of two- and three-sentence documents (tests/app/test_answer_grounding.py)
    for l2 in (0.001, 0.01, 0.1):
        coef, b, beta = fit_listwise(train, mean, scale, l2, False)
        tried.append(("listwise", {"l2": l2, "none_by_size": False}, coef, b, beta))
    return mean, scale, tried


def cmd_fit(a) -> None:
    from app.features import FEATURES
    from app.scorer import ReaderModel

    train, dev = load_sets(a.train), load_sets(a.dev)
    if a.without_windows:
        train, dev = without_windows(train, list(FEATURES)), without_windows(dev, list(FEATURES))
    mean, scale, tried = fit_grid(train)
    scored = []
    for form, params, coef, b, beta in tried:
        op_dev = operating_point(decisions(dev, mean, scale, coef, b, form, beta), a.target)
        op_train = operating_point(decisions(train, mean, scale, coef, b, form, beta), a.target)
        scored.append((op_dev.get("right_share", 0.0), op_dev["top1_right"], form, params, coef, b, beta, op_dev,
                       op_train))
        print(f"{form:9s} {json.dumps(params):44s} dev {json.dumps(op_dev)}  train top1 {op_train['top1_right']}")
    scored.sort(key=lambda x: (-x[0], -x[1]))
    _, _, form, params, coef, b, beta, op_dev, op_train = scored[0]
    print("chosen:", form, params)
    for f, w in sorted(zip(FEATURES, coef), key=lambda x: -abs(x[1])):
        print(f"  {f:16s} {w:+.3f}")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dec_dev = decisions(dev, mean, scale, coef, b, form, beta)
    sweep = {f"{t:.2f}": operating_point(dec_dev, t) for t in (0.6, 0.7, 0.75, 0.8, 0.85, 0.9)}
    card = {"fitted_on": a.train, "chosen_on": a.dev, "form": form, "params": params, "dev_sweep": sweep,
            "target_precision": a.target, "train_rows": len(train), "dev_rows": len(dev),
            "train_candidates": int(sum(len(r["X"]) for r in train)), "dev": op_dev, "train": op_train,
            "command": "python bench/fit_reader.py fit --train " + a.train + " --dev " + a.dev
                       + (" --without-windows" if a.without_windows else ""),
            "commit": commit, "date": time.strftime("%Y-%m-%d")}
    model = ReaderModel(tuple(FEATURES), mean.round(6).tolist(), scale.round(6).tolist(), coef.round(6).tolist(),
                        round(b, 6), float(op_dev.get("threshold", 1.01)), None, card, form, round(beta, 6))
    Path(a.out).write_text(model.to_json() + "\n")
    Path(a.card).write_text(json.dumps(card, indent=1) + "\n")  # the docs' figures read it from bench/results
    print(f"-> {a.out}, {a.card}")


def cmd_calibrate(a) -> None:
    """The calibrator stage (:class:`app.scorer.Calibrator`): a logistic regression over each question's
    :func:`app.scorer.calibration_features` of the scorer's answer (label: the answer is right), fitted on the train
    rows with L2 strength C from 0.01, 0.1, 1; the C and the threshold chosen on the dev rows (the most right answers
    at the target precision among the strengths that abstain on at least ``--min-unanswerable`` of the unanswerable
    rows, the issue's goal; a tie: the fewer wrong, then the stronger L2). Written into the model file (``--out``),
    its card to ``--card``."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    from app.scorer import CALIBRATION_FEATURES, Calibrator, ReaderModel, calibration_features

    model = ReaderModel.from_dict(json.loads(Path(a.out).read_text()))
    model.calibrator = None

    def rows_features(rows):
        """(calibration features or None, the answer right, answerable, the scorer's own confidence) per row."""
        out = []
        for r in rows:
            if not r["X"]:
                out.append((None, 0, r["answerable"], 0.0))
                continue
            X = np.asarray(r["X"], dtype=np.float64)
            j, conf, _ = model.decide(X, r["lines"])
            out.append((calibration_features(X, model.logits(X), j, conf, model.features), int(r["y"][j]),
                        r["answerable"], conf))
        return out

    train, dev = rows_features(load_sets(a.train)), rows_features(load_sets(a.dev))
    Xt = np.array([f for f, _, _, _ in train if f is not None])
    yt = np.array([int(ok and ans) for f, ok, ans, _ in train if f is not None])
    sc = StandardScaler().fit(Xt)
    scale = np.where(sc.scale_ < 1e-6, 1.0, sc.scale_)
    tried = []
    for C in (0.01, 0.1, 1.0):
        lr = LogisticRegression(C=C, max_iter=2000).fit((Xt - sc.mean_) / scale, yt)
        cal = Calibrator(CALIBRATION_FEATURES, sc.mean_.round(6).tolist(), scale.round(6).tolist(),
                         lr.coef_[0].round(6).tolist(), round(float(lr.intercept_[0]), 6), 1.01)
        dec = [(cal.probability(f) if f is not None else 0.0, ok, ans) for f, ok, ans, _ in dev]
        op = operating_point(dec, a.target)
        given = [(ok, ans) for c, ok, ans in dec if c >= op.get("threshold", 1.01)]
        wrong = sum(1 for ok, ans in given if not (ok and ans))
        tried.append((op.get("right", 0), -wrong, -C, C, cal, op, wrong))
        print(f"C {C}: dev {json.dumps(op)} wrong {wrong}", flush=True)
    # issue 46's other goal is a constraint: among the strengths that still abstain on at least MIN_UNANSWERABLE of
    # the choosing rows' unanswerable questions (all of them when none does), the most right answers
    ok = [t for t in tried if t[5].get("unanswerable_abstained", 0.0) >= a.min_unanswerable] or tried
    ok.sort(key=lambda t: t[:3], reverse=True)
    _, _, _, C, cal, op, wrong = ok[0]
    cal.threshold = float(op.get("threshold", 1.01))
    before = operating_point([(conf, ok, ans) for _, ok, ans, conf in dev], a.target)
    model.calibrator = cal
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    card = {"fitted_on": a.train, "chosen_on": a.dev, "C": C, "target_precision": a.target,
            "min_unanswerable_abstained": a.min_unanswerable, "dev": op,
            "dev_wrong": wrong, "dev_without_calibrator": before, "tried": [{"C": t[3], "dev": t[5], "wrong": t[6]}
                                                                             for t in tried],
            "weights": dict(zip(CALIBRATION_FEATURES, cal.coef)),
            "command": f"python bench/fit_reader.py calibrate --train {a.train} --dev {a.dev}",
            "commit": commit, "date": time.strftime("%Y-%m-%d")}
    model.card = {**model.card, "calibrator": {k: card[k] for k in ("fitted_on", "chosen_on", "C", "dev", "command")}}
    Path(a.out).write_text(model.to_json() + "\n")
    Path(a.card).write_text(json.dumps(card, indent=1) + "\n")
    print(f"chosen C {C}: dev {json.dumps(op)}; without the calibrator {json.dumps(before)} -> {a.out}, {a.card}")


def checked_top(r: dict, probs: np.ndarray, top_k: int) -> list[int]:
    """The candidates of row ``r`` the LM checks, as the reader picks them from the scorer's probabilities
    ``probs``: the first ``top_k`` that say different things (:func:`app.reader.first_distinct`)."""
    from app.reader import first_distinct

    first, _ = answer_mass(probs.tolist(), [answer_key(x) for x in r["lines"]])
    order = [first] + [int(j) for j in np.argsort(-probs, kind="stable") if j != first]
    return [order[j] for j in first_distinct([r["lines"][i] for i in order], top_k)]


def check_samples(rows: list[dict], lm: dict, model, top_k: int) -> list[dict]:
    """Per row with LM margins for its ``top_k`` checked candidates (:func:`checked_top`): the log-odds of their
    stage-1 shares, margins, labels and check seconds.
    A row with no candidate is kept as an abstention (``empty``) so that every stage is read over the same rows."""
    out = []
    for r in rows:
        if not r["X"]:
            out.append({"id": r["id"], "empty": True, "answerable": r["answerable"], "kind": r.get("kind", "")})
            continue
        got = lm.get(r["id"])
        if got is None:
            continue
        probs = np.asarray(model.probabilities(np.asarray(r["X"])))
        margins = got["margins"] if "top" not in got else dict(zip(map(str, got["top"]), got["margins"]))
        seconds = _per_candidate(got, "seconds")
        top = checked_top(r, probs, top_k)
        if not all(str(j) in margins for j in top):
            continue
        out.append({"id": r["id"], "top": top, "answerable": r["answerable"], "kind": r.get("kind", ""),
                    "s": [log_odds(probs[j]) for j in top], "m": [margins[str(j)] for j in top],
                    "y": [r["y"][j] for j in top], "seconds": sum(float(seconds.get(str(j), 0.0)) for j in top),
                    "conf1": float(probs[top[0]])})
    return out


def check_decisions(samples: list[dict], w: tuple[float, float, float]) -> list[tuple[float, int, bool]]:
    """(confidence, right, answerable) of each row as the reader decides with a check stage of weights ``w``."""
    out = []
    for x in samples:
        if x.get("empty"):
            out.append((0.0, 0, x["answerable"]))
            continue
        p = [1 / (1 + np.exp(-(w[0] * s + w[1] * m + w[2]))) for s, m in zip(x["s"], x["m"])]
        j = int(np.argmax(p))
        out.append((float(p[j]), int(x["y"][j]), x["answerable"]))
    return out


def scorer_decisions(samples: list[dict]) -> list[tuple[float, int, bool]]:
    return [(0.0, 0, x["answerable"]) if x.get("empty") else (x["conf1"], x["y"][0], x["answerable"])
            for x in samples]


def by_kind(samples: list[dict], dec: list[tuple[float, int, bool]], threshold: float) -> dict:
    """Right answers at ``threshold`` per kind of document (answerable rows)."""
    out: dict[str, list[int]] = {}
    for x, (c, ok, a) in zip(samples, dec):
        if a:
            k = out.setdefault(x["kind"], [0, 0])
            k[0] += int(ok and c >= threshold)
            k[1] += 1
    return {k: {"right": v[0], "answerable": v[1]} for k, v in sorted(out.items())}


def cmd_fit_check(a) -> None:
    """The LM check's stage on top of the shipped stage-1 model: a logistic regression on (log-odds of the stage-1
    share, LM margin) of each row's top k checked candidates, fitted on train for every k of ``--top-k`` (a comma
    list) and L2 strength, read on dev at the target precision; the variant with the most dev answers right
    (unanswerable abstained at least ``--min-unanswerable``; ties: fewer checks) is chosen. The card (``--card``)
    keeps every variant with its check seconds per question; ``--write`` puts the chosen stage into the model file
    (``--out``)."""
    from sklearn.linear_model import LogisticRegression

    from app.scorer import CheckStage, ReaderModel

    model = ReaderModel.from_dict(json.loads(Path(a.out).read_text()))
    lm = {}
    for p in a.lm.split(","):
        lm.update(json.loads(Path(p).read_text()))
    ks = [int(k) for k in str(a.top_k).split(",")]
    train_rows, dev_rows = load_sets(a.train), load_sets(a.dev)
    variants = []
    for k in ks:
        train = check_samples(train_rows, lm, model, k)
        dev = check_samples(dev_rows, lm, model, k)
        X = np.array([[s, m] for x in train if not x.get("empty") for s, m in zip(x["s"], x["m"])])
        y = np.array([v for x in train if not x.get("empty") for v in x["y"]])
        secs = _p50_p95([x["seconds"] for x in dev if not x.get("empty")])
        dec_without = scorer_decisions(dev)
        base_dev = operating_point(dec_without, a.target)
        without_by_kind = by_kind(dev, dec_without, base_dev.get("threshold", 1.01))
        for C in (0.1, 1.0, 10.0):
            lr = LogisticRegression(C=C).fit(X, y)
            w = (float(lr.coef_[0][0]), float(lr.coef_[0][1]), float(lr.intercept_[0]))
            dec_dev = check_decisions(dev, w)
            op_dev, op_train = operating_point(dec_dev, a.target), operating_point(check_decisions(train, w), a.target)
            v = {"top_k": k, "C": C, "w_score": round(w[0], 6), "w_lm": round(w[1], 6), "intercept": round(w[2], 6),
                 "train_rows": len(train), "dev_rows": len(dev), "dev": op_dev, "train": op_train,
                 "dev_without": base_dev,
                 "dev_by_kind": by_kind(dev, dec_dev, op_dev.get("threshold", 1.01)),
                 "dev_without_by_kind": without_by_kind, "check_seconds_per_question": secs}
            variants.append(v)
            print(f"k {k} C {C}: w {w[0]:+.3f} {w[1]:+.3f} {w[2]:+.3f} dev {json.dumps(op_dev)} "
                  f"(without {base_dev.get('right')}) train top1 {op_train['top1_right']} "
                  f"checks p50 {v['check_seconds_per_question'].get('p50')} s")
    ok = [v for v in variants if v["dev"].get("unanswerable_abstained", 0.0) >= a.min_unanswerable] or variants
    best = max(ok, key=lambda v: (v["dev"].get("right", 0), v["dev"]["top1_right"], -v["top_k"]))
    print("chosen:", json.dumps({k: best[k] for k in ("top_k", "C", "dev")}))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    card = {"fitted_on": a.train, "chosen_on": a.dev, "lm": a.lm, "target_precision": a.target,
            "min_unanswerable": a.min_unanswerable, "chosen": best, "variants": variants,
            "command": f"python bench/fit_reader.py fit-check --train {a.train} --dev {a.dev} --lm {a.lm} "
                       f"--top-k {a.top_k}", "commit": commit, "date": time.strftime("%Y-%m-%d")}
    Path(a.card).write_text(json.dumps(card, indent=1) + "\n")
    if a.write:
        model.check = CheckStage(best["top_k"], best["w_score"], best["w_lm"], best["intercept"],
                                 float(best["dev"].get("threshold", 1.01)))
        model.card["check"] = {k: card[k] for k in ("fitted_on", "chosen_on", "lm", "command", "commit", "date")}
        model.card["check"]["dev"] = best["dev"]
        Path(a.out).write_text(model.to_json() + "\n")
        print("->", a.out)


def _per_candidate(got: dict, key: str) -> dict:
    """A row's ``key`` values (seconds, tokens, evaluated) keyed by candidate index, from either file format."""
    if "top" in got:
        return dict(zip(map(str, got["top"]), got.get(key, [])))
    return got.get(key, {})


def _p50_p95(xs: list[float]) -> dict:
    xs = sorted(xs)
    return {"n": len(xs), "p50": round(xs[len(xs) // 2], 2), "p95": round(xs[int(len(xs) * 0.95)], 2)} if xs else {}


def cmd_lm_summary(a) -> None:
    """What the LM check does to the shipped scorer's choice on dev: for each row whose top ``k`` candidates (k = 1,
    2, 3, 5) all have a margin, the share of answerable rows whose first candidate answers, by the scorer alone and
    by the highest yes-minus-no margin among the k; and the seconds per check (p50, p95) the margins took. Each k
    also gets the seconds per question (the k checks of a row together, p50, p95) and the prompt tokens per check
    (and, where the file has them, the tokens evaluated after a reused prefix: ``lm_check.py --prefix-cache``).
    ``--lm-label`` names the LM in the output (default: the 1.5B the first margins came from)."""
    model_path = a.model or str(MODEL_OUT)
    from app.scorer import ReaderModel

    model = ReaderModel.from_dict(json.loads(Path(model_path).read_text()))
    lm = {}
    for p in a.lm.split(","):
        lm.update(json.loads(Path(p).read_text()))
    dev = load_sets(a.dev)
    command = "python bench/fit_reader.py lm-summary --lm " + a.lm + " --dev " + a.dev
    command += (" --model " + a.model if a.model else "") + (f" --lm-label '{a.lm_label}'" if a.lm_label else "")
    out = {"command": command, "model": model.card,
           "lm": a.lm_label or "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (llama-cpp-python, CPU without AVX-512, 2 threads)",
           "by_k": {}}
    for k in (1, 2, 3, 5):
        rows = [x for x in check_samples(dev, lm, model, k) if x["answerable"]]
        out["by_k"][str(k)] = {
            "answerable_rows": len(rows),
            "scorer_top1_right": round(float(np.mean([x["y"][0] for x in rows])), 3) if rows else None,
            "lm_pick_right": round(float(np.mean([x["y"][int(np.argmax(x["m"]))] for x in rows])), 3) if rows else None}
        per = [{key: [_per_candidate(lm[x["id"]], key).get(str(j)) for j in x["top"]]
                for key in ("seconds", "tokens", "evaluated")} for x in rows]
        out["by_k"][str(k)]["seconds_per_question"] = _p50_p95([sum(p["seconds"]) for p in per
                                                                if None not in p["seconds"]])
        out["by_k"][str(k)]["tokens_per_check"] = _p50_p95([t for p in per for t in p["tokens"] if t is not None])
        evaluated = [t for p in per for t in p["evaluated"] if t is not None]
        if evaluated:
            out["by_k"][str(k)]["evaluated_tokens_per_check"] = _p50_p95(evaluated)
    secs = sorted(v for r in lm.values() for v in r.get("seconds", {}).values())
    out["seconds_per_check"] = _p50_p95(secs)
    Path(a.out).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out["by_k"]), out["seconds_per_check"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=("collect", "fit", "fit-check", "lm-summary", "calibrate"))
    ap.add_argument("--model", default="", help="lm-summary: the scorer (default: the shipped one)")
    ap.add_argument("--data", default="")
    ap.add_argument("--split", default="train")
    ap.add_argument("--rows", default="", help="a row file of another set (filings_qa.jsonl) instead of --split")
    ap.add_argument("--root", default="", help="with --rows: the folder holding its collections")
    ap.add_argument("--out", default="")
    ap.add_argument("--card", default=str(CARD_OUT),
                    help="fit: where the model's card goes (the docs read the default)")
    ap.add_argument("--train", default="")
    ap.add_argument("--dev", default="")
    ap.add_argument("--target", type=float, default=TARGET_PRECISION)
    ap.add_argument("--min-unanswerable", type=float, default=0.80,
                    help="calibrate: the least share of unanswerable dev rows abstained on (issue 46's goal)")
    ap.add_argument("--lm", default="", help="fit-check: LM margins of the train and dev rows (bench/lm_check.py)")
    ap.add_argument("--top-k", default="3", help="fit-check: the candidates the LM checks (a comma list: each tried)")
    ap.add_argument("--write", action="store_true", help="fit-check: write the chosen stage into the model (--out)")
    ap.add_argument("--lm-label", default="", help="lm-summary: the LM's name in the output")
    ap.add_argument("--without-windows", action="store_true",
                    help="fit: leave the two-sentence window candidates out (what they add, measured)")
    ap.add_argument("--budget-words", type=int, default=None,
                    help="collect: a context of this many words instead of the setting's (a short one stands for a "
                         "short document: few candidates)")
    a = ap.parse_args()
    if a.command == "collect":
        cmd_collect(a)
    elif a.command == "lm-summary":
        cmd_lm_summary(a)
    elif a.command == "fit-check":
        a.out = a.out or str(MODEL_OUT)
        a.card = str(CARD_OUT.parent / "lm_stage.json") if a.card == str(CARD_OUT) else a.card
        cmd_fit_check(a)
    elif a.command == "calibrate":
        a.out = a.out or str(MODEL_OUT)
        a.card = str(CALIBRATOR_CARD) if a.card == str(CARD_OUT) else a.card
        cmd_calibrate(a)
    else:
        a.out = a.out or str(MODEL_OUT)
        cmd_fit(a)


if __name__ == "__main__":
    main()
