"""What an answer reads: the documents the question names, the retrieved passages, the table rows looked up, and the
reader's decision on them (:mod:`app.reader`) — one path for :func:`app.answer.ask` and for the scorer's fitting
(``bench/fit_reader.py``), so that the scorer is fitted on exactly what the product reads.
"""
from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from app.context import AppContext
from app.lookup import rows_for
from app.question import Question
from app.routing import route_for
from app.synth import make_synthesizer
from ingest.readers.layout import Layout, heading_path, page_span
from retrieval.search import Retrieval, Source, no_retrieval_context, retrieve

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): app.checker, core.models

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AskOptions:
    """How one question is answered; a field left None takes its setting. Retrieval: ``k``, ``budget_words``,
    ``retriever``, ``weights`` (level weights instead of the router's), ``doc_ids`` (search only these) and
    ``visible_to`` (the reader whose documents and the shared library are searched; None: every document), or
    ``no_retrieval_doc`` (the whole of one document instead of a search). Answering: ``backend``; ``grounded``,
    ``style``, ``rewrite_mode`` and ``synth_budget_words`` override the settings ``grounding``, ``answer_style``,
    ``rewrite`` and the offline model's ``offline_context_words``; ``context_floor`` the floor below which nothing
    is generated (the benchmark lowers it to calibrate)."""

    backend: str | None = None
    k: int | None = None
    budget_words: int | None = None
    retriever: str | None = None
    weights: Sequence[float] | None = None
    doc_ids: Sequence[str] | None = None
    visible_to: str | None = None
    no_retrieval_doc: str | None = None
    grounded: bool | None = None
    style: str | None = None
    rewrite_mode: str | None = None
    synth_budget_words: int | None = None
    context_floor: float | None = None


def gather(ctx: AppContext, q: Question, opts: AskOptions = AskOptions(), *, routing: bool = True
           ) -> Iterator[tuple[str, object]]:
    """What the reader reads for ``q``: the route (which documents it names; none with ``routing`` False), the
    retrieved passages and the looked-up table rows. Yields ``("status", str)`` events, then ``("gathered", (route or
    None, Retrieval, [(cell, source)]))``. :func:`ask` and the scorer's fitting (``bench/fit_reader.py``) share it."""
    s = ctx.settings
    doc_ids, retriever = opts.doc_ids, opts.retriever
    routed = route(ctx, q, doc_ids, opts.visible_to) if opts.no_retrieval_doc is None and routing else None
    if routed is not None and routed.doc_ids:
        doc_ids = routed.doc_ids
        yield "status", f"searching {', '.join(routed.doc_ids[:3])}{' …' if len(routed.doc_ids) > 3 else ''}"
    yield "status", "retrieving"
    if routed is not None and not routed.doc_ids:  # it names what only documents outside the search are about
        retrieval = Retrieval(q.query, [], [], retriever or s.retriever, {})
    elif opts.no_retrieval_doc is not None:
        retrieval = no_retrieval(ctx, q.text, opts.no_retrieval_doc)
    else:
        retrieval = retrieve(ctx, q.query, k=opts.k, budget_words=opts.budget_words, weights=opts.weights,
                             retriever=retriever, doc_ids=doc_ids, visible_to=opts.visible_to)
    extra = looked_up(ctx, q, retrieval.sources) if s.table_lookup and retrieval.sources and \
        opts.no_retrieval_doc is None else []
    yield "gathered", (routed, retrieval, extra)


def route(ctx: AppContext, q: Question, doc_ids, visible_to):
    """The documents the question names (:mod:`app.routing`), when it names some and routing is on; an empty route
    when it names what only documents outside the search are about; else None."""
    if not ctx.settings.route_by_name:
        return None

    routed = route_for(ctx, q, doc_ids, visible_to)
    return routed if routed.doc_ids is not None else None


def looked_up(ctx: AppContext, q: Question, sources: list) -> list:
    """(cell, source) pairs of the statement rows a figure question looks up in the tables of the retrieved
    documents (:mod:`app.lookup`), each source with its page and heading path."""
    try:
        extra = rows_for(q, sources, ctx.row_index)
    except Exception:  # the lookup only adds candidates: a failure in it must not cost the answer
        log.exception("looking up a statement row failed")
        return []
    done: set[int] = set()
    for _, x in extra:
        if x.rank in done:
            continue
        done.add(x.rank)
        try:
            lay = Layout.from_json(ctx.store.layout(x.doc_hash))
        except (OSError, ValueError):
            continue
        span = page_span(lay, x.start, x.end)
        x.pages = list(span) if span else None
        x.matched_pages = list(page_span(lay, x.matched_start, x.matched_end) or ()) or None
        x.headings = heading_path(lay, x.start) if lay.headings else []
    return extra


def checker(ctx: AppContext):
    """The LM check the settings ask for (:func:`app.checker.checker_for`), started once per context; None when off
    or when it cannot run here (said once in the log)."""
    if ctx.settings.lm_check == "off":
        return None
    from app.checker import checker_for
    from core.models import check_model_path

    return checker_for(ctx.settings, check_model_path(ctx.settings.cache_dir), ctx.cache("lm_check"))


def warm_checker(ctx: AppContext) -> threading.Thread | None:
    """Start the LM check's server in the background (``mgrag serve``), so that the first question does not wait
    for the model to load; None when the check is off."""
    if ctx.settings.lm_check == "off":
        return None
    t = threading.Thread(target=checker, args=(ctx,), name="lm-check-warm", daemon=True)
    t.start()
    return t


def reading_of(ctx: AppContext, q: Question, sources: list, extra: list, threshold: float | None = None):
    """The reader's answer and confidence (:mod:`app.reader`), the same for every backend: below its threshold
    (``threshold``, when given, instead of the fitted one; -1: never) nothing is generated. None if it fails."""
    try:
        reading = make_synthesizer("extractive", ctx).read(q, sources, extra, checker(ctx))
    except Exception:  # the reader only decides whether to answer: a failure in it must not cost the sources
        log.exception("the reader failed")
        return None
    if threshold is not None:
        reading.threshold = threshold
        if reading.answer is None and reading.best is None and reading.ranked and reading.confidence >= threshold:
            best = reading.ranked[0]
            reading.best, reading.support, reading.answer = best, [best], best.line
        elif reading.answer is not None and reading.confidence < threshold:
            reading.answer = None
    return reading


def no_retrieval(ctx: AppContext, question: str, doc_ref: str) -> Retrieval:
    """The paper's no-retrieval baseline: the whole document, truncated to 3500 words, as the only source."""
    cat = ctx.catalog
    doc_id = cat.find_document(doc_ref)
    if doc_id is None:
        raise ValueError(f"no document matches {doc_ref!r}; see `mgrag docs`")
    row = next(r for r in cat.documents(None) if r["doc_id"] == doc_id)
    text = no_retrieval_context(ctx.store.text(row["hash"]), ctx.settings.no_retrieval_words)
    src = Source(1, doc_id, "", 0, len(text), text, 1.0, -1, 0, len(text), text)
    return Retrieval(question, [src], [], "none", {})


def quoted_rows(reading, sources: list, extra: Sequence) -> object:
    """The looked-up table rows the reply quotes (its answer, support and further quotes) appended to ``sources``
    and numbered after them in the order quoted, and ``reading`` with its candidates renumbered to match: a row is
    numbered after the retrieved passages when it is looked up, but only the quoted ones become sources, so the
    third row looked up may be the first one cited (a follow-up that cited row 2 of 3 looked up raised IndexError)."""
    by_rank = {src.rank: src for _, src in extra}
    renumber: dict[int, int] = {}
    for c in [reading.best, *reading.support, *reading.more]:
        if c is not None and c.looked_up and c.source in by_rank and c.source not in renumber:
            renumber[c.source] = len(sources) + 1
            src = by_rank[c.source]
            try:
                src = dataclasses.replace(src, rank=renumber[c.source])
            except TypeError:  # not a dataclass (a test's stand-in)
                src.rank = renumber[c.source]
            sources.append(src)
    if not renumber:
        return reading

    def moved(c):
        return dataclasses.replace(c, source=renumber[c.source]) if c is not None and c.source in renumber else c

    return dataclasses.replace(reading, best=moved(reading.best), support=[moved(c) for c in reading.support],
                               more=[moved(c) for c in reading.more])
