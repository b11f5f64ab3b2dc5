"""A re-ingestion reads again what an older reader read (issue 48): a stored text is re-cut as it is unless the reader
of its kind has changed since (``READER_VERSIONS``), and a new reading replaces the stored one only with the
generation that indexes it."""
from __future__ import annotations

import io
import json

import pytest

from ingest.jobs.queue import ingest_files
from ingest.jobs.rebuild import reingest
from ingest.readers.base import READER_VERSIONS, reader_version
from ingest.readers.loaders import Limits, load_bytes
from ingest.store.consistency import check

OLD = "Cover page before the controls.\n\nAppendix after the controls."


def _template_docx() -> bytes:
    """A Word file whose body sits in a block-level content control: the reader before version 2 read only the
    paragraphs around it."""
    import docx
    from docx.oxml import OxmlElement

    d = docx.Document()
    d.add_paragraph("Cover page before the controls.")
    inside = d.add_paragraph("The plant bought parts from more than 14,000 suppliers in 2011.")
    d.add_paragraph("Appendix after the controls.")
    sdt, content = OxmlElement("w:sdt"), OxmlElement("w:sdtContent")
    inside._p.addprevious(sdt)
    sdt.append(OxmlElement("w:sdtPr"))
    sdt.append(content)
    content.append(inside._p)
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


def _as_read_by_an_older_reader(ctx, doc_id: str) -> str:
    """Make the stored reading of ``doc_id`` the one an older reader left: its text without the control's paragraph
    and a layout with no reader stamp (a text stored before stamps); its hash."""
    row = next(r for r in ctx.catalog.documents(None) if r["doc_id"] == doc_id)
    path = ctx.settings.store_path / row["hash"][:2]
    (path / f"{row['hash']}.txt").write_text(OLD, encoding="utf-8")
    (path / f"{row['hash']}.layout.json").write_text(json.dumps({"pages": [], "headings": []}), encoding="utf-8")
    ctx.store._layouts.clear()
    return row["hash"]


def _texts(ctx) -> str:
    live = ctx.catalog.live_generation()
    return " ".join(p.payload["text"] for p in ctx.index.points(live.gen, 0))


def test_every_reading_is_stamped_with_its_reader_version():
    doc = load_bytes("thesis.docx", _template_docx(), limits=Limits(sandbox=False))
    assert reader_version(doc.layout) == READER_VERSIONS["docx"] >= 2
    assert reader_version(load_bytes("a.txt", b"Plain words here.").layout) == READER_VERSIONS["text"]
    assert reader_version(None) == reader_version({"pages": []}) == 1  # stored before stamps


def test_a_reingestion_reads_again_what_an_older_reader_read(make_ctx, write):
    ctx = make_ctx(theta=40)
    ingest_files(ctx, [write("thesis.docx", _template_docx()), write("notes.txt", "Notes about other things. " * 5)])
    h = _as_read_by_an_older_reader(ctx, "thesis.docx")
    notes_text = ctx.store.text(next(r["hash"] for r in ctx.catalog.documents(None) if r["doc_id"] == "notes.txt"))

    kept = reingest(ctx, reread="none")  # re-cut the stored text: the old reading stays
    assert not kept.failed and "14,000" not in _texts(ctx) and ctx.store.text(h) == OLD

    r = reingest(ctx)  # auto: the docx was read by reader 1, today's is 2
    said = {x.name: x.message for x in r.results}
    assert "read again by today's reader" in said["thesis.docx"] and said["notes.txt"] == ""
    assert "14,000 suppliers" in ctx.store.text(h) and "14,000 suppliers" in _texts(ctx)
    assert reader_version(ctx.store.layout(h)) == READER_VERSIONS["docx"]
    assert ctx.store.staged() == []
    # every live chunk indexes into the stored text it was cut from
    live = ctx.catalog.live_generation()
    text = ctx.store.text(h)
    for p in ctx.index.points(live.gen, 0):
        if p.payload["doc_id"] == "thesis.docx":
            span = " ".join(text[p.payload["start"]:p.payload["end"]].split())
            assert span and span in " ".join(p.payload["text"].split())
    assert ctx.store.text(next(r["hash"] for r in ctx.catalog.documents(None)
                               if r["doc_id"] == "notes.txt")) == notes_text

    again = reingest(ctx)  # read by today's reader now: nothing to read again
    assert {x.message for x in again.results} == {""}


def test_a_failed_reingestion_keeps_the_stored_reading_and_leaves_nothing_staged(make_ctx, write):
    ctx = make_ctx(theta=40)
    ingest_files(ctx, [write("thesis.docx", _template_docx()), write("b.txt", "Another text here. " * 5)])
    h = _as_read_by_an_older_reader(ctx, "thesis.docx")

    def boom(doc_id):
        if doc_id == "b.txt":
            raise RuntimeError("disk on fire")

    r = reingest(ctx, _fail_hook=boom)
    assert [x.name for x in r.failed] == ["b.txt"]
    assert ctx.store.text(h) == OLD and ctx.store.staged() == []


def test_a_reading_staged_before_a_crash_is_settled_by_the_next_open(make_ctx, write):
    """Killed between the switch and the promotion: the live generation's reading is promoted; another
    generation's (a re-ingestion that never switched) is dropped."""
    ctx = make_ctx(theta=40)
    ingest_files(ctx, [write("thesis.docx", _template_docx())])
    h = _as_read_by_an_older_reader(ctx, "thesis.docx")
    live = ctx.catalog.live_generation().gen
    ctx.store.stage(h, live, "The new reading of the thesis.", {"pages": [], "headings": [], "reader": 2})
    ctx.store.stage(h, live + 7, "A reading nothing indexes.", None)
    rep = check(ctx.catalog, ctx.index, ctx.settings.data_dir)
    assert rep.readings_settled == 2 and ctx.store.staged() == []
    assert ctx.store.text(h) == "The new reading of the thesis." and reader_version(ctx.store.layout(h)) == 2


def test_an_unknown_reread_choice_is_refused(make_ctx, write):
    ctx = make_ctx(theta=40)
    ingest_files(ctx, [write("a.txt", "Some words to cut. " * 5)])
    with pytest.raises(ValueError, match="reread must be auto, all or none"):
        reingest(ctx, reread="sometimes")


# -- re-ingestion through the queue's jobs -----------------------------------------------------------------------------
def test_a_reingestion_is_one_queue_job_per_document_that_the_lanes_never_take(make_ctx, write, monkeypatch):
    from ingest.jobs.queue import document_states
    from ingest.jobs.state import JobState

    ctx = make_ctx(theta=40)
    ingest_files(ctx, [write("a.txt", "Apples grow on trees in the orchard. " * 6),
                       write("b.txt", "Boats sail across the bay at dawn. " * 6)])
    states_before = {d["doc_id"]: d["state"] for d in document_states(ctx)}
    seen = []

    def spy(self, job):  # while a re-ingestion's job runs: the lanes find nothing to take
        seen.append((job.doc_id, job.target_gen, ctx.jobs.claim("refine", "lane"), ctx.jobs.claim("first", "lane")))
        return real(self, job)

    from ingest.jobs.queue import Runner
    real = Runner._rebuild
    monkeypatch.setattr(Runner, "_rebuild", spy)
    r = reingest(ctx, only=["a.txt"], theta=20)
    gen = ctx.catalog.live_generation().gen
    assert [(x.name, x.status) for x in r.results] == [("a.txt", "ingested"), ("b.txt", "copied")]
    assert seen == [("a.txt", gen, None, None)]
    jobs = [j for j in ctx.jobs.jobs() if j.target_gen is not None]
    assert [(j.doc_id, j.state, j.target_gen, j.source) for j in jobs] == [("a.txt", JobState.READY, gen, "reingest")]
    assert json.loads(jobs[0].plan)["own"]["theta"] == 20
    assert {d["doc_id"]: d["state"] for d in document_states(ctx)} == states_before  # the documents' own states


def test_a_failure_that_is_not_the_files_is_retried_and_a_reader_refusal_is_not(make_ctx, write, monkeypatch):
    from ingest.jobs.queue import LocalExecutor

    ctx = make_ctx(theta=40)
    ingest_files(ctx, [write("a.txt", "Apples grow on trees in the orchard. " * 6)])
    real, calls = LocalExecutor.refine, []

    def flaky(self, *a, **k):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("the embedder's worker went away")
        return real(self, *a, **k)

    monkeypatch.setattr(LocalExecutor, "refine", flaky)
    r = reingest(ctx, theta=20)
    assert [x.status for x in r.results] == ["ingested"] and len(calls) == 2
    job = [j for j in ctx.jobs.jobs() if j.target_gen is not None][-1]
    assert job.attempts == 1 and job.state == "ready"


def test_a_reingestion_killed_half_way_leaves_the_live_index_and_cancelled_jobs(make_ctx, write, tmp_path):
    """The process died after queueing its jobs: the next open drops the generation it was building and a runner's
    start cancels its jobs; the live index answers as before."""
    from ingest.jobs.queue import Runner
    from ingest.jobs.state import JobState

    data = tmp_path / "killed"
    ctx = make_ctx(theta=40, data_dir=data)
    ingest_files(ctx, [write("a.txt", "Apples grow on trees in the orchard. " * 6)])
    live = ctx.catalog.live_generation()
    row = ctx.catalog.documents(live.gen)[0]
    g = ctx.catalog.new_generation(live.chunker, live.theta, live.params, live.embedder, live.dim, live.n_levels)
    ctx.index.create_generation(g, live.dim, live.n_levels)
    job = ctx.jobs.add_rebuild(row, g, {"own": None, "reread": "auto"}, batch="x")
    ctx.jobs.claim_job(job.job_id, "the dead process")
    ctx.close()
    again = make_ctx(theta=40, data_dir=data)
    Runner(again).drain()
    assert again.catalog.live_generation().gen == live.gen and again.index.generations() == {live.gen}
    assert again.jobs.get(job.job_id).state == JobState.CANCELLED
    assert again.catalog.generation(g).status == "failed"


@pytest.mark.parametrize("rounds", [2, 0])
def test_uploads_and_deletions_go_on_during_a_reingestion_and_it_catches_up_with_them(make_ctx, write, monkeypatch,
                                                                                       rounds):
    """Given the write lock (the web app's), a re-ingestion holds it only per commit and for the switch: an upload,
    a new version and a deletion made while it runs land in the live index at once and in the new generation too.
    With no rounds beside the uploads, the catch-up runs holding the lock (its commits do not take it again)."""
    import ingest.jobs.rebuild as rebuild
    from ingest.store.write import delete_document

    monkeypatch.setattr(rebuild, "CATCH_UP_ROUNDS", rounds)

    ctx = make_ctx(theta=40)
    ingest_files(ctx, [write("a.txt", "Apples grow on trees in the old orchard. " * 5),
                       write("b.txt", "Bananas ripen slowly in the warm sun. " * 5),
                       write("c.txt", "Cherries are small and red and sour. " * 5)])
    before = ctx.catalog.live_generation().gen
    happened = []

    def meanwhile(doc_id: str) -> None:  # called as the re-ingestion starts each document
        if happened:
            return
        assert ctx.write_lock.acquire(timeout=0)  # free: an upload does not wait for the re-ingestion
        ctx.write_lock.release()
        ingest_files(ctx, [write("d.txt", "Dates are a sweet fruit of the desert palm. " * 5)])
        ingest_files(ctx, [write("b.txt", "Blueberries replaced the bananas this year. " * 5)])
        with ctx.write_lock:
            delete_document(ctx, "c.txt")
        happened.append(doc_id)
        assert "Dates are a sweet" in _texts(ctx)  # searchable at once, in the index still live

    report = reingest(ctx, lock=ctx.write_lock, _fail_hook=meanwhile)
    live = ctx.catalog.live_generation()
    assert happened and not report.failed and live.gen != before
    assert {r["doc_id"] for r in ctx.catalog.documents(live.gen) if r["n_l0"]} == {"a.txt", "b.txt", "d.txt"}
    texts = _texts(ctx)
    assert "Dates are a sweet" in texts and "Blueberries" in texts
    assert "Bananas" not in texts and "Cherries" not in texts  # the old version and the deleted document: gone
    assert {p.payload["doc_id"] for lv in range(live.n_levels) for p in ctx.index.points(live.gen, lv)} == \
        {"a.txt", "b.txt", "d.txt"}  # no point of the deleted document left behind
    rep = check(ctx.catalog, ctx.index)
    assert rep.removed_points == 0 and not rep.missing and not rep.pending
    said = {r.name: r.message for r in report.results if r.status == "skipped"}
    assert said == {"b.txt": "a new version came during its re-ingestion", "c.txt": "deleted during its re-ingestion"}
    assert [v["version"] for v in ctx.catalog.documents(live.gen) if v["doc_id"] == "b.txt"] == [2]


def test_a_reingestion_without_a_lock_given_holds_it_whole_as_before(make_ctx, write):
    """The CLI's way (the data dir's writer lock held): nothing is caught up because nothing can write meanwhile."""
    ctx = make_ctx(theta=40)
    ingest_files(ctx, [write("a.txt", "Apples grow on trees in the old orchard. " * 5)])
    report = reingest(ctx)
    assert not report.failed and [r.status for r in report.results] == ["ingested"]


class _Killed(BaseException):
    """The process dying half-way (nothing after it runs: no drop, no switch)."""


def _killed_half_way(make_ctx, write, data):
    """A re-ingestion of three documents killed as it starts the second: (the new context opened on the data dir,
    the generation it was building, the live generation before)."""
    ctx = make_ctx(theta=40, data_dir=data)
    ingest_files(ctx, [write("a.txt", "Apples grow on trees in the old orchard. " * 5),
                       write("b.txt", "Bananas ripen slowly in the warm sun. " * 5),
                       write("c.txt", "Cherries are small and red and sour. " * 5)])
    live = ctx.catalog.live_generation()

    def die(doc_id: str) -> None:
        if doc_id == "b.txt":
            raise _Killed()

    with pytest.raises(_Killed):
        reingest(ctx, theta=20, _fail_hook=die)
    building = ctx.catalog.generations("building")[-1].gen
    ctx.close()
    again = make_ctx(theta=40, data_dir=data)
    again.writer_lock()  # the open's consistency check
    return again, building, live


def test_a_reingestion_killed_half_way_is_resumed_with_what_it_wrote_and_what_came_since(make_ctx, write, tmp_path):
    """The next open keeps the generation an interrupted re-ingestion was building (the live index answers as before
    meanwhile); resuming it cuts only the documents it had not written, catches up with an upload and a deletion
    made since, and switches."""
    from ingest.jobs.rebuild import resume
    from ingest.store.write import delete_document

    ctx, building, before = _killed_half_way(make_ctx, write, tmp_path / "d")
    assert ctx.catalog.live_generation().gen == before.gen and building in ctx.index.generations()
    assert ctx.catalog.interrupted_reingestion()[0].gen == building
    written = {r["doc_id"] for r in ctx.catalog.documents(building) if r["n_l0"]}
    assert written == {"a.txt"}
    ingest_files(ctx, [write("d.txt", "Dates are a sweet fruit of the desert palm. " * 5)])  # after the restart
    with ctx.write_lock:
        delete_document(ctx, "c.txt")
    report = resume(ctx)
    assert report is not None and not report.failed
    live = ctx.catalog.live_generation()
    assert live.gen == building and live.theta == 20
    assert {r.name for r in report.results} == {"b.txt", "d.txt"}  # a.txt was written before the kill
    assert {r["doc_id"] for r in ctx.catalog.documents(live.gen) if r["n_l0"]} == {"a.txt", "b.txt", "d.txt"}
    texts = _texts(ctx)
    assert "Dates are a sweet" in texts and "Cherries" not in texts
    assert ctx.catalog.interrupted_reingestion() is None and resume(ctx) is None
    assert check(ctx.catalog, ctx.index).clean


def test_a_new_reingestion_drops_an_interrupted_one(make_ctx, write, tmp_path):
    from ingest.jobs.state import JobState

    ctx, building, before = _killed_half_way(make_ctx, write, tmp_path / "d")
    left = [j for j in ctx.jobs.jobs(batch=f"reingest-{building}") if j.state != JobState.READY]
    assert left
    report = reingest(ctx)
    assert not report.failed and ctx.catalog.generation(building).status == "failed"
    assert building not in ctx.index.generations() and ctx.catalog.interrupted_reingestion() is None
    assert all(ctx.jobs.get(j.job_id).state == JobState.CANCELLED for j in left)
