"""Adapter from a Hugging Face causal LM to boundary probabilities at sentence ends.

The window's text is tokenised sentence by sentence ("segments": a sentence with the whitespace before it),
so the ids of the prefix ``ρ ⊕ s1 ⊕ … ⊕ sk`` are exactly the first ids of the window and the next-token
distribution after sentence k is read at the last token of segment k, all from **one** causal forward pass.
Only the hidden states at those positions go through the LM head (Gemma's vocabulary has 262k entries).
"""
from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): torch

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
    def _forward(self, batch_ids: list[list[int]], batch_positions: list[list[int]],
                 token_ids: Sequence[int] | None = None) -> list[np.ndarray]:
        """One batched causal pass (right-padded); LM head applied only at the requested positions.

        Returns, per row, the probability mass on ``token_ids`` (default: the boundary tokens) at each position.
        """
        token_ids = self.boundary_ids if token_ids is None else list(token_ids)
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
                # p(token set) = sum exp(logit - logsumexp), in torch float32: a NumPy float64 softmax over
                # Gemma's 262k-entry vocabulary at every sentence end cost as much as the LM head itself
                logz = torch.logsumexp(logits, dim=-1, keepdim=True)
                picked = logits[:, list(token_ids)] - logz
                out.append(torch.exp(picked).sum(dim=-1).double().cpu().numpy())
        self.tokens_processed += int(mask.sum())
        self.forward_passes += 1
        return out

    def window_probs(self, doc: DocumentTokens, i: int, j: int) -> np.ndarray:
        """p(boundary) after each sentence i..j-1, the window starting at sentence i (exact mode)."""
        ids, ends = self.window_ids(doc, i, j)
        return self._forward([ids], [ends])[0]

    def stream_probs(self, doc: DocumentTokens, on_progress=None) -> np.ndarray:
        """p(boundary) after every sentence, from one pass over the document with running context.

        The document's token stream is cut into blocks of ``block_tokens``; each block is read after the
        prompt and the ``context_tokens`` tokens that precede it, and blocks are batched. Every token is
        therefore processed about ``(block + context + prompt) / block`` times (≈1.07 with the defaults).
        ``on_progress(tokens_done, tokens_total)`` is called after each batch (progress displays; it may raise to
        stop the pass, e.g. on a cancellation).
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
        total, done = sum(len(j[0]) for j in jobs), 0
        for s in range(0, len(jobs), self.batch_size):
            batch = jobs[s : s + self.batch_size]
            for (_, _, which), p in zip(batch, self._forward([b[0] for b in batch], [b[1] for b in batch])):
                probs[which] = p
            done += sum(len(b[0]) for b in batch)
            if on_progress is not None:
                on_progress(done, total)
        return probs

    def plain_pass(self, doc: DocumentTokens) -> None:
        """One plain forward pass over the document's tokens in blocks (the benchmark's reference cost)."""
        stream = [t for seg in doc.segments for t in seg]
        blocks = [stream[b : b + self.block_tokens] for b in range(0, len(stream), self.block_tokens)]
        for s in range(0, len(blocks), self.batch_size):
            batch = blocks[s : s + self.batch_size]
            self._forward(batch, [[len(b) - 1] for b in batch])


# -- CPU threads ----------------------------------------------------------------------------------------------------
def pick_threads(rates: dict[int, float], margin: float = 1.15) -> int:
    """The thread count to run the LM with, from measured tokens per second per count.

    The fewest threads whose rate is within ``margin`` of the best: more threads only when they clearly pay,
    because on a busy machine extra torch threads wait on each other (2 threads ran at 2.5 tokens/s where 1 ran
    at 90-224 on our shared 2-core machine).

    >>> pick_threads({1: 200.0, 2: 2.5})
    1
    >>> pick_threads({1: 200.0, 2: 380.0})
    2
    >>> pick_threads({1: 200.0, 2: 210.0})
    1
    """
    if not rates:
        raise ValueError("pick_threads needs at least one measured rate")
    best = max(rates.values())
    return min(n for n, r in rates.items() if r * margin >= best)


def measure_threads(model, candidates: Sequence[int], *, n_tokens: int = 96, repeats: int = 3) -> dict[int, float]:
    """Tokens per second of one decoder pass over ``n_tokens`` tokens with each thread count (interleaved, best
    of ``repeats``); leaves torch at the thread count it found. About a second with Gemma-3-270M."""
    import torch

    before = torch.get_num_threads()
    device = next(model.parameters()).device
    ids = torch.arange(10, 10 + n_tokens, dtype=torch.long, device=device)[None]
    decoder = model.get_decoder()
    best: dict[int, float] = {}
    with torch.inference_mode():
        decoder(input_ids=ids[:, :8], use_cache=False)  # warm-up
        for _ in range(repeats):
            for n in candidates:
                torch.set_num_threads(n)
                t = time.perf_counter()
                decoder(input_ids=ids, use_cache=False)
                best[n] = max(best.get(n, 0.0), n_tokens / max(time.perf_counter() - t, 1e-9))
    torch.set_num_threads(before)
    return best


def choose_threads(model, setting: int | None) -> tuple[int, str]:
    """``(threads, note)``: the configured count, or (``setting`` None) the faster of 1 thread and one per
    available core, measured now on ``model`` (:func:`measure_threads`, :func:`pick_threads`). Sets torch's count."""
    import torch

    if setting:
        torch.set_num_threads(setting)
        return setting, f"{setting} (MGRAG_TORCH_THREADS)"
    if next(model.parameters()).device.type != "cpu":
        return torch.get_num_threads(), f"{torch.get_num_threads()} (the LM runs on a GPU)"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    candidates = sorted({1, cores})
    if len(candidates) == 1:
        torch.set_num_threads(1)
        return 1, "1 (one core available)"
    rates = measure_threads(model, candidates)
    n = pick_threads(rates)
    torch.set_num_threads(n)
    measured = ", ".join(f"{k} thread{'s' if k > 1 else ''} {v:,.0f} tok/s" for k, v in sorted(rates.items()))
    return n, f"{n} (measured: {measured})"


def _head_logprobs(scorer: LogitsScorer, hidden, targets, extra_ids=(), slice_len: int = 128):
    """log p(target_t) for each position t of ``hidden`` [L, H], and log p(extra_id) for each extra id."""
    torch = scorer._torch
    head = scorer.model.get_output_embeddings()
    out_t, out_x = [], []
    for s in range(0, hidden.shape[0], slice_len):
        logits = head(hidden[s:s + slice_len]).float()
        if scorer.softcap:
            logits = torch.tanh(logits / scorer.softcap) * scorer.softcap
        lp = torch.log_softmax(logits, dim=-1)
        tgt = targets[s:s + slice_len]
        out_t.append(lp[torch.arange(len(tgt)), tgt].cpu().numpy())
        if extra_ids:
            out_x.append(lp[:, list(extra_ids)].cpu().numpy())
    lt = np.concatenate(out_t) if out_t else np.zeros(0)
    lx = np.concatenate(out_x) if out_x else np.zeros((0, len(extra_ids)))
    return lt, lx


def token_logprobs(scorer: LogitsScorer, ids: list[int], *, block_tokens: int = 512, max_context: int = 4096,
                   overlap: int = 256, extra_ids: Sequence[int] = ()) -> tuple[np.ndarray, np.ndarray]:
    """Teacher-forced log-probabilities over a long token stream, in one pass with the KV cache carried.

    Returns ``lp[t] = log p(ids[t] | ids[:t])`` for t >= 1 (``lp[0]`` is 0) and ``lx[t, j] = log p(extra_ids[j] |
    ids[:t+1])`` (the next-token distribution *after* token t). Blocks of ``block_tokens`` are fed with the cache
    of everything before them; when the cache would exceed ``max_context`` tokens it is dropped and the next
    block is read after the last ``overlap`` tokens again (so memory stays bounded on a whole book).
    """
    torch = scorer._torch
    n = len(ids)
    lp = np.zeros(n)
    lx = np.zeros((n, len(extra_ids)))
    if n == 0:
        return lp, lx
    decoder = scorer.model.get_decoder()
    cache, cached = None, 0
    pos = 0
    last_hidden = None  # the previous block's last hidden state
    with torch.inference_mode():
        while pos < n:
            end = min(n, pos + block_tokens)
            if cache is not None and cached + (end - pos) > max_context:
                cache, cached = None, 0
            start = pos if cache is not None or pos == 0 else max(0, pos - overlap)
            inp = torch.tensor([ids[start:end]], dtype=torch.long, device=scorer.device)
            out = decoder(input_ids=inp, past_key_values=cache, use_cache=True)
            cache, cached = out.past_key_values, cached + (end - start)
            hidden = out.last_hidden_state[0]
            # hidden[i] predicts ids[start + i + 1]; we want predictions of ids[pos .. end-1] (those t >= 1)
            # and the next-token distribution after every token in [pos, end)
            first = pos - start  # index in hidden of token `pos`
            t_idx = list(range(max(pos, 1), end))
            if pos > 0 and start == pos:  # token `pos` is predicted by the previous block's last hidden state
                h_pred = torch.cat([last_hidden[None], hidden[: end - pos - 1]], dim=0)
            else:
                h_pred = hidden[[t - 1 - start for t in t_idx]]
            targets = torch.tensor([ids[t] for t in t_idx], dtype=torch.long, device=hidden.device)
            lt, _ = _head_logprobs(scorer, h_pred, targets)
            lp[t_idx] = lt
            if extra_ids:
                h_after = hidden[first:]
                _, lxe = _head_logprobs(scorer, h_after, torch.zeros(len(h_after), dtype=torch.long,
                                                                     device=hidden.device), extra_ids)
                lx[pos:end] = lxe
            last_hidden = hidden[-1]
            scorer.tokens_processed += end - start
            scorer.forward_passes += 1
            pos = end
    return lp, lx
