"""Query encoders for the router.

MoG encodes the query with RoBERTa; :class:`RobertaEncoder` is ``roberta-base`` (or any local RoBERTa folder)
mean pooled over the attention mask and L2-normalised. The offline default instead reuses the index's embedder
(the shipped MiniLM): the dense search already computes the query vector, so routing adds no encoding cost.
The model is loaded lazily, from local files only (``HF_HUB_OFFLINE``).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.models import LOAD_LOCK, ModelNotAvailable

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): transformers, torch


class RobertaEncoder:
    """Mean-pooled RoBERTa sentence vectors; ``embed_queries`` and ``embed_passages`` are the same map."""

    def __init__(self, name: str = "roberta-base", *, model=None, tokenizer=None, max_length: int = 256,
                 batch_size: int = 32):
        self.name = name
        self.max_length = max_length
        self.batch_size = batch_size
        self._model, self._tokenizer = model, tokenizer

    def warm_up(self) -> None:
        if self._model is not None:
            return
        from transformers import AutoModel, AutoTokenizer


        try:
            with LOAD_LOCK:
                self._tokenizer = AutoTokenizer.from_pretrained(self.name, local_files_only=True)
                self._model = AutoModel.from_pretrained(self.name, local_files_only=True).eval()
        except OSError as e:

            raise ModelNotAvailable(
                f"router encoder {self.name!r} is not available offline ({e}); download it once "
                f"(`huggingface-cli download {self.name}`) or train with the default encoder (the index's embedder)"
            ) from e

    @property
    def dim(self) -> int:
        self.warm_up()
        return int(self._model.config.hidden_size)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        self.warm_up()
        texts = list(texts)
        out = []
        for i in range(0, len(texts), self.batch_size):
            enc = self._tokenizer(texts[i:i + self.batch_size], padding=True, truncation=True,
                                  max_length=self.max_length, return_tensors="pt")
            with torch.inference_mode():
                h = self._model(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).to(h.dtype)
            v = (h * mask).sum(1) / mask.sum(1).clamp(min=1.0)
            out.append(torch.nn.functional.normalize(v, dim=-1).float().numpy())
        return np.concatenate(out) if out else np.zeros((0, self.dim), np.float32)

    embed_passages = embed_queries
