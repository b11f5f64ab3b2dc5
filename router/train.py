"""Training the router (MoG §3.2.2): BCE against soft labels, Adam (lr 1e-3), early stopping on a validation split.

Seeded: the same data and seed give the same router. The best epoch by validation loss is kept.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch
from torch import nn

from router.features import choice_labels, level_labels, profile_dim, profile_features, weighting_gains
from router.model import MoGRouter, RouterConfig, router_inputs

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): matplotlib (the plots
# extra), tqdm

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainConfig:
    lr: float = 1e-3
    batch_size: int = 32
    max_epochs: int = 300
    patience: int = 30  # epochs without a better validation loss before stopping
    weight_decay: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.lr <= 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if self.batch_size < 1 or self.max_epochs < 1 or self.patience < 1:
            raise ValueError("batch_size, max_epochs and patience must be >= 1")


@dataclass
class History:
    train: list[float] = field(default_factory=list)
    val: list[float] = field(default_factory=list)
    best_epoch: int = -1
    best_val: float = float("inf")
    stopped_early: bool = False

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def loss_fn_for(head: str):
    """BCE per level against soft labels (MoG, sigmoid head); cross-entropy against a target distribution over the
    candidate weightings (choice head)."""
    if head == "choice":
        return lambda logits, y: -(y * torch.log_softmax(logits, dim=-1)).sum(dim=-1).mean()
    return nn.BCEWithLogitsLoss()


def bce_loss(model: MoGRouter, x: torch.Tensor, y: torch.Tensor) -> float:
    """The training loss of ``model`` on ``(x, y)`` (BCE or, for a choice router, cross-entropy)."""
    model.eval()
    with torch.no_grad():
        return float(loss_fn_for(model.config.head)(model(x), y))


def train_router(config: RouterConfig, x_train, y_train, x_val=None, y_val=None, *,
                 train_config: TrainConfig = TrainConfig(), progress: bool = False) -> tuple[MoGRouter, History]:
    """Train a router on inputs ``x`` ``(n, in_dim)`` (:func:`router.model.router_inputs`) and labels ``y``
    ``(n, n_out)``: soft labels per level (sigmoid head) or a distribution over the candidates (choice head).

    Without a validation set, the training loss decides early stopping (and the last best epoch is kept).
    """
    tc = train_config
    x = torch.as_tensor(np.asarray(x_train, dtype=np.float32))
    y = torch.as_tensor(np.asarray(y_train, dtype=np.float32))
    if x.ndim != 2 or x.shape[1] != config.in_dim:
        raise ValueError(f"router inputs must have shape (n, {config.in_dim}), got {tuple(x.shape)}")
    if y.shape != (x.shape[0], config.n_out):
        raise ValueError(f"labels must have shape ({x.shape[0]}, {config.n_out}), got {tuple(y.shape)}")
    if len(x) == 0:
        raise ValueError("no training examples")
    has_val = x_val is not None and len(x_val) > 0
    xv = torch.as_tensor(np.asarray(x_val, dtype=np.float32)) if has_val else x
    yv = torch.as_tensor(np.asarray(y_val, dtype=np.float32)) if has_val else y

    torch.manual_seed(tc.seed)
    gen = torch.Generator().manual_seed(tc.seed)
    model = MoGRouter(config)
    opt = torch.optim.Adam(model.parameters(), lr=tc.lr, weight_decay=tc.weight_decay)
    loss_fn = loss_fn_for(config.head)
    hist = History()
    best_state = {k: v.clone() for k, v in model.state_dict().items()}
    epochs = range(tc.max_epochs)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        epochs = bar = tqdm(epochs, desc="training router", unit="epoch")
    for epoch in epochs:
        model.train()
        perm = torch.randperm(len(x), generator=gen)
        total = 0.0
        for i in range(0, len(x), tc.batch_size):
            idx = perm[i:i + tc.batch_size]
            opt.zero_grad()
            loss = loss_fn(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
        hist.train.append(total / len(x))
        hist.val.append(bce_loss(model, xv, yv))
        if hist.val[-1] < hist.best_val - 1e-6:
            hist.best_val, hist.best_epoch = hist.val[-1], epoch
            best_state = {k: v.clone() for k, v in model.state_dict().items()}
        if bar is not None:
            bar.set_postfix(train=f"{hist.train[-1]:.4f}", val=f"{hist.val[-1]:.4f}", best=hist.best_epoch)
        if epoch - hist.best_epoch >= tc.patience:
            hist.stopped_early = True
            break
    model.load_state_dict(best_state)
    return model.eval(), hist


PLOTS_MISSING = "The plots need matplotlib, which comes with the plots extra: pip install 'mgrag[plots]'."


def plot_history(history: History, path: str | Path, title: str = "MoG router: BCE loss") -> Path:
    """PNG of the training and validation loss curves, the kept epoch marked (ImportError saying what to install
    without matplotlib)."""
    try:
        import matplotlib
    except ImportError as e:
        raise ImportError(PLOTS_MISSING) from e

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(history.train, label="train")
    ax.plot(history.val, label="validation")
    if history.best_epoch >= 0:
        ax.axvline(history.best_epoch, color="grey", ls="--", lw=1, label=f"kept (epoch {history.best_epoch})")
    ax.set_xlabel("epoch")
    ax.set_ylabel("binary cross-entropy")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


# -- retrieval-aware training (issue 14): labels from which weighting ranks the evidence best -------------------------
def retrieval_targets(examples, n_levels: int, head: str = "sigmoid", candidates=None, k: int = 10) -> np.ndarray:
    """Labels of :class:`router.data.RetrievalExample` rows: per level (sigmoid head), 0.8 to the level(s) that alone
    rank the evidence best by DCG@k and 0.2 to the next (:func:`router.features.level_labels`); or (choice head) a
    distribution over ``candidates`` shared by the weightings with the best DCG@k."""
    out = []
    for ex in examples:
        if head == "choice":
            out.append(choice_labels(weighting_gains(ex.hits, candidates, ex.relevant, k)))
        else:
            gains = [weighting_gains([h for h in ex.hits if h.level == j], [(1.0,) * n_levels], ex.relevant, k)[0]
                     for j in range(n_levels)]
            out.append(level_labels(gains))
    return np.asarray(out, dtype=np.float32).reshape(len(examples), -1)


def example_profiles(examples, n_levels: int) -> np.ndarray:
    if not examples:
        return np.zeros((0, profile_dim(n_levels)), np.float32)
    return np.stack([profile_features(ex.hits, n_levels, n_words=len(ex.question.question.split()))
                     for ex in examples])


def fit_retrieval_router(base: RouterConfig, train, val, *, labels: np.ndarray | None = None,
                         val_labels: np.ndarray | None = None, train_config: TrainConfig = TrainConfig(),
                         progress: bool = False) -> tuple[MoGRouter, History]:
    """Train a router of ``base``'s kind (inputs, head, candidates) on retrieval examples; the profile features are
    standardised with the training set's mean and spread (kept in the config). Labels default to
    :func:`retrieval_targets`."""

    n = base.n_levels
    y = labels if labels is not None else retrieval_targets(train, n, base.head, base.candidates)
    yv = val_labels if val_labels is not None else retrieval_targets(val, n, base.head, base.candidates)
    p, pv = example_profiles(train, n), example_profiles(val, n)
    cfg = base
    if base.needs_hits:
        cfg = replace(base, profile_mean=tuple(p.mean(0).tolist()), profile_std=tuple((p.std(0) + 1e-6).tolist()))
    q = np.stack([ex.query_vector for ex in train]) if train else None
    qv = np.stack([ex.query_vector for ex in val]) if val else None
    x = router_inputs(cfg, q if "query" in cfg.inputs else None, p if cfg.needs_hits else None)
    xv = router_inputs(cfg, qv if "query" in cfg.inputs else None, pv if cfg.needs_hits else None) if val else None
    return train_router(cfg, x, y, xv, yv if val else None, train_config=train_config, progress=progress)
