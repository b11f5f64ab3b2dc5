"""The Mix-of-Granularity router (MoG §3.2.1): query embedding -> MLP -> one sigmoid weight per granularity level.

Saved as ``config.json`` + ``model.safetensors`` side by side (sentence-transformers ``Dense`` style): ``load``
builds ``MoGRouter(RouterConfig(**config))`` and loads the weights. The config records what the router was
trained for — the query encoder and the level set — and :func:`load_router` refuses a router whose encoder or
levels do not match the index it is asked to serve.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from router.features import profile_dim

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): safetensors

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
FORMAT_VERSION = 1

# level j of an MGRAG index has chunks of about θ / 2**j words (0 = parent, 1 = θ/2, 2 = θ/4)
DEFAULT_LEVELS = ("theta", "theta/2", "theta/4")
ENCODER_KINDS = ("embedder", "roberta")
INPUTS = ("query", "profile")  # the query vector; the score profile of each level's search (router.features)
HEADS = ("sigmoid", "choice")  # MoG's one sigmoid weight per level; or a softmax over candidate weightings


class RouterError(ValueError):
    """A router folder that cannot be used: missing or malformed files, or trained for another index."""


@dataclass(frozen=True)
class RouterConfig:
    """What the router is and what it was trained for.

    ``encoder`` names the query encoder: with ``encoder_kind="embedder"`` it is the index's embedder (the
    query vector of the dense search is reused, so routing costs one small MLP); with ``"roberta"`` it is a
    Hugging Face RoBERTa model name or folder, mean pooled (MoG's choice), encoded separately.
    ``levels`` names the granularity levels in index order; ``meta`` keeps training facts (data, labels, seed).
    """

    encoder: str
    dim: int
    levels: tuple[str, ...] = DEFAULT_LEVELS
    encoder_kind: str = "embedder"
    hidden: tuple[int, ...] = (128,)
    dropout: float = 0.1
    meta: dict = field(default_factory=dict, compare=False)
    format_version: int = FORMAT_VERSION
    inputs: tuple[str, ...] = ("query",)
    head: str = "sigmoid"
    candidates: tuple[tuple[float, ...], ...] = ()  # choice head: the weightings it picks from (first: uniform)
    default_margin: float = 0.0  # choice head: keep candidate 0 unless another is more probable by this much
    profile_mean: tuple[float, ...] = ()  # standardisation of the profile features (from the training set)
    profile_std: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "levels", tuple(self.levels))
        object.__setattr__(self, "hidden", tuple(int(h) for h in self.hidden))
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "candidates", tuple(tuple(float(x) for x in c) for c in self.candidates))
        object.__setattr__(self, "profile_mean", tuple(float(x) for x in self.profile_mean))
        object.__setattr__(self, "profile_std", tuple(float(x) for x in self.profile_std))
        if not self.inputs or any(i not in INPUTS for i in self.inputs):
            raise RouterError(f"RouterConfig.inputs must be a non-empty subset of {INPUTS}, got {self.inputs}")
        if self.head not in HEADS:
            raise RouterError(f"RouterConfig.head must be one of {HEADS}, got {self.head!r}")
        if self.head == "choice" and (not self.candidates or any(len(c) != len(self.levels) for c in self.candidates)):
            raise RouterError("a choice router needs candidates: weightings with one weight per level "
                              f"({len(self.levels)}), the first being the default")
        if not self.encoder:
            raise RouterError("RouterConfig.encoder must name the query encoder, e.g. 'all-MiniLM-L6-v2'")
        if self.dim < 1:
            raise RouterError(f"RouterConfig.dim must be >= 1 (the encoder's output size), got {self.dim}")
        if len(self.levels) < 1:
            raise RouterError("RouterConfig.levels must name at least one granularity level")
        if self.encoder_kind not in ENCODER_KINDS:
            raise RouterError(f"RouterConfig.encoder_kind must be one of {ENCODER_KINDS}, got {self.encoder_kind!r}")
        if any(h < 1 for h in self.hidden):
            raise RouterError(f"RouterConfig.hidden sizes must be >= 1, got {self.hidden}")
        if not 0.0 <= self.dropout < 1.0:
            raise RouterError(f"RouterConfig.dropout must be in [0, 1), got {self.dropout}")

    @property
    def n_levels(self) -> int:
        return len(self.levels)

    @property
    def profile_dim(self) -> int:
        return profile_dim(self.n_levels) if "profile" in self.inputs else 0

    @property
    def in_dim(self) -> int:
        return (self.dim if "query" in self.inputs else 0) + self.profile_dim

    @property
    def n_out(self) -> int:
        return len(self.candidates) if self.head == "choice" else self.n_levels

    @property
    def needs_hits(self) -> bool:
        return "profile" in self.inputs

    def to_dict(self) -> dict:
        d = asdict(self)
        d["levels"], d["hidden"], d["inputs"] = list(self.levels), list(self.hidden), list(self.inputs)
        d["candidates"] = [list(c) for c in self.candidates]
        d["profile_mean"], d["profile_std"] = list(self.profile_mean), list(self.profile_std)
        return d


def router_inputs(config: RouterConfig, query_vectors=None, profiles=None) -> np.ndarray:
    """The router network's input rows from query vectors ``(n, dim)`` and raw profiles ``(n, profile_dim)``."""
    c = config
    parts = []
    if "query" in c.inputs:
        if query_vectors is None:
            raise RouterError(f"this router reads the query vector ({c.encoder}); pass it")
        q = np.atleast_2d(np.asarray(query_vectors, dtype=np.float32))
        if q.shape[-1] != c.dim:
            raise RouterError(f"the router expects {c.dim}-dimensional query vectors ({c.encoder}), got "
                              f"{q.shape[-1]}")
        parts.append(q)
    if "profile" in c.inputs:
        if profiles is None:
            raise RouterError("this router reads the score profile of each level's search; pass the hits")
        p = np.atleast_2d(np.asarray(profiles, dtype=np.float32))
        if p.shape[-1] != c.profile_dim:
            raise RouterError(f"the router expects {c.profile_dim} profile features, got {p.shape[-1]}")
        if c.profile_mean:
            p = (p - np.asarray(c.profile_mean, np.float32)) / np.asarray(c.profile_std, np.float32)
        parts.append(p)
    return np.concatenate(parts, axis=1)


class MoGRouter(nn.Module):
    """MLP: ``in_dim -> hidden... -> n_out`` logits (ReLU, dropout).

    The input is the query vector and/or the standardised score profile (``config.inputs``). The sigmoid head
    (MoG) gives one weight per level; the choice head a softmax over ``config.candidates``, and the weights are
    the chosen candidate's (:meth:`weights`).
    """

    def __init__(self, config: RouterConfig):
        super().__init__()
        self.config = config
        layers: list[nn.Module] = []
        d = config.in_dim
        for h in config.hidden:
            layers += [nn.Linear(d, h), nn.ReLU(), nn.Dropout(config.dropout)]
            d = h
        layers.append(nn.Linear(d, config.n_out))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits, shape ``(batch, n_out)``; train with BCE (sigmoid head) or soft cross-entropy (choice head)."""
        return self.net(x)

    def inputs(self, query_vectors=None, profiles=None) -> np.ndarray:
        return router_inputs(self.config, query_vectors, profiles)

    @torch.inference_mode()
    def weights(self, query_vectors=None, profiles=None) -> np.ndarray:
        """Per-level weights for one question (vectors of shape ``(dim,)``) or a batch; same leading shape.

        Sigmoid head: in (0, 1). Choice head: the candidate with the highest probability, or the first (uniform)
        unless another beats it by ``default_margin``.
        """
        was_training = self.training
        self.eval()
        single = (query_vectors is not None and np.ndim(query_vectors) == 1) or \
            (query_vectors is None and profiles is not None and np.ndim(profiles) == 1)
        x = torch.as_tensor(self.inputs(query_vectors, profiles))
        logits = self.net(x)
        if self.config.head == "choice":
            prob = torch.softmax(logits, dim=-1).numpy()
            pick = prob.argmax(1)
            keep = prob[np.arange(len(prob)), pick] - prob[:, 0] <= self.config.default_margin
            pick = np.where(keep, 0, pick)
            out = np.asarray(self.config.candidates, dtype=np.float32)[pick]
        else:
            out = torch.sigmoid(logits).numpy()
        if was_training:
            self.train()
        return out[0] if single else out

    # -- persistence ------------------------------------------------------------------------------------------
    def save(self, folder: str | Path) -> Path:
        from safetensors.torch import save_file

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / CONFIG_NAME).write_text(json.dumps(self.config.to_dict(), indent=2, ensure_ascii=False) + "\n",
                                          encoding="utf-8")
        save_file({k: v.detach().cpu().contiguous() for k, v in self.state_dict().items()}, str(folder / WEIGHTS_NAME))
        return folder

    @classmethod
    def load(cls, folder: str | Path) -> "MoGRouter":
        from safetensors.torch import load_file

        folder = Path(folder)
        cfg_path, w_path = folder / CONFIG_NAME, folder / WEIGHTS_NAME
        if not cfg_path.is_file() or not w_path.is_file():
            raise RouterError(f"no router at {folder}: expected {CONFIG_NAME} and {WEIGHTS_NAME} side by side "
                              "(train one with `mgrag train-router`)")
        try:
            raw = json.loads(cfg_path.read_text(encoding="utf-8"))
            if raw.get("format_version", FORMAT_VERSION) != FORMAT_VERSION:
                raise RouterError(f"{cfg_path}: format_version {raw.get('format_version')} is not "
                                  f"{FORMAT_VERSION}; retrain with `mgrag train-router`")
            config = RouterConfig(**raw)
        except (json.JSONDecodeError, TypeError) as e:
            raise RouterError(f"{cfg_path} is not a valid router config: {e}") from e
        model = cls(config)
        try:
            model.load_state_dict(load_file(str(w_path)))
        except (RuntimeError, OSError) as e:
            raise RouterError(f"{w_path} does not match {cfg_path} ({e.__class__.__name__}: {e})") from e
        return model.eval()


def check_compatible(config: RouterConfig, *, embedder: str | None = None, n_levels: int | None = None,
                     where: str = "the router") -> None:
    """Refuse a router trained for another encoder or level set, naming both and the fix."""
    if n_levels is not None and config.n_levels != n_levels:
        raise RouterError(
            f"{where} was trained for {config.n_levels} granularity levels {list(config.levels)} but the index has "
            f"{n_levels}; retrain it on this index (`mgrag train-router`) or set MGRAG_ROUTER=none for uniform weights")
    if embedder is not None and config.encoder_kind == "embedder" and config.encoder != embedder:
        raise RouterError(
            f"{where} was trained on {config.encoder!r} query embeddings but the index uses the embedder "
            f"{embedder!r}; retrain it on this index (`mgrag train-router`) or set MGRAG_ROUTER=none for uniform "
            "weights")


def load_router(folder: str | Path, *, embedder: str | None = None, n_levels: int | None = None) -> MoGRouter:
    """Load a router and check it against the index's embedder and number of levels (see :func:`check_compatible`)."""
    model = MoGRouter.load(folder)
    check_compatible(model.config, embedder=embedder, n_levels=n_levels, where=f"the router at {folder}")
    return model
