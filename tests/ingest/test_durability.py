"""Durability and one truth: a child process is killed with SIGKILL at the Nth store write of an ingestion (or
just after a re-ingestion's switch); the next open's consistency check must leave the catalog and the store in
agreement (no ghost points that `ask` could cite but `docs` and `delete` cannot see). Also: one writer per data
dir (a second opener gets one line naming the directory and the holder), and a full disk."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from app.context import AppContext
from core.settings import Settings
from ingest.jobs.queue import LocalExecutor, Runner, ingest_files
from ingest.jobs.rebuild import reingest
from ingest.store.write import delete_document

ROOT = Path(__file__).resolve().parents[2]
TEXT = ("The cat sat on the mat. It was a sunny day.\n\nDogs bark at night. Birds sing in the morning! "
        "Qdrant stores vectors for every chunk. Chunks have parents and children.\n\n") * 4

CHILD = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from app.context import AppContext
    from core.settings import Settings
    from ingest.embed import HashingEmbedder
    from ingest.jobs.queue import ingest_files
    from ingest.jobs.rebuild import reingest

    action, n, data_dir, engine, *paths = sys.argv[1:]
    n = int(n)
    ctx = AppContext(Settings(data_dir=data_dir, embedder="hashing", chunker="mg", theta=40, qdrant_engine=engine),
                     embedder=HashingEmbedder(dim=64))
    idx = ctx.index
    writes = [0]

    def kill_after(obj, name, when=lambda *a: True, count=True):
        real = getattr(obj, name)
        def wrapped(*a, **k):
            out = real(*a, **k)
            if count:
                writes[0] += 1
            if (writes[0] == n if count else True) and when(*a):
                os.kill(os.getpid(), signal.SIGKILL)
            return out
        setattr(obj, name, wrapped)

    if action == "ingest":  # the Nth store write (a batch upsert, a delete, a shard created)
        for name in ("create_level", "_upsert_level", "upsert_points", "delete", "delete_unowned", "drop_generation"):
            kill_after(idx, name)
        ingest_files(ctx, paths)
    elif action == "after-index-switch":
        kill_after(idx, "switch", count=False)
        reingest(ctx, chunker="mg", theta=20)
    elif action == "after-catalog-switch":
        kill_after(ctx.catalog, "set_generation_status", when=lambda gen, status: status == "live", count=False)
        reingest(ctx, chunker="mg", theta=20)
    print("finished without being killed")
""")


def settings(data_dir, engine="edge", **kw):
    return Settings(data_dir=data_dir, embedder="hashing", chunker="mg", theta=40, qdrant_engine=engine, **kw)


def open_ctx(data_dir, engine="edge", **kw):
    from ingest.embed import HashingEmbedder

    return AppContext(settings(data_dir, engine, **kw), embedder=HashingEmbedder(dim=64))


def run_child(tmp_path, *args) -> subprocess.CompletedProcess:
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, str(script), *map(str, args)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


def assert_one_truth(ctx) -> None:
    """Every point of the live generation is a chunk row of a listed document, and the other way round; BM25
    holds the same ids; no other generation is left in the store."""
    live = ctx.catalog.live_generation()
    docs = {r["doc_id"] for r in ctx.catalog.documents(live.gen) if r["n_l0"] is not None}
    assert ctx.index.generations() == {live.gen}
    for lv in range(live.n_levels):
        rows = ctx.catalog.level_chunk_ids(live.gen, lv)
        points = {p.id: p.payload["doc_id"] for p in ctx.index.points(live.gen, lv)}
        assert points == rows, f"level {lv}: store and catalog differ"
        assert set(points.values()) <= docs
        assert ctx.index.has_keywords(live.gen, lv)  # the keywords live in those points
    assert not ctx.catalog.pending()


def base(tmp_path, engine):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, word in (("a.txt", "cat"), ("b.txt", "owl")):
        (docs / name).write_text(TEXT.replace("cat", word), encoding="utf-8")
    data = tmp_path / "data"
    ctx = open_ctx(data, engine)
    r = ingest_files(ctx, [docs / "a.txt", docs / "b.txt"])
    assert [x.status for x in r.results] == ["ingested", "ingested"]
    ctx.close()
    (docs / "c.txt").write_text(TEXT.replace("cat", "elk"), encoding="utf-8")  # new
    (docs / "a.txt").write_text(TEXT.replace("cat", "yak"), encoding="utf-8")  # a new version of a.txt
    return data, docs


@pytest.mark.parametrize("engine", ["edge", "local"])
@pytest.mark.parametrize("n", [2, 4, 7])
def test_killed_at_the_nth_store_write(tmp_path, engine, n):
    data, docs = base(tmp_path, engine)
    # writes: c.txt L0, L1, L2, delete of its (no) old points; a.txt v2 L0, L1, L2 (7), delete of v1's points
    child = run_child(tmp_path, "ingest", n, data, engine, docs / "c.txt", docs / "a.txt")
    assert child.returncode == -signal.SIGKILL, child.stdout + child.stderr
    ctx = open_ctx(data, engine)
    assert_one_truth(ctx)
    assert n != 2 or not ctx.check_report.clean  # killed mid-document: its points were removed on open
    live = ctx.catalog.live_generation()
    names = {r["doc_id"] for r in ctx.catalog.documents(live.gen)}
    hits = [h for lv in range(3) for h in ctx.index.search(lv, ctx.embedder.embed_queries(["elk yak cat"])[0], 50)]
    assert {h.payload["doc_id"] for h in hits} <= names
    Runner(ctx, LocalExecutor(ctx)).drain()  # the next runner finishes what the killed one had queued
    live = ctx.catalog.live_generation()
    names = {r["doc_id"]: r["version"] for r in ctx.catalog.documents(live.gen)}
    assert names == {"a.txt": 2, "b.txt": 1, "c.txt": 1}
    assert_one_truth(ctx)
    for d in sorted(names):  # what `docs` lists, `delete` removes entirely
        delete_document(ctx, d)
    assert sum(ctx.index.count(live.gen, lv) for lv in range(3)) == 0
    r = ingest_files(ctx, [docs / "a.txt", docs / "b.txt", docs / "c.txt"])  # and the dir still works
    assert [x.status for x in r.results] == ["ingested"] * 3
    assert_one_truth(ctx)
    ctx.close()


@pytest.mark.parametrize("engine", ["edge", "local"])
@pytest.mark.parametrize("when", ["after-index-switch", "after-catalog-switch"])
def test_killed_just_after_the_switch(tmp_path, engine, when):
    data, _ = base(tmp_path, engine)
    ctx = open_ctx(data, engine)
    g1 = ctx.catalog.live_gen()
    ctx.close()
    child = run_child(tmp_path, when, 0, data, engine)
    assert child.returncode == -signal.SIGKILL, child.stdout + child.stderr
    ctx = open_ctx(data, engine)
    live = ctx.catalog.live_generation()
    # before the catalog's transaction the old generation stays live; after it, the new one
    assert live.gen == (g1 if when == "after-index-switch" else g1 + 1)
    assert live.theta == (40 if when == "after-index-switch" else 20)
    if when == "after-index-switch":  # its generation is kept for the re-ingestion to be resumed, which switches it
        from ingest.jobs.rebuild import resume

        assert ctx.index.search(0, ctx.embedder.embed_queries(["owl"])[0], 3)  # the live index answers meanwhile
        assert ctx.check_report.interrupted == g1 + 1
        report = resume(ctx)
        assert report is not None and not report.failed and report.results == []  # every document was written
        live = ctx.catalog.live_generation()
        assert live.gen == g1 + 1 and live.theta == 20
    assert_one_truth(ctx)
    if engine == "local":
        assert ctx.index.live_collections()[ctx.index.alias(0)] == ctx.index.collection(live.gen, 0)
    assert ctx.index.search(0, ctx.embedder.embed_queries(["owl"])[0], 3)
    delete_document(ctx, "b.txt")  # later deletes go to the live generation
    assert ctx.index.count(live.gen, 0, ["b.txt"]) == 0 and ctx.index.count(live.gen, 0, ["a.txt"]) > 0
    ctx.close()


def test_a_second_writer_gets_one_line_naming_the_dir_and_the_holder(tmp_path, write):
    from core.datalock import acquire

    data = tmp_path / "data"
    lock = acquire(data)  # this process plays a writer that does not run the ingestion queue
    try:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "MGRAG_EMBEDDER": "hashing", "MGRAG_CHUNKER": "mg"}
        for argv in (["ask", "What sat on the mat?"], ["delete", "a.txt"]):
            p = subprocess.run([sys.executable, "-m", "cli.main", "--data-dir", str(data), *argv], cwd=ROOT, env=env,
                               capture_output=True, text=True, timeout=120)
            assert p.returncode == 5, p.stderr
            lines = p.stderr.strip().splitlines()
            assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
            assert lines[0].startswith(f"error: data directory {data} is in use by process {os.getpid()} (")
        # `mgrag docs` reads the catalog only, so it works beside the running writer
        p = subprocess.run([sys.executable, "-m", "cli.main", "--data-dir", str(data), "docs"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0 and "no documents" in p.stdout, p.stderr
    finally:
        lock.release()


def test_ingest_beside_another_writer_queues_and_waits_instead_of_refusing(tmp_path, write):
    """`mgrag ingest` while another process holds the data dir (and does not run the queue): the files are queued,
    the command says what it waits for, and it runs them once the holder is gone; --no-wait only queues."""
    data = tmp_path / "data"
    first = open_ctx(data)
    ingest_files(first, [write("a.txt", TEXT)])
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MGRAG_EMBEDDER": "hashing", "MGRAG_CHUNKER": "mg"}
    cli = [sys.executable, "-m", "cli.main", "--data-dir", str(data), "ingest"]
    p = subprocess.run(cli + ["--no-wait", str(write("c.txt", TEXT.replace("cat", "owl")))], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "1 queued" in p.stdout and "they go on when `mgrag serve`" in p.stdout, p.stdout
    waiting = subprocess.Popen(cli + [str(write("b.txt", TEXT.replace("cat", "fox")))], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = waiting.stderr.readline()
        while line and not line.startswith("waiting:"):
            line = waiting.stderr.readline()
        assert line.startswith(f"waiting: data directory {data} is in use by process {os.getpid()}"), line
        live = first.catalog.live_generation()
        assert first.index.count(live.gen, 0, ["b.txt"]) == 0 and waiting.poll() is None  # nothing written meanwhile
        # b.txt is queued before the command says it waits, so this snapshot is not a race
        assert {j.name: j.state for j in first.jobs.jobs()} == {"a.txt": "ready", "c.txt": "queued", "b.txt": "queued"}
        first.close()  # the holder goes: the waiting command takes the data dir and runs the queue
        out, err = waiting.communicate(timeout=120)
    finally:
        if waiting.poll() is None:
            waiting.kill()
    assert waiting.returncode == 0 and "ready      b.txt" in out, out + err
    second = open_ctx(data)
    second.writer_lock()
    assert [r["doc_id"] for r in second.catalog.documents(second.catalog.live_gen())] == ["a.txt", "b.txt", "c.txt"]
    assert_one_truth(second)
    second.close()


def test_opening_the_store_beside_another_writer_is_refused(tmp_path):
    from core.datalock import DataDirBusy

    data = tmp_path / "data"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    other = subprocess.Popen([sys.executable, "-c", f"from core.datalock import acquire; acquire({str(data)!r}); "
                              "import time; print('held', flush=True); time.sleep(60)"], cwd=ROOT, env=env,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout.readline().strip() == "held"
        with pytest.raises(DataDirBusy, match=f"data directory {data} is in use by process {other.pid}"):
            _ = open_ctx(data).index  # opening the embedded store takes the lock too
    finally:
        other.kill()
        other.wait()


def test_lock_is_released_when_the_holder_is_killed(tmp_path):
    from core.datalock import acquire

    data = tmp_path / "data"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    other = subprocess.Popen([sys.executable, "-c", f"from core.datalock import acquire; acquire({str(data)!r}); "
                              "import time; print('held', flush=True); time.sleep(60)"], cwd=ROOT, env=env,
                             stdout=subprocess.PIPE, text=True)
    assert other.stdout.readline().strip() == "held"
    os.kill(other.pid, signal.SIGKILL)
    other.wait()
    acquire(data).release()


def test_disk_full_at_a_store_write_keeps_the_index_and_prints_the_report(tmp_path, write, monkeypatch, capsys):
    """ENOSPC simulated at the second store write, and the rollback failing too (the disk is still full): the
    CLI still prints its report, the live index answers as before, and the next open removes the ghost points."""
    import errno

    from cli import main as cli

    data = tmp_path / "data"
    ctx = open_ctx(data)
    ingest_files(ctx, [write("a.txt", TEXT)])
    live = ctx.catalog.live_generation()
    before = [ctx.index.count(live.gen, lv) for lv in range(3)]
    calls = [0]
    real_upsert, real_delete = ctx.index._upsert_level, ctx.index.delete

    def full(*a, **k):
        calls[0] += 1
        if calls[0] >= 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_upsert(*a, **k)

    monkeypatch.setattr(ctx.index, "_upsert_level", full)
    monkeypatch.setattr(ctx.index, "delete", lambda *a, **k: (_ for _ in ()).throw(OSError(errno.ENOSPC, "full")))
    monkeypatch.setattr(cli, "_ctx", lambda args: ctx)
    assert cli.main(["ingest", str(write("b.txt", TEXT.replace("cat", "owl")))]) == 1
    out = capsys.readouterr().out
    assert "FAILED     b.txt: OSError: [Errno 28] No space left on device" in out and "0 ready" in out
    assert ctx.catalog.pending() == [(live.gen, "b.txt")]  # the rollback could not run: the next open finishes it
    assert ctx.index.count(live.gen, 0, ["b.txt"]) > 0  # a ghost, for now
    monkeypatch.setattr(ctx.index, "_upsert_level", real_upsert)
    monkeypatch.setattr(ctx.index, "delete", real_delete)
    ctx.close()
    ctx = open_ctx(data)
    assert [ctx.index.count(live.gen, lv) for lv in range(3)] == before
    assert_one_truth(ctx)
    assert not list(data.rglob("*.tmp"))
    ctx.close()


def _mount_tmpfs(path: Path, size: str) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True).returncode == 0


def test_full_tmpfs_refuses_the_write_cleanly(tmp_path, write):
    """A real full disk: a tmpfs as the data dir, nearly filled by a ballast file. Edge writes through memory maps,
    where a full disk kills the process with SIGBUS instead of failing the write; the index checks the room
    first, so the file fails with a message naming the problem, the report is printed and the index is intact."""
    data = tmp_path / "small"
    if not _mount_tmpfs(data, "192m"):
        pytest.skip("mounting a tmpfs needs root (the ENOSPC test above simulates the full disk instead)")
    try:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "MGRAG_EMBEDDER": "hashing", "MGRAG_CHUNKER": "recursive"}
        small = write("small.txt", TEXT)
        big = write("big.txt", " ".join(f"Sentence number {i} is here." for i in range(250_000)))  # ~7 MB
        cli = [sys.executable, "-m", "cli.main", "--data-dir", str(data), "ingest", "--quiet"]
        p = subprocess.run(cli + [str(small)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        ballast = data / "ballast"
        ballast.write_bytes(b"\0" * (shutil.disk_usage(data).free - 100 * 2**20))  # leave 100 MiB
        p = subprocess.run(cli + [str(big)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == 1 and "Traceback" not in p.stdout + p.stderr, p.stdout + p.stderr
        assert "FAILED     big.txt: OSError: [Errno 28] not enough free disk space for the index" in p.stdout
        assert "0 ready" in p.stdout  # the report was printed
        assert not list(data.rglob("*.tmp"))
        ballast.unlink()
        from ingest.embed import HashingEmbedder

        ctx = AppContext(Settings(data_dir=data, embedder="hashing", chunker="recursive"), embedder=HashingEmbedder())
        ctx.writer_lock()
        rep = ctx.check_report  # the failed file's stored original, which no row refers to, is removed
        assert rep.removed_orphans == 1 and not (rep.pending or rep.removed_points or rep.missing or rep.removed_tmp)
        assert [r["doc_id"] for r in ctx.catalog.documents(ctx.catalog.live_gen())] == ["small.txt"]
        assert_one_truth(ctx)
        ctx.close()
    finally:
        if subprocess.run(["umount", str(data)], capture_output=True).returncode:
            subprocess.run(["umount", "-l", str(data)], capture_output=True)


def test_serve_holds_the_lock_and_its_app_opens_the_store(tmp_path, monkeypatch):
    """`mgrag serve` takes the lock before any model loads; the web app's own context in the same process then
    opens the store (an Edge shard opens once per process, so the CLI must not open it first)."""
    import ui.app
    from cli import main as cli
    from core.datalock import held

    data = tmp_path / "data"
    seen = {}

    def fake_serve(s):
        seen["held"] = held(s.data_dir)
        ctx = AppContext(s)
        seen["index"] = type(ctx.index).__name__
        ctx.close()
        return 0

    monkeypatch.setattr(ui.app, "serve", fake_serve)
    monkeypatch.setenv("MGRAG_EMBEDDER", "hashing")
    assert cli.main(["--data-dir", str(data), "serve"]) == 0
    assert seen == {"held": True, "index": "EdgeIndex"}


def test_check_on_a_server_never_drops_another_data_dirs_generations(tmp_path, write):
    """On a shared Qdrant server a collection this catalog did not make may be someone else's: the check leaves
    it; a generation this catalog made and retired is dropped; an embedded store's strays are always dropped."""
    from qdrant_client import QdrantClient

    from ingest.embed import HashingEmbedder
    from ingest.store.consistency import check

    server = QdrantClient(":memory:")
    ctx = AppContext(settings(tmp_path / "data"), embedder=HashingEmbedder(dim=64), client=server)
    ingest_files(ctx, [write("a.txt", TEXT)])
    g1 = ctx.catalog.live_gen()
    reingest(ctx, chunker="mg", theta=20)
    g2 = ctx.catalog.live_gen()
    ctx.index.create_generation(99, 64, 1)  # another deployment's, same prefix
    ctx.index.create_generation(g1, 64, 1)  # ours, retired, left behind
    rep = check(ctx.catalog, ctx.index, own_store=False)
    assert ctx.index.generations() == {g2, 99} and g1 in rep.dropped_generations
    check(ctx.catalog, ctx.index, own_store=True)
    assert ctx.index.generations() == {g2}
