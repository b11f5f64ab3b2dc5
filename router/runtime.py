"""The router at query time: which router the settings name, its check against the live index, per-query weights.

``MGRAG_ROUTER`` is ``default``, ``none`` (uniform weights) or a router folder. ``default`` means the index's
own router (``<data_dir>/router``, where ``mgrag train-router`` saves by default) if there is one, else the router
shipped in ``router/default/``. A router that does not fit the index (another embedder or level set) is refused:
an explicitly named one with an error, the shipped default with a logged notice and uniform weights (so a user who
changed the embedder still gets answers).
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from router.encoders import RobertaEncoder
from router.features import profile_features
from router.model import MoGRouter, RouterError, check_compatible

log = logging.getLogger(__name__)

DEFAULT_ROUTER_DIR = Path(__file__).resolve().parent / "default"
UNIFORM_NOTE = "uniform (no trained router)"


@dataclass
class RouterRuntime:
    """A loaded router and, for a RoBERTa router, its own query encoder (built lazily)."""

    model: MoGRouter
    path: Path
    explicit: bool
    _encoder: object | None = field(default=None, repr=False)
    _checked: dict = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def config(self):
        return self.model.config

    def describe(self) -> str:
        c = self.config
        return f"trained router {self.path} ({c.encoder}, {c.n_levels} levels)"

    def fits(self, embedder: str, n_levels: int) -> str | None:
        """None if this router can serve an index with ``embedder`` and ``n_levels``, else why not."""
        key = (embedder, n_levels)
        if key not in self._checked:
            try:
                check_compatible(self.config, embedder=embedder, n_levels=n_levels, where=f"the router at {self.path}")
                self._checked[key] = None
            except RouterError as e:
                self._checked[key] = str(e)
                if not self.explicit:  # said once per index shape, not on every question
                    log.warning("router refused, using uniform weights: %s", e)
        return self._checked[key]

    def uses_index_embedder(self) -> bool:
        return self.config.encoder_kind == "embedder"

    def query_vector(self, question: str, embedder=None) -> np.ndarray:
        """The query vector the router reads: the index embedder's (pass ``embedder``) or its own RoBERTa's."""
        if self.uses_index_embedder():
            if embedder is None:
                raise ValueError("this router reads the index embedder's query vector; pass the embedder")
            return np.asarray(embedder.embed_queries([question])[0], dtype=np.float32)
        with self._lock:
            if self._encoder is None:
                self._encoder = RobertaEncoder(self.config.encoder)
        return self._encoder.embed_queries([question])[0]

    def weights(self, query_vector, hits=None, question: str = "") -> list[float]:
        """The level weights of one question: from its query vector, and for a router that reads the score profile
        (``config.inputs``), from the dense search's ``hits`` (:func:`router.features.profile_features`)."""
        c = self.config
        qv = query_vector if "query" in c.inputs else None
        prof = profile_features(hits, c.n_levels, n_words=len(question.split())) if c.needs_hits else None
        return [float(w) for w in self.model.weights(qv, prof)]


def load_runtime(setting: str | None, data_dir: str | Path | None = None) -> tuple[RouterRuntime | None, str]:
    """``(runtime or None, note)`` for the ``MGRAG_ROUTER`` setting; the note says what weights will be used."""
    s = (setting or "").strip()
    if s.lower() in ("", "none", "uniform"):
        return None, "uniform (MGRAG_ROUTER=none: no router beat uniform weights on held-out questions)"
    explicit = s.lower() != "default"
    path = Path(s).expanduser() if explicit else DEFAULT_ROUTER_DIR
    if not explicit and data_dir is not None and (Path(data_dir) / "router" / "config.json").is_file():
        path = Path(data_dir) / "router"
    if not explicit and not (path / "config.json").is_file():
        note = f"{UNIFORM_NOTE}: {path} is missing; train one with `mgrag train-router`"
        log.warning("router: %s", note)
        return None, note
    if explicit and not path.exists():
        raise RouterError(f"MGRAG_ROUTER={s}: no such router folder; train one with `mgrag train-router --out {s}` "
                          "or set MGRAG_ROUTER=default")
    model = MoGRouter.load(path)
    log.info("router: loaded %s (%s, levels %s)", path, model.config.encoder, list(model.config.levels))
    return RouterRuntime(model, path, explicit), ""


def route(runtime: RouterRuntime | None, note: str, *, embedder_name: str, n_levels: int, question: str,
          query_vector=None, embedder=None, hits=None) -> tuple[list[float], str, float]:
    """``(weights, note, seconds)`` for one question. Uniform weights (and why) when there is no usable router.

    ``query_vector``: the dense search's query vector, reused when the router reads the index embedder.
    ``hits``: the dense search's hits at every level (``retrieval.scoring.Hit``), for a router that reads their
    score profile; without them such a router gives uniform weights and says why.
    """
    if runtime is None:
        return [1.0] * n_levels, note or UNIFORM_NOTE, 0.0
    why = runtime.fits(embedder_name, n_levels)
    if why is not None:
        if runtime.explicit:
            raise RouterError(why)
        return [1.0] * n_levels, f"uniform (the shipped router does not fit this index: {why})", 0.0
    if runtime.config.needs_hits and hits is None:
        return [1.0] * n_levels, ("uniform (the router reads the dense search's score profile; the BM25 retriever "
                                  "has none)"), 0.0
    t = time.perf_counter()
    if "query" in runtime.config.inputs and (query_vector is None or not runtime.uses_index_embedder()):
        query_vector = runtime.query_vector(question, embedder)
    w = runtime.weights(query_vector, hits, question)
    return w, runtime.describe(), time.perf_counter() - t
