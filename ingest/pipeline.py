"""Ingestion: files -> text -> chunks (all levels) -> embeddings -> the vector store, recorded in the catalog.

A document gets in only through the queue (:mod:`ingest.jobs.queue`: ``enqueue`` and the runner's passes, or
``ingest_now`` that runs them in the caller's thread). Every write of a document's chunks goes through one commit,
:func:`ingest.store.write.commit_document`, and every cut through the queue's work (:func:`ingest.jobs.work.cut`);
this module holds the live generation (:func:`live_generation`, made on the first write) and the reports and progress
of a batch; :mod:`ingest.jobs.rebuild` rebuilds the index from the stored originals, one queue job per document.

Guarantees:
* a file is read, chunked and embedded completely **before** anything is written; a failure at any step is
  reported for that file only and the batch goes on;
* a write that fails half-way is rolled back (the points written are deleted) and the catalog is untouched;
* ingesting the same content twice is a no-op (reported as a duplicate); a changed file of the same name
  becomes a new version that replaces the old one's chunks;
* re-ingestion builds a new index generation beside the live one and switches atomically (the catalog's
  transaction names the live generation); if anything fails the live index stays as it was;
* a process killed anywhere leaves nothing the next writer's consistency check does not repair
  (:mod:`ingest.store.consistency`): points are flushed before the catalog records them, under a ``pending`` row.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from core.resources import Resources
from ingest.jobs.work import chunker_for
from ingest.store.catalog import Generation
from ingest.text.chunk_context import generation_params

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): tqdm

log = logging.getLogger(__name__)


@dataclass
class FileResult:
    name: str
    status: str  # "ingested", "updated", "duplicate", "failed"
    message: str = ""
    doc_id: str = ""
    chunks_per_level: tuple[int, ...] = ()
    seconds: float = 0.0


@dataclass
class IngestReport:
    results: list[FileResult] = field(default_factory=list)
    generation: int | None = None

    @property
    def failed(self) -> list[FileResult]:
        return [r for r in self.results if r.status == "failed"]

    @property
    def ok(self) -> list[FileResult]:
        return [r for r in self.results if r.status in ("ingested", "updated")]

    def totals(self) -> tuple[int, ...]:
        n = max((len(r.chunks_per_level) for r in self.results), default=0)
        return tuple(sum(r.chunks_per_level[i] for r in self.results if len(r.chunks_per_level) > i) for i in range(n))


@dataclass(frozen=True)
class Step:
    """Where a batch stands, for progress displays: file ``index`` (0-based) of ``total``, its current phase, the
    share of that file and of the whole batch done, and an estimate of the time left (None until there is one)."""

    name: str
    index: int
    total: int
    phase: str
    file_fraction: float
    fraction: float
    eta_s: float | None

    def message(self) -> str:
        eta = "" if self.eta_s is None else (f" · about {self.eta_s / 60:.0f} min left" if self.eta_s >= 90
                                             else f" · about {max(self.eta_s, 1):.0f} s left")
        of = f" (file {self.index + 1} of {self.total})" if self.total > 1 else ""
        return f"{self.name}: {self.phase} {self.file_fraction:.0%}{of}{eta}"


class _Tracker:
    """Turns phase reports within a file into :class:`Step` s (files weigh the same; the estimate extrapolates the
    time spent so far)."""

    def __init__(self, total: int, fn: Callable[[Step], None], min_interval_s: float = 0.25):
        self.total, self.fn, self.t0, self.min_interval_s = max(total, 1), fn, time.monotonic(), min_interval_s
        self.index, self.name, self._phase, self._last = 0, "", "", 0.0

    def file(self, index: int, name: str) -> None:
        self.index, self.name = index, name
        self.report("reading", 0.0)

    def report(self, phase: str, file_fraction: float) -> None:
        now = time.monotonic()
        if phase == self._phase and now - self._last < self.min_interval_s and 0 < file_fraction < 1:
            return  # a few updates a second within one phase at most
        self._phase, self._last = phase, now
        ff = min(max(file_fraction, 0.0), 1.0)
        fraction = (self.index + ff) / self.total
        elapsed = now - self.t0
        eta = elapsed * (1 - fraction) / fraction if fraction > 0.02 and elapsed > 1 else None
        self.fn(Step(self.name, self.index, self.total, phase, ff, fraction, eta))


def live_generation(ctx: Resources, create: bool = True) -> Generation | None:
    """The live index generation; with ``create``, an empty index gets one now, with the settings' chunker, θ and
    context rule (recorded by the chunker's ``describe()``; the LM is not loaded for it)."""
    cat, index = ctx.catalog, ctx.index  # the index first: its consistency check runs on open
    live = cat.live_generation()
    if live is not None or not create:
        return live
    s = ctx.settings
    ch = chunker_for(ctx, s.chunker, s.theta, describe_only=True)  # the first pass needs no LM loaded
    gen = cat.new_generation(s.chunker, s.theta, {**ch.describe(), **generation_params(s)}, s.embedder,
                             ctx.embedder.dim, ch.n_levels)
    index.create_generation(gen, ctx.embedder.dim, ch.n_levels)
    index.switch(gen, ch.n_levels)
    cat.set_generation_status(gen, "live")
    return cat.live_generation()


# what the re-ingestion's progress calls the stages of the queue's work (ingest.jobs.work.cut_stages)
_PHASES = {"LM pass": "chunking (LM windows)"}


class _Progress:
    """A batch's progress: per document (``on_progress(done, total, name)``, or tqdm bars with ``progress``) and
    within each file (``on_step(step)``, through a :class:`_Tracker`)."""

    def __init__(self, total: int, progress: bool, on_progress: Callable[[int, int, str], None] | None,
                 on_step: Callable[[Step], None] | None, step_interval_s: float):
        self.tracker = _Tracker(total, on_step, step_interval_s) if on_step is not None else None
        self.docs, self.within = None, None
        if on_progress is not None:
            self.docs = _CallbackBar(total, on_progress)
        elif progress:
            from tqdm.auto import tqdm

            self.docs = tqdm(total=total, desc="ingest", unit="document", position=0)
            within = tqdm(total=100, desc="file", unit="%", position=1, leave=False,
                          bar_format="{desc} {bar} {n:.0f}%")

            def show(step: Step) -> None:
                within.n = round(step.file_fraction * 100)
                within.set_description_str(f"{step.name[:30]}: {step.phase}")

            self.within, self.tracker = within, _Tracker(total, show)

    def file(self, index: int, name: str) -> None:
        if self.tracker is not None:
            self.tracker.file(index, name)
        if self.docs is not None:
            self.docs.set_postfix_str(name[:40])

    def track(self, label: str, share: float) -> None:
        """A stage of the current file's work and its share done (a re-ingestion's job reports so)."""
        if self.tracker is not None:
            self.tracker.report(_PHASES.get(label, label), share)

    def done(self) -> None:
        if self.docs is not None:
            self.docs.update(1)

    def close(self) -> None:
        self.tracker = None
        for b in (self.docs, self.within):
            if b is not None:
                b.close()


class _CallbackBar:
    """The two calls of a tqdm bar the batches make, reported to ``fn(done, total, name)``."""

    def __init__(self, total: int, fn: Callable[[int, int, str], None]):
        self.total, self.n, self.name, self.fn = total, 0, "", fn

    def set_postfix_str(self, name: str) -> None:
        self.name = name
        self.fn(self.n, self.total, name)

    def update(self, k: int = 1) -> None:
        self.n += k
        self.fn(self.n, self.total, self.name)

    def close(self) -> None:
        pass

