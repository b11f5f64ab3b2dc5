"""Late chunking against today's independent embeddings: three levels for the price of one (issue 37).

MG cuts each document into parents of up to θ = 300 words and each parent into θ/2 and θ/4 children, and embeds
every chunk of every level on its own: each word is embedded about three times. Late chunking runs MiniLM once over
each parent's text (its windows of at most 254 word pieces, as ``embed_passages`` cuts them) and pools each child's
vector from the token states of that one pass (:meth:`ingest.embed.SentenceTransformerEmbedder.embed_spans`).

On the six dev sets of ``bench/level_scoring.py`` (its ``--quick`` profile), mg θ = 300, contextual text (the
shipped default: :func:`ingest.text.chunk_context.indexed_text`, the title › heading path and a table's caption and
header before the chunk's text), each question searched within its document as ``bench/retrieval_variants.py``
searches it (top 20 chunks per level; *dense*: the parent's score the max over its own and its children's cosines;
*hybrid 1*: that ranking fused with BM25's over the same contextual texts by reciprocal rank, the shipped retriever):

* **independent** (today): every chunk's contextual text embedded alone (``embed_passages``);
* **late, context + child**: each parent's contextual text embedded once; the parent's vector is the whole text's
  (the same as today's), a child's pools the parent's context-line tokens and its own tokens from that pass (the
  positions it would pool if embedded alone with the parent's context line; a child whose own heading path differs
  from its parent's gets the parent's);
* **late, child only**: the same pass, a child's vector pools its own tokens only (the context reaches it through
  attention, within its window);
* **pooled parents**: the children embedded alone as today, and no parent embedded: a parent's vector is the
  word-weighted mean of its θ/2 children's (normalised), as a long text's vector is the mean of its windows.

BM25 indexes the same contextual texts in every variant: only the dense vectors differ. Paired bootstrap over
questions (2000 resamples, seed 0; the mean over sets resamples each set's questions) of each late variant against
independent. Cost: the CPU seconds (``time.process_time()``, all threads of this process) of embedding each set's
texts each way in this run (independent: every chunk; late: the parents' passes; pooled: the children), no cache,
one way after another (the order turns by set).

    HF_HUB_OFFLINE=1 .venv/bin/python bench/late_chunking.py      # bench/results/late_chunking.json
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
import bench.retrieval_variants as RV  # noqa: E402

REF = "independent"
LATE = ("late, context + child", "late, child only")
POOLED = "pooled parents"
VARIANTS = (REF, *LATE, POOLED)
WAYS = (REF, "late", "pooled")  # how each variant's vectors are embedded (timed)
RETRIEVERS = ("hybrid 1", "dense")
# --levels: the cheaper ways measured after pooled parents; each late variant pools only the θ/4 children (the level
# with the most chunks) from the parent's pass and embeds the θ/2 children alone; and the same in bfloat16
LEVELS = ("late smallest, context + child", "late smallest, child only")  # in LATE's order
BF16 = ("bf16", *(f"bf16, {v}" for v in LEVELS))
LEVEL_VARIANTS = (REF, *LEVELS, *BF16)
LEVEL_WAYS = (REF, "late", "independent bf16", "late bf16")
COMMAND = "HF_HUB_OFFLINE=1 .venv/bin/python bench/late_chunking.py"
# --halves: everything in bf16 (the shipped default on a CPU with native bf16); the θ/4 children pooled from their θ/2
# child's pass (which also gives the θ/2 child's own vector: the whole text's span), the parents embedded alone
HALVES = ("quarters in halves, own context", "quarters in halves, half's context")  # no "/": docs-check paths
HALF_VARIANTS = (REF, *HALVES)
HALF_WAYS = (REF, "halves", "quarters alone")


def late_plan(chunks, texts: list[str]):
    """For one document: the parents' contextual texts, the spans wanted of each, and where every chunk's vector is
    found among them per late variant: ``{variant: [(parent index, span index)] per chunk}``; and how many
    children have a context line other than their parent's."""
    parents = [i for i, c in enumerate(chunks) if c.level == 0]
    at = {(chunks[i].start, chunks[i].end): k for k, i in enumerate(parents)}
    p_texts = [texts[i] for i in parents]
    spans: list[list] = [[(0, len(t))] for t in p_texts]
    where = {v: [(-1, -1)] * len(chunks) for v in LATE}
    other_context = 0
    for i, c in enumerate(chunks):
        k = at[c.parent_span]
        p = chunks[parents[k]]
        ctx_len = len(p_texts[k]) - len(p.text)
        if c.level == 0:
            for v in LATE:
                where[v][i] = (k, 0)
            continue
        off = ctx_len + c.start - p.start
        if p_texts[k][off:off + len(c.text)] != c.text:
            raise AssertionError(f"child at {c.start} is not its parent's text at {off}")
        other_context += texts[i][:len(texts[i]) - len(c.text)] != p_texts[k][:ctx_len]
        own = (off, off + len(c.text))
        for v, span in zip(LATE, (((0, ctx_len), own) if ctx_len else own, own)):
            where[v][i] = (k, len(spans[k]))
            spans[k].append(span)
    return p_texts, spans, where, other_context


def half_plan(chunks, texts: list[str]):
    """For one document: the θ/2 children's contextual texts, the spans wanted of each (its whole text first, then
    its θ/4 children's, as the ingest finds them: :func:`ingest.jobs.work.quarter_spans`), and per :data:`HALVES`
    variant where each chunk's vector is found: ``(θ/2 index, span index)``, ``("alone", k)`` for a θ/4 child
    embedded alone (*own context*: its context line differs from its θ/2 child's), ``("parent", k)`` for a parent;
    and the texts of those θ/4 children."""
    from ingest.jobs.work import quarter_spans

    halves = [i for i, c in enumerate(chunks) if c.level == 1]
    k_of = {i: k for k, i in enumerate(halves)}
    same = {(chunks[i].start, chunks[i].end, chunks[i].parent_span): k for k, i in enumerate(halves)}
    h_texts = [texts[i] for i in halves]
    spans: list[list] = [[(0, len(t))] for t in h_texts]
    pooled = quarter_spans(chunks, texts)
    where: dict[str, list] = {v: [] for v in HALVES}
    alone: list[str] = []
    n_parent = 0
    for i, c in enumerate(chunks):
        if c.level == 0:
            n_parent += 1
            for v in HALVES:
                where[v].append(("parent", n_parent - 1))
            continue
        if c.level == 1 or i not in pooled:  # a θ/2 child, or a θ/4 child with its θ/2 child's span: the whole text
            k = k_of[i] if c.level == 1 else same[(c.start, c.end, c.parent_span)]
            for v in HALVES:
                where[v].append((k, 0))
            continue
        h, span = pooled[i]
        k = k_of[h]
        own = span[1] if isinstance(span[0], tuple) else span
        if texts[h][own[0]:own[1]] != c.text:
            raise AssertionError(f"θ/4 child at {c.start} is not its θ/2 child's text at {own[0]}")
        where[HALVES[1]].append((k, len(spans[k])))
        if texts[i][:len(texts[i]) - len(c.text)] == texts[h][:len(texts[h]) - len(chunks[h].text)]:
            where[HALVES[0]].append((k, len(spans[k])))
        else:
            where[HALVES[0]].append(("alone", len(alone)))
            alone.append(texts[i])
        spans[k].append(span)
    return h_texts, spans, where, alone


def embed_set_halves(inner, docs: dict, turn: int) -> tuple[dict, dict]:
    """``--halves``: every document's vectors per :data:`HALF_VARIANTS` (all in bf16) and the cost of each way of
    :data:`HALF_WAYS`: independent level by level, the θ/2 passes, the θ/4 children embedded alone."""
    from ingest.text.sentences import count_words

    plans = {d: half_plan(chunks, texts) for d, (chunks, texts) in docs.items()}
    by_level = {lv: [t for chunks, texts in docs.values() for c, t in zip(chunks, texts) if c.level == lv]
                for lv in (0, 1, 2)}
    h_texts = [t for p in plans.values() for t in p[0]]
    h_spans = [s for p in plans.values() for s in p[1]]
    alone = [t for p in plans.values() for t in p[3]]
    cost: dict = {}
    got: dict = {}
    for way in HALF_WAYS[turn % 3:] + HALF_WAYS[:turn % 3]:
        if way == "halves":
            got[way], cost[way] = _timed(inner.embed_spans, h_texts, h_spans)
            cost[way]["words"] = sum(count_words(t) for t in h_texts)
        elif way == "quarters alone":
            got[way], cost[way] = _timed(inner.embed_passages, alone)
            cost[way]["words"] = sum(count_words(t) for t in alone)
        else:
            got[way], cost[way] = _by_level(inner, by_level)
    for v in HALVES:  # what the variant embeds: the parents alone, the θ/2 passes, (own context) some θ/4 alone
        extra = cost["quarters alone"]["cpu_s"] if v == HALVES[0] else 0.0
        cost[v] = {"cpu_s": cost[REF]["level0_cpu_s"] + cost["halves"]["cpu_s"] + extra}
    vecs: dict = {}
    at = {0: 0, 1: 0, 2: 0}
    first, first_alone = 0, 0
    cos = []
    for d, (chunks, _) in docs.items():
        rows = []
        for c in chunks:
            rows.append((c.level, at[c.level]))
            at[c.level] += 1
        vecs[d] = {REF: np.stack([got[REF][lv][r] for lv, r in rows]).astype(np.float32)}
        where = plans[d][2]
        for v in HALVES:
            out = np.zeros_like(vecs[d][REF])
            for i, (k, j) in enumerate(where[v]):
                if k == "parent":
                    out[i] = vecs[d][REF][i]
                elif k == "alone":
                    out[i] = got["quarters alone"][first_alone + j]
                else:
                    out[i] = got["halves"][first + k][j]
            vecs[d][v] = out
        lv1 = np.array([c.level == 1 for c in chunks])
        cos.append(np.sum(vecs[d][REF][lv1] * vecs[d][HALVES[0]][lv1], axis=1))
        first += len(plans[d][0])
        first_alone += len(plans[d][3])
    c = np.concatenate(cos)
    cost["half_min_cosine"] = float(c.min()) if len(c) else 1.0  # the θ/2 pass's own vector against today's
    cost["quarters_alone"] = len(alone)
    cost["quarters"] = len(by_level[2])
    return vecs, cost


def _by_level(inner, by_level: dict) -> tuple[dict, dict]:
    """Each level's texts embedded alone, timed level by level: the vectors per level and the cost (``levelN_cpu_s``
    for each, and the totals)."""
    from ingest.text.sentences import count_words

    cost = {"cpu_s": 0.0, "wall_s": 0.0, "words": 0}
    got = {}
    for lv, texts in by_level.items():
        got[lv], c = _timed(inner.embed_passages, texts)
        cost[f"level{lv}_cpu_s"] = c["cpu_s"]
        for f in ("cpu_s", "wall_s"):
            cost[f] += c[f]
        cost["words"] += sum(count_words(t) for t in texts)
    return got, cost


def _timed(fn, *args):
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn(*args)
    return out, {"cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - t0}


def pooled_parents(chunks, texts: list[str], vecs: np.ndarray) -> np.ndarray:
    """``vecs`` (one per chunk, the children's embedded) with each parent's replaced by the word-weighted mean of its
    θ/2 children's vectors, normalised (a parent with no θ/2 child keeps its row)."""
    from ingest.text.sentences import count_words

    out = vecs.copy()
    at = {(c.start, c.end): i for i, c in enumerate(chunks) if c.level == 0}
    acc: dict[int, np.ndarray] = {}
    for i, c in enumerate(chunks):
        if c.level == 1:
            k = at[c.parent_span]
            acc[k] = acc.get(k, 0) + count_words(texts[i]) * vecs[i]
    for k, v in acc.items():
        out[k] = v / np.linalg.norm(v)
    return out


def embed_set(inner, docs: dict, turn: int) -> tuple[dict, dict]:
    """Every document's vectors per variant (``docs``: doc -> (chunks, contextual texts)), and the cost of each way
    (timed one after the other over the whole set, in :data:`WAYS` turned by ``turn``)."""
    from ingest.text.sentences import count_words

    plans = {d: late_plan(chunks, texts) for d, (chunks, texts) in docs.items()}
    texts_of = {REF: [t for _, texts in docs.values() for t in texts],
                "late": [t for p in plans.values() for t in p[0]],
                "pooled": [t for chunks, texts in docs.values() for c, t in zip(chunks, texts) if c.level > 0]}
    p_spans = [s for p in plans.values() for s in p[1]]
    cost, got = {}, {}
    for way in WAYS[turn % 3:] + WAYS[:turn % 3]:
        w0 = inner.windows_embedded
        if way == "late":
            got[way], cost[way] = _timed(inner.embed_spans, texts_of[way], p_spans)
        else:
            got[way], cost[way] = _timed(inner.embed_passages, texts_of[way])
        cost[way].update(texts=len(texts_of[way]), words=sum(count_words(t) for t in texts_of[way]),
                         windows=len(texts_of[way]) + inner.windows_embedded - w0)
    flat, pooled, children = got[REF], got["late"], got["pooled"]
    vecs, a, b, ch = {}, 0, 0, 0
    for d, (chunks, texts) in docs.items():
        p_texts_d, _, where, _ = plans[d]
        vecs[d] = {REF: flat[a:a + len(chunks)]}
        for v in LATE:
            vecs[d][v] = np.stack([pooled[b + k][j] for k, j in where[v]]).astype(np.float32)
        kids = [i for i, c in enumerate(chunks) if c.level > 0]
        own = np.zeros_like(vecs[d][REF])
        own[kids] = children[ch:ch + len(kids)]
        vecs[d][POOLED] = pooled_parents(chunks, texts, own)
        a, b, ch = a + len(chunks), b + len(p_texts_d), ch + len(kids)
    par = [float(np.min(np.sum(v[REF] * v[LATE[0]], axis=1)[[c.level == 0 for c in docs[d][0]]]))
           for d, v in vecs.items()]
    cost["parent_min_cosine"] = min(par)  # late's parent vector against today's: the same vector
    cost["children_other_context"] = sum(p[3] for p in plans.values())
    cost["children"] = sum(c.level > 0 for chunks, _ in docs.values() for c in chunks)
    return vecs, cost


def embed_set_levels(inner, docs: dict, turn: int) -> tuple[dict, dict]:
    """``--levels``: every document's vectors per :data:`LEVEL_VARIANTS` and the cost of each way of
    :data:`LEVEL_WAYS`, the independent ways timed level by level (so a variant's cost adds only what it embeds)."""
    from ingest.text.sentences import count_words

    plans = {d: late_plan(chunks, texts) for d, (chunks, texts) in docs.items()}
    by_level = {lv: [t for chunks, texts in docs.values() for c, t in zip(chunks, texts) if c.level == lv]
                for lv in (0, 1, 2)}
    p_texts = [t for p in plans.values() for t in p[0]]
    p_spans = [s for p in plans.values() for s in p[1]]
    cost: dict = {}
    got: dict = {}
    for way in LEVEL_WAYS[turn % 4:] + LEVEL_WAYS[:turn % 4]:
        inner.precision = "bf16" if way.endswith("bf16") else "fp32"
        if way.startswith("late"):
            got[way], cost[way] = _timed(inner.embed_spans, p_texts, p_spans)
            cost[way].update(words=sum(count_words(t) for t in p_texts))
            continue
        got[way], cost[way] = _by_level(inner, by_level)
    inner.precision = "fp32"
    for suffix, ind, late in (("", REF, "late"), (" bf16", "independent bf16", "late bf16")):
        c = {f: cost[late][f] + cost[ind]["level1_cpu_s" if f == "cpu_s" else f] for f in ("cpu_s",)}
        cost[f"late smallest{suffix}"] = c  # the late pass (parents and θ/4 children) and the θ/2 children alone
    vecs: dict = {}
    at = {0: 0, 1: 0, 2: 0}  # each level's next row in the level-by-level embeddings
    first = 0  # the document's first parent among the late passes
    for d, (chunks, _) in docs.items():
        where = plans[d][2]
        rows = []
        for c in chunks:
            rows.append((c.level, at[c.level]))
            at[c.level] += 1
        vecs[d] = {}
        for v, ind, late in ((REF, REF, "late"), ("bf16", "independent bf16", "late bf16")):
            vecs[d][v] = np.stack([got[ind][lv][r] for lv, r in rows]).astype(np.float32)
            for lv_v, full in zip(LEVELS, LATE):
                out = vecs[d][v].copy()
                for i, c in enumerate(chunks):
                    if c.level == 2:
                        k, j = where[full][i]
                        out[i] = got[late][first + k][j]
                vecs[d][lv_v if v == REF else f"bf16, {lv_v}"] = out
        first += len(plans[d][0])
    cos = np.concatenate([np.sum(v[REF] * v["bf16"], axis=1) for v in vecs.values()])
    cost["bf16_cosine"] = {"min": float(cos.min()), "mean": float(cos.mean()), "p01": float(np.percentile(cos, 1))}
    return vecs, cost


def _qvec(qvecs: dict, question: str, variant: str):
    """The question's vector as the variant's index would embed it (a bf16 variant: in bf16, where embedded)."""
    return qvecs.get(("bf16", question), qvecs[question]) if variant.startswith("bf16") else qvecs[question]


def run_set(b, ctx, qvecs, turn: int, levels: bool | str = False) -> tuple[dict, dict]:
    """Per ``variant|retriever``: the question metrics arrays; and the set's embedding cost."""
    from app.evaluation import harness as H
    from app.evaluation.bench import question_metrics
    from retrieval.bm25 import tokenize

    run = H.chunk_documents(b, "mg", LS.THETA, ctx)
    docs = {d: (chunks, RV.contextual_texts(d, b.docs[d], chunks)) for d, chunks in run.chunks.items()}
    embed = {True: embed_set_levels, False: embed_set, "halves": embed_set_halves}[levels]
    vecs, cost = embed(ctx.embedder.inner, docs, turn)
    bm25 = {d: RV._bm25(chunks, texts) for d, (chunks, texts) in docs.items()}
    parents = {d: sorted({c.parent_span for c in chunks}) for d, (chunks, _) in docs.items()}
    rows: dict[str, list] = {}
    for q in b.questions:
        if q.doc_id not in docs:
            continue
        d = q.doc_id
        q2 = LS._relabel(q, b.docs[d], parents[d])
        for v in {True: LEVEL_VARIANTS, False: VARIANTS, "halves": HALF_VARIANTS}[levels]:
            ranked = RV.rankings(docs[d][0], vecs[d][v], bm25[d], _qvec(qvecs, q.question, v), tokenize(q.question))
            for retr in RETRIEVERS:
                row, _ = question_metrics(q2, b.docs[d], ranked[retr], parents[d], budget_words=LS.BUDGET)
                rows.setdefault(f"{v}|{retr}", []).append(row)
    return {k: {m: np.array([r[m] for r in v]) for m in LS.METRICS} for k, v in rows.items()}, cost


def summarise(results: dict, costs: dict, ways=WAYS) -> tuple[dict, dict]:
    rows = {}
    for k, per in results.items():
        r = {"per_set": {s: {m: float(v[m].mean()) for m in LS.METRICS} for s, v in per.items()}}
        r["mean"] = {m: float(np.mean([v[m].mean() for v in per.values()])) for m in LS.METRICS}
        v, retr = k.split("|")
        if v != REF:
            ref = results[f"{REF}|{retr}"]
            r["vs_independent"] = {m: LS.boot({s: per[s][m] - ref[s][m] for s in per}) for m in LS.METRICS}
        rows[k] = r
    total = {w: {f: sum(c[w][f] for c in costs.values()) for f in ("cpu_s", "wall_s", "texts", "words", "windows")
                 if f in next(iter(costs.values()))[w]}
             for w in ways if all(w in c for c in costs.values())}
    for w in sorted(set(total) - {REF}):
        for f, key in (("cpu", "cpu_s"), ("wall", "wall_s"), ("words", "words")):
            if key in total[w]:
                total[f"{w}_over_independent_{f}"] = total[w][key] / total[REF][key]
    for k in ("parent_min_cosine", "children", "children_other_context", "half_min_cosine", "quarters",
              "quarters_alone"):
        if all(k in c for c in costs.values()):
            total[k] = (min if k.endswith("min_cosine") else sum)(c[k] for c in costs.values())
    if all("bf16_cosine" in c for c in costs.values()):
        total["bf16_cosine_min"] = min(c["bf16_cosine"]["min"] for c in costs.values())
    return rows, total


def run(args) -> dict:
    from app.evaluation import bench as B
    from app.evaluation import harness as H
    from core.settings import Settings

    t0 = time.perf_counter()
    ctx = H.bench_context(Settings(embedder="all-MiniLM-L6-v2", theta=LS.THETA))
    if args.halves:  # the whole run in bf16, the questions too: the shipped default where the CPU has it
        ctx.embedder.inner.precision = "bf16"
    sets, notes = LS.load_sets(args.sets, quick=True)
    qvecs = {}
    for b in sets.values():
        qs = [q.question for q in b.questions]
        qvecs.update(zip(qs, ctx.embedder.embed_queries(qs)))
        if args.levels:  # the bf16 variants' questions embedded in bf16, as their index would embed them
            ctx.embedder.inner.precision = "bf16"
            qvecs.update(zip([("bf16", q) for q in qs], ctx.embedder.inner.embed_queries(qs)))
            ctx.embedder.inner.precision = "fp32"
    ways = LEVEL_WAYS + ("late smallest", "late smallest bf16") if args.levels else WAYS
    if args.halves:
        ways = (*HALF_WAYS, *HALVES)
    results: dict[str, dict] = {}
    costs: dict[str, dict] = {}
    load = B.LoadMonitor()
    for i, (name, b) in enumerate(sets.items()):
        res, costs[name] = run_set(b, ctx, qvecs, turn=i, levels="halves" if args.halves else args.levels)
        for k, v in res.items():
            results.setdefault(k, {})[name] = v
        c = costs[name]
        print(f"{name}: " + ", ".join(f"{w} {c[w]['cpu_s']:.0f} CPU-s" for w in ways)
              + f" ({time.perf_counter() - t0:.0f}s)", flush=True)
    rows, total = summarise(results, costs, ways)
    meta = {name: {"docs": len(b.docs), "questions": len(b.questions), "words": b.words, "subset": notes[name]}
            for name, b in sets.items()}
    command = COMMAND + (f" --levels --out {args.out}" if args.levels else "") + (
        f" --halves --out {args.out}" if args.halves else "")
    out = {"command": command, "sets": meta, "rows": rows, "costs": costs, "cost_total": total,
           "n_boot": LS.N_BOOT, "top_k_per_level": LS.TOP_K, "budget_words": LS.BUDGET, "theta": LS.THETA,
           "batch_size": ctx.embedder.inner.batch_size, "precision": ctx.embedder.inner.precision,
           "machine": B.machine_info(),
           "seconds": time.perf_counter() - t0}
    out["load"] = load.summary()  # another process on these cores inflates wall times, CPU seconds much less
    load.stop()
    return out


def render(res: dict) -> str:
    """The table of the BENCHMARKS.md section (printed; the section itself is written by hand from the JSON)."""
    m10, er = LS.METRICS
    sets = list(res["sets"])
    head = ["variant · retriever", *[LS.SHORT[s] for s in sets], "mean", "Δ DCG@10 vs independent",
            "Δ recall vs independent"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for k, r in res["rows"].items():
        cells = [f"{r['per_set'][s][m10]:.3f} / {r['per_set'][s][er]:.3f}" for s in sets]
        vs = r.get("vs_independent")
        out.append("| " + " | ".join([k.replace("|", " · "), *cells, f"**{r['mean'][m10]:.3f}** / {r['mean'][er]:.3f}",
                                      LS._ci(vs[m10]["mean"]) if vs else "–",
                                      LS._ci(vs[er]["mean"]) if vs else "–"]) + " |")
    t = res["cost_total"]
    out += ["", "embedding CPU-s: " + "; ".join(
        f"{w} {t[w]['cpu_s']:.0f}" + (f" (× {t[f'{w}_over_independent_cpu']:.2f})" if w != REF else "")
        for w in (*WAYS, *LEVEL_WAYS[2:], "late smallest", "late smallest bf16", *HALF_WAYS[1:], *HALVES)
        if w in t)]
    return "\n".join(out)


def main(argv=None) -> int:
    from app.evaluation import bench as B
    from app.evaluation import harness as H

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", type=lambda s: s.split(","), default=None, help="comma-separated (default: all six)")
    ap.add_argument("--render", action="store_true", help="only print the table from the results file")
    ap.add_argument("--out", default="late_chunking.json", help="results file name under bench/results/")
    ap.add_argument("--levels", action="store_true",
                    help="the θ/4-only late variants and bf16 (LEVEL_VARIANTS) instead of VARIANTS")
    ap.add_argument("--halves", action="store_true",
                    help="the θ/4 children pooled from their θ/2 child's pass (HALF_VARIANTS), all in bf16")
    args = ap.parse_args(argv)
    if args.render:
        res = json.loads((B.RESULTS_DIR / args.out).read_text(encoding="utf-8"))
    else:
        res = run(args)
        H.write_results(args.out, res)
    print(render(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
