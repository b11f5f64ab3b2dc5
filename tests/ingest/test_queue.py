"""The ingestion queue (ingest/jobs/state.py, ingest/jobs/queue.py, ingest/jobs/work.py): two phases per document, the
chunks of each phase equal to what the chunkers give directly, cancellation, failures that stay with their file, bounded
retries, recovery after a dead process, progress during the LM pass, and searches that never show two chunkings of one
document at once."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from ingest.jobs.queue import LocalExecutor, Runner, document_states, enqueue, ingest_files, ingest_now, wait
from ingest.jobs.state import JobError
from ingest.jobs.work import QueueUnavailable, Reporter, Stopped
from ingest.pipeline import live_generation
from tests.ingest.test_durability import assert_one_truth
from tests.sync import eventually

TEXT = ("The cat sat on the mat. It was a sunny day.\n\nDogs bark at night. Birds sing in the morning! "
        "Qdrant stores vectors for every chunk. Chunks have parents and children.\n\n") * 12


def spans(ctx, doc_id):
    live = ctx.catalog.live_generation()
    return sorted((p.payload["level"], p.payload["start"], p.payload["end"], p.id, p.payload["text"])
                  for lv in range(live.n_levels) for p in ctx.index.points(live.gen, lv)
                  if p.payload["doc_id"] == doc_id)


def run_until(ctx, ids, until="ready", executor=None):
    """Run the queued jobs to ``until`` in this thread (:meth:`Runner.drain`: no lane threads, no polling) and return
    those of ``ids`` as they are then."""
    Runner(ctx, executor).drain(until)
    return [ctx.jobs.get(i) for i in ids]


def test_two_phases_give_the_mg_chunks_first_then_exactly_the_lgmgc_chunks(make_ctx, tmp_path, write):
    ctx = make_ctx(chunker="lgmgc", theta=40, lg_mode="streaming")
    [q] = enqueue(ctx, [("notes.md", TEXT.encode())])
    assert q.status == "queued" and q.job.state == "queued" and ctx.jobs.spool_path(q.job).exists()
    [job] = run_until(ctx, [q.job.job_id], "searchable")  # first passes only
    live = ctx.catalog.live_generation()
    assert live.chunker == "lgmgc" and job.state == "searchable" and job.searchable_at is not None
    # the first pass: MG's chunks at the same θ (the same ids and texts as MG ingested directly), marked as such
    mg = make_ctx(data_dir=tmp_path / "mg", chunker="mg", theta=40)
    ingest_files(mg, [write("notes.md", TEXT)])
    assert spans(ctx, "notes.md") == spans(mg, "notes.md")
    assert ctx.catalog.phase(live.gen, "notes.md")[1] == "first"
    assert all(p.payload.get("first_pass") for lv in range(3) for p in ctx.index.points(live.gen, lv))
    [row] = document_states(ctx)
    assert row["state"] == "searchable" and row["detail"] == "searchable · refinement queued"
    [job] = run_until(ctx, [job.job_id], "ready")
    assert job.state == "ready" and job.ready_at >= job.searchable_at and not ctx.jobs.spool_path(q.job).exists()
    # refined: exactly LGMGC's chunks, as a one-phase ingest of the same document makes them; nothing of MG left
    lg = make_ctx(data_dir=tmp_path / "lg", chunker="lgmgc", theta=40, lg_mode="streaming")
    ingest_files(lg, [write("notes.md", TEXT)])
    assert spans(ctx, "notes.md") == spans(lg, "notes.md")
    vecs = {lv: {p.id: p.vector for p in ctx.index.points(live.gen, lv, with_vectors=True)} for lv in range(3)}
    for lv in range(3):  # the vectors too: those the refinement reused from the first pass and those it embedded
        for p in lg.index.points(lg.catalog.live_gen(), lv, with_vectors=True):
            np.testing.assert_allclose(vecs[lv][p.id], p.vector, atol=1e-6)
    assert ctx.catalog.phase(live.gen, "notes.md")[1] is None
    assert not any(p.payload.get("first_pass") for lv in range(3) for p in ctx.index.points(live.gen, lv))
    assert_one_truth(ctx)
    [row] = document_states(ctx)
    assert row["state"] == "ready" and row["searchable"] and row["detail"] == "ready"


def test_a_chunker_without_an_lm_and_first_pass_off_have_one_phase(make_ctx, tmp_path):
    ctx = make_ctx(chunker="recursive", theta=40)
    [q] = enqueue(ctx, [("a.md", TEXT.encode())])
    [job] = run_until(ctx, [q.job.job_id])
    assert job.state == "ready" and job.searchable_at == job.ready_at
    off = make_ctx(data_dir=tmp_path / "off", chunker="lgmgc", theta=40, first_pass=False)
    [q] = enqueue(off, [("a.md", TEXT.encode())])
    [job] = run_until(off, [q.job.job_id])
    assert job.state == "ready" and job.searchable_at == job.ready_at and not job.two_phase
    assert off.catalog.phase(off.catalog.live_gen(), "a.md")[1] is None


def test_refused_duplicate_and_failed_files_stay_with_their_file(make_ctx):
    ctx = make_ctx(chunker="mg", theta=40)
    out = enqueue(ctx, [("a.md", TEXT.encode()), ("b.exe", b"MZ"), ("c.txt", b"  "), ("bad.pdf", b"%PDF-1.4 nope"),
                        ("d.md", TEXT.replace("cat", "owl").encode())])
    assert [(q.name, q.status) for q in out] == [("a.md", "queued"), ("b.exe", "refused"), ("c.txt", "refused"),
                                                 ("bad.pdf", "queued"), ("d.md", "queued")]
    assert "unsupported file type '.exe'" in out[1].message and "is empty" in out[2].message
    jobs = run_until(ctx, [q.job.job_id for q in out if q.job])
    assert [j.state for j in jobs] == ["ready", "failed", "ready"]
    assert "is not a readable PDF" in jobs[1].error and jobs[1].attempts == 0  # the file's fault: not retried
    [again] = enqueue(ctx, [("a.md", TEXT.encode())])
    assert again.status == "duplicate" and again.message == "unchanged; skipped"
    states = {r["doc_id"]: (r["state"], r["searchable"]) for r in document_states(ctx)}
    assert states == {"a.md": ("ready", True), "bad.pdf": ("failed", False), "d.md": ("ready", True)}


class _Flaky(LocalExecutor):
    """Fails the first ``n`` first passes with an error that is not the file's fault."""

    def __init__(self, ctx, n):
        super().__init__(ctx)
        self.n = n

    def first(self, job, data, plan, rep):
        if self.n > 0:
            self.n -= 1
            raise RuntimeError("the worker went away")
        return super().first(job, data, plan, rep)


def test_unexpected_errors_are_retried_boundedly_then_failed_with_the_reason(make_ctx):
    ctx = make_ctx(chunker="mg", theta=40, ingest_max_attempts=3)
    [q] = enqueue(ctx, [("a.md", TEXT.encode())])
    [job] = run_until(ctx, [q.job.job_id], executor=_Flaky(ctx, 2))
    assert job.state == "ready"  # two failures, the third attempt made it
    [q] = enqueue(ctx, [("b.md", TEXT.replace("cat", "owl").encode())])
    [job] = run_until(ctx, [q.job.job_id], executor=_Flaky(ctx, 5))
    assert job.state == "failed" and job.error == "RuntimeError: the worker went away (gave up after 3 attempts)"
    assert [r["doc_id"] for r in document_states(ctx) if r["searchable"]] == ["a.md"]


class _QueueDown(LocalExecutor):
    """The queue's Redis does not answer for the first ``n`` first passes; what the job's row said meanwhile."""

    def __init__(self, ctx, n):
        super().__init__(ctx)
        self.n, self.seen = n, []

    def first(self, job, data, plan, rep):
        self.seen.append(self.ctx.jobs.get(job.job_id).attempts)
        if self.n > 0:
            self.n -= 1
            raise QueueUnavailable("the queue at redis://127.0.0.1:6379/0 does not answer (ConnectionError)")
        return super().first(job, data, plan, rep)


def test_a_queue_outage_spends_no_attempt_and_says_the_job_waits_for_the_queue(make_ctx, monkeypatch):
    """A hostile run stopped Redis for 30 s during an acknowledged upload: "gave up after 3 attempts" within 5 s.
    An outage is not the file's fault: the job waits (its row says so), backs off, and goes on when the queue answers;
    five outages in a row with 3 attempts allowed still end ready, with no attempt spent. The back-offs are recorded
    instead of waited for."""
    ctx = make_ctx(chunker="mg", theta=40, ingest_max_attempts=3)
    [q] = enqueue(ctx, [("a.md", TEXT.encode())])
    flaky = _QueueDown(ctx, 5)
    said, waited = [], []
    real = ctx.jobs.release

    def release(job, message=None):
        said.append(message)  # what the row says while the job waits
        real(job, message)

    class Backoff(threading.Event):  # the runner's stop event: its waits are the back-offs
        def wait(self, timeout=None):
            waited.append(timeout)
            return self.is_set()

    monkeypatch.setattr(ctx.jobs, "release", release)
    runner = Runner(ctx, flaky)
    runner._stop = Backoff()
    runner.drain()
    job = ctx.jobs.get(q.job.job_id)
    assert job.state == "ready" and job.attempts == 0 and flaky.seen == [0] * 6
    assert len(said) == 5 and len(set(said)) == 1, said
    assert waited == [2.0, 4.0, 8.0, 16.0, 32.0]  # QUEUE_BACKOFF_S, doubled each time (at most QUEUE_BACKOFF_MAX_S)
    assert job.describe() == "ready"
    [other] = enqueue(ctx, [("b.md", TEXT.replace("cat", "owl").encode())])  # a row between two tries
    real(ctx.jobs.get(other.job.job_id), said[0])
    assert ctx.jobs.get(other.job.job_id).describe() == "queued · waiting for the queue (Redis does not answer)"


def test_a_dead_runner_s_jobs_are_resumed_and_a_file_that_keeps_killing_it_fails(make_ctx, tmp_path):
    data = tmp_path / "data"
    ctx = make_ctx(data_dir=data, chunker="mg", theta=40, ingest_max_attempts=2)
    a, b = enqueue(ctx, [("a.md", TEXT.encode()), ("b.md", TEXT.replace("cat", "owl").encode())])
    ctx.jobs.claim("first", "host:1")  # a.md was extracting when its process died
    ctx.close()
    ctx = make_ctx(data_dir=data, chunker="mg", theta=40, ingest_max_attempts=2)
    runner = Runner(ctx, first_workers=0, refine_workers=0)  # a start resumes what the dead one left; no lane runs
    runner.start()
    runner.stop()
    assert [(j.name, s) for j, s in runner.recovered] == [("a.md", "queued")]
    again = ctx.jobs.get(a.job.job_id)
    assert again.attempts == 1 and "interrupted while extracting" in again.error
    ctx.jobs.claim("first", "host:2")  # and died again with it
    ctx.close()
    ctx = make_ctx(data_dir=data, chunker="mg", theta=40, ingest_max_attempts=2)
    jobs = run_until(ctx, [a.job.job_id, b.job.job_id])
    assert [j.state for j in jobs] == ["failed", "ready"]
    assert "interrupted while extracting" in jobs[0].error and "gave up after 2 attempts" in jobs[0].error


def test_cancel_a_queued_job_and_a_refinement(make_ctx):
    ctx = make_ctx(chunker="lgmgc", theta=40)
    a, b = enqueue(ctx, [("a.md", TEXT.encode()), ("b.md", TEXT.replace("cat", "owl").encode())])
    assert ctx.jobs.request_cancel(b.job.job_id) == "cancelled"
    assert ctx.jobs.get(b.job.job_id).state == "cancelled" and not ctx.jobs.spool_path(b.job).exists()
    with pytest.raises(JobError, match="is cancelled; nothing to cancel"):
        ctx.jobs.request_cancel(b.job.job_id)
    with pytest.raises(JobError, match="no job 99"):
        ctx.jobs.request_cancel(99)
    # a running refinement: it stops at its next progress report, the first pass stays searchable
    said, went_on = [], []

    class CancelledWhileRunning(LocalExecutor):
        def refine(self, job, text, plan, rep, known=None, layout=None):
            said.append(self.ctx.jobs.request_cancel(job.job_id))  # asked for while the refinement runs
            rep.update("LM pass", 0.1)  # its next progress report
            went_on.append(job.name)
            return super().refine(job, text, plan, rep, known, layout)

    [job] = run_until(ctx, [a.job.job_id], executor=CancelledWhileRunning(ctx))
    assert said == ["cancelling (the worker stops at its next step)"] and went_on == []
    assert job.state == "cancelled" and job.failed_in == "refine"
    [row] = [r for r in document_states(ctx) if r["doc_id"] == "a.md"]
    assert row["state"] == "searchable" and row["searchable"] and ctx.catalog.phase(ctx.catalog.live_gen(),
                                                                                      "a.md")[1] == "first"
    assert "b.md" not in {r["doc_id"] for r in document_states(ctx)}


def test_owners_take_turns_and_each_owner_s_files_go_oldest_first(make_ctx):
    ctx = make_ctx(chunker="mg", theta=40)
    files = [(f"{w}.md", TEXT.replace("cat", w).encode()) for w in ("owl", "elk", "yak")]
    a = enqueue(ctx, files, "browser:a")
    [b] = enqueue(ctx, [("fox.md", TEXT.replace("cat", "fox").encode())], "browser:b")
    [lib] = enqueue(ctx, [("gnu.md", TEXT.replace("cat", "gnu").encode())])
    assert ctx.jobs.position(b.job) == 1 and ctx.jobs.position(a[2].job) == 4
    order = []
    while (job := ctx.jobs.claim("first", "test")) is not None:
        order.append(job.name)
    assert order == ["owl.md", "fox.md", "gnu.md", "elk.md", "yak.md"]  # a, b, the library, then a's others


def test_refinements_wait_while_first_passes_are_queued(make_ctx):
    ctx = make_ctx(chunker="lgmgc", theta=40)
    gate = threading.Event()
    order = []

    class Gated(LocalExecutor):
        def first(self, job, data, plan, rep):
            order.append(("first", job.name))
            if job.name == "b.md":
                gate.wait(60)
            return super().first(job, data, plan, rep)

        def refine(self, job, text, plan, rep, known=None, layout=None):
            order.append(("refine", job.name))
            return super().refine(job, text, plan, rep, known, layout)

    a, b = enqueue(ctx, [("a.md", TEXT.encode()), ("b.md", TEXT.replace("cat", "owl").encode())])
    runner = Runner(ctx, executor=Gated(ctx), first_workers=1, poll_s=0.01)
    looked = []  # what the refinement lane saw each time it looked for work while a.md waited for its refinement
    real = runner._first_pending

    def first_pending():
        pending = real()
        if threading.current_thread().name.startswith("mgrag-refine") and ("first", "b.md") in order:
            looked.append(pending)
        return pending

    runner._first_pending = first_pending
    runner.start()
    try:
        wait(ctx.jobs, [a.job.job_id], "searchable", timeout_s=60)
        # a.md searchable, b.md's first pass held: the refinement lane looks, twice, and leaves a.md's refinement
        eventually(lambda: len(looked) >= 2, what="the refinement lane looking for work twice")
        assert looked[:2] == [True, True]
        assert order == [("first", "a.md"), ("first", "b.md")] and ctx.jobs.get(a.job.job_id).state == "searchable"
        gate.set()
        jobs = wait(ctx.jobs, [a.job.job_id, b.job.job_id], "ready", timeout_s=120)
    finally:
        gate.set()
        runner.stop()
    assert [j.state for j in jobs] == ["ready", "ready"]
    assert order[2:] == [("refine", "a.md"), ("refine", "b.md")]


def test_progress_moves_during_the_lm_pass_and_a_stop_interrupts_it(make_ctx):
    from ingest.jobs.queue import plan_for
    from ingest.jobs.work import cut

    ctx = make_ctx(chunker="lgmgc", theta=40, lg_mode="streaming")
    ctx.scorer.block_tokens, ctx.scorer.context_tokens, ctx.scorer.batch_size = 64, 8, 1
    with ctx.write_lock:
        gen = live_generation(ctx)
    plan = plan_for(ctx, gen, None, first_pass=False)
    seen = []
    rep = Reporter(lambda label, share, eta: seen.append((label, share, eta)) or False, interval_s=0)
    c = cut(ctx, TEXT * 3, "a.md", "h" * 64, plan, rep)
    lm = [share for label, share, _ in seen if label == "LM pass"]
    assert len(set(lm)) >= 5 and lm == sorted(lm)  # it moves, never backwards, during the pass itself
    assert all(eta is not None for _, _, eta in seen[1:])
    assert c.vectors.shape[0] == len(c.spans) > 0
    stop_at = []

    def sink(label, share, eta):
        stop_at.append(share)
        return label == "LM pass" and share > 0.2  # a cancellation requested mid-pass

    with pytest.raises(Stopped, match="cancelled"):
        cut(ctx, TEXT * 3, "a.md", "h" * 64, plan, Reporter(sink, interval_s=0))
    assert max(stop_at) < 0.97


def test_a_refinement_embeds_only_the_chunks_the_first_pass_did_not(make_ctx):
    from ingest.jobs.queue import plan_for
    from ingest.jobs.work import cut
    from ingest.text.chunk_context import chunk_contexts, indexed_text

    ctx = make_ctx(chunker="lgmgc", theta=40)
    with ctx.write_lock:
        gen = live_generation(ctx)
    first = cut(ctx, TEXT, "a.md", "h" * 64, plan_for(ctx, gen, None, first_pass=True))
    # by the text that was embedded: the chunk's context line (the index's default) and its text, as the queue keys it
    lines = chunk_contexts(TEXT, "a.md", None, [s for s, *_ in first.spans])
    known = {indexed_text(x, TEXT[s:e]): v for x, (s, e, *_), v in zip(lines, first.spans, first.vectors)}
    calls = []
    real = ctx.embedder.embed_passages
    ctx.embedder.embed_passages = lambda texts: calls.append(list(texts)) or real(texts)
    plan = plan_for(ctx, gen, None, first_pass=False)
    again = cut(ctx, TEXT, "a.md", "h" * 64, plan, known=known)
    embedded = [t for c in calls for t in c]
    lines = chunk_contexts(TEXT, "a.md", None, [s for s, *_ in again.spans])
    texts = [indexed_text(x, TEXT[s:e]) for x, (s, e, *_) in zip(lines, again.spans)]
    assert again.timings["reused"] == sum(t in known for t in texts) > 0
    assert sorted(embedded) == sorted({t for t in texts if t not in known})  # the others, each once
    assert not set(embedded) & set(known)
    ctx.embedder.embed_passages = real
    fresh = cut(ctx, TEXT, "a.md", "h" * 64, plan)
    assert fresh.spans == again.spans
    np.testing.assert_allclose(fresh.vectors, again.vectors, atol=1e-6)


def test_the_estimate_counts_only_the_words_to_embed_when_most_are_known(make_ctx):
    """A long PDF's next range re-cuts the text read so far and reuses the vectors of what it had: its time left counts
    the embedding of the new words only (a 168-page report's last range said "about 76 s left" and was done in 6)."""
    from ingest.jobs.queue import plan_for
    from ingest.jobs.work import Reporter, cut
    from ingest.text.chunk_context import chunk_contexts, indexed_text

    ctx = make_ctx(chunker="mg", theta=40)
    with ctx.write_lock:
        gen = live_generation(ctx)
    plan = plan_for(ctx, gen, None, first_pass=True)
    first = cut(ctx, TEXT, "a.md", "h" * 64, plan)
    lines = chunk_contexts(TEXT, "a.md", None, [s for s, *_ in first.spans])
    known = {indexed_text(x, TEXT[s:e]): v for x, (s, e, *_), v in zip(lines, first.spans, first.vectors)}
    more = TEXT + "\n\nA closing paragraph about the harbour master's fees, new in this range. " * 2

    def embedding_s(k):
        rep = Reporter()
        cut(ctx, more, "a.md", "h" * 64, plan, rep, known=k)
        return dict(rep.stages)["embedding"]

    alone, reusing = embedding_s(None), embedding_s(known)
    assert 0 < reusing < 0.5 * alone


def test_a_text_that_several_levels_share_is_embedded_once(make_ctx):
    """A parent of at most θ/2 words is its own θ/2 child and θ/4 child: the same span and context line, one text;
    it is embedded once and the three chunks get its vector (a filing's short tables and sections are such parents)."""
    from ingest.jobs.queue import plan_for
    from ingest.jobs.work import cut

    ctx = make_ctx(chunker="mg", theta=40)
    with ctx.write_lock:
        gen = live_generation(ctx)
    # the next section opens with a sentence too long to share a span with the short one
    text = ("# Revenue\n\nNet sales rose nine percent.\n\n# Risks\n\n"
            + "The first risk, which the board has discussed at every meeting since the harbour reopened, is that "
              "ferry bookings, fuel prices and the weather of one season decide most of the year's revenue. "
            + " ".join(f"Sentence {i} says something about the risks of the business." for i in range(12)))
    calls = []
    real = ctx.embedder.embed_passages
    ctx.embedder.embed_passages = lambda texts: calls.append(list(texts)) or real(texts)
    c = cut(ctx, text, "a.md", "h" * 64, plan_for(ctx, gen, None, first_pass=True))
    embedded = [t for call in calls for t in call]
    assert len(embedded) == len(set(embedded)) < len(c.spans)
    short = [i for i, (s, e, *_) in enumerate(c.spans) if text[s:e].startswith("# Revenue")]
    assert [c.spans[i][2] for i in short] == [0, 1, 2]  # nine words: parent, θ/2 and θ/4 child alike
    assert len({c.spans[i][:2] for i in short}) == 1
    assert sum("Net sales rose nine percent." in t for t in embedded) == 1
    for i in short[1:]:
        np.testing.assert_array_equal(c.vectors[i], c.vectors[short[0]])
    assert c.timings["reused"] == 0  # none came from a first pass


def test_reporter_estimate_follows_the_observed_pace():
    now = [0.0]
    seen = []
    r = Reporter(lambda *a: seen.append(a) or False, interval_s=0, clock=lambda: now[0])
    r.begin([("LM pass", 100.0), ("embedding", 10.0)])
    r.update("LM pass", 0.0)
    assert seen[-1][2] == pytest.approx(110.0)  # from the rates until the pass has a pace
    now[0] = 50.0
    r.update("LM pass", 0.25)  # twice as slow as expected: 150 s left of the pass, embedding scaled by 2
    assert seen[-1][1] == pytest.approx(25 / 110) and seen[-1][2] == pytest.approx(150.0 + 20.0)


def test_searches_show_only_chunks_the_catalog_records(make_ctx):
    """A point written but not (yet) recorded, as during the swap of a document's chunks, is never a source."""
    from ingest.types import Chunk
    from retrieval.search import retrieve

    ctx = make_ctx(chunker="mg", theta=40)
    ingest_now(ctx, [("a.md", TEXT.encode())])
    live = ctx.catalog.live_generation()
    ghost = Chunk("Zebras graze zebras zebras.", 0, 27, 0, 0, 27, "a.md", "f" * 64)
    ctx.index.upsert(live.gen, [ghost], ctx.embedder.embed_passages([ghost.text]), 1)
    assert ghost.id in {p.id for p in ctx.index.search(0, ctx.embedder.embed_queries(["zebras"])[0], 5)}
    for retriever in ("dense", "hybrid"):
        res = retrieve(ctx, "zebras graze", retriever=retriever)
        assert ghost.id not in {s.parent_id for s in res.sources}


def test_one_user_s_slow_files_leave_a_worker_for_another_user_s_upload(make_ctx):
    """Issue 21 (5): four hostile PDFs took every upload slot for 120 s per wave and a victim's small upload waited
    122 s. One user's files now hold at most every worker but one; the library's (admin, CLI) are not limited."""
    ctx = make_ctx(chunker="mg", theta=40)
    gate = threading.Event()
    started = []

    class Slow(LocalExecutor):  # the hostile user's files take as long as the gate stays shut
        def first(self, job, data, plan, rep):
            started.append(job.name)
            if job.owner == "browser:hostile":
                gate.wait(60)
            return super().first(job, data, plan, rep)

    hostile = enqueue(ctx, [(f"bomb{i}.md", TEXT.replace("cat", f"c{i}").encode()) for i in range(4)],
                      "browser:hostile")
    declined = threading.Event()  # a first-pass worker looked while bomb0 ran, three bombs waiting, and took none
    real_claim = ctx.jobs.claim

    def claim(lane, worker, owner_cap=None, expected=None):
        job = real_claim(lane, worker, owner_cap=owner_cap, expected=expected)
        if lane == "first" and job is None and started:
            declined.set()
        return job

    ctx.jobs.claim = claim
    runner = Runner(ctx, executor=Slow(ctx), first_workers=2, refine_workers=1, poll_s=0.01).start()
    try:
        assert declined.wait(60), "the second worker never looked for work"
        assert started == ["bomb0.md"]
        [victim] = enqueue(ctx, [("notes.md", TEXT.replace("cat", "fox").encode())], "browser:victim")
        runner.wake()
        [done] = wait(ctx.jobs, [victim.job.job_id], "searchable", timeout_s=60)
        assert done.state == "ready"  # MG: one phase
        assert started == ["bomb0.md", "notes.md"]  # the victim's file went beside the held one; no second bomb
        gate.set()
        jobs = wait(ctx.jobs, [h.job.job_id for h in hostile], "ready", timeout_s=60)
    finally:
        gate.set()
        runner.stop()
    assert [j.state for j in jobs] == ["ready"] * 4
    assert started == ["bomb0.md", "notes.md", "bomb1.md", "bomb2.md", "bomb3.md"]  # one hostile file at a time


def test_the_owner_cap_leaves_the_library_unlimited(make_ctx):
    ctx = make_ctx(chunker="mg", theta=40)
    enqueue(ctx, [(f"{w}.md", TEXT.replace("cat", w).encode()) for w in ("owl", "elk")], "browser:a")
    enqueue(ctx, [(f"{w}.md", TEXT.replace("cat", w).encode()) for w in ("gnu", "emu")])
    got = [ctx.jobs.claim("first", "t", owner_cap=1) for _ in range(4)]
    names = [j.name if j else None for j in got]
    assert names[:3] == ["owl.md", "gnu.md", "emu.md"] and names[3] is None  # elk waits for owl to finish


def test_a_first_pass_over_its_time_budget_fails_with_the_setting_named_and_frees_the_worker(make_ctx):
    """Issue 21 (2): a 10 MB one-line file held the write lock, then a worker, for over an hour. A first pass that
    runs past `first_pass_timeout_s` fails with a message naming the setting; the next file is processed. The runner's
    clock is the test's: each step of the endless chunking takes a minute of it."""
    ctx = make_ctx(chunker="mg", theta=40, first_pass_timeout_s=600.0)
    now = [0.0]
    steps = []

    class Endless(LocalExecutor):  # chunking that never ends, reporting its progress as the real stages do
        def first(self, job, data, plan, rep):
            if job.name == "endless.md":
                rep.begin([("chunking", 1.0)])
                for i in range(10_000):
                    steps.append(now[0])
                    rep.update("chunking", i / 10_000)
                    now[0] += 60.0
            return super().first(job, data, plan, rep)

    endless, after = enqueue(ctx, [("endless.md", TEXT.encode()), ("after.md", TEXT.replace("cat", "elk").encode())])
    Runner(ctx, Endless(ctx), clock=lambda: now[0]).drain()
    jobs = [ctx.jobs.get(q.job.job_id) for q in (endless, after)]
    assert jobs[0].state == "failed" and jobs[0].error == (
        "its first pass took longer than 600 s (MGRAG_FIRST_PASS_TIMEOUT_S): split the file, or raise that limit")
    assert steps[-1] == 660.0  # stopped at the first report past the budget
    assert jobs[1].state == "ready"


def test_a_first_pass_is_named_by_its_step_once_past_the_reading():
    """The upload row says what is being done: "extracting" while the file is read, then the step itself
    ("embedding 39%", not "extracting 39% · embedding"); refinements keep their stage after the state."""
    from ingest.jobs.state import describe

    assert describe("extracting", "reading pages 4 of 40", 0.05) == "extracting 5% · reading pages 4 of 40"
    assert describe("extracting", "embedding", 0.39, 44) == "embedding 39% · about 44 s left"
    assert describe("extracting", "writing", 0.98) == "writing 98%"
    assert describe("extracting") == "extracting"
    assert describe("refining", "LM pass", 0.431, 130) == "refining 43% · LM pass · about 2 min left"


def test_a_small_file_uploaded_after_a_long_pdf_is_searchable_first(make_ctx):
    """Issue 32 (2): one user's files went strictly one at a time in upload order, so a .docx waited minutes behind
    a 10-K. A long PDF is taken first; the same user's small file, queued while it runs, goes on the other worker
    and is searchable before the PDF is. The PDF's first pass is held until then: were the small file queued behind
    it, it would never be searchable in time."""
    from tests.pdfgen import make_pdf

    ctx = make_ctx(chunker="mg", theta=40, ingest_workers=2)
    long_pdf = make_pdf([[f"Page {p} says the harbour opened at dawn."] for p in range(120)])
    assert ctx.jobs.expected("first", "long.pdf", len(long_pdf), pages=120) >= 30  # a long job by its estimate
    running, gate = threading.Event(), threading.Event()

    class HeldPdf(LocalExecutor):  # the long PDF's first pass runs as long as the gate stays shut
        def first(self, job, data, plan, rep):
            if job.name == "long.pdf":
                running.set()
                gate.wait(60)
            return super().first(job, data, plan, rep)

    runner = Runner(ctx, HeldPdf(ctx), poll_s=0.01).start()
    try:
        [big] = enqueue(ctx, [("long.pdf", long_pdf)], "browser:a")
        runner.wake()
        assert running.wait(60) and ctx.jobs.get(big.job.job_id).state == "extracting"
        [small] = enqueue(ctx, [("notes.md", TEXT.encode())], "browser:a")
        runner.wake()
        [done] = wait(ctx.jobs, [small.job.job_id], "searchable", timeout_s=60)
        assert done.state == "ready" and ctx.jobs.get(big.job.job_id).state == "extracting"
        gate.set()
        jobs = wait(ctx.jobs, [big.job.job_id, small.job.job_id], "searchable", timeout_s=120)
    finally:
        gate.set()
        runner.stop()
    by = {j.name: j for j in jobs}
    assert by["notes.md"].state == "ready"
    assert by["long.pdf"].state in ("searchable", "refining", "ready")  # its first 40 pages; the rest read after
    assert by["notes.md"].searchable_at < by["long.pdf"].searchable_at


def test_each_owner_s_short_file_goes_before_a_long_one_queued_just_before_it_and_rows_say_when_they_start(make_ctx):
    from ingest.jobs.queue import queued_text
    from tests.pdfgen import make_pdf

    ctx = make_ctx(chunker="mg", theta=40, ingest_workers=1)
    pdf = make_pdf([["Dawn at the harbour."] * 30 for _ in range(120)])
    [big] = enqueue(ctx, [("long.pdf", pdf)], "browser:a")
    [small] = enqueue(ctx, [("notes.md", TEXT.encode())], "browser:a")
    [later] = enqueue(ctx, [("later.pdf", pdf.replace(b"Dawn", b"Dusk"))], "browser:a")
    assert [ctx.jobs.position(q.job) for q in (small, big, later)] == [0, 1, 2]
    big_s = ctx.jobs.expected("first", "long.pdf", len(pdf), pages=120)
    small_s = ctx.jobs.expected("first", "notes.md", len(TEXT))
    assert ctx.jobs.starts_in(small.job, 1) == 0
    assert ctx.jobs.starts_in(big.job, 1) == pytest.approx(small_s)
    assert ctx.jobs.starts_in(later.job, 1) == pytest.approx(small_s + big_s)
    assert queued_text(ctx, small.job) == "queued (next)"
    wait_s = small_s + ctx.jobs.expected("first", "long.pdf", len(pdf), pages=ctx.settings.pdf_pages_per_range)
    when = f"{wait_s / 60:.0f} min" if wait_s >= 90 else f"{wait_s:.0f} s"
    assert queued_text(ctx, later.job) == f"queued (2 ahead) · starts in about {when}"
    assert ctx.jobs.claim("first", "t").name == "notes.md"


class _Crashing(LocalExecutor):
    """A library failing inside the first pass with its traceback and this machine's paths in the message."""

    def first(self, job, data, plan, rep):
        raise RuntimeError('Traceback (most recent call last):\n  File "/srv/mgrag/.venv/lib/python3.11/site-packages/'
                           'rapidocr/main.py", line 98\nonnxruntime.Fail: [ONNXRuntimeError] : 1 : FAIL')


def test_a_failing_file_is_told_in_one_sentence_without_a_traceback_or_a_server_path(make_ctx):
    """Issue 32 (1): the row, a toast, the Admin tables, GET /v1/documents and the CLI showed a Python traceback with
    the server's install paths. What is stored and shown is one sentence; the traceback goes to the log."""
    ctx = make_ctx(chunker="mg", theta=40, ingest_max_attempts=1)
    [q] = enqueue(ctx, [("scan.pdf", b"%PDF-1.4 not really")])
    [job] = run_until(ctx, [q.job.job_id], executor=_Crashing(ctx))
    [row] = [r for r in document_states(ctx) if r["doc_id"] == "scan.pdf"]
    for shown in (job.error, job.describe(), row["error"]):
        assert "\n" not in shown and "Traceback" not in shown and "/srv" not in shown and "site-packages" not in shown
    assert job.describe() == ("failed: an unexpected error (RuntimeError); the details are in the server's log (gave "
                              "up after 1 attempt)")
