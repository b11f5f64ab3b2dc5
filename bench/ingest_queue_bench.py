"""The ingestion queue measured: time to searchable and to ready against a one-phase ingest, the queue under load,
the peak memory of a large PDF, and one vs two workers on one Redis queue.

Every part uses the product's defaults (LGMGC streaming with the size prior, θ 300, the shipped Gemma-3-270M and
MiniLM, on this machine's CPU) and the real runner (``ingest/jobs/queue.py``); models are loaded once, before any clock
starts. Figures compared with each other are taken side by side in one run.

* ``phases``: for each document, a fresh data dir ingested twice, in alternating order: **two phases** (the default:
  MG first pass, then the LGMGC refinement) and **one phase** (``first_pass=false``: what every upload cost before
  the queue). Reported: seconds to searchable (and whether a question asked at that moment cites the document, with
  the extractive backend), seconds to ready, and searchable(two phases) / ready(one phase). Documents: the first
  30,000 words of *Emma* (``../shared/bench/gutenqa_emma``), a 100+ page PDF (``--pdf``; default the 168-page 2016
  annual performance report of docugami/KG-RAG-datasets' us-fed-agency-reports, fetched beside the repository), and
  the whole of *Emma*.
* ``load``: 10 clients upload 3 files each at once through the web app's service (``AppService.ingest_files``, what
  the Chat tab's upload runs: each waits until its files are searchable), while an 11th uploads the large PDF. The
  files are LongBench and chroma documents (``../shared/bench``). Reported: per upload seconds to searchable (p50,
  p95, max), the PDF's, the time until all are ready, and the checks: every file searchable, none lost, the catalog
  and the index holding the same chunk ids.
* ``memory``: the peak resident memory of reading a 300-page PDF (two of the agency reports concatenated) in page
  ranges of 40 (the default) against all pages at once, each in a fresh process: the parent's and the largest
  extraction child's.
* ``batching``: the boundary LM's tokens per second with 1, 2, 4 and 8 blocks per forward pass.
* ``workers``: the same batch of documents through Redis (Debian's redis-server on loopback) with one and with two
  ``mgrag worker`` processes, the holder writing to qdrant-client in memory: seconds until all are ready.

    .venv/bin/python bench/ingest_queue_bench.py phases        # writes BENCHMARKS.md "Ingestion queue: phases"
    .venv/bin/python bench/ingest_queue_bench.py load
    .venv/bin/python bench/ingest_queue_bench.py memory
    .venv/bin/python bench/ingest_queue_bench.py workers
    .venv/bin/python bench/ingest_queue_bench.py batching     # LM blocks per forward pass: is cross-document batching worth it
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.evaluation.bench import BENCH_DIR, LoadMonitor, machine_info, markdown_table, write_json, write_section  # noqa: E402

log = logging.getLogger("ingest_queue_bench")
DEVDATA = ROOT.parent / "devdata" / "us-fed-agency-reports" / "data" / "v1" / "docs"
PDF = DEVDATA / "2016-annual-performance-report.pdf"
PDF2 = DEVDATA / "2015-annual-performance-report.pdf"
# what these benchmarks measure: the two-phase ingest of the LM chunker (the product's default until issue 24 made
# it mg, which has one phase); set explicitly so that a re-run measures what the sections describe
LGMGC = "lgmgc"
ENV = {"PYTHONPATH": str(ROOT), "MGRAG_CHUNKER": LGMGC}


def _models():
    """The default settings' embedder and boundary LM, loaded once (their load is not part of any figure)."""
    from app.context import AppContext
    from core.settings import Settings

    ctx = AppContext(Settings(data_dir=Path(tempfile.mkdtemp(prefix="mgrag-bench-models-"))))
    return ctx.embedder, ctx.scorer


def _ctx(data_dir: Path, embedder, scorer, **settings):
    from app.context import AppContext
    from core.settings import Settings

    settings.setdefault("chunker", LGMGC)
    return AppContext(Settings(data_dir=data_dir, **settings), embedder=embedder, scorer=scorer)


def _emma() -> str:
    return (BENCH_DIR / "gutenqa_emma" / "docs" / "emma.txt").read_text(encoding="utf-8")


def _words_prefix(text: str, n: int) -> str:
    """The first ``n`` words of ``text``, cut at the paragraph break before the n-th word."""
    import re

    ends = [m.end() for m in re.finditer(r"\S+", text)]
    cut = ends[min(n, len(ends)) - 1]
    para = text.rfind("\n\n", 0, cut)
    return text[:para if para > 0 else cut]


def _question(text: str) -> str:
    """A GutenQA Emma question whose evidence lies in ``text`` (else a general one)."""
    for line in (BENCH_DIR / "gutenqa_emma" / "questions.jsonl").read_text().splitlines():
        q = json.loads(line)
        if all(e.get("end", 1e12) <= len(text) for e in q.get("evidence") or [{}]):
            return q["question"]
    return "What is this document about?"


# -- phases -----------------------------------------------------------------------------------------------------
def _ingest_once(name: str, data: bytes, question: str, embedder, scorer, first_pass: bool) -> dict:
    from app.answer import answer
    from ingest.jobs.queue import Runner, enqueue, wait

    d = Path(tempfile.mkdtemp(prefix="mgrag-bench-"))
    ctx = _ctx(d, embedder, scorer, first_pass=first_pass)
    try:
        runner = Runner(ctx).start()
        t0 = time.monotonic()
        [q] = enqueue(ctx, [(name, data)])
        [job] = wait(ctx.jobs, [q.job.job_id], "searchable", poll_s=0.1)
        t_s = time.monotonic() - t0
        a = answer(ctx, question, backend="extractive")
        t_cited = time.monotonic() - t0
        cited = any(c.doc_id == name for c in a.citations) or any(s.doc_id == name for s in a.sources)
        [job] = wait(ctx.jobs, [q.job.job_id], "ready", poll_s=0.2)
        runner.stop()
        # the catalog's own timestamps (the answer asked in between does not count)
        t_s, t_r = job.searchable_at - job.created, job.ready_at - job.created
        live = ctx.catalog.live_generation()
        counts = ctx.catalog.chunk_counts(live.gen)
        return {"searchable_s": round(t_s, 2), "answered_s": round(t_cited, 2), "ready_s": round(t_r, 2),
                "state": job.state, "cited": bool(a.citations) and cited, "abstained": a.abstained,
                "answer": a.text[:160], "first_pass_source": bool(a.sources and a.sources[0].first_pass),
                "chunks": [counts.get(lv, 0) for lv in range(live.n_levels)], "words": job.words}
    finally:
        ctx.close()
        shutil.rmtree(d, ignore_errors=True)


def phases(args) -> dict:
    embedder, scorer = _models()
    emma = _emma()
    docs = [("emma-30k.txt", _words_prefix(emma, 30_000).encode())]
    if Path(args.pdf).exists():
        docs.append((Path(args.pdf).name, Path(args.pdf).read_bytes()))
    else:
        log.warning("no %s: the PDF row is left out (fetch docugami/KG-RAG-datasets)", args.pdf)
    if not args.no_emma:
        docs.append(("emma.txt", emma.encode()))
    mon = LoadMonitor()
    rows = []
    for i, (name, data) in enumerate(docs):
        from ingest.readers.loaders import Limits, load_bytes
        from ingest.text.sentences import count_words

        text = load_bytes(name, data, limits=Limits()).text
        q = _question(text) if name.startswith("emma") else "What are the agency's strategic goals?"
        order = [True, False] if i % 2 == 0 else [False, True]
        res = {}
        for two in order:
            log.info("%s: %s", name, "two phases" if two else "one phase")
            res["two" if two else "one"] = _ingest_once(name, data, q, embedder, scorer, two)
            log.info("  %s", res["two" if two else "one"])
        rows.append({"document": name, "words": count_words(text), "question": q, **res,
                     "ratio_searchable_two_vs_ready_one": round(res["two"]["searchable_s"] / res["one"]["ready_s"], 3),
                     "order": "two phases first" if order[0] else "one phase first"})
    out = {"rows": rows, "load": mon.summary(), "machine": machine_info()}
    write_json("ingest_phases.json", out)
    _phases_section(out)
    return out


def _phases_section(out: dict) -> None:
    rows = out["rows"]
    table = markdown_table(
        ["document", "words", "two phases: searchable (s)", "cited then?", "two phases: ready (s)",
         "one phase: searchable = ready (s)", "searchable / one-phase ready"],
        [[r["document"], f"{r['words']:,}", f"{r['two']['searchable_s']:.1f}",
          "yes" if r["two"]["cited"] else ("abstained" if r["two"]["abstained"] else "no"),
          f"{r['two']['ready_s']:.1f}", f"{r['one']['ready_s']:.1f}", f"{r['ratio_searchable_two_vs_ready_one']:.2f}"]
         for r in rows])
    write_section("ingest-phases", f"""## Ingestion queue: searchable in seconds, refined in the background (`bench/ingest_queue_bench.py phases`)

Each document into a fresh data dir with LGMGC (`chunker=lgmgc`, the default when this was measured; streaming, size
prior 1, θ 300, Gemma-3-270M and MiniLM on this machine's 2 CPU cores; models loaded before the clocks start), twice
in alternating order: **two phases** (LGMGC's default: an MG first pass makes it searchable, the LGMGC refinement
replaces its chunks in the background; with today's default chunker, `mg`, the first pass is the whole ingest) and
**one phase** (`MGRAG_FIRST_PASS=false`, the only way before the queue: searchable when LGMGC is done). Clocks run
from the upload (`enqueue`) to the job's state in the catalog; at the moment it is searchable the extractive
backend is asked a question about it ("cited then?"). Load average during the run
{out['load']['load1_mean']:.1f} (max {out['load']['load1_max']:.1f}).

{table}

The first pass costs the embedding of MG's three levels (no LM); the refinement costs the LM pass plus the embedding
of the LGMGC chunks the first pass did not already embed (the others keep their vectors), so a two-phase document
is ready a little later than a one-phase one, and searchable in the share of that time shown in the last column.

Raw figures: `bench/results/ingest_phases.json`.
""")


# -- load -------------------------------------------------------------------------------------------------------
def _bench_files(n: int) -> list[tuple[str, bytes]]:
    out = []
    for set_name in ("longbench_sample", "chroma"):
        for p in sorted((BENCH_DIR / set_name / "docs").iterdir()):
            if p.is_file():
                out.append((f"{set_name}-{p.name}", p.read_bytes()))
    if len(out) < n:  # more uploads than files: the later ones are the same texts with a line of their own
        out += [(f"copy{i}-{name}", data + f"\n\nCopy {i}.\n".encode()) for i, (name, data) in enumerate(out * n)]
    return out[:n]


def load(args) -> dict:
    from ingest.store.consistency import check
    from services.service import AppService

    embedder, scorer = _models()
    d = Path(tempfile.mkdtemp(prefix="mgrag-bench-load-"))
    ctx = _ctx(d, embedder, scorer)
    upload_dir = d / "uploads"
    upload_dir.mkdir()
    svc = AppService(ctx, admin_password="bench", upload_root=upload_dir)
    files = _bench_files(args.clients * args.per_client)
    for name, data in files:
        (upload_dir / name).write_bytes(data)
    pdf = Path(args.pdf)
    big = upload_dir / pdf.name
    if pdf.exists():
        shutil.copy(pdf, big)
    results: dict[str, dict] = {}
    mon = LoadMonitor(interval=5)
    t0 = time.monotonic()

    def client(i: int, names: list[str]) -> None:
        t = time.monotonic()
        rows = svc.ingest_files([upload_dir / n for n in names], owner=f"browser:bench-client-{i:02d}")
        for r in rows:
            results[r["name"]] = {"client": i, "status": r["status"], "searchable_s": round(time.monotonic() - t, 2)}

    threads = [threading.Thread(target=client, args=(i, [n for n, _ in files[i * args.per_client:(i + 1) *
                                                                           args.per_client]]))
               for i in range(args.clients)]
    if big.exists():
        threads.append(threading.Thread(target=client, args=(args.clients, [big.name])))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    t_all_searchable = time.monotonic() - t0
    from ingest.jobs.state import ACTIVE

    while ctx.jobs.jobs(ACTIVE):
        time.sleep(1.0)
    t_all_ready = time.monotonic() - t0
    svc.close()
    live = ctx.catalog.live_generation()
    rep = check(ctx.catalog, ctx.index, d)  # the consistency check: finds nothing to repair
    same = all(set(ctx.catalog.level_chunk_ids(live.gen, lv)) == ctx.index.ids(live.gen, lv)
               for lv in range(live.n_levels))
    from ingest.jobs.queue import document_states

    states = [r["state"] for r in document_states(ctx)]
    per_file = {j.name: {"searchable_s": round(j.searchable_at - j.created, 1) if j.searchable_at else None,
                         "ready_s": round(j.ready_at - j.created, 1) if j.ready_at else None, "owner": j.owner}
                for j in ctx.jobs.jobs()}
    small = [r["searchable_s"] for n, r in per_file.items() if n != big.name and r["searchable_s"] is not None]
    firsts = {}
    for n, r in per_file.items():  # each client's first file searchable
        if n != big.name and r["searchable_s"] is not None:
            firsts[r["owner"]] = min(firsts.get(r["owner"], 1e9), r["searchable_s"])
    calls = [r["searchable_s"] for n, r in results.items() if n != big.name]
    out = {"clients": args.clients, "per_client": args.per_client, "files": len(files) + big.exists(),
           "results": results, "per_file": per_file, "searchable_p50_s": float(np.percentile(small, 50)),
           "searchable_p95_s": float(np.percentile(small, 95)), "searchable_max_s": max(small),
           "client_first_p50_s": float(np.percentile(list(firsts.values()), 50)),
           "client_call_p50_s": float(np.percentile(calls, 50)), "client_call_max_s": max(calls),
           "words": sum(len(d.split()) for _, d in files),
           "pdf_searchable_s": per_file.get(big.name, {}).get("searchable_s"), "all_searchable_s": t_all_searchable,
           "all_ready_s": t_all_ready, "documents": len(states), "ready": states.count("ready"),
           "catalog_equals_index": same, "consistency_check_clean": rep.clean,
           "lost": len(files) + big.exists() - len(results), "load": mon.summary(), "machine": machine_info()}
    write_json("ingest_load.json", out)
    ctx.close()
    write_section("ingest-load", f"""## Ingestion queue under load (`bench/ingest_queue_bench.py load`)

{args.clients} clients upload {args.per_client} files each at once (LongBench and chroma documents from
`../shared/bench`, 2k-60k words), and an 11th uploads a {PDF.name if big.exists() else '(missing)'} (168 pages),
through the web app's upload service (`AppService.ingest_files`: queue, then wait until searchable), with LGMGC
(`chunker=lgmgc`, the default when this was measured; 2 first-pass lanes and 1 refinement lane on this 2-core machine). Load average
{out['load']['load1_mean']:.1f} (max {out['load']['load1_max']:.1f}).

| uploads (words) | a file searchable: p50 / p95 / max (s) | a client's first file searchable, p50 (s) | a client's upload returns: p50 / max (s) | the large PDF searchable (s) | all searchable (s) | all ready (s) | documents ready | lost | catalog = index |
|---|---|---|---|---|---|---|---|---|---|
| {out['files']} ({out['words']:,} + the PDF) | {out['searchable_p50_s']:.0f} / {out['searchable_p95_s']:.0f} / {out['searchable_max_s']:.0f} | {out['client_first_p50_s']:.0f} | {out['client_call_p50_s']:.0f} / {out['client_call_max_s']:.0f} | {out['pdf_searchable_s']} | {t_all_searchable:.0f} | {t_all_ready:.0f} | {out['ready']} of {out['documents']} | {out['lost']} | {'yes' if same and rep.clean else 'NO'} |

Times are from the upload; a client's upload returns when its three files are searchable. The first passes of all
the files are one batch of work for the machine's two cores (their embedding), so the last files wait for the
others: the queue makes every file searchable long before any is refined, and no upload is lost or blocked by
another's failure, but on 2 cores 30 files at once take minutes, not seconds.

"Catalog = index": every level's chunk ids in the store equal the catalog's, and the consistency check run after the
load found nothing to repair. Raw figures: `bench/results/ingest_load.json`.
""")
    shutil.rmtree(d, ignore_errors=True)
    return out


# -- memory -----------------------------------------------------------------------------------------------------
# The children's own peak (VmHWM, which exec resets) polled from /proc every 20 ms: getrusage's figure for children
# counts the parent's pages the child shares between fork and exec, so it reports about the parent's size.
_WATCH = """
import os, threading, time
child_peak = {}

def _watch():
    me = os.getpid()
    while True:
        try:
            kids = [int(x) for t in os.listdir(f"/proc/{me}/task")
                    for x in open(f"/proc/{me}/task/{t}/children").read().split()]
        except OSError:
            kids = []
        for k in kids:
            try:
                for line in open(f"/proc/{k}/status"):
                    if line.startswith("VmHWM:"):
                        child_peak[k] = max(child_peak.get(k, 0), int(line.split()[1]) / 1024)
            except OSError:
                pass
        time.sleep(0.02)

threading.Thread(target=_watch, daemon=True).start()
"""

_MEASURE = _WATCH + """
import json, resource, sys, time
from ingest.readers.loaders import Limits, load_bytes
data = open(sys.argv[1], "rb").read()
t = time.monotonic()
doc = load_bytes("big.pdf", data, limits=Limits(max_bytes=None, pdf_pages_per_range=int(sys.argv[2]),
                                                 timeout_s=600, memory_mb=8192))
print(json.dumps({"seconds": time.monotonic() - t, "pages": len(doc.layout["pages"]), "words": len(doc.text.split()),
                  "parent_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "child_mb": max(child_peak.values(), default=0), "children": len(child_peak)}))
"""


def memory(args) -> dict:
    from pypdf import PdfReader, PdfWriter

    big = Path(tempfile.mkdtemp(prefix="mgrag-bench-pdf-")) / "big.pdf"
    w = PdfWriter()
    for p in (PDF, PDF2):
        for page in PdfReader(str(p)).pages:
            w.add_page(page)
    with open(big, "wb") as f:
        w.write(f)
    n_pages = len(PdfReader(str(big)).pages)
    rows = []
    for per in (40, 100_000, 40, 100_000):
        p = subprocess.run([sys.executable, "-c", _MEASURE, str(big), str(per)], cwd=ROOT, capture_output=True,
                           text=True, env={**os.environ, **ENV})
        if p.returncode != 0:
            raise RuntimeError(p.stderr[-2000:])
        r = json.loads(p.stdout.strip().splitlines()[-1])
        rows.append({"pages_per_range": per, **r})
        log.info("%s", rows[-1])
    by = {per: [r for r in rows if r["pages_per_range"] == per] for per in (40, 100_000)}
    whole = []
    for wait_for in ("searchable", "ready"):  # the whole ingest, models included, as `mgrag ingest` runs it
        d = Path(tempfile.mkdtemp(prefix="mgrag-bench-mem-"))
        code = (_WATCH + "import json, resource, sys, time\nfrom cli.main import main\nt = time.monotonic()\n"
                f"rc = main(['--data-dir', {str(d)!r}, 'ingest', '--quiet', '--wait', {wait_for!r}, {str(big)!r}])\n"
                "print(json.dumps({'rc': rc, 'seconds': time.monotonic() - t, "
                "'process_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "
                "'children_mb': max(child_peak.values(), default=0)}))\n")
        p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                           env={**os.environ, **ENV})
        if p.returncode != 0:
            raise RuntimeError(p.stderr[-2000:])
        whole.append({"wait": wait_for, **json.loads(p.stdout.strip().splitlines()[-1])})
        log.info("%s", whole[-1])
        shutil.rmtree(d, ignore_errors=True)
    out = {"pdf_pages": n_pages, "pdf_mb": big.stat().st_size / 2**20, "rows": rows, "ingest": whole,
           "machine": machine_info()}
    write_json("ingest_memory.json", out)
    table = markdown_table(["reading", "child peak RSS (MB)", "parent peak RSS (MB)", "seconds"],
                           [[("40 pages per child (default)" if per == 40 else "all pages in one child"),
                             f"{min(r['child_mb'] for r in rs):.0f}–{max(r['child_mb'] for r in rs):.0f}",
                             f"{max(r['parent_mb'] for r in rs):.0f}",
                             f"{min(r['seconds'] for r in rs):.1f}–{max(r['seconds'] for r in rs):.1f}"]
                            for per, rs in by.items()])
    write_section("ingest-memory", f"""## Peak memory of a {n_pages}-page PDF (`bench/ingest_queue_bench.py memory`)

The 2016 and 2015 annual performance reports of docugami/KG-RAG-datasets concatenated ({n_pages} pages,
{out['pdf_mb']:.1f} MB), extracted as the queue's first pass extracts a PDF, in a fresh process each time (twice
each, alternating): page ranges of 40 pages, each in its own child process with the memory cap (the default,
`MGRAG_PDF_PAGES_PER_RANGE`), against all pages in one child. Peak resident memory: the parent's from `getrusage`,
each extraction child's own high-water mark (`VmHWM`) read from `/proc` every 20 ms while it runs.

{table}

The whole ingest of the same PDF by `mgrag ingest` in a fresh process (the models loaded in it, MiniLM and, for the
refinement, Gemma-3-270M in float32):

{markdown_table(["mgrag ingest", "process peak RSS (MB)", "largest extraction child (MB)", "seconds"],
                [[f"--wait {w['wait']}", f"{w['process_mb']:.0f}", f"{w['children_mb']:.0f}", f"{w['seconds']:.0f}"]
                 for w in whole])}

Raw figures: `bench/results/ingest_memory.json`.
""")
    shutil.rmtree(big.parent, ignore_errors=True)
    return out


# -- workers ----------------------------------------------------------------------------------------------------
def workers(args) -> dict:
    from qdrant_client import QdrantClient
    from redis import Redis

    from ingest.jobs.queue import Runner, enqueue, wait

    exe = shutil.which("redis-server") or "/usr/bin/redis-server"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    rdir = Path(tempfile.mkdtemp(prefix="mgrag-bench-redis-"))
    redis = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                              "--dir", str(rdir)], stdout=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    time.sleep(0.5)
    embedder, scorer = _models()
    files = _bench_files(args.files)
    secret = os.urandom(16).hex()  # signs the queue's jobs (ingest/jobs/remote.py SignedJSON)
    env = {**os.environ, **ENV, "MGRAG_QUEUE_URL": url, "MGRAG_QUEUE_SECRET": secret}
    rows = []
    try:
        for n in (1, 2, 1, 2):
            Redis.from_url(url).flushall()
            procs = [subprocess.Popen([sys.executable, "-m", "cli.main", "--data-dir", str(rdir / f"w{i}"), "worker"],
                                      cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                     for i in range(n)]
            for p in procs:  # ready: models loaded
                p.stdout.readline()
            d = Path(tempfile.mkdtemp(prefix="mgrag-bench-holder-"))
            from app.context import AppContext
            from core.settings import Settings

            ctx = AppContext(Settings(data_dir=d, queue_url=url, queue_secret=secret, chunker=LGMGC), client=QdrantClient(":memory:"),
                             embedder=embedder, scorer=scorer)
            runner = Runner(ctx).start()
            t0 = time.monotonic()
            ids = [q.job.job_id for q in enqueue(ctx, files)]
            searchable = wait(ctx.jobs, ids, "searchable", poll_s=0.2)
            t_s = time.monotonic() - t0
            done = wait(ctx.jobs, ids, "ready", poll_s=0.5)
            t_r = time.monotonic() - t0
            runner.stop()
            ctx.close()
            for p in procs:
                p.terminate()
                p.wait(30)
            rows.append({"workers": n, "files": len(files), "all_searchable_s": round(t_s, 1),
                         "all_ready_s": round(t_r, 1), "ready": sum(j.state == "ready" for j in done),
                         "searchable": sum(j.searchable for j in searchable)})
            log.info("%s", rows[-1])
            shutil.rmtree(d, ignore_errors=True)
    finally:
        redis.terminate()
        redis.wait(10)
    out = {"rows": rows, "machine": machine_info()}
    write_json("ingest_workers.json", out)
    by = {n: [r for r in rows if r["workers"] == n] for n in (1, 2)}
    med = {n: float(np.median([r["all_ready_s"] for r in rs])) for n, rs in by.items()}
    med_s = {n: float(np.median([r["all_searchable_s"] for r in rs])) for n, rs in by.items()}
    table = markdown_table(["workers", "files", "all searchable (s)", "all ready (s)", "ready"],
                           [[r["workers"], r["files"], f"{r['all_searchable_s']:.1f}", f"{r['all_ready_s']:.1f}", r["ready"]]
                            for r in rows])
    write_section("ingest-workers", f"""## One vs two workers on one Redis queue (`bench/ingest_queue_bench.py workers`)

{len(files)} LongBench and chroma documents queued at once; the holder (this process) writes to qdrant-client in
memory; `mgrag worker` processes (RQ SimpleWorkers, models loaded before the clock starts) compute the first passes
and the LGMGC refinements, on this same 2-core machine, in alternating runs.

{table}

Two workers on 2 cores: all searchable in {med_s[2] / med_s[1]:.2f}× and all ready in {med[2] / med[1]:.2f}× the time
of one (medians). Each worker's torch uses the
cores it measures best (one or two threads), so two workers on two cores mostly take turns on the same cores; the
gain of more workers comes from more machines (docs/sizing.md). Raw figures: `bench/results/ingest_workers.json`.
""")
    return out


# -- batching ---------------------------------------------------------------------------------------------------
def batching(args) -> dict:
    """Is batching LM blocks across documents worth it? Streaming mode batched ``lg_batch_size`` (4 until this measurement; now 1 on a CPU) blocks
    of one document per forward pass; a document shorter than four blocks (about 3,000 words) fills fewer. Tokens
    per second of the boundary LM's pass over 1,024-token blocks of *Emma*, 1, 2, 4 and 8 per pass, interleaved,
    best of three: if the rate does not grow with the batch on this CPU, filling batches from several documents
    buys nothing here."""
    _, scorer = _models()
    ids = scorer.tokenizer(_emma()[:400_000])["input_ids"]
    blocks = [ids[i * 1024:(i + 1) * 1024] for i in range(8)]
    pos = [list(range(10, 1024, 25)) for _ in blocks]
    best: dict[int, float] = {}
    for _ in range(3):
        for b in (1, 2, 4, 8):
            t = time.perf_counter()
            for s0 in range(0, len(blocks), b):
                scorer._forward(blocks[s0:s0 + b], pos[s0:s0 + b])
            best[b] = max(best.get(b, 0.0), 8 * 1024 / (time.perf_counter() - t))
    import torch

    out = {"tokens_per_s": best, "threads": torch.get_num_threads(), "machine": machine_info()}
    write_json("ingest_batching.json", out)
    gain = best[4] / best[1]
    verdict = (f"On this CPU four blocks per pass run at {gain:.2f}× the rate of one: the cores are busy with one block "
               "already, so the refinement lane cuts one document at a time and does not batch across documents. On a "
               "GPU the rate grows with the batch; that is where cross-document batching would pay (not measured: no "
               "GPU was lent to this session)." if gain < 1.15 else
               f"On this CPU four blocks per pass run at {gain:.2f}× the rate of one: short documents leave that gain "
               "unused, so batching blocks across documents would speed up a queue of small files.")
    out["verdict"] = verdict
    table = markdown_table(["blocks per forward pass", "tokens/s", "× one block"],
                           [[b, f"{r:.0f}", f"{r / best[1]:.2f}"] for b, r in best.items()])
    write_section("ingest-batching", f"""## LM blocks batched across documents? (`bench/ingest_queue_bench.py batching`)

Gemma-3-270M's pass over 1,024-token blocks of *Emma* on this machine's CPU ({out['threads']} torch threads), 1 to 8
blocks per forward pass, interleaved, best of three:

{table}

Streaming mode batched 4 blocks of one document per pass; a document under ~3,000 words has fewer blocks, so
batches from several documents would fill them. {verdict} Since this run the default is one block per pass on a CPU
and four on CUDA (`lg_batch_size` unset); the phases and load figures above were taken with four. Raw figures:
`bench/results/ingest_batching.json`.
""")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("part", choices=("phases", "load", "memory", "workers", "batching"))
    ap.add_argument("--rewrite", action="store_true", help="phases: only rewrite its section from the saved results")
    ap.add_argument("--pdf", default=str(PDF), help="a 100+ page PDF (phases, load)")
    ap.add_argument("--no-emma", action="store_true", help="phases: leave the whole book out (quicker)")
    ap.add_argument("--clients", type=int, default=10)
    ap.add_argument("--per-client", type=int, default=3)
    ap.add_argument("--files", type=int, default=6, help="workers: documents in the batch")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    for noisy in ("httpx", "transformers", "sentence_transformers", "huggingface_hub", "ingest.jobs.queue"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.rewrite:
        _phases_section(json.loads((ROOT / "bench" / "results" / "ingest_phases.json").read_text()))
        return 0
    parts = {"phases": phases, "load": load, "memory": memory, "workers": workers, "batching": batching}
    parts[args.part](args)
    print(f"peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
