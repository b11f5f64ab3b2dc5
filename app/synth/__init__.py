"""Synthesizers: one streaming interface, four backends (offline Gemma, extractive, transformers, openai).

:data:`BACKENDS` is the registry: name → :class:`BackendEntry` (its line of :data:`core.components.BACKENDS`,
whether it needs an LLM, how to build it, why it cannot run here). ``make_synthesizer(name, ctx)`` builds one.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from app.synth.base import SynthesisError, Synthesizer, build_completion_prompt, build_messages
from core import components

__all__ = ["BACKENDS", "BackendEntry", "SynthesisError", "Synthesizer", "build_messages", "build_completion_prompt",
           "make_synthesizer", "openai_client"]


def openai_client(s):
    """The OpenAI-compatible client configured by settings ``s`` (answers, and the lumber chunker)."""
    from app.synth.openai_compat import OpenAICompatSynthesizer

    return OpenAICompatSynthesizer(s.openai_base_url, s.openai_model, s.openai_api_key,
                                   connect_timeout=s.llm_connect_timeout_s, read_timeout=s.llm_read_timeout_s,
                                   total_timeout=s.llm_total_timeout_s, max_tokens=s.max_new_tokens)


def _extractive(ctx, kept):
    from app.grounding import sentence_vectors_of
    from app.synth.extractive import ExtractiveSynthesizer

    emb = ctx.embedder
    def profile_of(src):  # its document's profile: the names it is about, the periods its cover states
        return ctx.profiles.one(getattr(src, "doc_hash", ""), src.doc_id, getattr(src, "name", ""))

    def boilerplate():  # sentences printed word for word in three or more of the library's documents
        live = ctx.catalog.live_gen()
        rows = [r for r in ctx.catalog.documents(live) if r["n_l0"] is not None] if live is not None else []
        return ctx.profiles.recurring(rows)

    return kept(("extractive", id(emb)), lambda: ExtractiveSynthesizer(emb, vectors=sentence_vectors_of(ctx),
                                                                      text_of=ctx.store.text, profile_of=profile_of,
                                                                      boilerplate=boilerplate))


def _openai(ctx, kept):
    return openai_client(ctx.settings)


def _transformers(ctx, kept):
    from app.synth.hf import load_chat_synthesizer

    s = ctx.settings
    return kept(("transformers", s.synth_model, s.max_new_tokens, s.synth_4bit, s.llm_total_timeout_s),
                lambda: load_chat_synthesizer(s.synth_model, max_new_tokens=s.max_new_tokens,
                                              load_in_4bit=s.synth_4bit, total_timeout=s.llm_total_timeout_s))


def _offline(ctx, kept):
    from app.synth.hf import load_offline_synthesizer

    s = ctx.settings
    return kept(("offline", s.offline_model, s.lm_model, s.offline_max_new_tokens, s.llm_total_timeout_s),
                lambda: load_offline_synthesizer(ctx, max_new_tokens=s.offline_max_new_tokens,
                                                 total_timeout=s.llm_total_timeout_s))


def _status(name: str):
    def reason(settings):
        from app.synth import status

        return getattr(status, f"_{name}_reason")(settings)

    return reason


@dataclass(frozen=True)
class BackendEntry(components.Entry):
    build: Callable  # (ctx, kept) -> Synthesizer; kept(key, build) keeps one per configuration on the context
    why_not: Callable  # (settings) -> None when it can run here, else why not (no model is loaded)

    @property
    def needs_llm(self) -> bool:
        return self.spec.needs_llm


_BUILDERS = {"offline": _offline, "extractive": _extractive, "transformers": _transformers, "openai": _openai}
components.check_builders("answer backend", components.BACKENDS, set(_BUILDERS))
BACKENDS: dict[str, BackendEntry] = {n: BackendEntry(spec, _BUILDERS[n], _status(n))
                                     for n, spec in components.BACKENDS.items()}


def make_synthesizer(name: str, ctx):
    """The backend named by the settings (models load lazily, on first use). The model-backed ones and the
    extractive one (its sentence-vector cache) are kept on the context, one per configuration, so a server does
    not load a model per question and a backend's generation lock is shared by every session."""
    entry = BACKENDS.get(name)
    if entry is None:
        raise ValueError(f"unknown synthesizer backend {name!r}; choose one of {', '.join(BACKENDS)}")
    cache = ctx.cache("synthesizers")

    def kept(key, build):
        if key not in cache:
            cache[key] = build()
        return cache[key]

    return entry.build(ctx, kept)
