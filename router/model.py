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

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
FORMAT_VERSION = 1

# level j of an MGRAG index has chunks of about θ / 2**j words (0 = parent, 1 = θ/2, 2 = θ/4)
DEFAULT_LEVELS = ("theta", "theta/2", "theta/4")
ENCODER_KINDS = ("embedder", "roberta")


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

    def __post_init__(self) -> None:
        object.__setattr__(self, "levels", tuple(self.levels))
        object.__setattr__(self, "hidden", tuple(int(h) for h in self.hidden))
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

    def to_dict(self) -> dict:
        d = asdict(self)
        d["levels"], d["hidden"] = list(self.levels), list(self.hidden)
        return d


class MoGRouter(nn.Module):
    """MLP: ``dim -> hidden... -> n_levels`` logits (ReLU, dropout); :meth:`weights` applies the sigmoid."""

    def __init__(self, config: RouterConfig):
        super().__init__()
        self.config = config
        layers: list[nn.Module] = []
        d = config.dim
        for h in config.hidden:
            layers += [nn.Linear(d, h), nn.ReLU(), nn.Dropout(config.dropout)]
            d = h
        layers.append(nn.Linear(d, config.n_levels))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits, shape ``(batch, n_levels)``; train with ``BCEWithLogitsLoss`` against soft labels."""
        return self.net(x)

    @torch.inference_mode()
    def weights(self, query_vectors) -> np.ndarray:
        """Per-level weights in (0, 1) for one vector ``(dim,)`` or a batch ``(n, dim)``; same leading shape."""
        was_training = self.training
        self.eval()
        x = torch.as_tensor(np.asarray(query_vectors, dtype=np.float32))
        single = x.ndim == 1
        if single:
            x = x[None]
        if x.shape[-1] != self.config.dim:
            raise RouterError(f"the router expects {self.config.dim}-dimensional query vectors "
                              f"({self.config.encoder}), got {x.shape[-1]}")
        out = torch.sigmoid(self.net(x)).numpy()
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
