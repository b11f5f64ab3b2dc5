"""Question answering: retrieve, then stream an answer from a synthesizer, with citations and timings.

``ask()`` yields events so callers can stream: ``("sources", Retrieval)`` first, then ``("token", str)`` pieces,
then ``("done", Answer)``. If the LLM fails, the answer carries the error and the retrieved sources anyway.
"""
from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field

from app.context import AppContext
from app.synth import SynthesisError, make_synthesizer
from ingest.layout import place_label
from retrieval.search import Retrieval, Source, check_question, no_retrieval_context, retrieve

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

    @classmethod
    def of(cls, s: Source) -> "Citation":
        return cls(s.rank, s.doc_id, s.start, s.end, s.text, s.matched_level, s.matched_start, s.matched_end,
                   s.matched_text, s.score, dict(s.level_scores), dict(s.bm25_level_scores), s.pages,
                   list(s.headings), s.matched_pages, s.doc_hash)

    @property
    def label(self) -> str:
        """``p. 4–5 · Section › Subsection`` ("" when the document has neither pages nor headings)."""
        return place_label(self.pages, self.headings)


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


def ask(ctx: AppContext, question: str, *, backend: str | None = None, k: int | None = None,
        budget_words: int | None = None, retriever: str | None = None, weights=None, synthesizer=None,
        no_retrieval_doc: str | None = None, doc_ids=None) -> Iterator[tuple[str, object]]:
    """Retrieve (among ``doc_ids`` if given), then stream the answer; see the module docstring for the events."""
    s = ctx.settings
    backend = backend or s.synth_backend
    synth, error = synthesizer, None
    if synth is None:  # load models before the clock starts, so timings measure answering, not loading
        try:
            synth = make_synthesizer(backend, ctx)
        except ValueError:
            raise
        except Exception as e:  # a model that cannot load: the sources are still retrieved and returned
            error = f"{e.__class__.__name__}: {e}"
    if (retriever or s.retriever) != "bm25":
        ctx.embedder  # noqa: B018 - load before timing
    t0 = time.perf_counter()
    if no_retrieval_doc is not None:
        question = check_question(question, s.max_question_chars)
        retrieval = _no_retrieval(ctx, question, no_retrieval_doc)
    else:
        retrieval = retrieve(ctx, question, k=k, budget_words=budget_words, weights=weights, retriever=retriever,
                             doc_ids=doc_ids)
    t1 = time.perf_counter()
    yield "sources", retrieval
    pieces: list[str] = []
    t_first = None
    try:
        for piece in (synth.stream(retrieval.question, retrieval.sources) if synth is not None else ()):
            if t_first is None:
                t_first = time.perf_counter()
            pieces.append(piece)
            yield "token", piece
    except SynthesisError as e:
        error = str(e)
    except Exception as e:  # a model that cannot load, or crashes: keep the sources, report the cause
        from app.models import ModelNotAvailable

        if not isinstance(e, ModelNotAvailable):
            log.exception("synthesizer %s failed", backend)
        error = f"{e.__class__.__name__}: {e}"
    t2 = time.perf_counter()
    text = "".join(pieces).strip()
    sources = [Citation.of(x) for x in retrieval.sources]
    cites = [sources[n - 1] for n in cited_numbers(text, len(sources))]
    timings = {**{f"retrieval_{k}": v for k, v in retrieval.timings.items()}, "retrieval_s": t1 - t0,
               "generation_s": t2 - t1, "time_to_first_token_s": (t_first - t1) if t_first else None,
               "total_s": t2 - t0}
    yield "done", Answer(retrieval.question, text, backend, retrieval.retriever, cites, sources, retrieval.weights,
                         timings, error, retrieval.router)


def answer(ctx: AppContext, question: str, **kw) -> Answer:
    """Run :func:`ask` to the end and return the Answer."""
    for kind, value in ask(ctx, question, **kw):
        if kind == "done":
            return value
    raise AssertionError("ask() ended without an answer")  # pragma: no cover


def _no_retrieval(ctx: AppContext, question: str, doc_ref: str) -> Retrieval:
    """The paper's no-retrieval baseline: the whole document, truncated to 3500 words, as the only source."""
    cat = ctx.catalog
    doc_id = cat.find_document(doc_ref)
    if doc_id is None:
        raise ValueError(f"no document matches {doc_ref!r}; see `mgrag docs`")
    row = next(r for r in cat.documents(None) if r["doc_id"] == doc_id)
    text = no_retrieval_context(ctx.store.text(row["hash"]), ctx.settings.no_retrieval_words)
    src = Source(1, doc_id, "", 0, len(text), text, 1.0, -1, 0, len(text), text)
    return Retrieval(question, [src], [], "none", {})
