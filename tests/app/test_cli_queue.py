"""The CLI on the ingestion queue: `mgrag ingest` hands its files to a running holder of the data dir (a server)
instead of refusing, `--json` gives per file when it became searchable and ready, `--no-wait` only queues and
`mgrag worker --until-idle` runs what is queued, `mgrag jobs` lists the queue and `mgrag cancel` cancels."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from cli.main import main
from tests.ingest.test_durability import ROOT, open_ctx

TEXT = ("The ferry leaves at noon from the east pier. It returns at six. The crew buys rye bread at the bakery.\n\n"
        * 20)


def test_ingest_beside_a_running_server_hands_the_files_to_it(tmp_path, write):
    from ingest.jobs.queue import Runner

    data = tmp_path / "data"
    server = open_ctx(data)  # this process plays `mgrag serve`: it holds the data dir and runs the queue
    runner = Runner(server).start()
    try:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "MGRAG_EMBEDDER": "hashing", "MGRAG_CHUNKER": "mg",
               "MGRAG_THETA": "40"}
        p = subprocess.run([sys.executable, "-m", "cli.main", "--data-dir", str(data), "ingest", "--json",
                            str(write("ferry.md", TEXT)), str(write("empty.md", " "))], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 1 and "in use by" not in p.stderr, p.stderr  # 1: empty.md was refused
        files = {f["name"]: f for f in json.loads(p.stdout)["files"]}
        assert files["ferry.md"]["status"] == "ready" and 0 < files["ferry.md"]["searchable_s"] <= \
            files["ferry.md"]["ready_s"]
        assert files["empty.md"]["status"] == "refused" and files["empty.md"]["searchable_s"] is None
        live = server.catalog.live_generation()
        assert server.index.count(live.gen, 0, ["ferry.md"]) > 0  # written by the server's runner
    finally:
        runner.stop()
        server.close()


def test_no_wait_then_worker_until_idle_then_jobs_and_cancel(tmp_path, write, capsys, monkeypatch):
    monkeypatch.setenv("MGRAG_EMBEDDER", "hashing")
    monkeypatch.setenv("MGRAG_CHUNKER", "mg")
    data = str(tmp_path / "data")
    assert main(["--data-dir", data, "ingest", "--no-wait", str(write("a.md", TEXT)),
                 str(write("b.md", TEXT.replace("ferry", "tram")))]) == 0
    out = capsys.readouterr().out
    assert "2 queued" in out and "they go on when `mgrag serve` or `mgrag worker` runs" in out
    assert main(["--data-dir", data, "jobs"]) == 0
    out = capsys.readouterr().out
    assert "no process runs the queue now" in out and out.count("queued") >= 2
    assert main(["--data-dir", data, "cancel", "b.md"]) == 0
    assert "job 2: cancelled" in capsys.readouterr().out
    assert main(["--data-dir", data, "cancel", "b.md"]) == 2
    assert "no queued or running job for 'b.md'" in capsys.readouterr().err
    assert main(["--data-dir", data, "worker", "--until-idle"]) == 0
    assert main(["--data-dir", data, "docs", "--json"]) == 0
    docs = json.loads(capsys.readouterr().out)["documents"]
    assert [(d["doc_id"], d["state"]) for d in docs] == [("a.md", "ready")]
    assert main(["--data-dir", data, "jobs", "--all", "--json"]) == 0
    jobs = json.loads(capsys.readouterr().out)["jobs"]
    assert [(j["name"], j["state"]) for j in jobs] == [("a.md", "ready"), ("b.md", "cancelled")]
