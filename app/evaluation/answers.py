"""``mgrag bench answers``: answer quality, abstention and grounding per answering configuration, and follow-ups.

Questions and indexes: :mod:`app.evaluation.answer_sets`. Every question goes through :func:`app.answer.ask`,
the code ``mgrag ask`` runs. To measure several thresholds from one generation, the run asks with a low context
floor (:data:`CALIBRATION_FLOOR`: below it no generation, as in the product) and applies the configured floor
afterwards exactly as ``ask`` does (below it: an abstention, no generation, so the time counted is retrieval and
grounding only); the threshold sweep starts at that floor.

Definitions (pure functions below, each tested):

* **F1**: LongBench ``qa_f1_score`` of the reply without its ``[n]`` markers, best over the reference answers;
  an abstention scores 0.
* **abstained**: the reply says the documents do not answer (:func:`app.grounding.is_abstention`).
* **cited hallucination**: on the *unanswerable* set, any reply that does not abstain and cites a source (the
  index does not hold the question's document, so no cited source can contain its answer); on the *answerable*
  set, a reply whose citations are all unsupported. A citation is **supported** when its source contains at
  least 80% of the reply's content words, or the reply overlaps a reference answer that the source contains
  (normalised, a yes/no reference excepted).
* **evidence in context**: the sources the model read cover at least half of the question's evidence
  (gutenqa_emma), or contain a reference answer (longbench_sample, which has no evidence offsets; a yes/no
  reference counts as present). *answered with evidence* = the share of those questions not abstained on.
* **follow-ups**: evidence recall (share of the evidence characters inside the retrieved context, as
  ``mgrag bench retrieval``) of the follow-up's retrieval, for each rewrite (none, rules, llm), against the same
  question written out in full.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from app import grounding as G
from app.conversation import rewrite, rewrite_rules
from app.evaluation import bench as B
from app.evaluation.metrics import evidence_recall, normalize_answer, qa_f1_max, qa_f1_score
from app.synth import make_synthesizer, openai_client
from app.synth.hf import load_offline_synthesizer
from core.models import QWEN_LM

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): torch and app.answer,
# retrieval.search, app.context, app.evaluation.answer_sets, app.evaluation, app.synth.hf

log = logging.getLogger(__name__)

YES_NO = frozenset({"yes", "no"})
CALIBRATION_FLOOR = 0.25  # the lowest context floor the sweep considers (below every measured answerable score)


@dataclass(frozen=True)
class Candidate:
    """One answering configuration: a backend, the offline model, the context budget the model reads, the
    answer style; ``derived`` ones reuse another's generations (grounding and style are post-processing)."""

    name: str
    backend: str
    model: str | None = None
    budget: int | None = None
    style: str = "generated"
    grounded: bool = True
    derived_from: str | None = None
    every: int = 1  # ask every n-th question only (a slow configuration measured on a stratified subset)


CANDIDATES: dict[str, Candidate] = {c.name: c for c in [
    Candidate("gemma-1500", "offline", "gemma3-270m", 1500, every=4),
    Candidate("gemma-1500-ungrounded", "offline", "gemma3-270m", 1500, grounded=False, derived_from="gemma-1500",
              every=4),
    Candidate("gemma-500", "offline", "gemma3-270m", 500, every=4),
    Candidate("qwen-1500", "offline", "qwen2.5-coder-0.5b-instruct", 1500),
    Candidate("qwen-500", "offline", "qwen2.5-coder-0.5b-instruct", 500),
    Candidate("qwen-500-ungrounded", "offline", "qwen2.5-coder-0.5b-instruct", 500, grounded=False,
              derived_from="qwen-500"),
    Candidate("hybrid-qwen-500", "offline", "qwen2.5-coder-0.5b-instruct", 500, style="hybrid",
              derived_from="qwen-500"),
    Candidate("hybrid-gemma-500", "offline", "gemma3-270m", 500, style="hybrid", derived_from="gemma-500", every=4),
    Candidate("extractive", "extractive", None, 1500),
    Candidate("openai-stub", "openai", None, 1500),
]}


# -- the checks ------------------------------------------------------------------------------------------------
def _norm_tokens(text: str) -> list[str]:
    return normalize_answer(text).split()


def contains_reference(text: str, answers: Sequence[str]) -> bool:
    """True when ``text`` contains one of the reference answers (normalised; yes/no references do not count).

    >>> contains_reference("The club was renamed from FC Banants in 2013.", ["FC Banants."])
    True
    """
    hay = " " + " ".join(_norm_tokens(text)) + " "
    for a in answers:
        toks = _norm_tokens(a)
        if toks and " ".join(toks) not in YES_NO and f" {' '.join(toks)} " in hay:
            return True
    return False


def citation_supported(reply: str, source_text: str, answers: Sequence[str], min_share: float = 0.8) -> bool:
    """The benchmark's check of one citation: the cited source contains at least ``min_share`` of the reply's
    content words, or the reply is (partly) a reference answer and the source contains that reference (a
    paraphrased right answer).

    >>> citation_supported("Russia [3].", "Putin is invading Ukraine.", ["Moscow"])
    False
    >>> citation_supported("FC Banants [1].", "It was known as FC Banants until 1992.", ["FC Banants."])
    True
    """
    words = G.answer_terms(reply)
    if words and len(words & set(G.tokenize(source_text))) / len(words) >= min_share:
        return True
    bare = G.strip_citations(reply)
    return any(qa_f1_score(bare, a) > 0 and contains_reference(source_text, [a]) for a in answers)


def cited_pairs(reply: str) -> list[tuple[str, int]]:
    """``(claim, source number)`` for every citation of the reply: a claim is the text since the previous
    citation group (quoted lines without a full stop, such as headings or verse, stay apart).

    >>> cited_pairs("Forty trees [1]. Planted in 1911 [2][3] Verse line [4]")
    [('Forty trees', 1), ('. Planted in 1911', 2), ('. Planted in 1911', 3), ('Verse line', 4)]
    """
    out = []
    for m in re.finditer(r"(.*?)((?:\s*\[\d+\])+)", reply, re.S):
        claim = m.group(1).strip()
        if re.search(r"\w", claim):
            out += [(claim, int(n)) for n in re.findall(r"\[(\d+)\]", m.group(2))]
    return out


def cited_hallucination(reply: str, cited: dict[int, str], answers: Sequence[str], answerable: bool,
                        abstained: bool) -> bool:
    """See the module doc: unanswerable — any cited non-abstention; answerable — a claim citing a source that
    does not support it. ``cited``: source number → text."""
    pairs = [(c, n) for c, n in cited_pairs(reply) if n in cited]
    if abstained or not pairs:
        return False
    if not answerable:
        return True
    return not all(citation_supported(c, cited[n], answers) for c, n in pairs)


def evidence_in_context(question, read_sources: Sequence, doc_text: str | None) -> bool:
    spans = [(e.start, e.end) for e in question.evidence if e.located]
    if spans:
        ctx = [(s.start, s.end) for s in read_sources if s.doc_id == question.doc_id]
        return evidence_recall(ctx, spans) >= 0.5
    refs = list(question.answers)
    if any(" ".join(_norm_tokens(a)) in YES_NO for a in refs):
        return any(s.doc_id == question.doc_id for s in read_sources)
    return contains_reference(" ".join(s.text for s in read_sources), refs)


def context_evidence_recall(sources: Sequence, doc_id: str, evidence) -> float | None:
    spans = [(e.start, e.end) for e in evidence if e.located]
    if not spans:
        return None
    return evidence_recall([(s.start, s.end) for s in sources if s.doc_id == doc_id], spans)


# -- running ---------------------------------------------------------------------------------------------------
class CachedSynth:
    """A synthesizer whose outputs are kept on disk (``<cache_dir>/bench/answers/drafts-<name>.jsonl``), keyed by
    the configuration, the question, the sources' texts and the history, with the times measured when they were
    generated: a re-run (new floors, a changed grounding rule) reuses the drafts and reports those times. Greedy
    decoding makes a fresh run produce the same drafts (``--fresh`` regenerates)."""

    def __init__(self, inner, name: str, cache_dir, fresh: bool = False):
        self.inner, self.key_name = inner, name
        self.name = getattr(inner, "name", name)
        self.chat = getattr(inner, "chat", False)
        self.path = Path(cache_dir) / "bench" / "answers" / f"drafts-{name}.jsonl"
        self.records: dict[str, dict] = {}
        if self.path.exists() and not fresh:
            for line in self.path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    r = json.loads(line)
                    self.records[r["key"]] = r
        self.last: dict = {}

    def __getattr__(self, item):
        return getattr(self.inner, item)

    def _key(self, question, sources, history) -> str:
        cfg = [self.key_name, getattr(self.inner, "max_new_tokens", None), getattr(self.inner, "system_prompt", None),
               getattr(self.inner, "max_tokens", None)]
        blob = json.dumps([cfg, question, [(s.rank, s.text) for s in sources],
                           [(t.get("role"), t.get("content")) for t in (history or ())]], ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()

    def complete(self, messages, max_tokens: int = 64) -> str:
        """The inner model's completion (the follow-up rewrite), kept like the drafts."""
        key = hashlib.sha256(json.dumps(["complete", self.key_name, max_tokens, messages],
                                        ensure_ascii=False).encode()).hexdigest()
        rec = self.records.get(key)
        if rec is None:
            t0 = time.perf_counter()
            out = self.inner.complete(messages, max_tokens)
            rec = {"key": key, "pieces": [out], "first_s": None, "total_s": time.perf_counter() - t0}
            self.records[key] = rec
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
        return rec["pieces"][0]

    def stream(self, question, sources, history=None):
        key = self._key(question, sources, history)
        t0 = time.perf_counter()
        rec = self.records.get(key)
        first = None
        if rec is not None:
            for p in rec["pieces"]:
                if first is None:
                    first = time.perf_counter() - t0
                yield p
            self.last = {"cached": True, "first_s": rec["first_s"], "total_s": rec["total_s"],
                         "observed_first_s": first, "observed_total_s": time.perf_counter() - t0}
            return
        pieces = []
        for p in self.inner.stream(question, sources, history=history):
            if first is None:
                first = time.perf_counter() - t0
            pieces.append(p)
            yield p
        total = time.perf_counter() - t0
        rec = {"key": key, "pieces": pieces, "first_s": first, "total_s": total}
        self.records[key] = rec
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
        self.last = {"cached": False, "first_s": first, "total_s": total, "observed_first_s": first,
                     "observed_total_s": total}


@dataclass
class Asked:
    retrieval: object
    answer: object
    read: list
    gen: dict = field(default_factory=dict)  # the generation's times as measured when it was made (CachedSynth)


def ask_one(ctx, question: str, cand: Candidate, synth, history=None, rewrite_mode: str | None = None,
            context_floor: float | None = -1.0) -> Asked:
    """One question through :func:`app.answer.ask` with a low context floor (see the module doc)."""
    from app.answer import AskOptions, ask, synth_sources

    retrieval = answer = None
    opts = AskOptions(backend=cand.backend, grounded=True, style="generated", synth_budget_words=cand.budget,
                      rewrite_mode=rewrite_mode, context_floor=context_floor)
    for kind, value in ask(ctx, question, opts, synthesizer=synth, history=history):
        if kind == "sources":
            retrieval = value
        elif kind == "done":
            answer = value
    gen = dict(getattr(synth, "last", {}) or {}) if answer.draft else {}
    if hasattr(synth, "last"):
        synth.last = {}
    return Asked(retrieval, answer, synth_sources(retrieval.sources, cand.budget), gen)


def verdict_row(ctx, asked: Asked, cand: Candidate, floors: G.Floors, q, answerable: bool) -> dict:
    """The reply a candidate gives (the floor applied afterwards, the style and grounding re-applied to the same
    draft) and its metrics."""
    from app.answer import Citation, Grounder, _grounded_reply, cited_numbers

    a = asked.answer
    ctx_score = a.grounding.get("context_score", 0.0)
    t = dict(a.timings)
    if asked.gen:  # times of the generation as made, not as read back from the draft cache
        g = asked.gen
        t["generation_s"] += g["total_s"] - g["observed_total_s"]
        t["total_s"] += g["total_s"] - g["observed_total_s"]
        if t.get("time_to_first_token_s") is not None and g.get("first_s") is not None:
            t["time_to_first_token_s"] += g["first_s"] - g["observed_first_s"]
    gen_s = t["generation_s"]
    if not cand.grounded:
        text = a.draft
        abstained = not text or G.is_abstention(text)
        cited = cited_numbers(text, len(asked.read))
        below = False
    else:
        below = ctx_score < floors.context
        sources = [Citation.of(x) for x in asked.retrieval.sources]
        if a.error:
            text, cited, abstained = "", [], True
        else:
            g = Grounder(ctx, a.query, asked.read)
            g.floors = floors
            meta: dict = {}
            text, cited, abstained = _grounded_reply(g, a.draft, len(asked.read), below, cand.style, cand.backend,
                                                     sources, meta)
    by_n = {s.rank: s.text for s in asked.retrieval.sources}
    pairs = [(c, n) for c, n in cited_pairs(text) if n in by_n] if not abstained else []
    scored = G.strip_citations(text) if not abstained else ""
    row = {
        "id": q.id, "dataset": q.dataset, "answerable": answerable, "query": a.query, "draft": a.draft,
        "reply": text, "abstained": abstained, "cited": cited,
        "f1": qa_f1_max(scored, q.answers) if (q.answers and scored) else 0.0,
        "cited_hallucination": cited_hallucination(text, by_n, q.answers, answerable, abstained),
        "citations": len(pairs),
        "supported_citations": sum(citation_supported(c, by_n[n], q.answers) for c, n in pairs),
        "context_score": ctx_score, "support_score": _best_support(ctx, a, asked) if cand.grounded else None,
        "evidence_in_context": evidence_in_context(q, asked.read, None) if answerable else None,
        "ttft_s": None if below else t.get("time_to_first_token_s"),
        "total_s": t["total_s"] - (gen_s if below else 0.0),
        "error": a.error,
    }
    return row


def _best_support(ctx, a, asked: Asked) -> float | None:
    """The draft's best support score over every sentence read (one claim), for the threshold sweep."""
    from app.answer import Grounder

    if not a.draft or G.is_abstention(a.draft):
        return None
    g = Grounder(ctx, a.query, asked.read)
    return max((x.score for x in g.scored(a.draft)), default=0.0)


def summarise(rows: list[dict]) -> dict:
    ans = [r for r in rows if r["answerable"]]
    un = [r for r in rows if not r["answerable"]]
    ev = [r for r in ans if r["evidence_in_context"]]
    cites = sum(r["citations"] for r in rows)

    def mean(xs):
        xs = [x for x in xs if x is not None]
        return float(np.mean(xs)) if xs else None

    return {
        "n_answerable": len(ans), "n_unanswerable": len(un), "n_evidence_in_context": len(ev),
        "f1": mean([r["f1"] for r in ans]),
        "f1_answered": mean([r["f1"] for r in ans if not r["abstained"]]),
        "abstain_unanswerable": mean([r["abstained"] for r in un]),
        "false_abstain_answerable": mean([r["abstained"] for r in ans]),
        "answered_with_evidence": mean([not r["abstained"] for r in ev]),
        "cited_hallucinations_unanswerable": int(sum(r["cited_hallucination"] for r in un)),
        "cited_hallucinations_answerable": int(sum(r["cited_hallucination"] for r in ans)),
        "supported_citation_rate": (sum(r["supported_citations"] for r in rows) / cites) if cites else None,
        # times over the answerable questions (the unanswerable ones mostly stop at the context floor)
        "ttft_s_median": mean([float(np.median([r["ttft_s"] for r in ans if r["ttft_s"] is not None]))]
                              if any(r["ttft_s"] is not None for r in ans) else []),
        "total_s_median": float(np.median([r["total_s"] for r in ans])) if ans else None,
        "total_s_median_unanswerable": float(np.median([r["total_s"] for r in un])) if un else None,
        "errors": sum(bool(r["error"]) for r in rows),
    }


def sweep(rows: list[dict], context_floors: Sequence[float], support_floors: Sequence[float]) -> list[dict]:
    """Abstention on unanswerable vs answered-with-evidence on answerable for each pair of floors (one claim per
    draft: answered when the context passes, the draft does not abstain and its best support passes)."""
    out = []
    for cf in context_floors:
        for sf in support_floors:
            def answered(r, cf=cf, sf=sf):
                return (r["context_score"] >= cf and r["support_score"] is not None and r["support_score"] >= sf)
            un = [r for r in rows if not r["answerable"]]
            ev = [r for r in rows if r["answerable"] and r["evidence_in_context"]]
            ans = [r for r in rows if r["answerable"]]
            out.append({"context_floor": cf, "support_floor": sf,
                        "abstain_unanswerable": float(np.mean([not answered(r) for r in un])) if un else None,
                        "answered_with_evidence": float(np.mean([answered(r) for r in ev])) if ev else None,
                        "answered": float(np.mean([answered(r) for r in ans])) if ans else None})
    return out


def run_followups(ctxs: dict[str, object], followups, synth, cand: Candidate, llm_rewriter=None,
                  progress: Callable[[str], None] | None = None) -> dict:
    """Evidence recall of each follow-up's retrieval under each rewrite vs its standalone question.

    The first turn is answered by ``cand`` (its reply is the history the rules read); the follow-up is then
    retrieved with no rewrite, the rules, and (when ``llm_rewriter`` is given) the LLM rewrite."""
    from retrieval.search import retrieve

    rows = []
    for i, fu in enumerate(followups):
        ctx = ctxs[fu.set]
        first = ask_one(ctx, fu.first, cand, synth, context_floor=None)  # the reply the user would see
        history = [{"role": "user", "content": fu.first, "query": first.answer.query},
                   {"role": "assistant", "content": first.answer.text}]
        row = {"id": fu.id, "kind": fu.kind, "first_reply": first.answer.text}
        queries = {"standalone": fu.standalone, "none": fu.followup, "rules": rewrite_rules(fu.followup, history)}
        t0 = time.perf_counter()
        if llm_rewriter is not None:
            queries["llm"] = rewrite(fu.followup, history, llm_rewriter)[0]
            row["llm_rewrite_s"] = time.perf_counter() - t0
        for how, q in queries.items():
            r = retrieve(ctx, q)
            row[how] = {"query": q, "evidence_recall": context_evidence_recall(r.sources, fu.doc_id, fu.evidence),
                        "right_document_first": bool(r.sources) and r.sources[0].doc_id == fu.doc_id}
        rows.append(row)
        if progress:
            progress(f"follow-up {i + 1}/{len(followups)} {fu.id}: " + ", ".join(
                f"{h} {row[h]['evidence_recall']:.2f}" for h in queries if row[h]["evidence_recall"] is not None))
    hows = [h for h in ("standalone", "none", "rules", "llm") if rows and h in rows[0]]
    summary = {h: {"evidence_recall": float(np.mean([r[h]["evidence_recall"] for r in rows
                                                      if r[h]["evidence_recall"] is not None])),
                   "right_document_first": float(np.mean([r[h]["right_document_first"] for r in rows]))}
               for h in hows}
    return {"rows": rows, "summary": summary, "n": len(rows), "first_turn_by": cand.name}


# -- the whole run -----------------------------------------------------------------------------------------------
def _stub_openai():
    """The local OpenAI-compatible stub of the tests (echoes source [1]'s first sentence, cited)."""

    spec = importlib.util.spec_from_file_location("mgrag_stub_openai", B.ROOT / "tests" / "app" / "stub_openai.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.StubOpenAI(reply=None)


def make_synth(cand: Candidate, ctx, stub=None, fresh: bool = False):
    s = ctx.settings
    if cand.backend == "offline":
        inner = load_offline_synthesizer(ctx, max_new_tokens=s.offline_max_new_tokens, model=cand.model)
        return CachedSynth(inner, cand.model, s.cache_dir, fresh)
    if cand.backend == "openai":
        return openai_client(s.model_copy(update={"openai_base_url": stub.base_url, "openai_model": "stub"}))
    return make_synthesizer(cand.backend, ctx)


def run_answers(settings, names: Sequence[str], *, followups_with: str | None = None, llm_rewrite: bool = True,
                max_questions: int | None = None, bench_dir=None, fresh: bool = False, timing: int = 0,
                progress: Callable[[str], None] | None = print,
                checkpoint: Callable[[dict], None] | None = None) -> dict:
    """Every candidate in ``names`` over the answerable and unanswerable sets, then the follow-ups."""
    from app.context import AppContext
    from app.evaluation.answer_sets import build_index, load_answer_sets

    t_start = time.perf_counter()
    monitor = B.LoadMonitor()
    sets = load_answer_sets(bench_dir, max_questions=max_questions)
    base = AppContext(settings)
    emb, scorer = base.embedder, base.scorer
    dirs = {"A": build_index("A", sets.docs_a, settings, embedder=emb, scorer=scorer),
            "U": build_index("U", sets.docs_u, settings, embedder=emb, scorer=scorer)}
    ctxs = {k: AppContext(settings.model_copy(update={"data_dir": d}), embedder=emb, scorer=scorer)
            for k, d in dirs.items()}
    floors = G.floors_for(settings.embedder, settings.context_floor, settings.support_floor)
    todo = [CANDIDATES[n] for n in names]
    generated = list(dict.fromkeys(c.derived_from or c.name for c in todo))
    res: dict = {"benchmark": "answers", "note": sets.note, "machine": B.machine_info(),
                 "floors": {"context": floors.context, "support": floors.support}, "candidates": {},
                 "n_answerable": len(sets.answerable), "settings": {"chunker": settings.chunker,
                                                                    "theta": settings.theta,
                                                                    "embedder": settings.embedder,
                                                                    "retriever": settings.retriever,
                                                                    "context_words": settings.context_words}}
    stub = _stub_openai() if any(CANDIDATES[g].backend == "openai" for g in generated) else None
    if stub:
        stub.__enter__()
    asked: dict[str, list[tuple[object, Asked, bool]]] = {}
    synths: dict[str, object] = {}
    try:
        for gname in generated:
            cand = CANDIDATES[gname]
            synth = synths[gname] = make_synth(cand, ctxs["A"], stub, fresh)
            out = []
            # an ungrounded row needs every draft (the model answers whatever the context); the others only those
            # above the calibration floor
            floor = -1.0 if any(not c.grounded and c.derived_from == gname for c in todo) else CALIBRATION_FLOOR
            t0, c0 = time.perf_counter(), B.cpu_seconds()
            for i, q in enumerate(sets.answerable[::cand.every]):
                for answerable, key in ((True, "A"), (False, "U")):
                    out.append((q, ask_one(ctxs[key], q.question, cand, synth, context_floor=floor), answerable))
                if progress:
                    a1, a2 = out[-2][1].answer, out[-1][1].answer
                    progress(f"{gname} {i + 1}/{len(sets.answerable[::cand.every])} {q.id}: {a1.draft[:60]!r} | "
                             f"unanswerable: {a2.draft[:40]!r}")
            asked[gname] = out
            res.setdefault("generation", {})[gname] = {"seconds": time.perf_counter() - t0,
                                                      "cpu_seconds": B.cpu_seconds() - c0}
            for cand in todo:
                if (cand.derived_from or cand.name) == gname:
                    _score(res, cand, ctxs, asked[gname], floors, progress)
            if checkpoint:
                checkpoint(res)
        if followups_with and sets.followups:
            cand = CANDIDATES[followups_with]
            synth = synths.get(cand.derived_from or cand.name) or make_synth(cand, ctxs["A"], stub, fresh)
            rewriter = None
            if llm_rewrite:
                from app.synth.hf import load_offline_synthesizer

                qwen = synths.get("qwen-500") or synths.get("qwen-1500") or load_offline_synthesizer(
                    ctxs["A"], model=QWEN_LM)
                rewriter = lambda messages: qwen.complete(messages, 64)  # noqa: E731
            fctx = {"chroma": ctxs["U"], "gutenqa_emma": ctxs["A"]}
            res["followups"] = run_followups(fctx, sets.followups, synth, cand, rewriter, progress)
        if timing:  # time to first token of the model-backed configurations side by side, nothing cached
            res["timing"] = time_side_by_side(ctxs["A"], [CANDIDATES[g] for g in generated], synths,
                                              sets.answerable[:timing], progress)
    finally:
        if stub:
            stub.__exit__(None, None, None)
        monitor.stop()
        for c in (*ctxs.values(), base):
            c.close()
    res["seconds"] = time.perf_counter() - t_start
    res["load"] = monitor.summary()
    return res


def time_side_by_side(ctx, cands: Sequence[Candidate], synths: dict, questions, progress=None) -> dict:
    """Median time to first token (from the question) and total time of each offline configuration on the same
    ``questions``, asked in turn (one process, one load), with generation forced (no floor, no draft cache)."""
    out: dict = {}
    for q in questions:
        for cand in cands:
            if cand.backend not in ("offline", "extractive"):
                continue
            synth = synths[cand.name]
            inner = getattr(synth, "inner", synth)
            a = ask_one(ctx, q.question, cand, inner, context_floor=-1.0)
            t = a.answer.timings
            out.setdefault(cand.name, {"ttft_s": [], "total_s": []})
            out[cand.name]["ttft_s"].append(t["time_to_first_token_s"])
            out[cand.name]["total_s"].append(t["total_s"])
            if progress:
                progress(f"timing {cand.name} {q.id}: first token {t['time_to_first_token_s']:.2f} s, "
                         f"total {t['total_s']:.2f} s")
    return {k: {"n": len(v["ttft_s"]), "ttft_s_median": float(np.median(v["ttft_s"])),
                "total_s_median": float(np.median(v["total_s"])), "threads": _threads()} for k, v in out.items()}


def _threads() -> int | None:
    try:
        import torch

        return torch.get_num_threads()
    except ImportError:  # pragma: no cover
        return None


def _score(res: dict, cand: Candidate, ctxs, src, floors: G.Floors, progress) -> None:
    rows = [verdict_row(ctxs["A" if ans else "U"], a, cand, floors, q, ans) for q, a, ans in src]
    res["candidates"][cand.name] = {"candidate": cand.__dict__, "summary": summarise(rows), "rows": rows}
    if cand.grounded and cand.style == "generated":
        grid = [round(x, 2) for x in np.arange(CALIBRATION_FLOOR, 0.71, 0.05)]
        res["candidates"][cand.name]["sweep"] = sweep(rows, grid, [round(x, 2) for x in np.arange(0.2, 0.71, 0.05)])
    if progress:
        progress(f"{cand.name}: {summarise(rows)}")


def rescore(res: dict, settings, bench_dir=None) -> None:
    """Recompute the citation metrics of every row from its reply (after a change of the checks above), the
    sources found again by the same deterministic retrieval; summaries are rebuilt."""
    from app.context import AppContext
    from app.evaluation.answer_sets import build_index, load_answer_sets
    from retrieval.search import retrieve

    sets = load_answer_sets(bench_dir)
    answers = {q.id: q.answers for q in sets.answerable}
    ctxs = {k: AppContext(settings.model_copy(update={"data_dir": build_index(k, docs, settings)}))
            for k, docs in (("A", sets.docs_a), ("U", sets.docs_u))}
    ctxs["U"].embedder = ctxs["A"].embedder  # one embedder for both
    found: dict = {}
    try:
        for c in res["candidates"].values():
            for r in c["rows"]:
                key = ("A" if r["answerable"] else "U", r["query"])
                if key not in found:
                    found[key] = {s_.rank: s_.text for s_ in retrieve(ctxs[key[0]], key[1]).sources}
                by_n = found[key]
                pairs = [(cl, n) for cl, n in cited_pairs(r["reply"]) if n in by_n] if not r["abstained"] else []
                r["cited_hallucination"] = cited_hallucination(r["reply"], by_n, answers[r["id"]], r["answerable"],
                                                               r["abstained"])
                r["citations"] = len(pairs)
                r["supported_citations"] = sum(citation_supported(cl, by_n[n], answers[r["id"]]) for cl, n in pairs)
            c["summary"] = summarise(c["rows"])
    finally:
        for x in ctxs.values():
            x.close()


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def answers_table(res: dict) -> str:
    rows = []
    timing = res.get("timing", {})
    for name, c in res["candidates"].items():
        s = c["summary"]
        tt = timing.get(c["candidate"].get("derived_from") or name)
        rows.append([name, str(s["n_answerable"]), f"{100 * s['f1']:.1f}", _pct(s["abstain_unanswerable"]),
                     f"{s['cited_hallucinations_unanswerable']}", _pct(s["false_abstain_answerable"]),
                     f"{_pct(s['answered_with_evidence'])} of {s['n_evidence_in_context']}",
                     f"{s['cited_hallucinations_answerable']}", _pct(s["supported_citation_rate"]),
                     "-" if s["ttft_s_median"] is None else f"{s['ttft_s_median']:.2f}",
                     f"{s['total_s_median']:.2f}",
                     "-" if not tt else f"{tt['ttft_s_median']:.2f} / {tt['total_s_median']:.2f}"])
    return B.markdown_table(["configuration", "questions", "F1", "abstains (unans.)", "cited halluc. (unans.)",
                             "abstains (ans.)", "answers with evidence", "cited halluc. (ans.)",
                             "supported citations", "TTFT s", "total s",
                             "TTFT / total s, side by side"], rows)


def followups_table(res: dict) -> str:
    f = res["followups"]
    names = {"standalone": "standalone question (written out)", "none": "follow-up as asked (no rewrite)",
             "rules": "rule-based rewrite (offline)", "llm": "LLM rewrite (Qwen2.5-0.5B, strict prompt)"}
    rows = [[names[h], f"{v['evidence_recall']:.3f}", _pct(v["right_document_first"])]
            for h, v in f["summary"].items()]
    return B.markdown_table(["retrieval query", "evidence recall", "right document ranked first"], rows)


def examples(res: dict, n: int = 4) -> list[str]:
    """Drafts of an ungrounded configuration that the benchmark counts as cited hallucinations, with the reply the
    grounded configuration gave to the same question."""
    out = []
    for name, c in res["candidates"].items():
        if c["candidate"].get("grounded", True):
            continue
        sibling = res["candidates"].get(c["candidate"].get("derived_from") or "", {}).get("rows", [])
        by_key = {(r["id"], r["answerable"]): r for r in sibling}
        for r in c["rows"]:
            if r["cited_hallucination"] and len(out) < n:
                g = by_key.get((r["id"], r["answerable"]))
                kind = "answerable" if r["answerable"] else "unanswerable (its document is not in the index)"
                draft = " ".join(r["draft"].split())[:110]
                reply = " ".join((g or {}).get("reply", "").split())[:90]
                out.append(f"- `{r['id']}`, {kind}: {name} drafted “{draft}” → cited hallucination; grounded: "
                           f"“{reply}”")
    return out


def _timing_note(res: dict) -> str:
    t = next(iter(res.get("timing", {}).values()), None)
    return f"{t['n']} questions, {t['threads']} torch thread(s)" if t else "not run"


def answers_section(res: dict, command: str) -> str:
    s = res["settings"]
    lines = ["### Answers: grounding, abstention, follow-ups", "",
             f"`{command}` ({res['note']}; {s['chunker']} θ={s['theta']}, {s['embedder']}, {s['retriever']} "
             f"retrieval, {s['context_words']}-word context; floors: context {res['floors']['context']:.2f}, "
             f"support {res['floors']['support']:.2f}; torch {res['machine'].get('torch_threads')} thread(s); "
             f"{res['seconds'] / 60:.1f} min, 1-min load mean {res['load']['load1_mean']:.2f}).", "",
             f"{res['n_answerable']} answerable questions, the same {res['n_answerable']} asked of an index "
             "without their document (unanswerable). F1 ×100 over the answerable ones (an abstention scores 0). "
             "TTFT and total: medians over the answerable questions, with the times measured when each draft was "
             "generated (possibly in an earlier run, under another load); *side by side*: the offline models timed "
             f"in turn on the same first questions in this run ({_timing_note(res)}), the figures to compare.", "",
             answers_table(res)]
    try:
        from app.evaluation import bench as B

        side = json.loads((B.RESULTS_DIR / "answer_ttft.json").read_text(encoding="utf-8"))
        lines += ["", f"Time to first token side by side (`.venv/bin/python bench/answer_ttft.py --questions "
                      f"{len(side['questions'])} --threads {next(iter(side['timing'].values()))['threads']}`: the "
                      f"first answerable questions asked of each configuration in turn, generation forced; 1-min "
                      f"load mean {side['load']['load1_mean']:.2f} on the 2-core machine):", "",
                  B.markdown_table(["configuration", "first token s (median)", "total s (median)"],
                                   [[k, f"{v['ttft_s_median']:.2f}", f"{v['total_s_median']:.2f}"]
                                    for k, v in side["timing"].items()])]
    except (OSError, ValueError, KeyError, StopIteration):
        pass
    ex = examples(res)
    if ex:
        lines += ["", "Cited hallucinations caught (the check above, on this run's rows): the model's draft, its "
                      "verdict, and the reply given instead:", ""] + ex
    for m in res.get("merged", []):
        lines += ["", f"{', '.join(m['candidates'])}: measured beside it by `{m['command']}` "
                      f"({(m['seconds'] or 0) / 60:.1f} min, 1-min load mean {m['load']['load1_mean']:.2f})."]
    if "followups" in res:
        lines += ["", f"Follow-ups ({res['followups']['n']} conversations, `bench/data/followups.jsonl`; the first "
                      f"turn answered by {res['followups']['first_turn_by']}):", "", followups_table(res)]
    return "\n".join(lines)
