"""kill -9 of the process running the queue during a refinement (in its LM pass, after the new points are written,
after the catalog has recorded them, after the old points are deleted), then a restart: each document is its first
pass or its refinement, never both, never neither, right after the restart's consistency check; then the restarted
runner finishes the work, every document ends ready with exactly the chunks of a direct LGMGC ingest, and the store
holds no ghost chunks."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from app.context import AppContext
from core.settings import Settings
from ingest.jobs.queue import Runner, enqueue, ingest_now, wait
from tests.conftest import TINY_LM_SETTINGS
from tests.ingest.test_durability import ROOT, assert_one_truth

TEXT = ("The cat sat on the mat. It was a sunny day.\n\nDogs bark at night. Birds sing in the morning! "
        "Qdrant stores vectors for every chunk. Chunks have parents and children.\n\n") * 15
DOCS = [(f"{w}.md", TEXT.replace("cat", w).encode()) for w in ("owl", "elk", "yak")]

CHILD = textwrap.dedent("""
    import os, signal, sys, time
    from app.context import AppContext
    from core.settings import Settings
    from ingest.jobs.queue import Runner

    moment, data_dir = sys.argv[1:]
    ctx = AppContext(Settings(data_dir=data_dir, chunker="lgmgc", theta=40))

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    def refining():
        return bool(ctx.jobs.jobs(("refining",)))

    if moment == "lm":  # the third forward pass of the boundary LM: in the middle of a refinement
        import ingest.text.lm as lm
        real, calls = lm.LogitsScorer._forward, [0]
        def forward(self, *a, **k):
            calls[0] += 1
            if calls[0] == 3:
                die()
            return real(self, *a, **k)
        lm.LogitsScorer._forward = forward
    elif moment == "upserted":  # just after the first store write of a refinement's commit
        idx = ctx.index
        real = idx._upsert_level
        def write(*a, **k):
            out = real(*a, **k)
            if refining():
                die()
            return out
        idx._upsert_level = write
    elif moment == "deleted":  # just after the old (first-pass) points are deleted, the commit's last store write
        idx, cat = ctx.index, ctx.catalog
        real_delete, real_record, swapped = idx.delete, cat.record_indexed, []
        def record(*a, phase=None, **k):
            out = real_record(*a, phase=phase, **k)
            swapped.append(phase is None)
            return out
        def delete(gen, ids_by_level):
            real_delete(gen, ids_by_level)
            if swapped and swapped[-1] and any(ids_by_level.values()):
                die()
        cat.record_indexed, idx.delete = record, delete
    elif moment == "recorded":  # just after the catalog's transaction that swaps in the refined chunks
        real = ctx.catalog.record_indexed
        def record(*a, phase=None, **k):
            out = real(*a, phase=phase, **k)
            if phase is None:
                die()
            return out
        ctx.catalog.record_indexed = record
    Runner(ctx, first_workers=1).start()
    time.sleep(120)
    print("finished without being killed")
""")


@pytest.fixture
def tiny_env(tiny_lm_dir, monkeypatch):
    env = {**TINY_LM_SETTINGS, "MGRAG_LM_MODEL": str(tiny_lm_dir), "MGRAG_LG_BLOCK_TOKENS": "64",
           "MGRAG_LG_CONTEXT_TOKENS": "8", "MGRAG_LG_BATCH_SIZE": "1", "MGRAG_LG_MODE": "streaming"}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return {**os.environ, **env, "PYTHONPATH": str(ROOT)}


def _points(ctx, doc_id):
    live = ctx.catalog.live_generation()
    return sorted((p.payload["level"], p.payload["start"], p.payload["end"], p.id, p.payload["text"],
                   bool(p.payload.get("first_pass")))
                  for lv in range(live.n_levels) for p in ctx.index.points(live.gen, lv)
                  if p.payload["doc_id"] == doc_id)


@pytest.mark.parametrize("moment", ["lm", "upserted", "recorded", "deleted"])
def test_kill_9_during_a_refinement_then_a_restart_ends_ready_without_ghosts(tmp_path, tiny_env, moment):
    data = tmp_path / "data"
    ctx = AppContext(Settings(data_dir=data, chunker="lgmgc", theta=40))
    ids = [q.job.job_id for q in enqueue(ctx, DOCS)]
    ctx.close()
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    child = subprocess.run([sys.executable, str(script), moment, str(data)], cwd=ROOT, env=tiny_env,
                           capture_output=True, text=True, timeout=300)
    assert child.returncode == -signal.SIGKILL, child.stdout + child.stderr[-3000:]

    ctx = AppContext(Settings(data_dir=data, chunker="lgmgc", theta=40))
    ctx.writer_lock()  # the restart: the store's consistency check
    assert_one_truth(ctx)
    live = ctx.catalog.live_generation()
    for name, _ in DOCS:  # one chunking per document, the one the catalog names
        phase = ctx.catalog.phase(live.gen, name)[1]
        marks = {p[-1] for p in _points(ctx, name)}
        assert marks == {phase == "first"}, (name, phase, marks)
    # before the catalog's transaction the job is still refining (until the restart's recovery); after it, the same
    # transaction has marked it ready
    refining = [j.name for j in ctx.jobs.jobs() if j.state == "refining"]
    killed = [name for name, _ in DOCS if ctx.catalog.phase(live.gen, name)[1] is None]
    assert len(refining) == (1 if moment in ("lm", "upserted") else 0)
    assert len(killed) == (0 if moment in ("lm", "upserted") else 1)
    runner = Runner(ctx).start()
    try:
        jobs = wait(ctx.jobs, ids, "ready", timeout_s=240)
    finally:
        runner.stop()
    assert [j.state for j in jobs] == ["ready"] * 3, [(j.name, j.state, j.error) for j in jobs]
    assert [r for r in runner.recovered if r[1] != "searchable"] == []
    assert_one_truth(ctx)
    ref = AppContext(Settings(data_dir=tmp_path / "ref", chunker="lgmgc", theta=40))
    ingest_now(ref, DOCS)
    for name, _ in DOCS:
        assert _points(ctx, name) == _points(ref, name)
    ctx.close()
    ref.close()
