"""Synthesizers: one streaming interface, four backends (offline Gemma, extractive, transformers, openai)."""
from app.synth.base import SynthesisError, Synthesizer, build_completion_prompt, build_messages

BACKENDS = ("offline", "extractive", "transformers", "openai")

__all__ = ["BACKENDS", "SynthesisError", "Synthesizer", "build_messages", "build_completion_prompt", "make_synthesizer",
           "openai_client"]


def openai_client(s):
    """The OpenAI-compatible client configured by settings ``s`` (answers, and the lumber chunker)."""
    from app.synth.openai_compat import OpenAICompatSynthesizer

    return OpenAICompatSynthesizer(s.openai_base_url, s.openai_model, s.openai_api_key,
                                   connect_timeout=s.llm_connect_timeout_s, read_timeout=s.llm_read_timeout_s,
                                   total_timeout=s.llm_total_timeout_s, max_tokens=s.max_new_tokens)


def make_synthesizer(name: str, ctx):
    """The backend named by the settings (models load lazily, on first use). The model-backed ones and the
    extractive one (its sentence-vector cache) are kept on the context, one per configuration, so a server does
    not load a model per question and a backend's generation lock is shared by every session."""
    s = ctx.settings
    cache = ctx.__dict__.setdefault("_synthesizers", {})

    def kept(key, build):
        if key not in cache:
            cache[key] = build()
        return cache[key]

    if name == "extractive":
        from app.grounding import sentence_vectors_of
        from app.synth.extractive import ExtractiveSynthesizer

        emb = ctx.embedder
        return kept(("extractive", id(emb)), lambda: ExtractiveSynthesizer(emb, vectors=sentence_vectors_of(ctx)))
    if name == "openai":
        return openai_client(s)
    if name == "transformers":
        from app.synth.hf import load_chat_synthesizer

        return kept(("transformers", s.synth_model, s.max_new_tokens, s.synth_4bit, s.llm_total_timeout_s),
                    lambda: load_chat_synthesizer(s.synth_model, max_new_tokens=s.max_new_tokens,
                                                  load_in_4bit=s.synth_4bit, total_timeout=s.llm_total_timeout_s))
    if name == "offline":
        from app.synth.hf import load_offline_synthesizer

        return kept(("offline", s.offline_model, s.lm_model, s.offline_max_new_tokens, s.llm_total_timeout_s),
                    lambda: load_offline_synthesizer(ctx, max_new_tokens=s.offline_max_new_tokens,
                                                     total_timeout=s.llm_total_timeout_s))
    raise ValueError(f"unknown synthesizer backend {name!r}; choose one of {', '.join(BACKENDS)}")
