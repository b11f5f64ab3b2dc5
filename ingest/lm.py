"""Adapter from a Hugging Face causal LM to boundary probabilities at sentence ends.

The window's text is tokenised sentence by sentence ("segments": a sentence with the whitespace before it),
so the ids of the prefix ``ρ ⊕ s1 ⊕ … ⊕ sk`` are exactly the first ids of the window and the next-token
distribution after sentence k is read at the last token of segment k, all from **one** causal forward pass.
Only the hidden states at those positions go through the LM head (Gemma's vocabulary has 262k entries).
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ingest.boundary import boundary_probs

log = logging.getLogger(__name__)

EOS = "<eos>"


def resolve_boundary_ids(tokenizer, tokens: Sequence[str]) -> list[int]:
    """Token ids of the boundary set. ``"<eos>"`` means the tokenizer's EOS; any other string must be one token."""
    ids = []
    for t in tokens:
        if t in (EOS, "[EOS]", "eos"):
            if tokenizer.eos_token_id is None:
                raise ValueError("boundary token <eos>: this tokenizer has no EOS token; use e.g. '\\n\\n'")
            ids.append(int(tokenizer.eos_token_id))
            continue
        enc = tokenizer.encode(t, add_special_tokens=False)
        if len(enc) != 1:
            raise ValueError(
                f"boundary token {t!r} is {len(enc)} tokens in this tokenizer, not one; "
                "choose a single-token string for lg_boundary_tokens (e.g. '<eos>' or '\\n\\n')"
            )
        ids.append(enc[0])
    if not ids:
        raise ValueError("lg_boundary_tokens is empty; give at least one token, e.g. ['\\n\\n']")
    return sorted(set(ids))


@dataclass
class DocumentTokens:
    """Per-sentence token ids of one document, computed once and sliced by every window."""

    segments: list[list[int]]  # sentence k with the whitespace before it
    stripped: list[list[int] | None]  # sentence k alone (when it opens a window), filled lazily
    texts: list[str]

    @property
    def n_tokens(self) -> int:
        return sum(len(s) for s in self.segments)


@dataclass
class LogitsScorer:
    """Computes p(boundary | ρ, s1..sk) for every sentence end k of a window in one forward pass."""

    tokenizer: object
    model: object
    prompt: str = "Continue the text:\n\n"
    boundary_tokens: Sequence[str] = ("\n\n",)
    batch_size: int = 4
    block_tokens: int = 1024
    context_tokens: int = 64
    tokens_processed: int = field(default=0, init=False)
    forward_passes: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        import torch

        self._torch = torch
        self.boundary_ids = resolve_boundary_ids(self.tokenizer, self.boundary_tokens)
        self.prompt_ids = list(self.tokenizer(self.prompt, add_special_tokens=True)["input_ids"])
        if not self.prompt_ids:  # a tokenizer with no BOS and an empty prompt: give the model one token to read
            fallback = self.tokenizer.bos_token_id or self.tokenizer.eos_token_id or 0
            self.prompt_ids = [int(fallback)]
        self.device = next(self.model.parameters()).device
        self.softcap = getattr(getattr(self.model, "config", None), "final_logit_softcapping", None)
        pad = self.tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else (self.tokenizer.eos_token_id or 0))
        if self.block_tokens <= self.context_tokens:
            raise ValueError("block_tokens must be larger than context_tokens")

    # -- tokenisation -------------------------------------------------------------------------------
    def tokenize(self, text: str, sentences: Sequence[tuple[int, int]]) -> DocumentTokens:
        texts, prev = [], None
        for s, e in sentences:
            texts.append(text[s:e] if prev is None else text[prev:e])
            prev = e
        segments = self.tokenizer(texts, add_special_tokens=False)["input_ids"] if texts else []
        stripped = [None] * len(texts)
        doc = DocumentTokens([list(x) for x in segments], stripped, [text[s:e] for s, e in sentences])
        return doc

    def _opening(self, doc: DocumentTokens, k: int) -> list[int]:
        if doc.stripped[k] is None:
            doc.stripped[k] = list(self.tokenizer(doc.texts[k], add_special_tokens=False)["input_ids"])
        return doc.stripped[k]

    def window_ids(self, doc: DocumentTokens, i: int, j: int) -> tuple[list[int], list[int]]:
        """Input ids of ``ρ ⊕ s_i ⊕ … ⊕ s_{j-1}`` and the position of each sentence's last token."""
        ids = list(self.prompt_ids)
        ends = []
        for k in range(i, j):
            seg = self._opening(doc, k) if k == i else doc.segments[k]
            if not seg:  # a sentence that tokenises to nothing (cannot happen with real text): reuse last position
                ends.append(len(ids) - 1)
                continue
            ids.extend(seg)
            ends.append(len(ids) - 1)
        return ids, ends

    # -- model ----------------------------------------------------------------------------------------
    def _forward(self, batch_ids: list[list[int]], batch_positions: list[list[int]]) -> list[np.ndarray]:
        """One batched causal pass (right-padded); LM head applied only at the requested positions."""
        torch = self._torch
        width = max(len(x) for x in batch_ids)
        inp = torch.full((len(batch_ids), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(batch_ids), width), dtype=torch.long)
        for r, ids in enumerate(batch_ids):
            inp[r, : len(ids)] = torch.tensor(ids, dtype=torch.long)
            mask[r, : len(ids)] = 1
        with torch.inference_mode():
            hidden = self.model.get_decoder()(
                input_ids=inp.to(self.device), attention_mask=mask.to(self.device), use_cache=False
            ).last_hidden_state
            out = []
            for r, pos in enumerate(batch_positions):
                h = hidden[r, torch.tensor(pos, dtype=torch.long, device=hidden.device)]
                logits = self.model.get_output_embeddings()(h).float()
                if self.softcap:
                    logits = torch.tanh(logits / self.softcap) * self.softcap
                out.append(boundary_probs(logits.cpu().numpy(), self.boundary_ids))
        self.tokens_processed += int(mask.sum())
        self.forward_passes += 1
        return out

    def window_probs(self, doc: DocumentTokens, i: int, j: int) -> np.ndarray:
        """p(boundary) after each sentence i..j-1, the window starting at sentence i (exact mode)."""
        ids, ends = self.window_ids(doc, i, j)
        return self._forward([ids], [ends])[0]

    def stream_probs(self, doc: DocumentTokens) -> np.ndarray:
        """p(boundary) after every sentence, from one pass over the document with running context.

        The document's token stream is cut into blocks of ``block_tokens``; each block is read after the
        prompt and the ``context_tokens`` tokens that precede it, and blocks are batched. Every token is
        therefore processed about ``(block + context + prompt) / block`` times (≈1.07 with the defaults).
        """
        stream: list[int] = []
        ends: list[int] = []
        for k in range(len(doc.segments)):
            seg = self._opening(doc, 0) if k == 0 else doc.segments[k]
            stream.extend(seg)
            ends.append(len(stream) - 1)
        probs = np.zeros(len(ends))
        if not stream:
            return probs
        ends_arr = np.asarray(ends)
        jobs = []
        for b0 in range(0, len(stream), self.block_tokens):
            b1 = min(b0 + self.block_tokens, len(stream))
            ctx0 = max(0, b0 - self.context_tokens)
            ids = list(self.prompt_ids) + stream[ctx0:b1]
            which = np.nonzero((ends_arr >= b0) & (ends_arr < b1))[0]
            if len(which) == 0:
                continue
            offset = len(self.prompt_ids) - ctx0
            jobs.append((ids, [int(ends_arr[w]) + offset for w in which], which))
        for s in range(0, len(jobs), self.batch_size):
            batch = jobs[s : s + self.batch_size]
            for (_, _, which), p in zip(batch, self._forward([b[0] for b in batch], [b[1] for b in batch])):
                probs[which] = p
        return probs

    def plain_pass(self, doc: DocumentTokens) -> None:
        """One plain forward pass over the document's tokens in blocks (the benchmark's reference cost)."""
        stream = [t for seg in doc.segments for t in seg]
        blocks = [stream[b : b + self.block_tokens] for b in range(0, len(stream), self.block_tokens)]
        for s in range(0, len(blocks), self.batch_size):
            batch = blocks[s : s + self.batch_size]
            self._forward(batch, [[len(b) - 1] for b in batch])
