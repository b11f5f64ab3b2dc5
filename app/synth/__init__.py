"""Synthesizers: one streaming interface, four backends (offline Gemma, extractive, transformers, openai)."""
from app.synth.base import SynthesisError, Synthesizer, build_messages, build_completion_prompt

BACKENDS = ("offline", "extractive", "transformers", "openai")

__all__ = ["BACKENDS", "SynthesisError", "Synthesizer", "build_messages", "build_completion_prompt", "make_synthesizer", "openai_client"]


def openai_client(s):
    """The OpenAI-compatible client configured by settings ``s`` (answers, and the lumber chunker)."""
    from app.synth.openai_compat import OpenAICompatSynthesizer

    return OpenAICompatSynthesizer(s.openai_base_url, s.openai_model, s.openai_api_key,
                                   connect_timeout=s.llm_connect_timeout_s, read_timeout=s.llm_read_timeout_s,
                                   total_timeout=s.llm_total_timeout_s, max_tokens=s.max_new_tokens)


def make_synthesizer(name: str, ctx):
    """The backend named by the settings (models load lazily, on first use)."""
    s = ctx.settings
    if name == "extractive":  # one per context, so its sentence-vector cache lives across questions
        from app.synth.extractive import ExtractiveSynthesizer

        synth = ctx.__dict__.get("_extractive_synth")
        if synth is None or synth.embedder is not ctx.embedder:
            synth = ctx.__dict__["_extractive_synth"] = ExtractiveSynthesizer(ctx.embedder)
        return synth
    if name == "openai":
        return openai_client(s)
    if name == "transformers":
        from app.synth.hf import load_chat_synthesizer

        return load_chat_synthesizer(s.synth_model, max_new_tokens=s.max_new_tokens, load_in_4bit=s.synth_4bit,
                                     total_timeout=s.llm_total_timeout_s)
    if name == "offline":
        from app.synth.hf import load_offline_synthesizer

        return load_offline_synthesizer(ctx, max_new_tokens=s.offline_max_new_tokens,
                                        total_timeout=s.llm_total_timeout_s)
    raise ValueError(f"unknown synthesizer backend {name!r}; choose one of {', '.join(BACKENDS)}")
