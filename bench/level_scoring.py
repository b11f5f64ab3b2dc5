"""Comparable level scores, per-corpus level weights and parents the size the embedder reads (issue 24).

Every variant of the parent score (the max over a parent's own and its children's cosine scores) on every dev set,
with the product's chunkers, MiniLM and θ = 300, scored exactly as ``mgrag bench retrieval`` scores (the top 20
chunks of each level of the question's document, :func:`retrieval.scoring.level_hits`; the metrics of
:func:`app.evaluation.bench.question_metrics`; DCG@10 and evidence recall within a 1500-word context):

* **a** ``uniform max``: today's product (:func:`retrieval.scoring.rank_parents`, uniform weights);
* **b** ``z-score, max``: each level's hits z-scored for the query before the max;
* **c** ``rank 1/(60+r), max`` and ``…, sum``: each level's ranks instead of scores, the parent the max or the sum
  over levels of its best child's reciprocal rank;
* **d** ``offset (other sets)`` / ``offset (other questions)``: each level's mean top-10 score subtracted before
  the max, calibrated on the other sets' questions or on the same set's other questions (never the test question);
* **e** ``parent only`` / ``children only``: what the max over levels adds;
* **f** ``fitted weights``: level weights from the 66-point simplex grid (step 0.1) plus uniform, fitted per set on
  half its questions, scored on the other half (2-fold cross-fitting, 5 seeds, each question's held-out figures
  averaged over the seeds), falling back to uniform unless the fit beats uniform on the fitting half; and
  ``z-score + fitted level offsets`` (z-scores plus an offset per child level in -1.5 … 1.5, falling back to the
  plain z-score); learning curve: test-half DCG@10 minus the fallback's vs the number of fitting questions;
* **g** ``parent truncated``: the parent's vector from its first 254 word pieces only (what MiniLM reads of one
  input), against the product's vector (the token-weighted mean of the windows of at most 254 word pieces,
  ``ingest.embed.SentenceTransformerEmbedder``), alone and in the max; and θ = 150 / 200 vs 300.

LGMGC needs the Gemma LM pass (about 80 words/s on 2 busy cores): its rows cover the sets whose lgmgc chunking is
in the harness's chunk cache (``--lgmgc-run`` runs the pass where it is not; chroma's lgmgc is always its three
standard-profile documents), compared with recursive and MG on the same questions. Paired bootstrap over questions
(2000 resamples, seed 0; the mean over sets resamples each set's questions).

    # 1. recursive and mg at θ 300 on every document (no lgmgc, no other θ): bench/results/level_scoring_full.json
    .venv/bin/python bench/level_scoring.py --thetas '' --no-lgmgc --out level_scoring_full.json
    # 2. every variant on the smaller sets (chroma and Emma as make bench's standard profile, MAUD 2 of 6
    #    agreements), with run 1's rows added: bench/results/level_scoring.json and the BENCHMARKS.md section
    .venv/bin/python bench/level_scoring.py --quick --with-full level_scoring_full.json
    .venv/bin/python bench/level_scoring.py --render     # the BENCHMARKS.md section again from the JSON

Passage vectors are kept on disk (``<cache_dir>/bench/level_scoring_vectors.npy``), so a re-run embeds only new
chunk texts.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

EXTERNAL = Path("/work/devdata/external")
SETS = ("chroma", "gutenqa_emma", "longbench_sample", "legalbenchrag_contractnli", "legalbenchrag_maud", "filings_10q")
EXTERNAL_SETS = ("legalbenchrag_contractnli", "legalbenchrag_maud", "filings_10q")
SHORT = {"chroma": "chroma", "gutenqa_emma": "Emma", "longbench_sample": "LongBench",
         "legalbenchrag_contractnli": "ContractNLI", "legalbenchrag_maud": "MAUD", "filings_10q": "10-Q"}
MAUD_DOCS = ("Five_Prime_Therapeutics_Inc__Amgen_Inc", "Kadmon_Holdings_Sanofi_SA_Merger_Agreement")
LGMGC_DOCS = {"chroma": ("chatlogs", "state_of_the_union", "wikitexts")}
THETA_SETS = ("chroma", "longbench_sample", "legalbenchrag_contractnli")  # θ 150 / 200: the cheaper sets
THETA = 300
TOP_K = 20
BUDGET = 1500
METRICS = ("dcg@10", f"evidence_recall@{BUDGET}w")
SEEDS = (0, 1, 2, 3, 4)
CURVE_N = (5, 10, 20, 40, 80)
CURVE_REPEATS = 20
OFFSET_STEPS = (-1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5)  # z-score units
N_BOOT = 2000
COMMAND = ".venv/bin/python bench/level_scoring.py"
SECTION = "level-scoring"


# -- the sets -------------------------------------------------------------------------------------------------------
def load_sets(names=None, quick: bool = False):
    """The dev sets as the harness scores them (LongBench: the questions whose answer locates in the document);
    ``quick``: chroma and Emma as ``make bench``'s standard profile, MAUD two of its six agreements."""
    from app.evaluation import bench as B
    from app.evaluation import harness as H

    out, notes = {}, {}
    for name in names or SETS:
        if name in EXTERNAL_SETS:
            maud = name == "legalbenchrag_maud" and quick
            b = B.load_set(str(EXTERNAL / name), MAUD_DOCS if maud else None)
            notes[name] = f"{len(b.docs)} of 6 agreements" if maud else "everything"
        elif name == "longbench_sample":
            b = B.locate_answers(B.load_set(name))
            notes[name] = "the questions whose answer occurs once in the document"
        else:
            b, notes[name] = H.profiled_set(name, "standard" if quick else "full")
            notes[name] = notes[name].split(": ", 1)[1]
        out[name] = b
    return out, notes


def lgmgc_subset(bench):
    """What lgmgc runs on: chroma's standard-profile documents (its LM pass is the expensive part), else all."""
    from app.evaluation import bench as B

    keep = LGMGC_DOCS.get(bench.name)
    if keep is None:
        return bench
    return B.BenchSet(bench.name, {d: t for d, t in bench.docs.items() if d in keep},
                      [q for q in bench.questions if q.doc_id in keep])


def theta_sets(names):
    return [n for n in names if n in THETA_SETS]


# -- vectors: the run's CachedEmbedder, kept on disk between runs -----------------------------------------------------
class DiskVectors:
    """Passage vectors by text hash in one ``.npy``/``.txt`` pair under the cache dir: a re-run re-embeds nothing."""

    def __init__(self, emb, path: Path):
        self.emb, self.path = emb, path
        self.store: dict[str, np.ndarray] = {}
        keys = path.with_suffix(".keys.txt")
        if path.exists() and keys.exists():
            vecs = np.load(path)
            self.store = dict(zip(keys.read_text().split(), vecs))
        self.new = 0

    @staticmethod
    def _key(t: str) -> str:
        return hashlib.sha1(t.encode("utf-8")).hexdigest()

    def passages(self, texts: list[str]) -> np.ndarray:
        keys = [self._key(t) for t in texts]
        missing = list(dict.fromkeys(t for t, k in zip(texts, keys) if k not in self.store))
        if missing:
            vecs = self.emb.embed_passages(missing)
            self.store.update(zip((self._key(t) for t in missing), vecs))
            self.new += len(missing)
        if not texts:
            return np.zeros((0, self.emb.dim), np.float32)
        return np.stack([self.store[k] for k in keys]).astype(np.float32)

    def save(self) -> None:
        if not self.new:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = list(self.store)
        np.save(self.path, np.stack([self.store[k] for k in keys]))
        self.path.with_suffix(".keys.txt").write_text("\n".join(keys))
        self.new = 0


# -- one chunking of one set, searched for every question ------------------------------------------------------------
@dataclass
class Prepared:
    set_name: str
    chunker: str
    theta: int
    docs: dict[str, str]
    parents: dict[str, list[tuple[int, int]]]
    questions: list  # evidence without offsets re-labelled to its best parent, as question_metrics does
    hits: dict[str, list] = field(default_factory=dict)  # question id -> Hits (top 20 per level)
    hits_trunc: dict[str, list] = field(default_factory=dict)  # the same with truncated parent vectors
    n_levels: int = 1
    parents_over_limit: float = 0.0
    mean_parent_words: float = 0.0


def _relabel(q, text: str, units):
    """``q`` with each evidence lacking offsets placed at its best parent by ROUGE-L (as ``question_metrics`` does
    on every call; done once here)."""
    from app.evaluation.metrics import best_rouge_span
    from core.questions import Evidence, Question

    if all(e.located for e in q.evidence):
        return q
    ev = []
    for e in q.evidence:
        if e.located:
            ev.append(e)
        else:
            (s, t), _ = best_rouge_span(e.text, text, list(units))
            ev.append(Evidence(e.text, s, t))
    return Question(q.id, q.question, q.doc_id, q.answers, tuple(ev), q.dataset)


def prepare(bench, chunker: str, theta: int, ctx, vectors: DiskVectors, qvecs: dict[str, np.ndarray], *,
            truncated: bool = False, progress=print) -> Prepared:
    from app.evaluation import harness as H
    from ingest.text.sentences import count_words
    from retrieval.scoring import level_hits

    t0 = time.perf_counter()
    run = H.chunk_documents(bench, chunker, theta, ctx)
    t1 = time.perf_counter()
    inner = ctx.embedder.inner
    p = Prepared(bench.name, chunker, theta, bench.docs, {}, [])
    over, n_par, words = 0, 0, []
    by_doc = {}
    for d, chunks in run.chunks.items():
        vecs = vectors.passages([c.text for c in chunks])
        tvecs = None
        if truncated:
            lv0 = [i for i, c in enumerate(chunks) if c.level == 0]
            wins = [inner.windows(chunks[i].text, inner.passage_prefix) for i in lv0]
            over += sum(len(w) > 1 for w in wins)
            tvecs = vecs.copy()
            tvecs[lv0] = vectors.passages([w[0][0] for w in wins])
        p.parents[d] = sorted({c.parent_span for c in chunks})
        n_par += len(p.parents[d])
        words += [count_words(c.text) for c in chunks if c.level == 0]
        p.n_levels = max(p.n_levels, 1 + max(c.level for c in chunks))
        by_doc[d] = (chunks, vecs, tvecs)
    for q in bench.questions:
        if q.doc_id not in by_doc:
            continue
        chunks, vecs, tvecs = by_doc[q.doc_id]
        p.questions.append(_relabel(q, bench.docs[q.doc_id], p.parents[q.doc_id]))
        qv = qvecs[q.question]
        p.hits[q.id] = level_hits(chunks, vecs @ qv, TOP_K)
        if tvecs is not None:
            p.hits_trunc[q.id] = level_hits(chunks, tvecs @ qv, TOP_K)
    p.parents_over_limit = over / n_par if truncated and n_par else 0.0
    p.mean_parent_words = float(np.mean(words)) if words else 0.0
    if progress:
        progress(f"{bench.name}: {chunker} θ={theta}: {len(p.questions)} questions, {n_par} parents "
                 f"(chunk {t1 - t0:.0f}s{' cached' if run.cached else ''}, "
                 f"embed+search {time.perf_counter() - t1:.0f}s)", flush=True)
    return p


# -- scoring a variant -----------------------------------------------------------------------------------------------
def ranked_spans(hits, *, norm: str = "raw", combine: str = "max", weights=None, levels=None, offsets=None):
    from retrieval.scoring import normalise_levels, rank_parents_combined

    if levels is not None:
        hits = [h for h in hits if h.level in levels]
    hits = normalise_levels(hits, norm, offsets=offsets)
    return [tuple(int(x) for x in pid.split(":")) for pid, _, _ in rank_parents_combined(hits, weights, combine)]


def score(p: Prepared, spec: dict, q) -> dict:
    """question_metrics of one question under one variant spec."""
    from app.evaluation.bench import question_metrics

    hits = p.hits_trunc[q.id] if spec.get("truncated") else p.hits[q.id]
    offsets = spec.get("offsets")
    if callable(offsets):
        offsets = offsets(q)
    weights = spec.get("weights")
    if callable(weights):
        weights = weights(q)
    spans = ranked_spans(hits, norm=spec.get("norm", "raw"), combine=spec.get("combine", "max"), weights=weights,
                         levels=spec.get("levels"), offsets=offsets)
    row, _ = question_metrics(q, p.docs[q.doc_id], spans, p.parents[q.doc_id], budget_words=BUDGET)
    return row


def evaluate(p: Prepared, spec: dict) -> dict[str, np.ndarray]:
    rows = [score(p, spec, q) for q in p.questions]
    return {m: np.array([r[m] for r in rows]) for m in METRICS}


def level_means(p: Prepared) -> dict[str, dict[int, float]]:
    from retrieval.scoring import level_top_means

    return {q.id: level_top_means(p.hits[q.id], 10) for q in p.questions}


def mean_offsets(profiles: list[dict[int, float]]) -> dict[int, float]:
    levels = sorted({lv for pr in profiles for lv in pr})
    return {lv: float(np.mean([pr[lv] for pr in profiles if lv in pr])) for lv in levels}


# -- per-corpus level weights ----------------------------------------------------------------------------------------
def _relevant(p: Prepared, q) -> set[str]:
    spans = [(e.start, e.end) for e in q.evidence]
    return {f"{s}:{e}" for s, e in p.parents[q.doc_id] if any(s < b and a < e for a, b in spans)}


def _rank_grid_point(hits, g, norm: str) -> list[str]:
    """Parents ranked under grid point ``g``: raw scores times level weights ``g``, or z-scores plus offsets ``g``."""
    from retrieval.scoring import normalise_levels, rank_parents

    if norm == "raw":
        return [pid for pid, _, _ in rank_parents(hits, g)]
    z = normalise_levels(normalise_levels(hits, "z"), "offset", offsets={lv: -b for lv, b in enumerate(g)})
    return [pid for pid, _, _ in rank_parents(z)]


def grid_dcg(p: Prepared, grid, norm: str) -> np.ndarray:
    """DCG@10 of every question (columns) under every grid point (rows): the fitting objective."""
    disc = 1.0 / np.log2(np.arange(10) + 2)
    out = np.zeros((len(grid), len(p.questions)))
    for j, q in enumerate(p.questions):
        rel = _relevant(p, q)
        for i, g in enumerate(grid):
            top = _rank_grid_point(p.hits[q.id], g, norm)[:10]
            out[i, j] = float(sum(disc[k] for k, pid in enumerate(top) if pid in rel))
    return out


def _score_grid_point(p: Prepared, q, g, norm: str) -> dict:
    from app.evaluation.bench import question_metrics

    spans = [tuple(int(x) for x in pid.split(":")) for pid in _rank_grid_point(p.hits[q.id], g, norm)]
    row, _ = question_metrics(q, p.docs[q.doc_id], spans, p.parents[q.doc_id], budget_words=BUDGET)
    return row


def fit(dcg: np.ndarray, idx: np.ndarray) -> int:
    """The grid row with the best mean DCG@10 on questions ``idx``; row 0 (the fallback) unless strictly better."""
    m = dcg[:, idx].mean(axis=1)
    best = int(np.argmax(m))  # first maximum: uniform (row 0) wins ties
    return best if m[best] > m[0] + 1e-12 else 0


def cross_fit(dcg: np.ndarray, seeds=SEEDS) -> tuple[list[dict[int, int]], list[int]]:
    """For each seed a 2-fold split; each question gets the grid row fitted on the other fold.
    Returns per seed {question index: row} and the rows chosen (one per fold and seed)."""
    n = dcg.shape[1]
    per_seed, chosen = [], []
    for seed in seeds:
        perm = np.random.default_rng(seed).permutation(n)
        folds = [perm[: n // 2], perm[n // 2:]]
        assign = {}
        for k in (0, 1):
            row = fit(dcg, folds[1 - k])
            chosen.append(row)
            assign.update({int(i): row for i in folds[k]})
        per_seed.append(assign)
    return per_seed, chosen


def learning_curve(dcg: np.ndarray, ns=CURVE_N, repeats=CURVE_REPEATS) -> dict:
    n = dcg.shape[1]
    out = {}
    for m in ns:
        if m > n // 2:
            continue
        gains, fallback = [], 0
        for r in range(repeats):
            perm = np.random.default_rng(1000 + r).permutation(n)
            test, pool = perm[: n // 2], perm[n // 2:]
            row = fit(dcg, pool[:m])
            fallback += row == 0
            gains.append(dcg[row, test].mean() - dcg[0, test].mean())
        out[str(m)] = {"gain_dcg@10": float(np.mean(gains)), "gain_min": float(np.min(gains)),
                       "gain_max": float(np.max(gains)), "fallback_share": fallback / repeats}
    return out


# -- bootstrap -------------------------------------------------------------------------------------------------------
def boot(diffs: dict[str, np.ndarray], n_boot: int = N_BOOT, seed: int = 0) -> dict:
    """Mean and 95% percentile CI of paired differences per set and of the mean over sets (stratified)."""
    rng = np.random.default_rng(seed)
    out, draws = {}, []
    for s, d in diffs.items():
        idx = rng.integers(0, len(d), size=(n_boot, len(d)))
        bs = d[idx].mean(axis=1)
        draws.append(bs)
        out[s] = [float(d.mean()), float(np.percentile(bs, 2.5)), float(np.percentile(bs, 97.5))]
    if draws:
        m = np.mean(draws, axis=0)
        out["mean"] = [float(np.mean([d.mean() for d in diffs.values()])), float(np.percentile(m, 2.5)),
                       float(np.percentile(m, 97.5))]
    return out


# -- the run ---------------------------------------------------------------------------------------------------------
MULTI_VARIANTS = ("uniform max", "z-score, max", "rank 1/(60+r), max", "rank 1/(60+r), sum", "offset (other sets)",
                  "offset (other questions)", "parent only", "children only", "fitted weights",
                  "z-score + fitted level offsets", "parent truncated, max", "parent truncated only")
SINGLE_VARIANTS = ("uniform max", "parent truncated only")


def _prepare_all(args, ctx, H):
    """Every chunking of every set, embedded (vectors kept on disk between runs): recursive and mg at θ = 300,
    lgmgc where its chunking is cached (or with --lgmgc-run), and the θ variants."""
    vectors = DiskVectors(ctx.embedder, Path(ctx.settings.cache_dir) / "bench" / "level_scoring_vectors.npy")
    sets, set_notes = load_sets(args.sets, args.quick)
    qvecs = {}
    for b in sets.values():
        qs = [q.question for q in b.questions]
        qvecs.update(zip(qs, ctx.embedder.embed_queries(qs)))
    # scopes: "all" = every question of the set; "lgmgc" = the questions of lgmgc's documents
    preps: dict[tuple[str, str, int, str], Prepared] = {}
    chunkers = ["recursive", "mg"] + (["lgmgc"] if args.lgmgc else [])
    for name, b in sets.items():
        for ch in ("recursive", "mg"):
            preps[(name, ch, THETA, "all")] = prepare(b, ch, THETA, ctx, vectors, qvecs, truncated=True)
        vectors.save()
    lgmgc_skipped = []
    if args.lgmgc:  # where its LM pass is in the harness's chunk cache, unless --lgmgc-run
        for name, b in sets.items():
            b = lgmgc_subset(b)
            if not args.lgmgc_run and not H._cache_path(Path(ctx.settings.cache_dir), b, "lgmgc", THETA, ctx).exists():
                lgmgc_skipped.append(name)
                continue
            preps[(name, "lgmgc", THETA, "lgmgc")] = prepare(b, "lgmgc", THETA, ctx, vectors, qvecs, truncated=True)
            vectors.save()
    for name in theta_sets(list(sets)) if args.thetas else []:
        for th in args.thetas:
            for ch in ("mg", "recursive"):  # recursive's chunks are mg's parents: embedded once
                preps[(name, ch, th, "all")] = prepare(sets[name], ch, th, ctx, vectors, qvecs)
        vectors.save()
    return sets, set_notes, preps, lgmgc_skipped, chunkers


def _variants_of(name, ch, th, scope, p, grids, profiles, results, fitted, curves, offsets_used) -> None:
    """Every scoring variant of one prepared chunking of one set, into ``results`` (and the fitted variants' choices
    and learning curves)."""
    if th != THETA:
        results.setdefault((ch, "uniform max", th, scope), {})[name] = evaluate(p, {})
        if ch == "mg":
            results.setdefault((ch, "z-score, max", th, scope), {})[name] = evaluate(p, {"norm": "z"})
        return
    if p.n_levels == 1:
        results.setdefault((ch, "uniform max", th, scope), {})[name] = evaluate(p, {})
        results.setdefault((ch, "parent truncated only", th, scope), {})[name] = evaluate(p, {"truncated": True})
        return
    other = [pr for (n2, c2, t2, _), prof in profiles.items() if c2 == ch and n2 != name for pr in prof.values()]
    own = profiles[(name, ch, th, scope)]
    off_other = mean_offsets(other) if other else None
    sums = {lv: sum(pr.get(lv, 0.0) for pr in own.values()) for lv in range(p.n_levels)}
    cnt = {lv: sum(lv in pr for pr in own.values()) for lv in range(p.n_levels)}

    def loo(q, own=own, sums=sums, cnt=cnt):
        return {lv: (sums[lv] - own[q.id].get(lv, 0.0)) / max(1, cnt[lv] - (lv in own[q.id])) for lv in sums}

    offsets_used[f"{name}|{ch}"] = {"other sets": off_other,
                                    "this set (all questions)": mean_offsets(list(own.values()))}
    specs = {"uniform max": {}, "z-score, max": {"norm": "z"}, "rank 1/(60+r), max": {"norm": "rank"},
             "rank 1/(60+r), sum": {"norm": "rank", "combine": "sum"},
             "offset (other sets)": {"norm": "offset", "offsets": off_other} if off_other else None,
             "offset (other questions)": {"norm": "offset", "offsets": loo},
             "parent only": {"levels": {0}}, "children only": {"levels": set(range(1, p.n_levels))},
             "parent truncated, max": {"truncated": True}, "parent truncated only": {"truncated": True,
                                                                                      "levels": {0}}}
    for v, spec in specs.items():
        if spec is not None:
            results.setdefault((ch, v, th, scope), {})[name] = evaluate(p, spec)
    cache: dict = {}
    for norm, v in (("raw", "fitted weights"), ("z", "z-score + fitted level offsets")):
        grid = grids[norm]
        dcg = grid_dcg(p, grid, norm)
        per_seed, chosen = cross_fit(dcg)
        acc = {m: np.zeros(len(p.questions)) for m in METRICS}
        for assign in per_seed:
            for j, q in enumerate(p.questions):
                row = cache.get((norm, assign[j], q.id))
                if row is None:
                    row = cache[(norm, assign[j], q.id)] = _score_grid_point(p, q, grids[norm][assign[j]], norm)
                for m in METRICS:
                    acc[m][j] += row[m] / len(per_seed)
        results.setdefault((ch, v, th, scope), {})[name] = acc
        fitted[f"{name}|{ch}|{norm}"] = {
            "chosen": [[round(x, 3) for x in grid[r]] for r in chosen],
            "fallback_share": float(np.mean([r == 0 for r in chosen])),
            "full_set_best": [round(x, 3) for x in grid[fit(dcg, np.arange(dcg.shape[1]))]],
            "full_set_best_gain": float(dcg[fit(dcg, np.arange(dcg.shape[1]))].mean() - dcg[0].mean())}
        curves[f"{name}|{ch}|{norm}"] = learning_curve(dcg)


def _summary_rows(results, qids) -> dict:
    """Each (chunker, variant, θ, scope): its means per set and over sets, and paired bootstrap CIs against the same
    chunker's uniform max, recursive and mg."""
    rows = {}
    for (ch, v, th, scope), per_set in results.items():
        key = f"{ch}|{v}|{th}|{scope}"
        entry = {"chunker": ch, "variant": v, "theta": th, "scope": scope,
                 "per_set": {s: {m: float(per_set[s][m].mean()) for m in METRICS} | {"n": len(per_set[s][METRICS[0]])}
                             for s in per_set},
                 "mean": {m: float(np.mean([per_set[s][m].mean() for s in per_set])) for m in METRICS}}
        refs = {"vs_same_chunker_uniform": results.get((ch, "uniform max", th, scope)),
                "vs_recursive": results.get(("recursive", "uniform max", THETA, "all")),
                "vs_mg": results.get(("mg", "uniform max", THETA, "all"))}
        if th != THETA:
            refs["vs_same_chunker_theta300"] = results.get((ch, "uniform max", THETA, "all"))
        for rname, ref in refs.items():
            if ref is None or (rname == "vs_same_chunker_uniform" and v == "uniform max"):
                continue
            entry[rname] = {}
            for m in METRICS:
                diffs = {}
                for s in per_set:
                    pos = {qid: i for i, qid in enumerate(qids[(s, "all")])}
                    sel = [pos[qid] for qid in qids[(s, scope)]]
                    r = ref[s][m] if rname == "vs_same_chunker_uniform" else ref[s][m][sel]
                    diffs[s] = per_set[s][m] - r
                entry[rname][m] = boot(diffs)
        rows[key] = entry
    return rows


def run(args) -> dict:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from app.evaluation import bench as B
    from app.evaluation import harness as H
    from core.settings import Settings
    from retrieval.scoring import simplex_grid

    t_start = time.perf_counter()
    ctx = H.bench_context(Settings(embedder="all-MiniLM-L6-v2", theta=THETA))
    sets, set_notes, preps, lgmgc_skipped, chunkers = _prepare_all(args, ctx, H)
    print(f"prepared in {time.perf_counter() - t_start:.0f}s", flush=True)

    # raw: multiplicative level weights (row 0 uniform); z: additive level offsets after the z-score (row 0 none)
    grids = {"raw": [(1 / 3, 1 / 3, 1 / 3)] + simplex_grid(3, 0.1),
             "z": [(0.0, 0.0, 0.0)] + [(0.0, a, b) for a in OFFSET_STEPS for b in OFFSET_STEPS if (a, b) != (0, 0)]}
    results: dict[tuple[str, str, int, str], dict[str, dict[str, np.ndarray]]] = {}  # (chunker, variant, θ, scope)
    qids: dict[tuple[str, str], list[str]] = {}
    fitted, curves, offsets_used = {}, {}, {}
    profiles = {k: level_means(p) for k, p in preps.items() if p.n_levels > 1 and k[2] == THETA}
    for (name, ch, th, scope), p in preps.items():
        qids[(name, scope)] = [q.id for q in p.questions]
        _variants_of(name, ch, th, scope, p, grids, profiles, results, fitted, curves, offsets_used)
        print(f"{name}: {ch}: variants done ({time.perf_counter() - t_start:.0f}s)", flush=True)

    # recursive and mg on lgmgc's questions, to read the lgmgc rows against
    for name in [k[0] for k in preps if k[3] == "lgmgc"]:
        pos = {qid: i for i, qid in enumerate(qids[(name, "all")])}
        sel = [pos[qid] for qid in qids[(name, "lgmgc")]]
        for ref in ("recursive", "mg"):
            for v in ("uniform max",) + (("z-score, max",) if ref == "mg" else ()):
                full = results[(ref, v, THETA, "all")][name]
                results.setdefault((ref, v, THETA, "lgmgc"), {})[name] = {m: full[m][sel] for m in METRICS}

    rows = _summary_rows(results, qids)  # summary + paired CIs
    meta = {name: {"docs": len(b.docs), "questions": len(b.questions), "words": b.words, "subset": set_notes[name],
                   "lgmgc_docs": len(lgmgc_subset(b).docs), "lgmgc_questions": len(lgmgc_subset(b).questions),
                   "lgmgc": name not in lgmgc_skipped and args.lgmgc, "theta_variants": name in theta_sets(list(sets))}
            for name, b in sets.items()}
    prep_meta = {f"{n}|{c}|{t}|{s}": {"parents": sum(len(v) for v in p.parents.values()),
                                      "mean_parent_words": p.mean_parent_words,
                                      "parents_over_254_word_pieces": p.parents_over_limit}
                 for (n, c, t, s), p in preps.items()}
    return {"command": COMMAND, "sets": meta, "chunkings": prep_meta, "rows": rows, "fitted": fitted,
            "curves": curves, "offsets": offsets_used, "grid_points": {k: len(g) for k, g in grids.items()},
            "seeds": list(SEEDS),
            "n_boot": N_BOOT, "top_k_per_level": TOP_K, "budget_words": BUDGET, "embedder": ctx.settings.embedder,
            "lm": ctx.settings.lm_model, "machine": B.machine_info(), "seconds": time.perf_counter() - t_start,
            "chunkers": chunkers}


# -- the BENCHMARKS.md section ---------------------------------------------------------------------------------------
def _ci(x) -> str:
    return f"{x[0]:+.3f} [{x[1]:+.3f}, {x[2]:+.3f}]"


def _table(keys, rows, sets, same="vs_same_chunker_uniform") -> str:
    """Variant rows: per set DCG@10 / evidence recall, the mean, and the paired CIs."""
    from app.evaluation.bench import markdown_table

    m10, er = METRICS
    out = []
    for k in keys:
        r = rows[k]
        is_rec = r["chunker"] == "recursive" and r["variant"] == "uniform max" and r["theta"] == THETA
        is_mg = r["chunker"] == "mg" and r["variant"] == "uniform max" and r["theta"] == THETA
        cells = [f"{r['per_set'][s][m10]:.3f} / {r['per_set'][s][er]:.3f}" if s in r["per_set"] else "–"
                 for s in sets]
        label = r["chunker"] + (f" θ={r['theta']}" if r["theta"] != THETA else "")
        out.append([label, r["variant"], *cells, f"**{r['mean'][m10]:.3f}** / {r['mean'][er]:.3f}",
                    _ci(r[same][m10]["mean"]) if same in r else "–",
                    _ci(r["vs_recursive"][m10]["mean"]) if not is_rec else "–",
                    _ci(r["vs_mg"][m10]["mean"]) if not is_mg else "–"])
    return markdown_table(["chunker", "variant", *(SHORT[s] for s in sets), "mean over sets",
                           "Δ DCG@10 vs same chunker" + (", uniform max" if same == "vs_same_chunker_uniform"
                                                         else ", θ 300"),
                           "Δ vs recursive", "Δ vs mg"], out)


def _render_tail(res: dict, keys, sets) -> list[str]:
    """The per-set CIs, the learning curves with the fitted weights, and the parents over MiniLM's window."""
    from app.evaluation.bench import markdown_table

    m10 = METRICS[0]
    rows, out = res["rows"], []
    # per-set CIs of the variants against the baseline
    ci_rows = []
    for k in keys:
        r = rows[k]
        if "vs_same_chunker_uniform" not in r or r["chunker"] == "recursive":
            continue
        d = r["vs_same_chunker_uniform"][m10]
        ci_rows.append([r["chunker"] + (" (lgmgc's sets)" if r["scope"] == "lgmgc" else ""), r["variant"],
                        *(_ci(d[s]) if s in d else "–" for s in sets)])
    out += ["Δ DCG@10 against the same chunker's uniform max, per set (95% CI):", "",
            markdown_table(["chunker", "variant", *(SHORT[s] for s in sets)], ci_rows), ""]
    # learning curves and fitted weights
    cur = []
    for key, c in res["curves"].items():
        name, ch, norm = key.split("|")
        f = res["fitted"][key]
        cur.append([SHORT[name], ch + (", z-scored" if norm == "z" else ""),
                    *(f"{c[str(n)]['gain_dcg@10']:+.3f} ({c[str(n)]['fallback_share']:.0%})" if str(n) in c else "–"
                      for n in CURVE_N),
                    "fallback" if f["full_set_best_gain"] <= 0 else " ".join(f"{x:+.1f}" if norm == "z" else f"{x:.1f}"
                                                                       for x in f["full_set_best"]),
                    f"{f['full_set_best_gain']:+.3f}"])
    out += [f"Learning curve of the fitted level weights: test-half DCG@10 minus the fallback's on the same half "
            "(uniform max; for *z-scored*, the plain z-score max), mean "
            f"of {CURVE_REPEATS} random splits, by the number of fitting questions, at most half the set (share of "
            "splits that fell back); last columns: the weights (parent, θ/2, θ/4; *z-scored*: the offsets added to "
            "each level's z-scores) fitted on the whole set and their in-sample gain (an upper bound, not a "
            "result):", "",
            markdown_table(["set", "chunker", *(f"n={n}" for n in CURVE_N), "weights fitted on all",
                            "in-sample gain"], cur), ""]
    over = [f"{SHORT[k.split('|')[0]]} {k.split('|')[1]} {v['parents_over_254_word_pieces']:.0%}"
            for k, v in res["chunkings"].items() if v["parents_over_254_word_pieces"]]
    out += ["Parents longer than MiniLM's 254 word pieces (embedded by the product as the mean of their windows; "
            "`parent truncated` reads the first window only): " + ", ".join(over) + ".", ""]
    return out


def render(res: dict) -> str:
    """The BENCHMARKS.md section of a results file (docs-check re-renders it and compares)."""
    sets = list(res["sets"])
    m10, er = METRICS
    rows = res["rows"]

    main = [k for k, r in rows.items() if r["theta"] == THETA and r["scope"] == "all"]
    lg = [k for k, r in rows.items() if r["scope"] == "lgmgc"]
    th = [k for k, r in rows.items() if r["theta"] != THETA]
    meta = res["sets"]
    setline = "; ".join(f"{SHORT[s]} {m['questions']} questions / {m['docs']} docs / {m['words']:,} words"
                        for s, m in meta.items())
    lgline = ", ".join(SHORT[s] + (f" ({m['lgmgc_docs']} docs, {m['lgmgc_questions']} questions)"
                                   if m.get("lgmgc_docs", m["docs"]) != m["docs"] else "")
                       for s, m in meta.items() if m["lgmgc"])
    subsets = "; ".join(f"{SHORT[s]}: {m['subset']}" for s, m in meta.items())
    cmds = [res["command"]]
    if res.get("full_sets"):
        quick = res["command"]
        if "--with-full" not in quick:
            quick += " --with-full level_scoring_full.json"
        cmds = [res["full_sets"]["command"], quick]
    out = ["```", *cmds, "```", "",
           f"MiniLM, θ = {THETA}, top {res['top_k_per_level']} chunks per level, {res['budget_words']}-word context, "
           f"{res['seconds'] / 60:.0f} min on {res['machine'].get('affinity', '?')} cores "
           f"({res['machine'].get('cpu', '')}). Sets: {setline} ({subsets}). "
           f"Cells: DCG@10 / evidence recall @{BUDGET} w. "
           f"Δ columns: DCG@10 difference on the mean over sets, paired bootstrap 95% CI ({res['n_boot']} resamples, "
           "seed 0, each set's questions resampled). Fitted weights: 2-fold cross-fitting on each set's own "
           f"questions, {len(res['seeds'])} seeds, {res['grid_points']['raw']} weight vectors (uniform + the simplex "
           "in steps of 0.1), uniform unless the fit beats it on the fitting half; *z-score + fitted level offsets*: "
           f"{res['grid_points']['z']} pairs of offsets (θ/2, θ/4 levels, −1.5 … 1.5 z-units), the plain z-score "
           "unless better on the fitting half.", "",
           _table(main, rows, sets), ""]
    if res.get("full_sets"):
        fs = res["full_sets"]
        fl = "; ".join(f"{SHORT[s]} {m['questions']} questions / {m['docs']} docs / {m['words']:,} words"
                       for s, m in fs["sets"].items())
        out += [f"**Every document** (`{fs['command']}`, {fs['seconds'] / 60:.0f} min; recursive and mg at θ = "
                f"{THETA} only): {fl}.", "",
                _table([k for k, r in fs["rows"].items() if r["theta"] == THETA], fs["rows"], list(fs["sets"])), ""]
    if lg:
        out += [f"**LGMGC** (θ = {THETA}) on the sets its LM pass was run for ({lgline}; the others were left out "
                "for time); recursive and mg rows here are the same sets' (mean over these sets only):", "",
                _table(lg, rows, sets), ""]
    if th:
        tsets = ", ".join(SHORT[s] for s, m in meta.items() if m["theta_variants"])
        ref = []
        for ch in ("recursive", "mg"):
            r = rows[f"{ch}|uniform max|{THETA}|all"]
            ts = [s for s, m in meta.items() if m["theta_variants"]]
            ref.append(f"{ch} {np.mean([r['per_set'][s][m10] for s in ts]):.3f} / "
                       f"{np.mean([r['per_set'][s][er] for s in ts]):.3f}")
        out += [f"**θ for MiniLM** ({tsets}; θ = 300 uniform max on these sets, mean DCG@10 / evidence recall: "
                f"{', '.join(ref)}; Δ vs same chunker: against that chunker's θ = 300 uniform max on the same sets; "
                "Δ vs recursive / mg: their θ = 300 on the same sets):", "",
                _table(th, rows, sets, "vs_same_chunker_theta300"), ""]
    out += _render_tail(res, main + lg, sets)
    if res.get("reading"):
        out += [res["reading"], ""]
    return "\n".join(out)


def main(argv=None) -> int:
    from app.evaluation import bench as B
    from app.evaluation import harness as H

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", type=lambda s: s.split(","), default=None, help="comma-separated (default: all five)")
    ap.add_argument("--thetas", type=lambda s: [int(x) for x in s.split(",") if x], default=[150, 200],
                    help="the other θ for recursive and mg (default 150,200; '' for none)")
    ap.add_argument("--no-lgmgc", dest="lgmgc", action="store_false", help="skip lgmgc")
    ap.add_argument("--lgmgc-run", action="store_true",
                    help="run lgmgc's LM pass where it is not cached (default: lgmgc only on sets whose chunking the "
                         "harness's chunk cache holds; on 2 busy cores the pass ran at about 80 words/s)")
    ap.add_argument("--quick", action="store_true",
                    help="chroma and Emma as make bench's standard profile, MAUD two agreements (about 5 min)")
    ap.add_argument("--render", action="store_true", help="only render the section from the results file")
    ap.add_argument("--no-write", action="store_true", help="print only")
    ap.add_argument("--out", default="level_scoring.json", help="results file under bench/results (another name: "
                    "the BENCHMARKS.md section is not written)")
    ap.add_argument("--with-full", default=None, help="a results file of a run on every document (no --quick) whose "
                    "θ = 300 recursive and mg rows are added to this run's as 'full_sets'")
    args = ap.parse_args(argv)
    path = B.RESULTS_DIR / "level_scoring.json"
    if args.render:
        import json

        res = json.loads(path.read_text(encoding="utf-8"))
    else:
        res = run(args)
        import shlex

        res["command"] = " ".join([COMMAND, shlex.join(argv if argv is not None else sys.argv[1:])])
        if not args.no_write:
            H.write_results(args.out, res)
        if args.out != "level_scoring.json":
            return 0
    if args.with_full:
        import json

        full = json.loads((B.RESULTS_DIR / args.with_full).read_text(encoding="utf-8"))
        res["full_sets"] = {"command": full["command"], "sets": full["sets"], "seconds": full["seconds"],
                            "rows": {k: r for k, r in full["rows"].items() if r["scope"] == "all"}}
        H.write_results("level_scoring.json", res)
    return B.publish_section(SECTION, render(res), write=not args.no_write)


if __name__ == "__main__":
    raise SystemExit(main())
