"""Synthesizers: one streaming interface, four backends (offline Gemma, extractive, transformers, openai).

The registry is :data:`core.components.BACKENDS` (re-exported here as :data:`BACKENDS`): one entry per backend,
its name, description, needs and class. The class marks itself ``@registered`` and has ``from_context(ctx, kept)``
(builds it for a context) and ``why_not(settings)`` (why it cannot run here, :mod:`app.synth.status`).
``make_synthesizer(name, ctx)`` builds one.
"""
from __future__ import annotations

from app.synth.base import SynthesisError, Synthesizer, build_completion_prompt, build_messages
from app.synth.openai_compat import OpenAICompatSynthesizer
from core.components import BACKENDS, lookup

__all__ = ["BACKENDS", "SynthesisError", "Synthesizer", "build_messages", "build_completion_prompt",
           "make_synthesizer", "openai_client"]


def openai_client(s):
    """The OpenAI-compatible client configured by settings ``s`` (answers, and the lumber chunker)."""
    return OpenAICompatSynthesizer.from_settings(s)


def make_synthesizer(name: str, ctx):
    """The backend named by the settings (models load lazily, on first use). The model-backed ones and the
    extractive one (its sentence-vector cache) are kept on the context, one per configuration, so a server does
    not load a model per question and a backend's generation lock is shared by every session."""
    cls = lookup(BACKENDS, name, "synthesizer backend").resolve()
    cache = ctx.cache("synthesizers")

    def kept(key, build):
        if key not in cache:
            cache[key] = build()
        return cache[key]

    return cls.from_context(ctx, kept)
