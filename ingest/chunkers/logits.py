"""Logits-Guided (LG) chunker, LGMGC §3.1, and LGMGC (LG parents + MG children).

Windows of θ words of whole sentences; for every sentence end in the window the probability of a boundary
token given the prompt ρ and the text up to there, all from one forward pass; break at the argmax; the
remainder opens the next window; the rest becomes the last chunk once it fits in θ words.

Modes:
* ``exact`` (the paper): one forward pass per window; the remainder is re-read by the next window, so the
  LM processes about θ / (mean chunk length) tokens per document token.
* ``streaming``: every sentence end is scored once, from one pass over the document with running context
  (blocks of ``block_tokens`` after ``context_tokens`` of preceding text); the argmax per window then runs
  on those probabilities. About 1.07 tokens per document token.
"""
from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from core.components import registered
from ingest.chunkers.base import Chunker, check_theta
from ingest.chunkers.multigranular import with_children
from ingest.text.boundary import break_strength, cut_scores, lg_breaks, spans_from_breaks
from ingest.text.sentences import count_words, is_hard_wrapped, sentences_cached
from ingest.types import Chunk

log = logging.getLogger(__name__)

MODES = ("exact", "streaming")
# sentences longer than this many words (tables, lists without punctuation) are split at word boundaries: a cap
# independent of θ (for θ >= 100), so one document's boundary probabilities serve every θ (as ppl and llamachunk)
SENTENCE_CAP = 100
CHILDREN = ("theta", "parent")
STREAM_SHARE = 0.97  # streaming mode: the share of the chunking time that is the LM pass (progress displays)


@dataclass(frozen=True)
class LGConfig:
    theta: int = 300
    mode: str = "exact"
    min_rest: int | None = None  # rest of the document that becomes the last chunk; default θ
    min_words: int = 0  # optional floor on chunk length (0 = the paper's plain argmax)
    # cutting rule (ingest.text.boundary.cut_scores): log p + structure_weight · layout break + size_prior ·
    # log(words/θ)
    structure_weight: float = 0.0
    size_prior: float = 0.0
    children: str = "theta"  # children of θ/2 and θ/4 words (MG's rule), or "parent": half and a quarter of the parent

    def __post_init__(self) -> None:
        check_theta(self.theta)
        if self.mode not in MODES:
            raise ValueError(f"lg mode must be one of {MODES}, got {self.mode!r}")
        if self.min_rest is not None and not 0 <= self.min_rest <= self.theta:
            raise ValueError(f"lg min_rest must be between 0 and theta={self.theta}, got {self.min_rest}")
        if not 0 <= self.min_words < self.theta:
            raise ValueError(f"lg min_words must be between 0 and theta-1, got {self.min_words}")
        if not 0 <= self.structure_weight <= 100:
            raise ValueError(f"lg structure_weight must be between 0 and 100, got {self.structure_weight}")
        if not 0 <= self.size_prior <= 100:
            raise ValueError(f"lg size_prior must be between 0 and 100, got {self.size_prior}")
        if self.children not in CHILDREN:
            raise ValueError(f"lg children must be one of {CHILDREN}, got {self.children!r}")

    @classmethod
    def from_settings(cls, settings, theta: int | None = None, params: dict | None = None) -> "LGConfig":
        """The LG configuration of ``settings`` (``lg_*``) at ``theta``; ``params`` (an index generation's recorded
        ones) win over the settings, so a re-ingestion keeps the rule it was built with."""
        s, p = settings, params or {}
        theta = int(theta or s.theta)
        # a generation recorded before a rule existed was built without it: the paper's default, not the settings'
        rule = (lambda k, default: p.get(k, default)) if p else (lambda k, default: getattr(s, f"lg_{k}"))
        return cls(theta=theta, mode=p.get("mode", s.lg_mode),
                   min_words=p.get("min_words", min(s.lg_min_words, theta - 1)),
                   structure_weight=float(rule("structure_weight", 0.0)), size_prior=float(rule("size_prior", 0.0)),
                   children=rule("children", "theta"))

    @property
    def paper_rule(self) -> bool:
        """True when the cut is the paper's plain argmax of p(boundary)."""
        return self.structure_weight == 0 and self.size_prior == 0


@registered
@dataclass(frozen=True)
class LogitsGuidedChunker(Chunker):
    """LG chunker. ``scorer`` is a :class:`ingest.text.lm.LogitsScorer` (or anything with the same methods)."""

    scorer: object = field(compare=False)
    config: LGConfig = LGConfig()
    on_window: Callable[[int], None] | None = field(default=None, compare=False)  # progress: one call per window
    on_fraction: Callable[[float], None] | None = field(default=None, compare=False)  # progress: share of words done

    @classmethod
    def build(cls, theta: int = 300, *, scorer=None, embedder=None, lg_config=None, llm=None) -> Chunker:
        """At ``theta`` with the paper's rule, or with ``lg_config`` (whose θ wins)."""
        cfg = lg_config or LGConfig(theta=theta)
        return cls.from_description(dataclasses.asdict(cfg), scorer=scorer, embedder=embedder, llm=llm)

    @classmethod
    def _from_params(cls, params: dict, models: dict) -> Chunker:
        """The rule's recorded fields make its :class:`LGConfig` (the prompt and boundary tokens are the scorer's)."""
        rule = {f.name for f in dataclasses.fields(LGConfig)}
        return cls(**models, config=LGConfig(**{k: v for k, v in params.items() if k in rule}))

    def _spans(self, text: str) -> list[tuple[int, int]]:
        theta = self.config.theta
        sentences = list(sentences_cached(text, min(theta, SENTENCE_CAP)))
        if not sentences:
            return []
        words = [count_words(text[s:e]) for s, e in sentences]
        before = [0]
        for w in words:
            before.append(before[-1] + w)
        doc = self.scorer.tokenize(text, sentences)
        cfg = self.config
        if cfg.mode == "streaming":
            if self.on_fraction is not None:  # the LM pass is nearly all of the time: its progress is the chunker's
                stream = self.scorer.stream_probs(doc, on_progress=lambda d, t: self.on_fraction(
                    STREAM_SHARE * d / max(t, 1)))
            else:
                stream = self.scorer.stream_probs(doc)

            def probs(i: int, j: int):
                return stream[i:j]
        else:

            def probs(i: int, j: int):
                return self.scorer.window_probs(doc, i, j)

        strength = break_strength(text, sentences, is_hard_wrapped(text)) if cfg.structure_weight else None

        share = STREAM_SHARE if cfg.mode == "streaming" else 0.0

        def score(i: int, j: int):
            self._tick(share + (1 - share) * before[i] / max(before[-1], 1))
            p = probs(i, j)
            if cfg.paper_rule:
                return p
            cum = [before[k + 1] - before[i] for k in range(i, j)]
            return cut_scores(p, cum, theta, None if strength is None else strength[i:j], cfg.structure_weight,
                              cfg.size_prior)

        breaks = lg_breaks(words, theta, score, cfg.min_rest, cfg.min_words)
        return spans_from_breaks(sentences, breaks)

    def _tick(self, fraction: float) -> None:
        if self.on_window is not None:
            self.on_window(1)
        if self.on_fraction is not None:
            self.on_fraction(fraction)

    def describe(self) -> dict:
        s = self.scorer
        return {
            "chunker": self.name,
            "theta": self.config.theta,
            "mode": self.config.mode,
            "min_rest": self.config.min_rest,
            "min_words": self.config.min_words,
            "structure_weight": self.config.structure_weight,
            "size_prior": self.config.size_prior,
            "children": self.config.children,
            "prompt": getattr(s, "prompt", None),
            "boundary_tokens": list(getattr(s, "boundary_tokens", ())),
        }


@registered
@dataclass(frozen=True)
class LGMGCChunker(LogitsGuidedChunker):
    """LGMGC: LG parents of at most θ words, each split into θ/2 and θ/4 children (MG)."""

    n_levels = 3

    def chunk(self, text: str) -> list[Chunk]:
        return with_children(text, self._spans(text), self.config.theta, by_parent=self.config.children == "parent")
