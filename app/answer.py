"""Question answering: rewrite a follow-up, retrieve, generate, check the answer against its sources.

``ask()`` yields events so callers can stream: ``("status", str)`` while it works (retrieving, N sources,
generating, checking), ``("sources", Retrieval)``, then ``("token", str)`` pieces of the model's draft as they
are produced, then ``("done", Answer)``. The Answer's ``text`` is the reply to show: the draft with only the
citations its sources support, or an abstention ("the documents do not say") with no citation when the context
or the cited source does not support it (:mod:`app.grounding`). Each cited source carries the sentences that
support the answer, with document offsets. If the LLM fails, the answer carries the error and the sources anyway.
"""
from __future__ import annotations

import dataclasses
import logging
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field

from app import grounding as G
from app.context import AppContext
from app.evidence import AskOptions, gather, quoted_rows, reading_of
from app.question import read_question
from app.summary import summarize, summary_reply
from app.synth import SynthesisError, make_synthesizer
from app.synth.extractive import lines as extractive_lines
from ingest.readers.layout import Layout, heading_path, page_span, source_place
from retrieval.scoring import assemble_context
from retrieval.search import Source, check_question

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): core.models

log = logging.getLogger(__name__)
_CITE_RE = re.compile(r"\[(\d+)\]")


@dataclass
class Citation:
    number: int
    doc_id: str
    start: int
    end: int
    parent_text: str
    matched_level: int
    matched_start: int
    matched_end: int
    matched_text: str
    score: float
    level_scores: dict[int, float] = field(default_factory=dict)
    bm25_level_scores: dict[int, float] = field(default_factory=dict)
    pages: list[int] | None = None  # [first, last] page of the passage (PDF)
    headings: list[str] = field(default_factory=list)  # heading path at the passage's start
    matched_pages: list[int] | None = None
    doc_hash: str = ""
    # the sentences of this source that support the answer: document offsets, text, support score
    support: list[dict] = field(default_factory=list)
    first_pass: bool = False  # from the document's quick first pass; its LM refinement is still to come
    unit: str = "page"  # what ``pages`` counts: page, slide, sheet or row
    name: str = ""  # the document's name as its reader sees it; "" = doc_id

    @classmethod
    def of(cls, s: Source) -> "Citation":
        return cls(s.rank, s.doc_id, s.start, s.end, s.text, s.matched_level, s.matched_start, s.matched_end,
                   s.matched_text, s.score, dict(s.level_scores), dict(s.bm25_level_scores), s.pages,
                   list(s.headings), s.matched_pages, s.doc_hash, first_pass=getattr(s, "first_pass", False),
                   unit=getattr(s, "unit", "page"), name=getattr(s, "name", "") or s.doc_id)

    @property
    def label(self) -> str:
        """``p. 4–5 · Section › Subsection`` ("" when the document has neither pages nor headings), and ``first pass
        (refining)`` for a passage of a document still in its first phase."""
        return source_place(self.pages, self.headings, self.first_pass, self.unit)

    @property
    def quote_label(self) -> str:
        """The place of the sentences the answer quotes from this source (the page, slide or sheet and the section
        they are in; a passage may run over several), or "" when it quotes none."""
        return source_place(None, None, False, self.unit, self.support) if self.support else ""


@dataclass
class Answer:
    question: str
    text: str
    backend: str
    retriever: str
    citations: list[Citation]  # the sources the answer cites, in citation order
    sources: list[Citation]  # every source in the context
    weights: list[float]  # the level weights used (index order: parent, θ/2, θ/4)
    timings: dict[str, float]
    error: str | None = None
    router: str = ""  # where the weights came from: the trained router, or why they are uniform
    query: str = ""  # the standalone search query (the question itself unless a follow-up was rewritten)
    rewrite: str = "none"  # how the query was made: none, rules or llm
    abstained: bool = False  # the reply says the documents do not answer it (no citation)
    draft: str = ""  # the model's output before grounding
    grounding: dict = field(default_factory=dict)  # scores and thresholds behind the verdict

    def to_dict(self) -> dict:
        return asdict(self)


def cited_numbers(text: str, n_sources: int) -> list[int]:
    """Source numbers cited as [n] in ``text`` (first-appearance order; out-of-range numbers dropped)."""
    seen: list[int] = []
    for m in _CITE_RE.finditer(text):
        n = int(m.group(1))
        if 1 <= n <= n_sources and n not in seen:
            seen.append(n)
    return seen


def synth_sources(sources: Sequence[Source], budget_words: int | None) -> list[Source]:
    """The sources a small model reads: the first ones, in rank order, while they fit ``budget_words`` (one that
    would overflow is skipped, as the context is assembled); all of them when there is no budget."""
    if not budget_words:
        return list(sources)

    kept = assemble_context([(str(i), s.text) for i, s in enumerate(sources)], budget_words)
    return [sources[int(i)] for i, _ in kept] or list(sources[:1])


def _is_chat(synth) -> bool:
    return getattr(synth, "name", "") == "openai" or bool(getattr(synth, "chat", False))


def _rewriter(ctx: AppContext, synth, mode: str):
    """The LLM rewrite function for ``mode`` (None: the rules)."""
    if mode == "none" or mode == "rules":
        return None
    if mode == "auto" and not (_is_chat(synth) and getattr(synth, "name", "") != "offline"):
        return None
    if synth is None or not hasattr(synth, "complete"):
        return None
    return lambda messages: synth.complete(messages, 64)


class Grounder:
    """The grounding checks of one context (sentence vectors computed once, shared with the extractive backend)."""

    def __init__(self, ctx: AppContext, question: str, sources: Sequence[Source]):
        s = ctx.settings
        self.floors = G.floors_for(s.embedder, s.context_floor, s.support_floor)
        self.vectors = G.sentence_vectors_of(ctx)
        self.question = question
        self.sentences = G.source_sentences(sources)
        self.svecs = self.vectors.passages([x.shown for x in self.sentences])
        self.qvec = self.vectors.query(question)
        # how well the closest sentence matches the question: the support score of a question-only claim
        self.about = G.score_sentences(question, "", self.sentences, self.svecs, self.qvec)
        # a heading or a title line that matches the question does not answer it
        self.context_score = max((x.score for x in self.about if x.sentence.answerable), default=0.0)

    def scored(self, claim: str) -> list[G.SentenceSupport]:
        cvec = self.vectors.query(f"{self.question} {G.strip_citations(claim)}")
        return G.score_sentences(self.question, claim, self.sentences, self.svecs, cvec)

    def copies_a_heading(self, claim: str) -> bool:
        """Is ``claim`` a heading or title line of the sources copied as an answer ("$1,447 Q3 2023 CCG Operating
        Income [1]", a chart label with another year)? A title-like claim of three words or more with 80% of its words
        in one heading or title line of the sources; a short answer ("Ukraine [1].") is never one."""
        words = G.answer_terms(G.strip_citations(claim))
        body = " ".join(G.strip_citations(claim).split()).strip(" .")
        if len(body.split()) < 3 or not words or not G.is_title_line(body):
            return False
        return any(len(words & G.answer_terms(x.text)) >= 0.8 * len(words)
                   for x in self.sentences if not x.answerable)

    def verdict(self, draft: str, n_sources: int) -> G.Verdict:
        claims = [c for c in G.split_claims(draft) if not self.copies_a_heading(c)]
        if not claims:
            return G.Verdict(True, G.ABSTAIN_TEXT, [], {}, "the answer only repeats a heading of the sources")
        if len(claims) > 1 and all(len(G.answer_terms(c)) <= 1 for c in claims):
            claims = [draft]  # a list of short items is one claim
        rows = [(c, cited_numbers(c, n_sources), self.scored(c)) for c in claims]
        return G.ground(self.question, draft, rows, self.floors.support)

    def closest(self, k: int = 2, floor: float | None = None) -> list[G.SentenceSupport]:
        """The ``k`` sentences closest to the question that pass the context floor (what the hybrid style
        quotes)."""
        floor = self.floors.context if floor is None else floor
        return sorted((x for x in self.about if x.score >= floor and x.sentence.answerable),
                      key=lambda x: -x.score)[:k]


def ask(ctx: AppContext, question: str, opts: AskOptions = AskOptions(), *, history: Sequence[dict] | None = None,
        synthesizer=None) -> Iterator[tuple[str, object]]:
    """Answer ``question`` as ``opts`` says (a follow-up when ``history`` holds the conversation's earlier turns;
    ``synthesizer``: one already loaded instead of ``opts.backend``'s); see the module doc for the events."""
    s = ctx.settings
    backend, retriever, no_retrieval_doc = opts.backend or s.synth_backend, opts.retriever, opts.no_retrieval_doc
    grounded = s.grounding if opts.grounded is None else opts.grounded
    style, rewrite_mode, synth_budget_words = opts.style or s.answer_style, opts.rewrite_mode, opts.synth_budget_words
    history = list(history or [])
    synth, error = (synthesizer, None) if synthesizer is not None else _load_synth(ctx, backend)
    if (retriever or s.retriever) != "bm25" or grounded:
        ctx.embedder  # noqa: B018 - load before timing
    kind = getattr(synth, "name", None) or backend  # what answers: a given synthesizer, else the backend's
    if style == "auto":  # a small model answers too seldom on its own (BENCHMARKS.md, "Answers")
        style = "hybrid" if kind == "offline" else "generated"
    t0 = time.perf_counter()
    question = check_question(question, s.max_question_chars)
    if history and no_retrieval_doc is None:
        yield "status", "reading the question with the conversation"
    q = read_question(question, history if no_retrieval_doc is None else (),
                      _rewriter(ctx, synth, rewrite_mode or s.rewrite))
    query, how = q.query, q.rewrite
    t_rw = time.perf_counter()
    routed, retrieval, extra = None, None, []
    for event in gather(ctx, q, opts):
        if event[0] == "status":
            yield event
        else:
            routed, retrieval, extra = event[1]
    t_found = time.perf_counter()
    digest, reading, routed, widened, retrieval, extra = _decide(ctx, q, opts, kind, grounded, routed, retrieval, extra)
    if widened is not None:
        yield "status", f"not in {', '.join(widened.doc_ids[:3])}: searched all that the question may search"
    t1 = time.perf_counter()
    yield "sources", retrieval
    if synth_budget_words is None and backend == "offline":
        synth_budget_words = s.offline_context_words
    read = synth_sources(retrieval.sources, synth_budget_words)
    # a chat model reads the conversation and the question as asked; a completion model the standalone query
    synth_q = question if (_is_chat(synth) and how != "llm") else query
    grounder = None
    gmeta: dict = {"grounded": grounded, "style": style, "sources_read": len(read)}
    if routed is not None:
        gmeta["routed"] = {"documents": routed.doc_ids, "why": routed.why}
    if widened is not None:
        gmeta["widened"] = {"from": widened.doc_ids, "why": widened.why}
    if reading is not None:
        gmeta.update(context_score=round(reading.confidence, 4), context_floor=round(reading.threshold, 4),
                     reader={"confidence": round(reading.confidence, 4), "threshold": round(reading.threshold, 4),
                             "why": reading.why, **({"check": reading.checked} if reading.checked else {})})
    if grounded and read:
        grounder = Grounder(ctx, query, read)
        gmeta.update(support_floor=grounder.floors.support)
    pieces: list[str] = []
    t_first = None
    if routed is not None and not routed.doc_ids:
        yield "status", routed.why
        pieces.append(UNSAID_DRAFT)
        gmeta["reader_check"] = routed.why
    elif reading is not None and reading.abstained:
        yield "status", f"{len(retrieval.sources)} sources; none answers it surely enough ({reading.why})"
        pieces.append(UNSAID_DRAFT)
        gmeta["reader_check"] = reading.why
        if reading.hedge:  # unsure, not silent: the likeliest lines, marked as such (app.reader.HEDGE_FLOOR)
            gmeta["hedge"] = [{"line": c.line, "source": c.source} for c in reading.hedge]
    elif digest is not None and kind == "extractive":
        yield "status", f"summarising {digest.doc_id} from its most central sentences"
        t_first = time.perf_counter()
        pieces.append(summary_reply(digest, retrieval.sources))
        yield "token", pieces[-1]
    elif kind == "extractive" and reading is not None:
        yield "status", f"{len(retrieval.sources)} sources; quoting the answer"
        for piece in extractive_lines(reading, getattr(synth, "max_sentences", 3)):
            t_first = t_first or time.perf_counter()
            pieces.append(piece)
            yield "token", piece
    elif synth is not None:
        yield "status", f"{len(retrieval.sources)} sources; generating"
        t_first, failed = yield from _generate(synth, synth_q, read, history, backend, pieces)
        error = failed or error
    t2 = time.perf_counter()
    draft = "".join(pieces).strip()
    sources = [Citation.of(x) for x in retrieval.sources]
    if grounder is not None and not error and not (digest is not None and kind == "extractive"):  # quotes as read
        yield "status", "checking the answer against the sources"
        text, cited, abstained = _grounded_reply(grounder, draft, len(read), style, kind, sources, gmeta)
        _support_pages(ctx, [sources[n - 1] for n in cited])
    elif gmeta.get("reader_check"):
        text, cited, abstained = abstain_text(gmeta), [], True
    else:
        text, abstained = draft, bool(draft) and G.is_abstention(draft)
        cited = cited_numbers(text, len(sources))
    cites = [sources[n - 1] for n in cited]
    t3 = time.perf_counter()
    timings = {**{f"retrieval_{k}": v for k, v in retrieval.timings.items()}, "rewrite_s": t_rw - t0,
               "retrieval_s": t_found - t_rw, "reading_s": t1 - t_found, "generation_s": t2 - t1,
               "time_to_first_token_s": (t_first - t0) if t_first else None, "grounding_s": t3 - t2,
               "total_s": t3 - t0}
    yield "done", Answer(question, text, backend, retrieval.retriever, cites, sources, retrieval.weights, timings,
                         error, retrieval.router, query, how, abstained, draft, gmeta)


def _decide(ctx: AppContext, q, opts: AskOptions, kind: str, grounded: bool, routed, retrieval, extra):
    """What answers: a summary of the document (:mod:`app.summary`) for a question about it as a whole, else the
    reader's decision when the extractive backend answers or grounding asks for it (:func:`_read`). ``(digest or
    None, reading or None, route, the route given way or None, retrieval, looked-up rows)``."""
    if not retrieval.sources or opts.no_retrieval_doc is not None:
        return None, None, routed, None, retrieval, extra
    if q.kind == "summary":  # the document as a whole
        digest = summarize(ctx, retrieval, q.text)
        if digest is not None:
            return digest, None, routed, None, digest.retrieval, extra
    if kind == "extractive" or (grounded and ctx.settings.reader_check):
        return None, *_read(ctx, q, opts, routed, retrieval, extra)
    return None, None, routed, None, retrieval, extra


def _read(ctx: AppContext, q, opts: AskOptions, routed, retrieval, extra):
    """The reader's decision on what was gathered, the route given way when it leaves the reader unsure
    (:func:`_wider`): ``(reading, route, the route given way or None, retrieval, looked-up rows)``."""
    floor = G.reader_floor(ctx.settings.embedder, opts.context_floor, ctx.settings.context_floor)
    reading, widened = reading_of(ctx, q, retrieval.sources, extra, floor), None
    if reading is not None and reading.abstained and routed is not None and routed.doc_ids:
        wide = _wider(ctx, q, opts, floor)
        if wide is not None:
            widened, routed = routed, None
            retrieval, extra, reading = wide
    if reading is not None and not reading.abstained:
        reading = quoted_rows(reading, retrieval.sources, extra)
    return reading, routed, widened, retrieval, extra


def _wider(ctx: AppContext, q, opts: AskOptions, floor: float | None):
    """A route is the product's guess (a name, a year, a follow-up's inherited name): when the documents it chose
    leave the reader unsure, the search the user asked for is read too. ``(retrieval, looked-up rows, reading)`` of
    that search when the reader is sure there, else None (the routed reply stays)."""
    wide, extra = None, []
    for event in gather(ctx, q, opts, routing=False):
        if event[0] == "gathered":
            _, wide, extra = event[1]
    if wide is None or not wide.sources:
        return None
    reading = reading_of(ctx, q, wide.sources, extra, floor)
    return (wide, extra, reading) if reading is not None and not reading.abstained else None


def _generate(synth, question: str, read: list, history: list, backend: str, pieces: list[str]):
    """Stream the synthesizer's answer as ``("token", piece)`` events, each piece also kept in ``pieces``; returns
    (the time of the first piece or None, the error that stopped it or None)."""
    t_first = None
    try:
        for piece in synth.stream(question, read, history=history):
            if t_first is None:
                t_first = time.perf_counter()
            pieces.append(piece)
            yield "token", piece
    except SynthesisError as e:
        return t_first, str(e)
    except Exception as e:  # a model that cannot load, or crashes: keep the sources, report the cause
        from core.models import ModelNotAvailable

        if not isinstance(e, ModelNotAvailable):
            log.exception("synthesizer %s failed", backend)
        return t_first, f"{e.__class__.__name__}: {e}"
    return t_first, None


UNSAID_DRAFT = "I cannot find an answer in the documents."


def _load_synth(ctx: AppContext, backend: str):
    """``(synthesizer, error)``: models are loaded before the clock starts, so timings measure answering, not
    loading; a model that cannot load gives its error (the sources are still retrieved and returned)."""
    try:
        return make_synthesizer(backend, ctx), None
    except ValueError:
        raise
    except Exception as e:
        return None, f"{e.__class__.__name__}: {e}"


HEDGE_TEXT = "The documents do not say it surely. The closest they come, which may not answer it:"


def abstain_text(meta: dict) -> str:
    """An abstention's reply: the plain one, or, when the reader was unsure rather than empty-handed
    (``meta["hedge"]``), the likeliest lines quoted with their passage numbers after :data:`HEDGE_TEXT`.

    >>> abstain_text({"hedge": [{"line": "Fees rose 5%.", "source": 2}]})
    'The documents do not say it surely. The closest they come, which may not answer it: “Fees rose 5%.” [2]'
    """
    hedge = meta.get("hedge") or []
    if not hedge:
        return G.ABSTAIN_TEXT
    return HEDGE_TEXT + " " + " · ".join(f"“{h['line']}” [{h['source']}]" for h in hedge)


def _grounded_reply(g: Grounder, draft: str, n_read: int, style: str, backend: str,
                    sources: list[Citation], meta: dict) -> tuple[str, list[int], bool]:
    """The reply text, the cited source numbers, and whether it abstains; fills each cited source's support."""
    if meta.get("reader_check"):  # the passages never say what is asked surely: no claim in its place
        meta["reason"] = f"the reader: {meta['reader_check']}"
        return abstain_text(meta), [], True
    if backend == "extractive":  # its sentences are their own support
        v = _extractive_verdict(g, draft, n_read)
    else:
        v = g.verdict(draft, n_read)
    meta.update(reason=v.reason, dropped_claims=v.dropped)
    if style == "hybrid" and backend != "extractive":
        quoted = [x for x in g.closest(2) if not any(x.sentence == y.sentence for ys in v.support.values() for y in ys)]
        head = "" if v.abstained else v.text
        if not quoted and v.abstained:
            return G.ABSTAIN_TEXT, [], True
        support = {n: list(xs) for n, xs in v.support.items()}
        for x in quoted:
            support.setdefault(x.sentence.source, []).append(x)
        body = " ".join(f"“{x.sentence.shown}” [{x.sentence.source}]" for x in quoted)
        text = (head + ("\n\n" if head and body else "") + body).strip()
        v = G.Verdict(False, text, cited_numbers(text, n_read), support)
    if v.abstained:
        return G.ABSTAIN_TEXT, [], True
    for n, xs in v.support.items():
        sources[n - 1].support = [{"start": x.sentence.start, "end": x.sentence.end, "text": x.sentence.text,
                                   "score": round(x.score, 4)} for x in xs]
    meta["support_score"] = max((x.score for xs in v.support.values() for x in xs), default=None)
    return v.text, v.cited, False


def _support_pages(ctx: AppContext, cites: list[Citation]) -> None:
    """The page (slide, sheet, row) and heading path of each supporting sentence of a citation, so a citation
    says where its quote is, not only where its passage starts (:attr:`Citation.label`)."""
    layouts: dict[str, Layout] = {}
    for c in cites:
        if not c.support or not c.doc_hash:
            continue
        if c.doc_hash not in layouts:
            try:
                layouts[c.doc_hash] = Layout.from_json(ctx.store.layout(c.doc_hash))
            except (OSError, ValueError):
                layouts[c.doc_hash] = Layout()
        lay = layouts[c.doc_hash]
        for x in c.support:
            span = page_span(lay, x["start"], x["end"])
            if span:
                x["pages"] = list(span)
            if lay.headings:
                x["headings"] = heading_path(lay, x["start"])


_QUOTE_LINE = re.compile(r"^(?:(?P<kind>Supporting|Also): )?“?(?P<text>.+?)”? \[(?P<n>\d+)\]$")


def _extractive_verdict(g: Grounder, draft: str, n_read: int) -> G.Verdict:
    """The extractive answer (:class:`app.synth.extractive.ExtractiveSynthesizer`): its answer line, then its
    supporting quote and further quotes, each kept when it is a sentence of its source (a quote may be part of one:
    a statement's row printed as a line; or two sentences that follow each other: the reader's window candidates).
    The answer line is kept when it is a sentence itself or its supporting quote is (a table cell, or a change
    computed from one row, is composed from that quote)."""
    by_text: dict[tuple[int, str], list] = {(x.source, " ".join(x.shown.split())): [x] for x in g.sentences}
    for x, y in zip(g.sentences, g.sentences[1:]):
        if x.source == y.source:
            by_text.setdefault((x.source, " ".join(f"{x.shown} {y.shown}".split())), [x, y])

    def find(n: int, text: str) -> list:
        t = " ".join(text.split())
        xs = by_text.get((n, t))
        if xs is None and len(t) >= 12:
            xs = next((y for (m, shown), y in by_text.items() if m == n and len(y) == 1 and t in shown), None)
        return xs or []

    support: dict[int, list[G.SentenceSupport]] = {}
    lines = [ln.strip() for ln in draft.split("\n") if ln.strip()]
    kept: list[str] = []
    head_ok = None
    for i, ln in enumerate(lines):
        m = _QUOTE_LINE.match(ln)
        if not m:
            continue
        n, xs = int(m.group("n")), find(int(m.group("n")), m.group("text"))
        if i == 0 and not m.group("kind"):
            head_ok = bool(xs)
            support.setdefault(n, []).extend(G.SentenceSupport(x, 1.0, 1.0, 1.0, 1.0) for x in xs)
            kept.append(ln)
            continue
        if not xs:
            continue
        if m.group("kind") == "Supporting" and head_ok is False and int(_CITE_RE.findall(lines[0])[-1]) == n:
            head_ok = True
        support.setdefault(n, []).extend(G.SentenceSupport(x, 1.0, 1.0, 1.0, 1.0) for x in xs)
        kept.append(ln)
    if not support or head_ok is False:
        return G.Verdict(True, G.ABSTAIN_TEXT, [], {}, "nothing to quote")
    text = "\n\n".join(kept)
    return G.Verdict(False, text, cited_numbers(text, n_read), support)


def answer(ctx: AppContext, question: str, opts: AskOptions = AskOptions(), *, history: Sequence[dict] | None = None,
           synthesizer=None, **options) -> Answer:
    """Run :func:`ask` to the end and return the Answer; ``options``: fields of :class:`AskOptions` to set on
    ``opts`` (a one-off call's shorthand: ``answer(ctx, q, backend="extractive")``)."""
    opts = dataclasses.replace(opts, **options) if options else opts
    for kind, value in ask(ctx, question, opts, history=history, synthesizer=synthesizer):
        if kind == "done":
            return value
    raise AssertionError("ask() ended without an answer")  # pragma: no cover

