"""Finding the passage: contextual chunk text, keywords and meaning together, and the peers' splitters (issue 35).

On the six dev sets of ``bench/level_scoring.py`` (its ``--quick`` profile), MiniLM, θ = 300, every question
searched within its document as ``mgrag bench retrieval`` does (top 20 chunks of each level, the metrics of
:func:`app.evaluation.bench.question_metrics`: DCG@10 and evidence recall within a 1500-word context):

* **chunkers**: ``mg`` (the product's: blank-line blocks, then lines, sentences, words), ``mg-lines`` (its cut
  before blocks counted: lines first; with plain text and dense search, the default before issue 35), LangChain's
  recursive splitter (``lc-recursive``), LlamaIndex's sentence splitter (``li-sentence``) and chonkie's recursive
  chunker (``chonkie-recursive``), each at θ words, as :mod:`app.evaluation.peers` runs them; and LlamaIndex's
  hierarchy (``li-hierarchical``: θ, θ/2, θ/4) searched only by its own *auto-merging* retriever (the top 20 leaves
  by cosine, merged into their parent when more than half of its children are retrieved), over the same vectors;
* **text**: *plain* (the chunk's own text is embedded) or *contextual* (:func:`ingest.text.chunk_context.indexed_text`:
  the document's title, the heading path where the chunk starts, a table's caption and header row) or, for mg,
  *context, no title* (the same without the title: what sections and tables add within one document);
* **retriever**: *dense* (the parent's score the max over its own and its children's cosine scores, today's),
  *parents* (level 0 only), *bm25* (the product's BM25, :class:`retrieval.bm25.Bm25Level`, over the same texts)
  and *hybrid* (dense and BM25 parent rankings fused by reciprocal rank, k = 60, as ``retrieval.search`` fuses them;
  ``hybrid w`` weighs the BM25 ranking by w).

Paired bootstrap over questions (2000 resamples, seed 0; the mean over sets resamples each set's questions)
against the default before issue 35 (mg-lines, plain, dense) and against LangChain recursive (plain, dense).
Cost: the words each chunking embeds per document word (three levels embed each word about three times), and the
seconds per 10k document words to embed them at the MiniLM speed measured in the same run.

    .venv/bin/python bench/retrieval_variants.py          # bench/results/retrieval_variants.json + BENCHMARKS.md
    .venv/bin/python bench/retrieval_variants.py --render

Passage vectors are shared with level_scoring's cache (``<cache_dir>/bench/level_scoring_vectors.npy``): a
re-run embeds only new texts.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench.level_scoring as LS  # noqa: E402

CHUNKERS = ("mg", "mg-lines", "lc-recursive", "li-sentence", "chonkie-recursive", "li-hierarchical")
AUTOMERGING = "li-hierarchical"  # searched by llama-index's AutoMergingRetriever only, over plain text
CONTEXTUAL = ("mg", "mg-lines", "lc-recursive")  # the chunkers also run with contextual text
HYBRID_WEIGHTS = (1.0, 0.5)
RRF_K = 60
SECTION = "retrieval-variants"
COMMAND = ".venv/bin/python bench/retrieval_variants.py"
DEFAULT = "mg-lines|plain|dense"
PEER = "lc-recursive|plain|dense"
BEFORE = "mg-lines|contextual|hybrid 1"  # what shipped before blank-line blocks counted (f9ea6bc until the change)


def contextual_texts(doc_id: str, text: str, chunks, title: bool = True) -> list[str]:
    from ingest.text.chunk_context import context_line, indexed_text, text_headings, title_of

    heads = text_headings(text)
    name = title_of(doc_id) if title else ""
    return [indexed_text(context_line(name, text, c.start, heads), c.text) for c in chunks]


def _bm25(chunks, texts):
    from collections import Counter

    from retrieval.bm25 import Bm25Level, tokenize

    return Bm25Level([str(i) for i in range(len(chunks))], [Counter(tokenize(t)) for t in texts])


def _spans(hits, levels=None):
    return LS.ranked_spans(hits, levels=levels)


def _rrf(rankings, weights):
    out: dict = {}
    for ranking, w in zip(rankings, weights):
        for r, span in enumerate(ranking, 1):
            out[span] = out.get(span, 0.0) + w / (RRF_K + r)
    return [s for s, _ in sorted(out.items(), key=lambda kv: -kv[1])]


def rankings(chunks, vecs, bm25, qv, tokens) -> dict[str, list]:
    """Each retriever's ranked parent spans for one question."""
    from retrieval.scoring import level_hits

    dense_hits = level_hits(chunks, vecs @ qv, LS.TOP_K)
    dense = _spans(dense_hits)
    sparse = _spans(level_hits(chunks, bm25.scores(tokens), LS.TOP_K))
    out = {"dense": dense, "parents": _spans(dense_hits, levels={0}), "bm25": sparse}
    for w in HYBRID_WEIGHTS:
        out[f"hybrid {w:g}"] = _rrf([dense, sparse], [1.0, w])
    return out


def run_set(b, ch: str, ctx, vectors, qvecs, speed) -> tuple[dict, dict]:
    """Per variant ``chunker|text|retriever``: the question metrics arrays; and the chunking's cost figures."""
    from app.evaluation import harness as H
    from app.evaluation.bench import question_metrics
    from ingest.text.sentences import count_words
    from retrieval.bm25 import tokenize

    run = H.chunk_documents(b, ch, LS.THETA, ctx)
    texts_by = {"plain": lambda d, cs: [c.text for c in cs]}
    if ch in CONTEXTUAL:
        texts_by["contextual"] = lambda d, cs: contextual_texts(d, b.docs[d], cs)
    if ch in ("mg", "mg-lines"):  # what the headings and tables give without the document's title
        texts_by["context, no title"] = lambda d, cs: contextual_texts(d, b.docs[d], cs, title=False)
    rows: dict[str, list] = {}
    embedded = dict.fromkeys(texts_by, 0)
    for kind, texts_of in texts_by.items():
        prepared = {}
        for d, chunks in run.chunks.items():
            texts = texts_of(d, chunks)
            embedded[kind] += sum(count_words(t) for t in texts)
            prepared[d] = (chunks, vectors.passages(texts), _bm25(chunks, texts),
                           sorted({c.parent_span for c in chunks}))
        vectors.save()
        for q in b.questions:
            if q.doc_id not in prepared:
                continue
            chunks, vecs, bm25, parents = prepared[q.doc_id]
            q2 = LS._relabel(q, b.docs[q.doc_id], parents)
            for retr, spans in rankings(chunks, vecs, bm25, qvecs[q.question], tokenize(q.question)).items():
                row, _ = question_metrics(q2, b.docs[q.doc_id], spans, parents, budget_words=LS.BUDGET)
                rows.setdefault(f"{ch}|{kind}|{retr}", []).append(row)
    words = sum(count_words(t) for t in b.docs.values())
    cost = {"chunk_s_per_10k_words": run.seconds / words * 1e4,
            "embedded_words_per_word": {k: n / words for k, n in embedded.items()},
            "embed_s_per_10k_words": {k: n / words * 1e4 / speed for k, n in embedded.items()}}
    return {k: {m: np.array([r[m] for r in v]) for m in LS.METRICS} for k, v in rows.items()}, cost


class _CachedVectors:
    """The embedder llama-index's index sees: passages from the run's disk cache, queries already embedded."""

    def __init__(self, vectors, qvecs: dict):
        self.vectors, self.qvecs = vectors, qvecs

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self.vectors.passages(list(texts))

    def embed_queries(self, texts: list[str]) -> list:
        return [self.qvecs[t] for t in texts]


def run_automerging(b, ch: str, ctx, vectors, qvecs, speed) -> tuple[dict, dict]:
    """``li-hierarchical · plain · auto-merging`` on one set, returned as :func:`run_set` returns: llama-index's
    own retriever over its hierarchy (the leaves' plain text embedded; evidence without offsets re-labelled to the
    θ nodes, as every chunker's to its parents). Its cost figures add what the first 10 spans it returns are: the
    share that are unmerged (θ/4) leaves and their mean words."""
    from app.evaluation import harness as H
    from app.evaluation.bench import question_metrics
    from app.evaluation.peers import _Embedding
    from ingest.text.sentences import count_words

    run = H.chunk_documents(b, ch, LS.THETA, ctx)
    embedding = _Embedding.make(_CachedVectors(vectors, qvecs))
    retrievers = {d: h.automerging(embedding, LS.TOP_K) for d, h in run.hierarchy.items()}
    vectors.save()
    parents = {d: sorted({c.parent_span for c in cs}) for d, cs in run.chunks.items()}
    leaves = {d: set(h.leaf_spans()) for d, h in run.hierarchy.items()}
    rows, top10 = [], []  # top10: (is an unmerged leaf, words) of each of the first 10 spans returned
    for q in b.questions:
        if q.doc_id not in retrievers:
            continue
        q2 = LS._relabel(q, b.docs[q.doc_id], parents[q.doc_id])
        spans = retrievers[q.doc_id](q.question)
        row, _ = question_metrics(q2, b.docs[q.doc_id], spans, parents[q.doc_id], budget_words=LS.BUDGET)
        rows.append(row)
        top10 += [(sp in leaves[q.doc_id], count_words(b.docs[q.doc_id][sp[0]:sp[1]])) for sp in spans[:10]]
    words = sum(count_words(t) for t in b.docs.values())
    embedded = sum(count_words(h.text[s:e]) for h in run.hierarchy.values() for s, e in h.leaf_spans())
    cost = {"chunk_s_per_10k_words": run.seconds / words * 1e4,
            "embedded_words_per_word": {"plain": embedded / words},
            "embed_s_per_10k_words": {"plain": embedded / words * 1e4 / speed},
            "top10_leaf_share": float(np.mean([leaf for leaf, _ in top10])),
            "top10_mean_words": float(np.mean([n for _, n in top10]))}
    return {f"{ch}|plain|auto-merging": {m: np.array([r[m] for r in rows]) for m in LS.METRICS}}, cost


def embed_speed(ctx, sample: list[str]) -> float:
    """MiniLM passage words per second on ``sample`` (best of three, no cache)."""
    from ingest.text.sentences import count_words

    words = sum(count_words(t) for t in sample)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        ctx.embedder.inner.embed_passages(sample)
        best = min(best, time.perf_counter() - t0)
    return words / best


def run(args) -> dict:
    from app.evaluation import bench as B
    from app.evaluation import harness as H
    from core.settings import Settings

    t0 = time.perf_counter()
    ctx = H.bench_context(Settings(embedder="all-MiniLM-L6-v2", theta=LS.THETA))
    vectors = LS.DiskVectors(ctx.embedder, Path(ctx.settings.cache_dir) / "bench" / "level_scoring_vectors.npy")
    sets, notes = LS.load_sets(args.sets, quick=True)
    qvecs = {}
    for b in sets.values():
        qs = [q.question for q in b.questions]
        qvecs.update(zip(qs, ctx.embedder.embed_queries(qs)))
    chroma = next(iter(sets.values()))
    sample = [c.text for c in H.chunk_documents(chroma, "mg", LS.THETA, ctx).chunks[next(iter(chroma.docs))][:200]]
    speed = embed_speed(ctx, sample)
    results: dict[str, dict[str, dict]] = {}
    costs: dict[str, dict[str, dict]] = {}
    for name, b in sets.items():
        for ch in CHUNKERS:
            res, cost = (run_automerging if ch == AUTOMERGING else run_set)(b, ch, ctx, vectors, qvecs, speed)
            for k, v in res.items():
                results.setdefault(k, {})[name] = v
            costs.setdefault(ch, {})[name] = cost
            print(f"{name}: {ch} done ({time.perf_counter() - t0:.0f}s)", flush=True)
    rows = {}
    for k, per in results.items():
        r = {"per_set": {s: {m: float(v[m].mean()) for m in LS.METRICS} for s, v in per.items()}}
        r["mean"] = {m: float(np.mean([v[m].mean() for v in per.values()])) for m in LS.METRICS}
        for ref_name, ref in (("vs_default", DEFAULT), ("vs_lc_recursive", PEER), ("vs_before", BEFORE)):
            r[ref_name] = {m: LS.boot({s: per[s][m] - results[ref][s][m] for s in per}) for m in LS.METRICS}
        rows[k] = r
    meta = {name: {"docs": len(b.docs), "questions": len(b.questions), "words": b.words, "subset": notes[name]}
            for name, b in sets.items()}
    return {"command": COMMAND, "sets": meta, "rows": rows, "costs": costs, "embed_words_per_s": speed,
            "n_boot": LS.N_BOOT, "top_k_per_level": LS.TOP_K, "budget_words": LS.BUDGET, "theta": LS.THETA,
            "machine": B.machine_info(), "seconds": time.perf_counter() - t0}


def _cell(r, s) -> str:
    m10, er = LS.METRICS
    return f"{r['per_set'][s][m10]:.3f} / {r['per_set'][s][er]:.3f}"


def render(res: dict) -> str:
    m10, er = LS.METRICS
    sets = list(res["sets"])
    rows = res["rows"]
    setline = "; ".join(f"{LS.SHORT[s]} {m['questions']} questions / {m['docs']} docs / {m['words']:,} words"
                        for s, m in res["sets"].items())
    head = ["variant (chunker · text · retriever)", *[LS.SHORT[s] for s in sets], "mean",
            "Δ DCG@10 vs default", "Δ DCG@10 vs LC recursive", "Δ recall vs LC recursive",
            "sets ≥ LC (DCG / recall)", "embed s / 10k words"]
    out = ["```", res["command"], "```", "",
           f"MiniLM, θ = {res['theta']}, top {res['top_k_per_level']} chunks per level, {res['budget_words']}-word "
           f"context, each question searched within its document; {res['seconds'] / 60:.0f} min (passage vectors "
           f"reused from the cache where present) on "
           f"{res['machine'].get('affinity', '?')} cores ({res['machine'].get('cpu', '')}). Sets (level_scoring's "
           f"quick profile): {setline}. Cells: DCG@10 / evidence recall @{res['budget_words']} w. Δ: difference on "
           f"the mean over sets, paired bootstrap 95% CI ({res['n_boot']} resamples). *default* = mg-lines · plain · "
           "dense "
           "(the product's default before issue 35; it ships mg · contextual · hybrid 1 since); *mg-lines* = MG as "
           "it cut before blank-line blocks counted (lines first, so a table or passage could be cut where a chunk "
           "filled up); "
           "*contextual* = title › heading path (+ table caption and header row) embedded and "
           "keyword-indexed before the chunk's text; *hybrid w* = dense and BM25 parent rankings fused by "
           f"reciprocal rank (k = {RRF_K}), BM25 weighted w; *auto-merging* = LlamaIndex's hierarchy (θ, θ/2, θ/4) "
           f"searched by its AutoMergingRetriever (the top {res['top_k_per_level']} leaves, merged into their parent "
           "when more than half of its children are retrieved); *chonkie-recursive* = chonkie's RecursiveChunker "
           "(default rules). Embed cost: the words a chunking embeds per 10k document "
           f"words at the MiniLM speed measured in the run ({res['embed_words_per_s']:.0f} words/s), context lines "
           "included.", "",
           "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    order = sorted(rows, key=lambda k: -rows[k]["mean"][m10])
    for k in order:
        r = rows[k]
        ch, kind = k.split("|")[:2]
        ge = [sum(r["per_set"][s][m] >= rows[PEER]["per_set"][s][m] - 1e-9 for s in sets) for m in (m10, er)]
        cost = np.mean([c["embed_s_per_10k_words"][kind] for c in res["costs"][ch].values()])
        vd, vl = r["vs_default"], r["vs_lc_recursive"]
        out.append("| " + " | ".join([k.replace("|", " · "), *[_cell(r, s) for s in sets],
                                      f"**{r['mean'][m10]:.3f}** / {r['mean'][er]:.3f}",
                                      "–" if k == DEFAULT else LS._ci(vd[m10]["mean"]),
                                      "–" if k == PEER else LS._ci(vl[m10]["mean"]),
                                      "–" if k == PEER else LS._ci(vl[er]["mean"]),
                                      f"{ge[0]}/{len(sets)} · {ge[1]}/{len(sets)}", f"{cost:.1f}"]) + " |")
    if res.get("reading"):
        out += ["", res["reading"]]
    return "\n".join(out)


def main(argv=None) -> int:
    from app.evaluation import bench as B
    from app.evaluation import harness as H

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", type=lambda s: s.split(","), default=None)
    ap.add_argument("--render", action="store_true", help="only render the section from the results file")
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    path = B.RESULTS_DIR / "retrieval_variants.json"
    if args.render:
        res = json.loads(path.read_text(encoding="utf-8"))
    else:
        res = run(args)
        if not args.no_write:
            H.write_results("retrieval_variants.json", res)
    return B.publish_section(SECTION, render(res), write=not args.no_write)


if __name__ == "__main__":
    raise SystemExit(main())
