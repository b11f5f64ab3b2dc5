"""``mgrag train-router``: questions files + the ingested corpus -> soft labels -> a trained, saved router.

Writes ``config.json`` + ``model.safetensors`` (the router), ``loss.png`` (loss curves; not without matplotlib, the
plots extra, which a warning says) and ``training.json`` (data, splits, label statistics, loss history) into the
output folder.
"""
from __future__ import annotations

import json
import logging
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from router.data import (
    DEFAULT_FRACTIONS,
    Examples,
    build_examples,
    corpus_from_index,
    index_vectors,
    load_questions,
    retrieval_examples,
)
from router.encoders import RobertaEncoder
from router.labels import make_similarity
from router.model import DEFAULT_LEVELS, RouterConfig
from router.train import TrainConfig, fit_retrieval_router, plot_history, retrieval_targets, train_router

log = logging.getLogger(__name__)


def _plot_loss(hist, path: Path, title: str) -> None:
    """``loss.png``, or without matplotlib (the plots extra) a warning saying what to install: the router is saved."""
    try:
        plot_history(hist, path, title=title)
    except ImportError as e:
        log.warning("%s not written: %s", path, e)


def level_names(n_levels: int) -> tuple[str, ...]:
    return DEFAULT_LEVELS[:n_levels] if n_levels <= len(DEFAULT_LEVELS) else tuple(f"L{j}" for j in range(n_levels))


def make_encoder(name: str | None, embedder):
    """``(encoder, kind, name)``: the index's embedder (``None`` or its name) or a RoBERTa model."""
    if name is None or name == getattr(embedder, "name", None):
        return embedder, "embedder", embedder.name

    return RobertaEncoder(name), "roberta", name


def prior_bce(train_labels: np.ndarray, labels: np.ndarray) -> float | None:
    """BCE of the constant router that predicts the mean training label: the loss to beat to have learned
    anything from the query beyond the label distribution."""
    if not len(labels) or not len(train_labels):
        return None
    p = np.clip(train_labels.mean(0, keepdims=True), 1e-6, 1 - 1e-6)
    return float(-(labels * np.log(p) + (1 - labels) * np.log(1 - p)).mean())


def label_stats(ex: Examples, names: Sequence[str]) -> dict:
    best = Counter(names[int(i)] for i in ex.labels.argmax(1)) if len(ex.labels) else Counter()
    return {"n": len(ex.questions), "best_level": dict(best), "mean_label": ex.labels.mean(0).round(3).tolist()
            if len(ex.labels) else []}


LABELS = ("mog", "retrieval")


def train_from_index(ctx, question_files: Sequence[str | Path], out: str | Path, *, similarity: str = "encoder",
                     encoder: str | None = None, hidden: Sequence[int] = (128,), dropout: float = 0.1,
                     train_config: TrainConfig | None = None, fractions: Sequence[float] = DEFAULT_FRACTIONS,
                     progress: bool = True, labels: str = "mog", inputs: Sequence[str] = ("query",),
                     top_k: int | None = None) -> dict:
    """Train and save a router for the live index; returns the training report (also in ``training.json``).

    ``labels``: ``mog`` (MoG's soft labels: the best BM25 snippet per level scored against the label by
    ``similarity``) or ``retrieval`` (the level that alone ranks the evidence best in the dense search, 0.8 / 0.2).
    ``inputs``: the query vector and/or ``profile``, the score profile of each level's dense search
    (:mod:`router.features`). Retrieval labels and the profile search each question's own document, top ``top_k``
    per level (default ``MGRAG_TOP_K``), with the vectors stored in the index.
    """
    train_config = train_config or TrainConfig()
    if labels not in LABELS:
        raise ValueError(f"router labels must be one of {LABELS}, got {labels!r}")
    t0 = time.perf_counter()
    live = ctx.catalog.live_generation()
    if live is None:
        raise ValueError("the index is empty; ingest documents first (`mgrag ingest PATH`)")
    questions = [q for f in question_files for q in load_questions(f)]
    corpus = corpus_from_index(ctx)
    if labels == "retrieval" or "profile" in inputs:
        return _train_retrieval(ctx, live, corpus, questions, question_files, Path(out), labels=labels,
                                inputs=tuple(inputs), encoder=encoder, hidden=hidden, dropout=dropout,
                                train_config=train_config, fractions=fractions, progress=progress,
                                similarity=similarity, top_k=top_k or ctx.settings.top_k, t0=t0)
    sim = make_similarity(similarity, ctx.embedder if similarity == "encoder" else None)
    ex = build_examples(corpus, questions, sim, fractions=fractions, progress=progress)
    for reason, n in ex.notes.items():
        log.warning("%d questions: %s", n, reason)
    train, val, test = ex.subset("train"), ex.subset("val"), ex.subset("test")
    if len(train) == 0:
        raise ValueError(f"no training questions with a label in {', '.join(map(str, question_files))}")
    enc, kind, enc_name = make_encoder(encoder, ctx.embedder)
    if kind == "embedder" and live.embedder != enc_name:
        raise ValueError(f"the index was built with {live.embedder!r} but MGRAG_EMBEDDER is {enc_name!r}")
    names = level_names(live.n_levels)

    def vectors(e: Examples) -> np.ndarray:
        return np.asarray(enc.embed_queries([q.question for q in e.questions]), dtype=np.float32) if len(e) else \
            np.zeros((0, 1), np.float32)

    xt, xv = vectors(train), vectors(val)
    sets = sorted({q.source for q in questions})
    config = RouterConfig(
        encoder=enc_name, dim=int(xt.shape[1]), levels=names, encoder_kind=kind, hidden=tuple(hidden),
        dropout=dropout,
        meta={"chunker": live.chunker, "theta": live.theta, "label_similarity": similarity, "label_values": [0.8, 0.2],
              "trained_on": sets, "split": {"fractions": list(fractions), "used": "train (val for early stopping)"},
              "seed": train_config.seed})
    model, hist = train_router(config, xt, train.labels, xv if len(val) else None, val.labels if len(val) else None,
                               train_config=train_config, progress=progress)
    out = Path(out)
    model.save(out)
    _plot_loss(hist, out / "loss.png", f"MoG router ({', '.join(sets)}; {similarity} labels)")
    report = {
        "command": " ".join(["mgrag", *sys.argv[1:]]) if sys.argv and sys.argv[0].endswith("mgrag") else None,
        "index": {"generation": live.gen, "chunker": live.chunker, "theta": live.theta, "embedder": live.embedder,
                  "n_levels": live.n_levels},
        "question_files": [str(f) for f in question_files],
        "n_questions": len(questions),
        "notes": ex.notes,
        "labels": {"train": label_stats(train, names), "val": label_stats(val, names),
                   "test": label_stats(test, names)},
        "train_config": train_config.__dict__,
        "history": hist.to_dict(),
        "val_bce_of_label_prior": prior_bce(train.labels, val.labels),
        "seconds": time.perf_counter() - t0,
    }
    (out / "training.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


def _train_retrieval(ctx, live, corpus, questions, question_files, out: Path, *, labels, inputs, encoder, hidden,
                     dropout, train_config, fractions, progress, similarity, top_k, t0) -> dict:
    """Retrieval labels and/or profile inputs: the examples come from each question's dense search in the index."""
    enc, kind, enc_name = make_encoder(encoder, ctx.embedder)
    if kind != "embedder":
        raise ValueError("retrieval labels and profile inputs use the index's embedder as the query encoder; "
                         "leave --encoder unset")
    if live.embedder != enc_name:
        raise ValueError(f"the index was built with {live.embedder!r} but MGRAG_EMBEDDER is {enc_name!r}")
    stored = index_vectors(ctx)

    def passages(texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in stored]
        if missing:
            stored.update(zip(missing, np.asarray(ctx.embedder.embed_passages(missing), dtype=np.float32)))
        return np.stack([stored[t] for t in texts])

    qv = np.asarray(ctx.embedder.embed_queries([q.question for q in questions]), dtype=np.float32)
    examples, notes = retrieval_examples(corpus, questions, qv, passages, k=top_k, fractions=fractions)
    for reason, n in notes.items():
        log.warning("%d questions: %s", n, reason)
    train = [e for e in examples if e.split == "train"]
    val = [e for e in examples if e.split == "val"]
    if not train:
        raise ValueError(f"no training questions with evidence found in their document in "
                         f"{', '.join(map(str, question_files))}")
    names = level_names(live.n_levels)
    y = yv = None
    if labels == "mog":  # MoG's soft labels for the same questions (the ablation), joined by question id
        sim = make_similarity(similarity, ctx.embedder if similarity == "encoder" else None)
        ex = build_examples(corpus, [e.question for e in examples], sim, fractions=fractions)
        by_id = dict(zip((q.id for q in ex.questions), ex.labels))
        train = [e for e in train if e.question.id in by_id]
        val = [e for e in val if e.question.id in by_id]
        y = np.stack([by_id[e.question.id] for e in train])
        yv = np.stack([by_id[e.question.id] for e in val]) if val else None
    sets = sorted({q.source for q in questions})
    base = RouterConfig(encoder=enc_name, dim=int(qv.shape[1]), levels=names, encoder_kind=kind, hidden=tuple(hidden),
                        dropout=dropout, inputs=inputs,
                        meta={"chunker": live.chunker, "theta": live.theta, "labels": labels, "top_k": top_k,
                              "label_values": [0.8, 0.2], "trained_on": sets,
                              "split": {"fractions": list(fractions), "used": "train (val for early stopping)"},
                              "seed": train_config.seed})
    model, hist = fit_retrieval_router(base, train, val, labels=y, val_labels=yv, train_config=train_config,
                                       progress=progress)
    model.save(out)
    _plot_loss(hist, out / "loss.png", f"router ({', '.join(sets)}; {labels} labels, inputs {'+'.join(inputs)})")

    yt = y if y is not None else retrieval_targets(train, live.n_levels)
    yvv = yv if yv is not None else (retrieval_targets(val, live.n_levels) if val else np.zeros((0, live.n_levels)))
    report = {
        "command": " ".join(["mgrag", *sys.argv[1:]]) if sys.argv and sys.argv[0].endswith("mgrag") else None,
        "index": {"generation": live.gen, "chunker": live.chunker, "theta": live.theta, "embedder": live.embedder,
                  "n_levels": live.n_levels},
        "question_files": [str(f) for f in question_files],
        "n_questions": len(questions), "labels": labels, "inputs": list(inputs),
        "notes": notes, "n_train": len(train), "n_val": len(val),
        "train_config": train_config.__dict__,
        "history": hist.to_dict(),
        "val_bce_of_label_prior": prior_bce(yt, yvv),
        "seconds": time.perf_counter() - t0,
    }
    (out / "training.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report
