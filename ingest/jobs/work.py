"""What one ingestion job computes, apart from the catalog and the store: read a file into text, cut a text into chunks
by a :class:`Plan`, embed them.

The process that holds the data dir runs these for its own queue (:class:`ingest.jobs.queue.Runner`), and ``mgrag
worker`` processes run the very same functions for a Redis queue (:mod:`ingest.jobs.remote`); either way the result is
a :class:`Cut` (chunk spans and vectors) that only the data dir's holder writes. So both paths give the same chunk
ids and texts for the same document and settings, and the catalog has one writer.

Progress goes through a :class:`Reporter`: each stage's share of the expected time comes from rates measured on
earlier jobs (LM words/s, embedded words/s, PDF pages/s), so the estimate is honest from the first report, and a
report is also where a cancellation or a stopping runner interrupts the work (:class:`Stopped`).
"""
from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from ingest.chunkers import CHUNKERS, NEEDS_LM, NEEDS_MODEL, build_chunker, chunker_class, from_description
from ingest.chunkers.logits import LGConfig
from ingest.readers import loaders
from ingest.readers.base import READER_VERSIONS, reader_version
from ingest.readers.layout import Layout, chunk_meta
from ingest.readers.loaders import IngestError, Limits, LoadedDoc
from ingest.text.chunk_context import chunk_contexts, chunker_params, indexed_text, uses_context
from ingest.text.sentences import count_words
from ingest.types import Chunk

log = logging.getLogger(__name__)

# Chunkers slow enough to deserve a first pass: those that need a model, the LM-guided ones and lumber (an LLM call
# per window).
REFINED = NEEDS_MODEL

# Rates assumed before any job has been measured on this machine (2 CPU cores, Gemma-3-270M, MiniLM; BENCHMARKS.md):
# embed_words_s is a document's words per second over its three MG levels (10-Qs of 13k and 28k words: 1,070 and
# 1,360 on a quiet machine, bench/results/eta_accuracy.json; 700 made a first upload's time left twice the truth).
DEFAULT_RATES = {"lm_words_s": 250.0, "embed_words_s": 1100.0, "pdf_pages_s": 8.0}


class QueueUnavailable(Exception):
    """The scale-out queue (Redis) does not answer: not the file's fault, so no attempt of the job is spent; the
    runner gives the job back and tries again later."""


class Stopped(Exception):
    """Raised from a progress report: the job was cancelled (``why == "cancelled"``) or its runner is stopping."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


def needs_refinement(chunker: str) -> bool:
    return chunker in REFINED


@dataclass(frozen=True)
class Plan:
    """How one document is cut: the chunker and θ of the index generation (or the document's own), the recorded
    chunker parameters, the generation's level count and embedder. ``first_pass``: cut with MG at the same θ
    instead (the quick phase), keeping only the generation's levels."""

    chunker: str
    theta: int
    params: dict
    n_levels: int
    embedder: str
    dim: int
    first_pass: bool = False
    context: bool = False  # embed each chunk's context line before its text (ingest/text/chunk_context.py)
    # each θ/4 child's vector pooled from its θ/2 child's pass (embed_chunks; False in plans written before it)
    late_quarters: bool = False

    @property
    def cut_by(self) -> str:
        return "mg" if self.first_pass else self.chunker

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "Plan":
        return cls(**d)


@dataclass
class Cut:
    """The chunks of one document as spans ``(start, end, level, parent_start, parent_end)`` and their vectors,
    with what they cost (for the measured rates)."""

    spans: list[tuple[int, int, int, int, int]]
    vectors: np.ndarray
    timings: dict = field(default_factory=dict)

    def chunks(self, text: str, doc_id: str, h: str, layout: dict | None, first_pass: bool,
               context: bool = False) -> list[Chunk]:
        """The spans as :class:`Chunk` s of ``doc_id`` (version ``h``) with their payload fields: pages, heading path,
        for a first-pass cut ``first_pass`` and, for an index with contextual text, the ``context`` line that was
        embedded before the chunk's text."""
        lay = Layout.from_json(layout)
        lines = chunk_contexts(text, doc_id, layout, [s for s, *_ in self.spans]) if context else None
        out = []
        for i, (s, e, lv, ps, pe) in enumerate(self.spans):
            meta = chunk_meta(lay, s, e) if lay else {}
            if first_pass:
                meta["first_pass"] = True
            if lines and lines[i]:
                meta["context"] = lines[i]
            out.append(Chunk(text[s:e], s, e, lv, ps, pe, doc_id, h, meta))
        return out

    def to_wire(self) -> dict:
        return {"spans": [list(x) for x in self.spans], "vectors": np.asarray(self.vectors, dtype=np.float32).tobytes(),
                "dim": int(self.vectors.shape[1]) if self.vectors.ndim == 2 else 0, "timings": self.timings}

    @classmethod
    def from_wire(cls, d: dict) -> "Cut":
        v = np.frombuffer(d["vectors"], dtype=np.float32)
        return cls([tuple(x) for x in d["spans"]], v.reshape(-1, d["dim"]) if d["dim"] else v.reshape(0, 0),
                   d.get("timings") or {})


# -- progress -------------------------------------------------------------------------------------------------------
class Reporter:
    """Turns stage progress into ``(label, share of the job done, seconds left)`` for ``sink``, at most every
    ``interval_s`` within a stage; ``sink`` returns True when the job is to stop (then :class:`Stopped`).

    Stages are declared with :meth:`begin` with their expected seconds (from the measured rates). The estimate of the
    running stage follows its observed pace once it is past 3% and 2 s; the stages after it are scaled by how far
    that pace is from the expected one, so a loaded machine is reflected at once in the whole estimate.

    >>> seen = []
    >>> r = Reporter(lambda *a: seen.append(a) or False, interval_s=0)
    >>> r.begin([("LM pass", 90.0), ("embedding", 10.0)])
    >>> r.update("LM pass", 0.5); seen[-1][:2]
    ('LM pass', 0.45)
    """

    def __init__(self, sink: Callable[[str, float, float | None], bool] | None = None,
                 rates: dict | None = None, interval_s: float = 0.5, clock: Callable[[], float] = time.monotonic):
        self.sink, self.interval_s, self.clock = sink, interval_s, clock
        self.rates = {**DEFAULT_RATES, **(rates or {})}
        self.stages: list[tuple[str, float]] = []
        self.done_share = 0.0
        self._stage, self._stage_t0, self._last, self._shown = "", 0.0, -1e9, 0.0

    def begin(self, stages: list[tuple[str, float]]) -> None:
        """Declare the stages still to run and their expected seconds (replaces those declared before)."""
        self.stages = [(n, max(float(s), 1e-3)) for n, s in stages]
        self.done_share = 0.0
        self._stage = ""

    def update(self, stage: str, fraction: float, label: str | None = None) -> None:
        now = self.clock()
        if stage != self._stage:
            self._stage, self._stage_t0, self._last = stage, now, -1e9
        f = min(max(fraction, 0.0), 1.0)
        if now - self._last < self.interval_s and 0 < f < 1:
            return
        self._last = now
        share, eta = self.estimate(stage, f, now - self._stage_t0)
        self._shown = max(self._shown, share)  # never backwards on screen
        if self.sink is not None and self.sink(label or stage, self._shown, eta):
            raise Stopped("cancelled")

    def estimate(self, stage: str, f: float, elapsed: float) -> tuple[float, float | None]:
        names = [n for n, _ in self.stages]
        if stage not in names:
            return self._shown, None
        i = names.index(stage)
        total = sum(s for _, s in self.stages)
        expected = self.stages[i][1]
        share = (sum(s for _, s in self.stages[:i]) + expected * f) / total
        later = sum(s for _, s in self.stages[i + 1:])
        if f >= 0.03 and elapsed >= 2:
            pace = elapsed / f  # the stage's whole time at the pace seen so far
            remaining = pace * (1 - f) + later * min(max(pace / expected, 0.25), 4.0)
        else:
            remaining = expected * (1 - f) + later
        return share, remaining


# -- the work -------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _SettingsScorer:
    """What an LM chunker's ``describe()`` reads of its scorer, from the settings: enough to record a new index
    generation's parameters without loading the LM (which only the refinement needs)."""

    prompt: str
    boundary_tokens: tuple


def chunker_for(models, chunker: str, theta: int, params: dict | None = None, on_window=None, on_fraction=None,
                describe_only: bool = False):
    """A chunker by name at ``theta``. With ``params`` (the ``describe()`` an index generation or a document recorded,
    as the catalog keeps it) the chunker is rebuilt from that description (:func:`ingest.chunkers.from_description`,
    θ set to ``theta``), so that a document is cut with the rule its index was built with, whatever the settings say
    now; without them, the settings' chunker (an LM chunker's rule from the ``lg_*`` settings). ``models`` gives the
    settings, the boundary LM (``scorer``), the embedder and the lumber chunker's LLM. ``describe_only``: a chunker
    for its ``describe()`` alone (the LM is not loaded for it unless it already is). ``on_window``/``on_fraction``:
    the LM pass's progress, for the chunkers that report it."""
    s = models.settings
    needs = CHUNKERS[chunker].needs if chunker in CHUNKERS else frozenset()
    scorer = None
    if "lm" in needs:
        scorer = (_SettingsScorer(s.lg_prompt, tuple(s.lg_boundary_tokens))
                  if describe_only and not models.loaded("scorer") else models.scorer)
    embedder = models.embedder if "embedder" in needs else None
    llm = models.chunking_llm if "llm" in needs else None
    recorded = chunker_params(params)
    if recorded and recorded.get("chunker", chunker) == chunker:
        desc = {**recorded, "chunker": chunker, chunker_class(chunker).size_field: theta}
        ch = from_description(desc, scorer=scorer, embedder=embedder, llm=llm)
    else:
        cfg = LGConfig.from_settings(s, theta) if "lm" in needs else None
        ch = build_chunker(chunker, theta, scorer=scorer, embedder=embedder, lg_config=cfg, llm=llm)
    hooks = {k: v for k, v in (("on_window", on_window), ("on_fraction", on_fraction))
             if v is not None and dataclasses.is_dataclass(ch) and k in {f.name for f in dataclasses.fields(ch)}}
    return dataclasses.replace(ch, **hooks) if hooks else ch


def plan_for(models, gen, own: dict | None, first_pass: bool) -> Plan:
    """The plan of a document in generation ``gen``: its own chunker and θ if it has them, else the generation's."""
    context, late = uses_context(gen.params), models.settings.late_quarters
    if own:
        return Plan(own["chunker"], own["theta"], chunker_params(own.get("params")), gen.n_levels, gen.embedder,
                    gen.dim, first_pass, context, late)
    return Plan(gen.chunker, gen.theta, chunker_params(gen.params), gen.n_levels, gen.embedder, gen.dim, first_pass,
                context, late)


def check_models(models, plan: Plan) -> None:
    """Refuse to cut for an index whose embedder (or LM rule) this process does not have: its vectors would not be
    comparable (a worker started with other settings than the data dir's holder)."""
    emb = models.embedder
    if getattr(emb, "dim", plan.dim) != plan.dim or models.settings.embedder != plan.embedder:
        raise IngestError("worker", f"this process embeds with {models.settings.embedder} ({emb.dim} dims), the "
                                    f"index with {plan.embedder} ({plan.dim} dims); start the worker with "
                                    f"MGRAG_EMBEDDER={plan.embedder}")
    if plan.first_pass or plan.chunker not in NEEDS_LM:
        return
    sc = models.scorer
    want_prompt, want_tokens = plan.params.get("prompt"), plan.params.get("boundary_tokens")
    if want_prompt is not None and getattr(sc, "prompt", want_prompt) != want_prompt:
        raise IngestError("worker", "this process's LG prompt differs from the index's; start the worker with the "
                                    "data dir's settings (MGRAG_LG_PROMPT)")
    if want_tokens is not None and list(getattr(sc, "boundary_tokens", want_tokens)) != list(want_tokens):
        raise IngestError("worker", f"this process's LG boundary tokens differ from the index's {want_tokens}; start "
                                    "the worker with the data dir's settings (MGRAG_LG_BOUNDARY_TOKENS)")


def embed_texts(embedder, texts: list[str], on_fraction: Callable[[float], None] | None = None) -> np.ndarray:
    """Passage vectors, with progress as they are embedded (the embedder's own progress when it has it, else in
    about twenty blocks)."""
    with_progress = getattr(embedder, "embed_passages_with_progress", None)
    if with_progress is not None and on_fraction is not None:
        if not texts:
            return np.zeros((0, embedder.dim), dtype=np.float32)
        return np.asarray(with_progress(texts, on_fraction), dtype=np.float32)
    block = max(64, -(-len(texts) // 20))
    parts = []
    for i in range(0, len(texts), block):
        if on_fraction is not None:
            on_fraction(i / max(len(texts), 1))
        parts.append(np.asarray(embedder.embed_passages(texts[i:i + block]), dtype=np.float32))
    if on_fraction is not None:
        on_fraction(1.0)
    return np.concatenate(parts) if parts else np.zeros((0, embedder.dim), dtype=np.float32)


WORDS_PER_PAGE = 400  # a guess for a PDF's words before it is read (filings and reports run 300-700)


def cut_stages(rates: dict, words: float, lm: bool, levels: int = 3) -> list[tuple[str, float]]:
    """The stages of cutting ``words`` words, with their expected seconds at ``rates``."""
    first = ("LM pass", words / rates["lm_words_s"]) if lm else ("chunking", 0.5 + words / 50_000)
    return [first, ("embedding", words * min(levels, 3) / 3 / rates["embed_words_s"]),
            ("writing", 0.5 + words / 100_000)]


PDF_BYTES_PER_PAGE = 20_000  # a guess for a PDF's pages from its size when its page tree does not state them


def first_pass_stages(rates: dict, name: str, size: int, pages: int | None = None,
                      range_pages: int | None = None) -> list[tuple[str, float]]:
    """The stages of a first pass over a file of ``size`` bytes (a PDF of ``pages`` pages, when its page tree
    says: :func:`ingest.readers.loaders.pdf_pages_hint`), guessed from its size until it is read. ``range_pages``:
    the first pass of a PDF reads only its first range of that many pages (a job of two phases; the rest is read in
    the refinement lane), so only those are counted."""
    if name.lower().endswith(".pdf"):
        pages = pages or max(1.0, size / PDF_BYTES_PER_PAGE)
        if range_pages:
            pages = min(pages, range_pages)
        return [("reading", pages / rates["pdf_pages_s"]), *cut_stages(rates, pages * WORDS_PER_PAGE, lm=False)]
    return [("reading", 0.3), *cut_stages(rates, size / 6, lm=False)]


def expected_s(rates: dict | None, lane: str, name: str, size: int | None, words: int | None = None,
               pages: int | None = None, range_pages: int | None = None) -> float:
    """The seconds a job of ``lane`` is expected to take: a first pass from the file's name and size (its words once
    read), a refinement from its words (the LM pass). What the queue schedules by (shortest first, so a small file
    never waits behind a long one) and what a queued row's start is estimated from (there with ``range_pages``: a
    first pass that reads only a PDF's first range, :func:`first_pass_stages`)."""
    r = {**DEFAULT_RATES, **(rates or {})}
    if lane == "refine":
        return sum(s for _, s in cut_stages(r, words or (size or 0) / 6, lm=True))
    if words and not name.lower().endswith(".pdf"):
        return 0.3 + sum(s for _, s in cut_stages(r, words, lm=False))
    return sum(s for _, s in first_pass_stages(r, name, size or 0, pages, range_pages))


def extract(name: str, data: bytes, limits: Limits, rep: Reporter | None = None) -> LoadedDoc:
    """The text of a file (PDFs range by range, reporting pages read)."""
    rep = rep or Reporter()

    known = []

    def pages(done: int, n: int) -> None:
        if not known and rep.stages and rep.stages[0][0] == "reading":
            # the page count is known now: the estimate follows it
            known.append(n)
            rep.stages = [("reading", n / rep.rates["pdf_pages_s"]),
                          *cut_stages(rep.rates, n * WORDS_PER_PAGE, lm=False)]
        rep.update("reading", done / max(n, 1), f"reading pages {done} of {n}")

    rep.update("reading", 0.0)
    return loaders.load_bytes(name, data, limits=limits, on_progress=pages)


def wants_reread(reread: str, doc: LoadedDoc) -> bool:
    """Whether a re-ingestion reads ``doc`` (its stored text, kind and layout) again from its original: ``reread``
    ``all``, or ``auto`` when an older reader of its kind read it (:data:`ingest.readers.base.READER_VERSIONS`); never
    a PDF still being read range by range (the queue reads the rest) nor with ``none``."""
    if reread == "none" or (doc.layout or {}).get("read"):
        return False
    return reread == "all" or reader_version(doc.layout) < READER_VERSIONS.get(doc.kind, 1)


def read_again(doc: LoadedDoc, limits: Limits, rep: Reporter | None = None) -> LoadedDoc | None:
    """``doc`` read from its original bytes by today's reader, or None when the reader refuses it now (logged: the
    stored text is kept)."""
    try:
        fresh = extract(doc.name, doc.data, limits, rep)
    except IngestError as e:
        log.warning("re-reading %s failed (%s); its stored text is kept", doc.name, e.problem)
        return None
    return LoadedDoc(doc.name, doc.data, fresh.text, doc.kind, fresh.warning, fresh.layout)


def extract_ranges(name: str, data: bytes, limits: Limits, rep: Reporter | None = None,
                   resume: LoadedDoc | None = None) -> Iterator[LoadedDoc]:
    """A PDF read range of pages by range (:func:`ingest.readers.loaders.load_pdf_ranges`): the document so far after
    each range, reporting pages read; ``resume``: go on after the pages of this one. A first pass's estimate, made
    from the page count the file states (:func:`first_pass_stages`), follows the count the reader found as soon as
    the first page is read: the pages of the first range and their words."""
    rep = rep or Reporter()
    first: list[int] = []  # a first pass's pages to read (its first range), once the reader has counted them

    def pages(done: int, n: int) -> None:
        if not first and resume is None and rep.stages and rep.stages[0][0] == "reading":
            first.append(min(n, max(1, limits.pdf_pages_per_range)))
            rep.stages = [("reading", first[0] / rep.rates["pdf_pages_s"]),
                          *cut_stages(rep.rates, first[0] * WORDS_PER_PAGE, lm=False)]
        rep.update("reading", done / max(first[0] if first else n, 1), f"reading pages {done} of {n}")

    rep.update("reading", 0.0)
    yield from loaders.load_pdf_ranges(name, data, limits, on_progress=pages, resume=resume)


def cut(models, text: str, doc_id: str, h: str, plan: Plan, rep: Reporter | None = None, name: str = "",
        known: dict[str, np.ndarray] | None = None, layout: dict | None = None) -> Cut:
    """Chunk ``text`` by ``plan`` and embed every chunk (all levels kept below the generation's level count), with
    its context line before it when the plan says so (``layout``: the reader's, for the heading path).
    ``known``: vectors of texts already embedded (a refinement gets the first pass's: on 30k words of *Emma* the
    LGMGC chunks repeat 82% of MG's θ/4 words, 49% of its θ/2 and 10% of its parents), reused instead of embedded
    again; a text's vector depends on the text alone."""
    rep = rep or Reporter()
    words = count_words(text)
    by = plan.cut_by
    lm = by in REFINED
    stages = cut_stages(rep.rates, words, lm, plan.n_levels)
    first = stages[0]
    if rep.stages and rep.stages[0][0] == "reading":  # a first pass: the reading is behind us
        rep.stages = [rep.stages[0], *stages]
    else:
        rep.begin(stages)
    chunker = chunker_for(models, by, plan.theta, None if plan.first_pass else plan.params,
                          on_fraction=lambda f: rep.update(first[0], f))
    rep.update(first[0], 0.0)
    t = time.perf_counter()
    chunks = [c for c in chunker.chunk_document(text, doc_id, h) if c.level < plan.n_levels]
    t_chunk = time.perf_counter() - t
    if not chunks:
        raise IngestError(name or doc_id, "produced no chunks (no words in the text)")
    t = time.perf_counter()
    texts = [c.text for c in chunks]
    if plan.context:
        lines = chunk_contexts(text, doc_id, layout, [c.start for c in chunks])
        texts = [indexed_text(x, c.text) for x, c in zip(lines, chunks)]
    if known:  # a range's re-cut or a refinement embeds only what is not known: the estimate counts only that
        distinct = set(texts)
        new_words, all_words = (sum(len(x.split()) for x in xs) for xs in ([x for x in distinct if x not in known],
                                                                         distinct))
        rep.stages = [(n, max(s * new_words / max(all_words, 1), 1e-3) if n == "embedding" else s)
                      for n, s in rep.stages]
    vectors, reused = embed_chunks(models.embedder, chunks, texts, known or {}, plan.late_quarters,
                                   lambda f: rep.update("embedding", f))
    t_embed = time.perf_counter() - t
    rep.update("writing", 0.0)
    timings = {"words": words, "chunk_s": t_chunk, "embed_s": t_embed, "lm": lm, "reused": reused}
    return Cut([(c.start, c.end, c.level, *c.parent_span) for c in chunks], vectors, timings)


def quarter_spans(chunks, texts: list[str]) -> dict[int, tuple[int, tuple]]:
    """Each θ/4 child (level 2) that is not its θ/2 child's whole span: ``{index: (θ/2 index, span)}``, the span in
    the θ/2 child's embedded text (``texts``: each chunk's, context line first) that :meth:`embed_spans` pools it
    from: the θ/2 child's context-line tokens and the θ/4 child's own (MG nests each θ/4 child in one θ/2 child)."""
    halves: dict[tuple, list[int]] = {}
    for i, c in enumerate(chunks):
        if c.level == 1:
            halves.setdefault(c.parent_span, []).append(i)
    out = {}
    for i, c in enumerate(chunks):
        if c.level != 2:
            continue
        h = next((k for k in halves.get(c.parent_span, ()) if chunks[k].start <= c.start and c.end <= chunks[k].end),
                 None)
        if h is None or (chunks[h].start, chunks[h].end) == (c.start, c.end):
            continue  # not nested (not MG's cut), or the same span, so the same text: its θ/2 child's vector
        ctx_len = len(texts[h]) - len(chunks[h].text)
        off = ctx_len + c.start - chunks[h].start
        own = (off, off + len(c.text))
        out[i] = (h, ((0, ctx_len), own) if ctx_len else own)
    return out


def embed_chunks(embedder, chunks, texts: list[str], known: dict[str, np.ndarray], late_quarters: bool = False,
                 on_fraction: Callable[[float], None] | None = None) -> tuple[np.ndarray, int]:
    """Every chunk's vector (``texts``: what each embeds, context line first) and how many were reused from ``known``.

    Each distinct text is embedded once: a parent of at most θ/2 words is its own θ/2 child (and a short θ/2 child its
    θ/4 child), the same span with the same context line, so the same text. ``late_quarters`` (where the embedder has
    ``embed_spans``): each θ/2 child's text is run through the model once, giving its own vector (the whole text's,
    as ``embed_passages`` gives it) and its θ/4 children's, pooled from the token states of that pass
    (:func:`quarter_spans`): 0.61× the embedding of every chunk alone on the six dev sets, retrieval within each set's
    CI (BENCHMARKS.md "Late chunking"). A pooled vector depends on its θ/2 child's text, so it is reused from
    ``known`` only when that text is known too (a θ/2 child that changed, at a range's end say, is run again)."""
    spans_of = getattr(embedder, "embed_spans", None)
    pooled = quarter_spans(chunks, texts) if late_quarters and spans_of is not None else {}
    passes: dict[str, list] = {}  # θ/2 text -> the spans wanted of it (its whole text first)
    for i, (h, span) in pooled.items():
        if texts[h] in known and texts[i] in known:
            continue
        wanted = passes.setdefault(texts[h], [(0, len(texts[h]))])
        if span not in wanted:
            wanted.append(span)
    alone = list(dict.fromkeys(x for i, x in enumerate(texts) if i not in pooled and x not in known
                               and x not in passes))
    words_alone, words_passes = (float(sum(len(x.split()) for x in xs)) for xs in (alone, passes))
    share = words_alone / ((words_alone + words_passes) or 1.0)
    report = on_fraction or (lambda f: None)
    vector_of = dict(zip(alone, embed_texts(embedder, alone, lambda f: report(share * f))))
    pooled_of: dict[tuple[str, object], np.ndarray] = {}
    if passes:
        got = spans_of(list(passes), list(passes.values()), on_fraction=lambda f: report(share + (1 - share) * f))
        for (x, wanted), vecs in zip(passes.items(), got):
            vector_of[x] = vecs[0]
            pooled_of.update({(x, span): v for span, v in zip(wanted, vecs)})
    out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    reused = 0
    for i, x in enumerate(texts):
        v = pooled_of.get((texts[pooled[i][0]], pooled[i][1])) if i in pooled else vector_of.get(x)
        if v is None:
            v = known[x]
            reused += 1
        out[i] = v
    return out, reused


def updated_rates(rates: dict, timings: dict, alpha: float = 0.5) -> dict:
    """``rates`` moved towards what one job measured (exponential average; tiny jobs, whose times are mostly
    overhead, are not counted)."""
    out = dict(rates)
    words = timings.get("words") or 0

    def move(key: str, value: float) -> None:
        out[key] = value if key not in rates else (1 - alpha) * rates[key] + alpha * value

    if timings.get("lm") and words >= 2000 and timings.get("chunk_s", 0) > 1:
        move("lm_words_s", words / timings["chunk_s"])
    if words >= 2000 and timings.get("embed_s", 0) > 0.5 and not timings.get("reused"):
        move("embed_words_s", words / timings["embed_s"])
    if timings.get("pages", 0) >= 20 and timings.get("read_s", 0) > 0.5:
        move("pdf_pages_s", timings["pages"] / timings["read_s"])
    return out
