"""One job-state enum and one way to wait (ingest/jobs/state.py, ingest/jobs/queue.py ``watch``): a job read from
the catalog carries a :class:`JobState`; ``watch`` yields when a job moves and ends when every one has reached
what was asked, with no clock in the test (``poll_s=0`` and a scripted store)."""
from dataclasses import replace

from ingest.jobs.queue import ingest_now, reached, wait, watch
from ingest.jobs.state import ACTIVE, DONE, FOUND, STATES, JobState


class Scripted:
    """A store whose job moves one step on every read."""

    def __init__(self, job, steps):
        self.job, self.steps, self.reads = job, list(steps), 0

    def get(self, job_id):
        self.reads += 1
        if self.steps:
            state, progress = self.steps.pop(0)
            self.job = replace(self.job, state=state, progress=progress)
        return self.job


def test_a_job_from_the_catalog_has_an_enum_state_equal_to_its_stored_text(make_ctx):
    ctx = make_ctx(theta=40)
    report = ingest_now(ctx, [("a.txt", b"The ferry leaves at seven. It returns at noon. The fare is two pounds.")])
    [job] = ctx.jobs.jobs()
    assert report.results[0].status == "ingested"
    assert job.state is JobState.READY and job.state == "ready" and reached(job, JobState.SEARCHABLE)
    assert set(STATES) == set(ACTIVE) | set(DONE) and set(FOUND) < set(STATES)


def test_watch_yields_each_move_and_ends_when_every_job_got_there(make_ctx):
    ctx = make_ctx(theta=40)
    ingest_now(ctx, [("a.txt", b"The ferry leaves at seven. It returns at noon. The fare is two pounds.")])
    [job] = ctx.jobs.jobs()
    steps = [("queued", None), ("queued", None), ("extracting", 0.2), ("extracting", 0.2), ("extracting", 0.6),
             ("searchable", None), ("refining", 0.5), ("ready", None)]
    store = Scripted(job, steps)
    seen = [(j.state, j.progress) for [j] in watch(store, [job.job_id], "searchable", poll_s=0)]
    assert seen == [("queued", None), ("extracting", 0.2), ("extracting", 0.6), ("searchable", None)]
    store = Scripted(job, steps)
    [last] = wait(store, [job.job_id], "ready", poll_s=0)
    assert last.state == JobState.READY and store.reads == len(steps)


def test_watch_also_yields_every_so_often_when_nothing_moves_and_stops_at_its_timeout(make_ctx):
    ctx = make_ctx(theta=40)
    ingest_now(ctx, [("a.txt", b"The ferry leaves at seven. It returns at noon. The fare is two pounds.")])
    [job] = ctx.jobs.jobs()
    store = Scripted(job, [("queued", None)] * 1000)
    out = list(watch(store, [job.job_id], "ready", poll_s=0, every_s=0, timeout_s=0.05))
    assert len(out) > 1 and all(j.state == "queued" for [j] in out)  # a heartbeat per poll, then the timeout
