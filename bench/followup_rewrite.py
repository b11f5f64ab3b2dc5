"""Offline follow-up rewrites compared: evidence recall of each rewrite's retrieval vs the standalone question.

The follow-up part of ``mgrag bench answers`` alone, with more rewrites: each of the 38 conversations of
``bench/data/followups.jsonl`` is asked of the benchmark's own cached index that holds its document
(``~/.cache/mgrag/bench/answers``, built by ``mgrag bench answers``; built here if missing), its first turn
answered by the extractive backend exactly as the benchmark does (that reply is the history the rules read), and
the follow-up retrieved (``retrieval.search.retrieve``) once per rewrite. Every variant is a generic rule (none
is tuned to an item); all are reported. Since the choice among them is made on the same 38 items, the best one is
also checked by split half (chosen on the even ids, scored on the odd ones, and vice versa) and leave-one-out
(chosen on 37, scored on the 38th).

    .venv/bin/python bench/followup_rewrite.py            # prints the table, writes the section of BENCHMARKS.md
    .venv/bin/python bench/followup_rewrite.py --no-write --show   # the queries of every variant, per item
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.conversation import (  # noqa: E402
    _GENERIC,
    _WORD_RE,
    REFERRING,
    entities,
    refers_back,
    rewrite,
    user_turns,
)
from app.grounding import is_abstention, strip_citations  # noqa: E402


# -- the variants (question, history) -> query --------------------------------------------------------------------
def _prev_query(history) -> str:
    """The previous user turn as it was searched (a rewritten query's parenthesised part unwrapped)."""
    users = user_turns(history)
    if not users:
        return ""
    q = users[-1].get("query") or users[-1].get("content", "")
    return re.sub(r"\s*\(([^()]*)\)\s*$", r" \1", q).strip()


def _answer_names(history, have: set[str], n: int = 2, max_words: int | None = None) -> list[str]:
    """Names in the previous answer (none when it abstained, or is longer than ``max_words``)."""
    last = history[-1] if history else None
    if last is None or last.get("role") != "assistant" or is_abstention(last.get("content", "")):
        return []
    answer = strip_citations(last["content"])
    if max_words is not None and len(answer.split()) > max_words:
        return []
    return [e for e in entities(answer, lone_first=len(answer.split()) <= 6)[:n] if e.lower() not in have]


def _paren(q: str, terms: list[str]) -> str:
    own = {w.lower() for w in _WORD_RE.findall(q)}
    terms = [t for t in terms if t.lower() not in own]
    return f"{q} ({', '.join(terms)})" if terms else q


def _gate(fn, always: bool = False):
    """Rewrite only a question that refers back (as the app does), or always when there is history."""
    def f(q, history):
        q = q.strip()
        if not user_turns(history) or not (always or refers_back(q)):
            return q
        return fn(q, history)
    return f


# the rules as they were before this comparison (app/conversation.py at 1e89598), kept here to compare with
def _key_terms(text: str, exclude: set[str]) -> list[str]:
    seen: list[str] = []
    for w in _WORD_RE.findall(text):
        lw = w.lower()
        if lw in _GENERIC or lw in REFERRING or lw in exclude or len(lw) < 3 and not lw.isdigit():
            continue
        if lw not in seen:
            seen.append(lw)
    return seen


def _carried_terms(history, max_terms: int = 8, answer_names: bool = True) -> list[str]:
    prev = _prev_query(history)
    ents = entities(prev)
    covered = {w.lower() for e in ents for w in e.split()}
    terms = ents + _key_terms(prev, covered)
    if answer_names:
        terms += _answer_names(history, {t.lower() for t in terms})
    return terms[:max_terms]


def rules_before(q, history):
    return _paren(q, _carried_terms(history))


def rules_question_only(q, history):
    return _paren(q, _carried_terms(history, answer_names=False))


def rules_entities_only(q, history):
    ents = entities(_prev_query(history))
    return _paren(q, ents + _answer_names(history, {e.lower() for e in ents}))


def prev_question_after(q, history):
    return f"{q} {_prev_query(history)}"


def prev_question_before(q, history):
    return f"{_prev_query(history)} {q}"


def prev_question_and_names(q, history):
    prev = _prev_query(history)
    names = _answer_names(history, {e.lower() for e in entities(prev)})
    return f"{q} {prev}" + (f" ({', '.join(names)})" if names else "")


def prev_answer_after(q, history, words: int = 60):
    last = history[-1] if history and history[-1].get("role") == "assistant" else None
    if last is None or is_abstention(last.get("content", "")):
        return q
    return f"{q} {' '.join(strip_citations(last['content']).split()[:words])}"


_PRONOUNS = {"he", "she", "it", "they", "him", "her", "them"}
_POSSESSIVES = {"his", "its", "their", "hers", "theirs"}


def _main_entity(history) -> str | None:
    ents = entities(_prev_query(history))
    if ents:
        return ents[0]
    names = _answer_names(history, set(), 1)
    return names[0] if names else None


def substitute_pronoun(q: str, history) -> str:
    """The first personal pronoun replaced by the previous question's main entity (its first name run; else the
    previous answer's first name); the question unchanged when there is none."""
    ent = _main_entity(history)
    if not ent:
        return q
    m = next((m for m in _WORD_RE.finditer(q) if m.group().lower() in _PRONOUNS | _POSSESSIVES), None)
    if m is None:
        return q
    rep = f"{ent}'s" if m.group().lower() in _POSSESSIVES else ent
    return q[:m.start()] + rep + q[m.end():]


def substitute_then_rules(q, history):
    return _paren(substitute_pronoun(q, history), _carried_terms(history))


def substitute_then_prev_question(q, history):
    return f"{substitute_pronoun(q, history)} {_prev_query(history)}"


def substitute_or_prev_question(q, history):
    sub = substitute_pronoun(q, history)
    return sub if sub != q else f"{q} {_prev_query(history)}"


def prev_question_paren(q, history):
    return f"{q} ({_prev_query(history)})"


def prev_question_paren_short_names(q, history):
    prev = _prev_query(history)
    own = {w.lower() for w in _WORD_RE.findall(f"{q} {prev}")}
    names = [n for n in _answer_names(history, set(), max_words=12) if n.split()[0].lower() not in own]
    return f"{q} ({' '.join([prev] + names)})"


VARIANTS = {
    "rules before (entities + key terms, answer names)": _gate(rules_before),
    "rules, previous question's terms only": _gate(rules_question_only),
    "rules, entities only (question + answer names)": _gate(rules_entities_only),
    "previous question appended": _gate(prev_question_after),
    "previous question appended, always": _gate(prev_question_after, always=True),
    "previous question prepended": _gate(prev_question_before),
    "previous question + answer names": _gate(prev_question_and_names),
    "previous answer (60 words) appended": _gate(prev_answer_after),
    "pronoun → previous main entity": _gate(substitute_pronoun),
    "pronoun → entity, + rules' terms": _gate(substitute_then_rules),
    "pronoun → entity, + previous question": _gate(substitute_then_prev_question),
    "pronoun → entity, else previous question": _gate(substitute_or_prev_question),
    "previous question in parentheses": _gate(prev_question_paren),
    "previous question in parentheses + names of a short answer (≤ 12 words)": _gate(prev_question_paren_short_names),
    "rules as shipped (app.conversation.rewrite)": lambda q, h: rewrite(q, h)[0],
}


# -- the run --------------------------------------------------------------------------------------------------------
def histories(ctxs, fus, cache: Path, fresh: bool):
    """The first turn of each conversation answered by the extractive backend (as ``run_followups``), kept in
    ``cache`` keyed by the conversations and the index."""
    from app.evaluation.answers import CANDIDATES, ask_one, make_synth

    out = {} if fresh or not cache.exists() else json.loads(cache.read_text(encoding="utf-8"))
    cand = CANDIDATES["extractive"]
    synths = {}
    for fu in fus:
        if fu.id in out:
            continue
        ctx = ctxs[fu.set]
        synth = synths.get(fu.set) or synths.setdefault(fu.set, make_synth(cand, ctx))
        first = ask_one(ctx, fu.first, cand, synth, context_floor=None)
        out[fu.id] = [{"role": "user", "content": fu.first, "query": first.answer.query},
                      {"role": "assistant", "content": first.answer.text}]
        cache.write_text(json.dumps(out, ensure_ascii=False), encoding="utf-8")
    return out


def cached_index(name: str, docs: dict, settings, embedder, scorer) -> tuple[Path, dict]:
    """The benchmark's index of ``docs`` and the settings to open it with: the current one when built, else one
    built before the Qdrant Edge store (``INDEX_VERSION`` 1: the same documents and chunking, qdrant-client's
    local mode, which this code still opens with ``qdrant_engine="local"``), else built now (slow: the LM chunks)."""
    from app.evaluation import answer_sets as A

    base = Path(settings.cache_dir) / "bench" / "answers"
    if not (base / f"{name}-{A.index_key(docs, settings)}" / "complete.json").exists():
        current, A.INDEX_VERSION = A.INDEX_VERSION, 1
        try:
            old = base / f"{name}-{A.index_key(docs, settings)}"
        finally:
            A.INDEX_VERSION = current
        if (old / "complete.json").exists() and (old / "qdrant").is_dir():
            return old, {"qdrant_engine": "local"}
    return A.build_index(name, docs, settings, embedder=embedder, scorer=scorer), {}


STANDALONE, AS_ASKED = "standalone question (written out)", "follow-up as asked (no rewrite)"
BEFORE = "rules before (entities + key terms, answer names)"


def choose(rows, names, ids) -> str:
    """The variant with the best mean evidence recall on ``ids`` (ties: right document first, then table order)."""
    def score(n):
        rs = [r for r in rows if r["id"] in ids]
        return (sum(r[n]["er"] for r in rs), sum(r[n]["first"] for r in rs))
    return max(names, key=lambda n: (score(n), -names.index(n)))


def mean(rows, name, key="er"):
    return sum(r[name][key] for r in rows) / len(rows) if rows else float("nan")


def measure(settings, sets, fresh: bool) -> dict:
    """Per follow-up: each query's evidence recall and whether its first source is the right document."""
    from app.context import AppContext
    from app.evaluation.answers import context_evidence_recall
    from retrieval.search import retrieve

    t0 = time.perf_counter()
    base = AppContext(settings)
    emb, scorer = base.embedder, base.scorer
    found = {"gutenqa_emma": cached_index("A", sets.docs_a, settings, emb, scorer),
             "chroma": cached_index("U", sets.docs_u, settings, emb, scorer)}
    ctxs = {k: AppContext(settings.model_copy(update={"data_dir": d, **extra}), embedder=emb, scorer=scorer)
            for k, (d, extra) in found.items()}
    fus = [fu for fu in sets.followups if fu.evidence and any(e.located for e in fu.evidence)]
    key = hashlib.sha256(json.dumps([[fu.id, fu.first] for fu in fus] + [str(d) for d, _ in found.values()] +
                                    [settings.router]).encode()).hexdigest()[:12]
    queries = {STANDALONE: lambda q, h, fu: fu.standalone, AS_ASKED: lambda q, h, fu: q}
    queries.update({n: (lambda q, h, fu, f=f: f(q, h)) for n, f in VARIANTS.items()})
    seen: dict[tuple[str, str], dict] = {}
    rows = []
    try:
        hist = histories(ctxs, fus, Path(settings.cache_dir) / "bench" / "answers" / f"followup-history-{key}.json",
                         fresh)
        for fu in fus:
            h = hist[fu.id]
            row = {"id": fu.id, "set": fu.set, "kind": fu.kind, "reply": h[1]["content"]}
            for n, make in queries.items():
                q = make(fu.followup, h, fu)
                if (fu.set, q) not in seen:
                    r = retrieve(ctxs[fu.set], q)
                    seen[fu.set, q] = {"er": context_evidence_recall(r.sources, fu.doc_id, fu.evidence),
                                       "first": bool(r.sources) and r.sources[0].doc_id == fu.doc_id}
                row[n] = {"q": q, **seen[fu.set, q]}
            rows.append(row)
    finally:
        for c in (*ctxs.values(), base):
            c.close()
    return {"rows": rows, "names": list(queries), "seconds": time.perf_counter() - t0,
            "stores": sorted({extra.get("qdrant_engine", settings.qdrant_engine) for _, extra in found.values()})}


def cross_check(rows) -> str:
    """The items that give what bench/results/answers.json recorded (the same measurement when the router is the
    one that run used): the standalone question's recall (retrieval alone), the first reply (the extractive
    backend), the rules' query and recall (both)."""
    try:
        bench = {r["id"]: r for r in json.loads((ROOT / "bench" / "results" / "answers.json")
                                               .read_text(encoding="utf-8"))["followups"]["rows"]}
    except (OSError, KeyError, ValueError):
        return "bench/results/answers.json not found: no cross-check"
    rows = [r for r in rows if r["id"] in bench]
    std = sum(bench[r["id"]]["standalone"]["evidence_recall"] == r[STANDALONE]["er"] for r in rows)
    reply = sum(bench[r["id"]]["first_reply"] == r["reply"] for r in rows)
    rules = sum(bench[r["id"]]["rules"]["query"] == r[BEFORE]["q"] and
                bench[r["id"]]["rules"]["evidence_recall"] == r[BEFORE]["er"] for r in rows)
    return (f"as in bench/results/answers.json: standalone recall on {std} of {len(rows)} items, first reply on "
            f"{reply}, rules-before query and recall on {rules}")


def report(router: str, res: dict) -> str:
    from app.evaluation.bench import markdown_table

    rows, names = res["rows"], res["names"]
    even = {r["id"] for i, r in enumerate(rows) if i % 2 == 0}
    odd = {r["id"] for r in rows} - even
    part = {"even": [r for r in rows if r["id"] in even], "odd": [r for r in rows if r["id"] in odd]}
    table = [[n, f"{mean(rows, n):.3f}", f"{100 * mean(rows, n, 'first'):.0f}%", f"{mean(part['even'], n):.3f}",
              f"{mean(part['odd'], n):.3f}",
              f"+{sum(r[n]['er'] > r[STANDALONE]['er'] for r in rows)} / "
              f"−{sum(r[n]['er'] < r[STANDALONE]['er'] for r in rows)}"]
             for n in names]
    rewrites = [n for n in names if n not in (STANDALONE, AS_ASKED)]  # what a choice is made among
    half = []
    for on, other in (("even", "odd"), ("odd", "even")):
        pick = choose(rows, rewrites, {r["id"] for r in part[on]})
        half.append([f"{on} ids ({len(part[on])})", pick, f"{mean(part[other], pick):.3f}",
                     f"{mean(part[other], STANDALONE):.3f}"])
    loo, picks = [], {}
    for r in rows:
        p = choose(rows, rewrites, {x["id"] for x in rows} - {r["id"]})
        picks[p] = picks.get(p, 0) + 1
        loo.append(r[p]["er"])
    return f"""Router `{router}` ({cross_check(rows)}; {res['seconds']:.0f} s):

{markdown_table(["retrieval query", "evidence recall", "right document first", "even ids", "odd ids",
                 "vs standalone (items + / −)"], table)}

Split half (chosen on one half, scored on the other): {'; '.join(
        f"chosen on the {h[0]}: *{h[1]}*, {h[2]} on the other half (standalone {h[3]})" for h in half)}.
Leave-one-out (chosen on 37, scored on the 38th): {sum(loo) / len(loo):.3f} (standalone
{mean(rows, STANDALONE):.3f}); chosen: {', '.join(f'*{k}* ({v}×)' for k, v in picks.items())}.
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-write", action="store_true", help="print only; leave BENCHMARKS.md alone")
    ap.add_argument("--show", action="store_true", help="print every variant's query and recall per item")
    ap.add_argument("--fresh", action="store_true", help="answer the first turns again")
    ap.add_argument("--routers", default="none,default",
                    help="MGRAG_ROUTER values to measure under (comma-separated): 'none' is today's default, "
                         "'default' (the trained router) the one bench/results/answers.json was made with")
    args = ap.parse_args(argv)

    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from app.evaluation.answer_sets import load_answer_sets
    from app.evaluation.bench import write_section
    from core.settings import Settings

    sets = load_answer_sets()
    parts, n, n_emma, stores = [], 0, 0, set()
    for router in args.routers.split(","):
        res = measure(Settings(router=router), sets, args.fresh)
        rows = res["rows"]
        n, n_emma = len(rows), sum(r["set"] == "gutenqa_emma" for r in rows)
        stores.update(res["stores"])
        if args.show:
            for r in rows:
                print(f"\n[{router}] {r['id']} ({r['kind']}) reply: {r['reply'][:100]!r}")
                for name in res["names"]:
                    print(f"  {r[name]['er']:.2f}{'' if r[name]['first'] else '!'} {name[:40]:40} {r[name]['q']}")
        parts.append(report(router, res))
    md = f"""### Follow-up rewrite variants (bench/followup_rewrite.py)

`.venv/bin/python bench/followup_rewrite.py --routers {args.routers}` — the {n} follow-ups of
`mgrag bench answers` ({n_emma} on *Emma*, {n - n_emma} on chroma) asked of that benchmark's cached indexes
(store: {', '.join(sorted(stores))}), the first turn answered by the extractive backend as there, the follow-up
retrieved (`retrieval.search.retrieve`, dense, 1500 words) once per query. Each item has one evidence span and
its recall is almost always 0 or 1, so one item is {100 / max(n, 1):.1f} points. Every rewrite is offline (no
model). All but *always* rewrite only a question that `refers_back` (a pronoun, an ellipsis, or two content
words or fewer), as the app does; *previous question* is the previous turn's search query. *rules before*: the
rules up to commit cacd291 (the previous question's entities and key terms, then names in the answer, in
parentheses); *rules as shipped*: `app.conversation.rewrite` as it is now. *vs standalone*: the items where the
query's recall is above / below the standalone question's. Choosing among {len(VARIANTS)} rows on the same {n}
items overfits, so the choice itself is checked by split half (even / odd ids) and leave-one-out; a tie goes
to the higher right-document-first share, then to the earlier row (the rules before come first, so a tie never
favours a new variant).

{chr(10).join(parts)}"""
    print(md)
    if not args.no_write:
        write_section("followup-rewrite", md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
