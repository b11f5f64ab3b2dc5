"""The benchmark runner behind ``mgrag bench``: every chunker and peer over a bench set, θ sweeps, speed, QA.

Retrieval (``run_retrieval``): for each chunker and θ, chunk every document of the set (timed; LM tokens
counted), embed all chunks of all levels with the one embedder of the run, and score every question with
:func:`app.evaluation.bench.evaluate_retrieval` (our max-over-children ranking) — or, for llama-index's
hierarchy, with its own ``AutoMergingRetriever`` as well. Results are means over questions; the tables give the
mean ± std over the θ values, as LGMGC Table 1.

Chunks are cached on disk (``<cache_dir>/bench/chunks``, keyed by set, chunker, θ, the chunker's settings and
the documents' hashes) with the timings measured when they were made, so a re-run only re-embeds and
re-scores; ``use_cache=False`` (``--fresh``) measures everything again. Vectors are cached in memory for the
run only (a chunk text embedded once serves every chunker that produces it).

QA (``run_qa``): LongBench-style single-document QA F1 (``qa_f1_score``) with a synthesizer, over the context
our retrieval assembles from each chunker's chunks (1500 words), against the no-retrieval baseline (the
document truncated to 3500 words), per subset, as LGMGC Table 2.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from app.evaluation import bench as B
from app.evaluation.metrics import qa_f1_max
from app.evaluation.peers import PEERS, Hierarchy, _Embedding, peer_spans, peer_unavailable, spans_to_chunks
from core.components import CHUNKERS
from ingest.chunkers.multigranular import MultiGranularChunker
from ingest.embed import load_embedder
from ingest.jobs.work import chunker_for
from ingest.text import sentences as sentences_mod
from ingest.text.sentences import count_words
from ingest.types import Chunk
from retrieval.scoring import assemble_context, level_hits, rank_parents

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): matplotlib and
# ingest.pipeline, retrieval.search, app.context

log = logging.getLogger(__name__)

OWN = tuple(CHUNKERS)  # the product's chunkers (core/components.py), in the order of the results tables
# earlier cuts of the product's chunkers, kept to compare against: name -> the chunker at θ
EARLIER = {"mg-lines": lambda theta: MultiGranularChunker(theta, blocks=False)}  # lines before blank-line blocks
ALL_CHUNKERS = OWN + tuple(EARLIER) + PEERS
LM_CHUNKERS = frozenset(n for n, c in CHUNKERS.items() if c.needs_lm)
THETA_FREE = frozenset({"li-semantic"})  # no size parameter: θ does not change it
# chunkers whose θ-independent work (LM scores, sentence vectors) is done at the first θ and reused after:
# their speed is the first θ's
SHARED_WORK = frozenset({"ppl", "llamachunk", "semantic", "li-semantic"})
CACHE_VERSION = 3  # bump when chunkers' output changes for the same settings (2: list markers, sentence fixes;
# 3: blank-line blocks before lines)
CHUNKER_VERSION = {"ppl": 2, "llamachunk": 2}  # ... or one chunker's (2: θ-independent sentence cap)


PLOTS_MISSING = ("The plots need matplotlib, which comes with the plots extra (and the bench extra): "
                 "pip install 'mgrag[plots]'.")


class BenchError(RuntimeError):
    pass


# -- embedding cache ---------------------------------------------------------------------------------------------
class CachedEmbedder:
    """Wraps an embedder: each distinct text is embedded once per run; time and words of real work are counted."""

    def __init__(self, inner):
        self.inner = inner
        self.name = getattr(inner, "name", "embedder")
        self.dim = inner.dim
        self._p: dict[str, np.ndarray] = {}
        self._q: dict[str, np.ndarray] = {}
        self.seconds = 0.0
        self.words = 0

    def _get(self, store: dict, fn, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        missing = [t for t in dict.fromkeys(texts) if t not in store]
        if missing:
            t0 = time.perf_counter()
            vecs = np.asarray(fn(missing), dtype=np.float32)
            self.seconds += time.perf_counter() - t0
            self.words += sum(count_words(t) for t in missing)
            store.update(zip(missing, vecs))
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return np.stack([store[t] for t in texts])

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._get(self._p, self.inner.embed_passages, texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._get(self._q, self.inner.embed_queries, texts)

    @property
    def words_per_second(self) -> float | None:
        return self.words / self.seconds if self.seconds > 0 else None


# -- chunking ----------------------------------------------------------------------------------------------------
@dataclass
class ChunkRun:
    chunker: str
    theta: int
    chunks: dict[str, list[Chunk]]
    seconds: float
    cpu_seconds: float
    lm_tokens: int = 0
    doc_tokens: int = 0
    cached: bool = False
    note: str = ""
    hierarchy: dict[str, Hierarchy] = field(default_factory=dict)

    @property
    def lm_tokens_per_doc_token(self) -> float | None:
        return self.lm_tokens / self.doc_tokens if self.doc_tokens else None


def _settings_key(name: str, ctx, theta: int) -> dict:
    """Every setting that changes ``name``'s chunking: the LM's, the streaming windows, and the chunker's own
    recorded parameters (``describe()``: for LG the cutting rule, structure weight, size prior, children, min words)
    as ingestion would build the chunker from these settings."""
    s = ctx.settings
    key: dict = {"v": CACHE_VERSION, "cv": CHUNKER_VERSION.get(name, 1)}
    if name in LM_CHUNKERS:
        key.update(lm=s.lm_model, mode=s.lg_mode, boundary=list(s.lg_boundary_tokens), prompt=s.lg_prompt,
                   block=s.lg_block_tokens, context=s.lg_context_tokens, min_words=s.lg_min_words,
                   params={k: v for k, v in chunker_for(ctx, name, theta, describe_only=True).describe().items()
                           if k not in ("prompt", "boundary_tokens")})  # those two are the settings' above
    if name in ("semantic", "li-semantic"):
        key["embedder"] = s.embedder
    if name == "lumber":
        key.update(url=s.openai_base_url, model=s.openai_model)
    return key


def _cache_path(cache_dir: Path, bench: B.BenchSet, name: str, theta: int, ctx) -> Path:
    docs = {d: hashlib.sha256(t.encode("utf-8")).hexdigest() for d, t in sorted(bench.docs.items())}
    blob = json.dumps({"set": bench.name, "chunker": name, "theta": theta, "settings": _settings_key(name, ctx, theta),
                       "docs": docs}, sort_keys=True)
    key = hashlib.sha256(blob.encode()).hexdigest()[:16]
    return cache_dir / "bench" / "chunks" / f"{bench.name}-{name}-t{theta}-{key}.json"


def _save(path: Path, run: ChunkRun) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"chunker": run.chunker, "theta": run.theta, "seconds": run.seconds, "cpu_seconds": run.cpu_seconds,
               "lm_tokens": run.lm_tokens, "doc_tokens": run.doc_tokens, "note": run.note,
               "chunks": {d: [[c.level, c.start, c.end, c.parent_start, c.parent_end] for c in cs]
                          for d, cs in run.chunks.items()}}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload), encoding="utf-8")
    tmp.replace(path)


def _load(path: Path, bench: B.BenchSet) -> ChunkRun:
    p = json.loads(path.read_text(encoding="utf-8"))
    chunks = {d: [Chunk(bench.docs[d][s:e], s, e, lv, ps, pe) for lv, s, e, ps, pe in rows]
              for d, rows in p["chunks"].items()}
    return ChunkRun(p["chunker"], p["theta"], chunks, p["seconds"], p["cpu_seconds"], p["lm_tokens"],
                    p["doc_tokens"], cached=True, note=p.get("note", ""))


def lumber_available(ctx) -> str | None:
    """None when LumberChunker can run, else the reason it is skipped."""
    if not ctx.settings.openai_base_url:
        return ("lumber skipped: LumberChunker needs an instruction-following LLM through the openai backend; "
                "set MGRAG_OPENAI_BASE_URL (and MGRAG_OPENAI_MODEL) to run it")
    return None


def chunk_documents(bench: B.BenchSet, name: str, theta: int, ctx, *, cache_dir: Path | None = None,
                    use_cache: bool = True, progress: Callable[[str], None] | None = None) -> ChunkRun:
    """Chunk every document of ``bench`` with chunker ``name`` at ``theta`` (cached on disk, see module doc).

    The chunkers are configured exactly as ingestion configures them (``chunker_for``). ``lg`` is the
    level 0 of ``lgmgc`` (the same LM pass), so asking for both costs one pass.
    """
    if name not in ALL_CHUNKERS:
        raise BenchError(f"unknown chunker {name!r}; choose from {', '.join(ALL_CHUNKERS)}")
    if name == "lumber" and (why := lumber_available(ctx)):
        raise BenchError(why)
    if name in PEERS and (why := peer_unavailable(name)):
        raise BenchError(why)
    cache_dir = Path(cache_dir or ctx.settings.cache_dir)
    if name == "lg":  # the same LM pass as lgmgc: derive
        full = chunk_documents(bench, "lgmgc", theta, ctx, cache_dir=cache_dir, use_cache=use_cache,
                               progress=progress)
        return ChunkRun("lg", theta, {d: [c for c in cs if c.level == 0] for d, cs in full.chunks.items()},
                        full.seconds, full.cpu_seconds, full.lm_tokens, full.doc_tokens, full.cached,
                        "level 0 of lgmgc (one LM pass for both)")
    path = _cache_path(cache_dir, bench, name, theta, ctx)
    if name == "li-hierarchical":
        hier = {}
        t0, c0 = time.perf_counter(), B.cpu_seconds()
        for d, text in bench.docs.items():
            hier[d] = Hierarchy(text, theta)
        run = ChunkRun(name, theta, {d: h.chunks() for d, h in hier.items()}, time.perf_counter() - t0,
                       B.cpu_seconds() - c0, hierarchy=hier)
        return run
    if (use_cache or path in _MADE_THIS_RUN) and path.exists():  # --fresh still shares lgmgc's pass with lg
        return _load(path, bench)

    scorer = ctx.scorer if name in LM_CHUNKERS else None
    chunker = None
    if name in EARLIER:
        chunker = EARLIER[name](theta)
    elif name not in PEERS:
        chunker = chunker_for(ctx, name, theta)
    sentences_mod.clear_caches()  # each chunker pays its own sentence segmentation
    chunks: dict[str, list[Chunk]] = {}
    tok0 = scorer.tokens_processed if scorer else 0
    t0, c0 = time.perf_counter(), B.cpu_seconds()
    for i, (d, text) in enumerate(bench.docs.items()):
        if progress:
            progress(f"{bench.name}: {name} θ={theta}: {d} ({i + 1}/{len(bench.docs)})")
        if name in PEERS:
            chunks[d] = spans_to_chunks(text, peer_spans(name, text, theta, ctx.embedder))
        else:
            chunks[d] = chunker.chunk(text)
    seconds, cpu = time.perf_counter() - t0, B.cpu_seconds() - c0
    lm_tokens = (scorer.tokens_processed - tok0) if scorer else 0
    doc_tokens = 0
    if scorer is not None:
        doc_tokens = sum(scorer.tokenize(t, sentences_mod.sentences_cached(t, theta)).n_tokens
                         for t in bench.docs.values())
    run = ChunkRun(name, theta, chunks, seconds, cpu, lm_tokens, doc_tokens)
    _save(path, run)
    _MADE_THIS_RUN.add(path)
    return run


_MADE_THIS_RUN: set[Path] = set()  # chunkings made by the current run: reused even with use_cache=False


# -- retrieval ---------------------------------------------------------------------------------------------------
def evaluate_automerging(bench: B.BenchSet, run: ChunkRun, embedder, *, top_k: int = 20,
                         budget_words: int = 1500) -> dict:
    """llama-index's own pipeline: leaves searched by vector similarity, merged by ``AutoMergingRetriever``."""
    embedding = _Embedding.make(embedder)
    t0 = time.perf_counter()
    retrievers = {d: h.automerging(embedding, top_k) for d, h in run.hierarchy.items()}
    embed_seconds = time.perf_counter() - t0
    rows, relabelled = [], 0
    leaves = {d: h.leaf_spans() for d, h in run.hierarchy.items()}
    t1 = time.perf_counter()
    for q in bench.questions:
        if q.doc_id not in retrievers:
            continue
        ranked = retrievers[q.doc_id](q.question)
        row, n = B.question_metrics(q, bench.docs[q.doc_id], ranked, leaves[q.doc_id],
                                    budget_words=budget_words)
        rows.append(row)
        relabelled += n
    out = B.summarise_rows(rows)
    roots = [c for cs in run.chunks.values() for c in cs if c.level == 0]
    out.update(n_questions=len(rows), n_evidence_relabelled=relabelled,
               n_chunks=sum(len(cs) for cs in run.chunks.values()), n_parents=len(roots),
               mean_parent_words=float(np.mean([count_words(c.text) for c in roots])) if roots else 0.0,
               embedded_words=sum(count_words(c.text) for cs in run.chunks.values() for c in cs if c.level == 2),
               embed_seconds=embed_seconds, search_seconds=time.perf_counter() - t1, top_k_per_level=top_k,
               budget_words=budget_words)
    return out


def _mean_std(values: list[float]) -> tuple[float, float]:
    a = np.asarray(values, dtype=float)
    return float(a.mean()), float(a.std()) if len(a) > 1 else 0.0


def run_retrieval(set_name: str | B.BenchSet, chunkers: Sequence[str], thetas: Sequence[int], ctx, *, docs=None,
                  max_questions: int | None = None, use_cache: bool = True, cache_dir: Path | None = None,
                  budget_words: int = 1500, progress: Callable[[str], None] | None = print,
                  subset: str = "") -> dict:
    """Every chunker at every θ on one bench set; returns the results dict (see :func:`retrieval_tables`)."""
    _MADE_THIS_RUN.clear()
    bench = set_name if isinstance(set_name, B.BenchSet) else B.load_set(set_name, docs)
    if max_questions is not None:
        bench.questions = bench.questions[:max_questions]
    emb = ctx.embedder
    if not isinstance(emb, CachedEmbedder):
        raise BenchError("run_retrieval needs a context whose embedder is a CachedEmbedder")
    monitor = B.LoadMonitor()
    res: dict = {"benchmark": "retrieval", "set": bench.name, "subset": subset, "docs": sorted(bench.docs),
                 "words": bench.words,
                 "n_questions": len(bench.questions), "thetas": list(thetas), "chunkers": list(chunkers),
                 "embedder": ctx.settings.embedder, "lm": ctx.settings.lm_model, "lg_mode": ctx.settings.lg_mode,
                 "boundary_tokens": list(ctx.settings.lg_boundary_tokens), "budget_words": budget_words,
                 "machine": B.machine_info(), "runs": {}, "skipped": {}}
    t_start = time.perf_counter()
    for name in chunkers:
        if name == "lumber" and (why := lumber_available(ctx)):
            res["skipped"][name] = why
            if progress:
                progress(why)
            continue
        for theta in thetas:
            if name in THETA_FREE and theta != thetas[0]:
                res["runs"].setdefault(name, {})[str(theta)] = dict(res["runs"][name][str(thetas[0])],
                                                                     same_as_theta=thetas[0])
                continue
            m0 = monitor.mark()
            try:
                run = chunk_documents(bench, name, theta, ctx, cache_dir=cache_dir, use_cache=use_cache,
                                      progress=progress)
            except BenchError as e:
                res["skipped"][name] = str(e)
                break
            e_words0, e_secs0 = emb.words, emb.seconds
            ev = B.evaluate_retrieval(bench, run.chunks, emb, budget_words=budget_words)
            entry = {**{k: v for k, v in ev.items() if k != "per_doc"}, "per_doc": ev["per_doc"],
                     "chunk_seconds": run.seconds, "chunk_cpu_seconds": run.cpu_seconds, "cached": run.cached,
                     "lm_tokens": run.lm_tokens, "doc_tokens": run.doc_tokens,
                     "lm_tokens_per_doc_token": run.lm_tokens_per_doc_token, "note": run.note,
                     "new_embedded_words": emb.words - e_words0, "new_embed_seconds": emb.seconds - e_secs0,
                     **monitor.summary(m0)}
            res["runs"].setdefault(name, {})[str(theta)] = entry
            if name == "li-hierarchical":
                am = evaluate_automerging(bench, run, emb, budget_words=budget_words)
                am.update(chunk_seconds=run.seconds, chunk_cpu_seconds=run.cpu_seconds, cached=False,
                          lm_tokens=0, doc_tokens=0, lm_tokens_per_doc_token=None,
                          note="llama-index AutoMergingRetriever over the leaves (top 20)")
                res["runs"].setdefault("li-hierarchical+automerge", {})[str(theta)] = am
            if progress:
                progress(f"{bench.name}: {name} θ={theta}: dcg@5 {ev['dcg@5']:.3f} recall@5 {ev['recall@5']:.3f} "
                         f"evidence recall {ev[f'evidence_recall@{budget_words}w']:.3f} "
                         f"(chunk {run.seconds:.1f}s{' cached' if run.cached else ''})")
    # speed: chunking time + the embedding time of the chunker's words at the run's measured embedding rate
    rate = emb.words_per_second
    res["embed_words_per_second"] = rate
    for by_theta in res["runs"].values():
        for entry in by_theta.values():
            embed_s = entry["embedded_words"] / rate if rate else 0.0
            entry["ingest_seconds_est"] = entry["chunk_seconds"] + embed_s
            entry["ingest_words_per_second"] = bench.words / entry["ingest_seconds_est"] if entry[
                "ingest_seconds_est"] else None
            entry["chunk_words_per_second"] = bench.words / entry["chunk_seconds"] if entry["chunk_seconds"] else None
    res["total_seconds"] = time.perf_counter() - t_start
    res["load"] = monitor.summary()
    res["peak_rss_mb"] = B.peak_rss_mb()
    monitor.stop()
    return res


HEAD_METRICS = ("dcg@1", "dcg@2", "dcg@5", "dcg@10", "dcg@20")
RECALL_METRICS = ("recall@1", "recall@2", "recall@5", "recall@10", "recall@20")


def _pm(values: list[float]) -> str:
    m, s = _mean_std(values)
    return f"{m:.3f} ± {s:.3f}" if len(values) > 1 else f"{m:.3f}"


def retrieval_tables(res: dict) -> str:
    """Markdown: the headline table (budget metrics + speed), then DCG@k and Recall@k, mean ± std over θ."""
    b = res["budget_words"]
    names = list(res["runs"])
    head_rows, dcg_rows, rec_rows, theta_rows = [], [], [], []
    for n in names:
        runs = [res["runs"][n][str(t)] for t in res["thetas"] if str(t) in res["runs"][n]]
        def col(k, runs=runs):
            return [r[k] for r in runs]
        lm = [r["lm_tokens_per_doc_token"] for r in runs if r.get("lm_tokens_per_doc_token")]
        speed_runs = runs[:1] if n in SHARED_WORK else runs  # later θ reuse the first θ's scores or vectors
        cw = [r["chunk_words_per_second"] for r in speed_runs if r.get("chunk_words_per_second")]
        iw = [r["ingest_words_per_second"] for r in speed_runs if r.get("ingest_words_per_second")]
        head_rows.append([n, _pm(col(f"evidence_recall@{b}w")), _pm(col(f"iou@{b}w")), _pm(col(f"precision@{b}w")),
                          f"{np.mean(col('mean_parent_words')):.0f}",
                          f"{np.mean(cw):,.0f}" if cw else "", f"{np.mean(iw):,.0f}" if iw else "",
                          f"{np.mean(lm):.2f}" if lm else "–"])
        dcg_rows.append([n] + [_pm(col(k)) for k in HEAD_METRICS])
        rec_rows.append([n] + [_pm(col(k)) for k in RECALL_METRICS])
        theta_rows.append([n] + [f"{res['runs'][n][str(t)][f'evidence_recall@{b}w']:.3f}"
                                 if str(t) in res["runs"][n] else "" for t in res["thetas"]])
    thetas = ", ".join(map(str, res["thetas"]))
    out = [
        f"**{res['set']}**{' (' + res['subset'] + ')' if res.get('subset') else ''}: {len(res['docs'])} docs, "
        f"{res['words']:,} words, {res['n_questions']} questions; "
        f"θ ∈ {{{thetas}}}; embedder {res['embedder']}; LM {res['lm']} ({res['lg_mode']} mode, boundary "
        f"{' '.join(res['boundary_tokens'])}). Mean ± std over θ.",
        "",
        B.markdown_table(["chunker", f"evidence recall @{b}w", f"IoU @{b}w", f"precision @{b}w", "mean parent words",
                          "chunking words/s", "ingest words/s (chunk + embed)", "LM tok / doc tok"], head_rows),
        "",
        B.markdown_table(["chunker", "DCG@1", "DCG@2", "DCG@5", "DCG@10", "DCG@20"], dcg_rows),
        "",
        B.markdown_table(["chunker", "Recall@1", "Recall@2", "Recall@5", "Recall@10", "Recall@20"], rec_rows),
        "",
        f"Evidence recall @{b}w per θ:",
        "",
        B.markdown_table(["chunker"] + [f"θ={t}" for t in res["thetas"]], theta_rows),
    ]
    for n, why in res.get("skipped", {}).items():
        out += ["", f"*{n}*: {why}"]
    return "\n".join(out)


def retrieval_plots(res: dict, out_dir: Path) -> list[Path]:
    """PNG plots: DCG@k and Recall@k vs k per chunker (mean over θ); evidence recall vs θ per chunker. Without
    matplotlib (the plots extra, in bench) a :class:`BenchError` saying what to install (the results are written
    before)."""
    try:
        import matplotlib
    except ImportError as e:
        raise BenchError(PLOTS_MISSING) from e

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    ks = [1, 2, 5, 10, 20]
    names = list(res["runs"])
    paths = []
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    cmap = plt.get_cmap("tab20")
    for i, n in enumerate(names):
        runs = [res["runs"][n][str(t)] for t in res["thetas"] if str(t) in res["runs"][n]]
        style = dict(color=cmap(i % 20), marker="o", lw=2.4 if n in ("lgmgc", "lg", "mg") else 1.2,
                     ls="-" if n in OWN else "--")
        for ax, metric in zip(axes, ("dcg", "recall")):
            ax.plot(ks, [np.mean([r[f"{metric}@{k}"] for r in runs]) for k in ks], label=n, **style)
    for ax, title in zip(axes, ("DCG@k", "Recall@k")):
        ax.set_xscale("log")
        ax.set_xticks(ks, [str(k) for k in ks])
        ax.set_xlabel("k")
        ax.set_title(f"{res['set']}: {title} (mean over θ)")
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=7, loc="lower right", ncol=2)
    fig.tight_layout()
    p = out_dir / f"{res['set']}_retrieval_at_k.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    paths.append(p)

    fig, ax = plt.subplots(figsize=(7, 4.5))
    b = res["budget_words"]
    for i, n in enumerate(names):
        ts = [t for t in res["thetas"] if str(t) in res["runs"][n]]
        ax.plot(ts, [res["runs"][n][str(t)][f"evidence_recall@{b}w"] for t in ts], marker="o", label=n,
                color=cmap(i % 20), ls="-" if n in OWN else "--")
    ax.set_xlabel("θ (words)")
    ax.set_ylabel(f"evidence recall @{b}w")
    ax.set_title(f"{res['set']}: evidence recall within the {b}-word context")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    p = out_dir / f"{res['set']}_evidence_recall_theta.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    paths.append(p)
    return paths


# -- QA ----------------------------------------------------------------------------------------------------------
# LongBench's generation caps per subset (its dataset2maxlen); other subsets use the synthesizer's own cap.
_CITATION = re.compile(r"\s*\[\d+\]")
LONGBENCH_MAXLEN = {"qasper": 128, "multifieldqa_en": 64, "narrativeqa": 128, "2wikimqa": 32}


def _sources_for(text: str, spans: Sequence[tuple[int, int]], doc_id: str):
    from retrieval.search import Source

    return [Source(i + 1, doc_id, f"{s}:{e}", s, e, text[s:e], 1.0, 0, s, e, text[s:e])
            for i, (s, e) in enumerate(spans)]


def run_qa(set_name: str | B.BenchSet, ctx, synthesizer, *, chunkers: Sequence[str] = ("lgmgc",), theta: int = 300,
           max_questions: int | None = None, use_cache: bool = True, cache_dir: Path | None = None,
           budget_words: int = 1500, no_retrieval_words: int = 3500,
           progress: Callable[[str], None] | None = print) -> dict:
    """QA F1 per subset: each chunker's retrieved context vs the no-retrieval baseline, one synthesizer."""
    _MADE_THIS_RUN.clear()
    from retrieval.search import no_retrieval_context

    bench = set_name if isinstance(set_name, B.BenchSet) else B.load_set(set_name)
    if max_questions is not None:
        bench.questions = bench.questions[:max_questions]
    asked = {q.doc_id for q in bench.questions}  # chunk only the documents that are asked about
    bench = B.BenchSet(bench.name, {d: t for d, t in bench.docs.items() if d in asked}, bench.questions)
    emb = ctx.embedder
    res: dict = {"benchmark": "qa", "set": bench.name, "n_questions": len(bench.questions), "theta": theta,
                 "chunkers": list(chunkers), "synthesizer": getattr(synthesizer, "name", type(synthesizer).__name__),
                 "budget_words": budget_words, "no_retrieval_words": no_retrieval_words,
                 "machine": B.machine_info(), "rows": [], "chunking": {}}
    runs = {}
    for name in chunkers:
        run = chunk_documents(bench, name, theta, ctx, cache_dir=cache_dir, use_cache=use_cache, progress=progress)
        runs[name] = run
        res["chunking"][name] = {"seconds": run.seconds, "cached": run.cached,
                                 "lm_tokens_per_doc_token": run.lm_tokens_per_doc_token}
    vecs = {name: {d: emb.embed_passages([c.text for c in cs]) for d, cs in run.chunks.items()}
            for name, run in runs.items()}
    qvecs = emb.embed_queries([q.question for q in bench.questions])
    base_cap = getattr(synthesizer, "max_new_tokens", None)
    t_start = time.perf_counter()
    for qi, (q, qv) in enumerate(zip(bench.questions, qvecs)):
        text = bench.docs[q.doc_id]
        cap = LONGBENCH_MAXLEN.get(q.dataset or "", base_cap)
        if base_cap is not None and cap is not None:
            synthesizer.max_new_tokens = cap
        row = {"id": q.id, "dataset": q.dataset, "answers": list(q.answers)}
        conditions = [("no-retrieval", [(0, len(no_retrieval_context(text, no_retrieval_words)))])]
        for name, run in runs.items():
            chunks = run.chunks[q.doc_id]
            hits = level_hits(chunks, vecs[name][q.doc_id] @ qv, 20)
            ranked = [pid for pid, _, _ in rank_parents(hits, [1.0] * (1 + max(c.level for c in chunks)))]
            ctx_parts = assemble_context([(pid, text[int(pid.split(':')[0]):int(pid.split(':')[1])])
                                          for pid in ranked], budget_words)
            conditions.append((name, [tuple(int(x) for x in pid.split(":")) for pid, _ in ctx_parts]))
        for cond, spans in conditions:
            t0 = time.perf_counter()
            try:
                pred = "".join(synthesizer.stream(q.question, _sources_for(text, spans, q.doc_id))).strip()
                err = None
            except Exception as e:  # a failed generation scores 0 and is reported, the run goes on
                pred, err = "", f"{e.__class__.__name__}: {e}"
            scored = _CITATION.sub("", pred)  # our synthesizers cite sources as [n]: not part of the answer
            row[cond] = {"prediction": pred, "f1": qa_f1_max(scored, q.answers) if q.answers else None,
                         "seconds": time.perf_counter() - t0, "context_words": sum(
                             count_words(text[s:e]) for s, e in spans), **({"error": err} if err else {})}
        res["rows"].append(row)
        if progress:
            progress(f"{bench.name} QA {qi + 1}/{len(bench.questions)} [{q.dataset}]: " + ", ".join(
                f"{c} F1 {row[c]['f1']:.2f}" for c, _ in conditions if row[c]["f1"] is not None))
    if base_cap is not None:
        synthesizer.max_new_tokens = base_cap
    res["seconds"] = time.perf_counter() - t_start
    conds = ["no-retrieval", *chunkers]
    subsets = sorted({r["dataset"] for r in res["rows"]})
    res["f1"] = {c: {d: float(np.mean([r[c]["f1"] for r in res["rows"] if r["dataset"] == d])) for d in subsets}
                 for c in conds}
    for c in conds:
        res["f1"][c]["all"] = float(np.mean([r[c]["f1"] for r in res["rows"]]))
    return res


def qa_table(res: dict) -> str:
    subsets = [d for d in next(iter(res["f1"].values())) if d != "all"]
    counts = {d: sum(r["dataset"] == d for r in res["rows"]) for d in subsets}
    rows = [[c if c == "no-retrieval" else f"{c} (θ={res['theta']})"]
            + [f"{100 * res['f1'][c][d]:.1f}" for d in subsets] + [f"{100 * res['f1'][c]['all']:.1f}"]
            for c in res["f1"]]
    return B.markdown_table(["context"] + [f"{d} (n={counts[d]})" for d in subsets] + [f"all (n={len(res['rows'])})"],
                            rows)


def write_results(name: str, res: dict, results_dir: Path | None = None) -> Path:
    d = Path(results_dir or B.RESULTS_DIR)
    d.mkdir(parents=True, exist_ok=True)
    p = d / name
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps(res, indent=1, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    tmp.replace(p)
    return p


def bench_context(settings):
    """An AppContext for benchmarks: the configured models, the embedder wrapped in a run-wide cache."""
    from app.context import AppContext

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    s = settings
    # fp32 whatever the machine (not the app's "auto"): scores and the disk caches of vectors stay comparable across
    # machines; bf16's retrieval is measured on its own (bench/late_chunking.py --levels)
    inner = load_embedder(s.embedder, query_prefix=s.embed_query_prefix, passage_prefix=s.embed_passage_prefix,
                          batch_size=s.embed_batch_size, precision="fp32")
    return AppContext(s, embedder=CachedEmbedder(inner))


# -- profiles: what `make bench` runs -----------------------------------------------------------------------------
DEFAULT_CHUNKERS = OWN
DEFAULT_THETAS = (200, 300, 500)
PROFILES: dict[str, dict] = {
    # fits `make bench` into 45 minutes on 2 CPU cores (see BENCHMARKS.md for the measured time)
    "standard": {
        "chroma": {"docs": ["chatlogs", "state_of_the_union", "wikitexts"]},
        "gutenqa_emma": {"excerpt": 0.4},
        "longbench_sample": {"max_doc_words": 7000},
    },
    # every document and question (about 3 hours here)
    "full": {"chroma": {}, "gutenqa_emma": {}, "longbench_sample": {}},
}


def profiled_set(set_name: str, profile: str) -> tuple[B.BenchSet, str]:
    """The bench set restricted as the profile says, and a one-line description of the restriction."""
    spec = PROFILES[profile].get(Path(set_name).name, {})
    bench = B.load_set(set_name, spec.get("docs"))
    notes = []
    if spec.get("docs"):
        notes.append(f"docs {', '.join(spec['docs'])}")
    if spec.get("excerpt"):
        bench = B.excerpt(bench, spec["excerpt"])
        notes.append(f"first {spec['excerpt']:.0%} of the book, the questions whose evidence lies in it")
    if spec.get("max_doc_words"):
        keep = {d for d, t in bench.docs.items() if count_words(t) <= spec["max_doc_words"]}
        bench = B.BenchSet(bench.name, {d: t for d, t in bench.docs.items() if d in keep},
                           [q for q in bench.questions if q.doc_id in keep])
        notes.append(f"documents of at most {spec['max_doc_words']:,} words")
    return bench, f"{profile} profile: " + "; ".join(notes) if notes else f"{profile} profile: everything"
