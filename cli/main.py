"""The ``mgrag`` command line: ingest, reingest, docs, delete, ask, chat, serve, setup-models, settings, bench."""
from __future__ import annotations

import argparse
import errno
import getpass
import json
import logging
import sys
import time
from pathlib import Path

from cli.api import add_api_parsers
from core import components
from core.models import QWEN_LM, resolve_lm_path, resolve_qwen_path
from core.questions import QuestionsFileError
from services.commands import (
    ENDED_BADLY,
    FIRST_PASS,
    LEVEL_NAMES,
    JobState,
    QueueSecretError,
    add_bench_parser,
    reading_rest,
    source_place,
)
from services.users import Users

# The commands reach the stages (ingest, retrieval, router, app) only through the service layer, as the web app and
# the API do: an AppService on the command's context (:func:`_service`) and the names services/ re-exports
# (tests/test_layers.py). Imported where they are used, on purpose (heavy, optional or not needed by every caller):
# pydantic and core.settings, services.service, services.chat, services.uploads, ui.app, core.datalock, core.models

log = logging.getLogger("mgrag")


def _settings(args):
    from core.settings import Settings

    overrides = {k: v for k, v in {
        "data_dir": getattr(args, "data_dir", None),
        "chunker": getattr(args, "chunker", None),
        "theta": getattr(args, "theta", None),
        "lg_mode": getattr(args, "lg_mode", None),
        "embedder": getattr(args, "embedder", None),
        "top_k": getattr(args, "k", None),
        "context_words": getattr(args, "budget", None),
        "retriever": getattr(args, "retriever", None),
    }.items() if v is not None}
    return Settings(**overrides)


_opened: list = []  # contexts a command opened; main() closes them (the store and the writer lock)


def _ctx(args):
    from services.service import AppContext

    s = _settings(args)
    logging.basicConfig(level=getattr(logging, s.log_level.upper(), logging.INFO),
                        format="%(levelname)s %(name)s: %(message)s")
    for noisy in ("httpx", "transformers", "sentence_transformers", "huggingface_hub"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    ctx = AppContext(s)
    _opened.append(ctx)
    return ctx


def _service(args, writer: bool = False):
    """The service (:class:`services.service.AppService`) on this command's context (:func:`_ctx`), answering with
    the settings' LLM endpoint (not one set on the Admin tab). ``writer``: take the data dir's writer lock now, before
    any model loads: a second writer stops at once with a one-line message (:mod:`core.datalock`); the store is
    opened and checked (:mod:`ingest.store.consistency`)."""
    from services.service import AppService

    ctx = _ctx(args)
    if writer:
        ctx.writer_lock()
    return AppService(ctx, saved_llm=False)


def _print_report(report, out=None) -> None:
    out = out or sys.stdout
    for r in report.results:
        counts = "/".join(str(c) for c in r.chunks_per_level)
        extra = f" ({r.message})" if r.message else ""
        if r.status == "failed":
            print(f"  FAILED     {r.name}: {r.message}", file=out)
        else:
            print(f"  {r.status:<10} {r.name}{f'  chunks {counts}' if counts else ''}{extra}", file=out)
    tot = report.totals()
    names = ("parents", "θ/2 children", "θ/4 children")
    summary = ", ".join(f"{n} {names[i] if i < 3 else i}" for i, n in enumerate(tot))
    print(f"{len(report.ok)} ingested, {sum(r.status == 'duplicate' for r in report.results)} unchanged/duplicate, "
          f"{len(report.failed)} failed; new chunks: {summary or 'none'}; index generation {report.generation}",
          file=out)


def cmd_ingest(args) -> int:
    """Queue the files and wait, by default until each is complete: read to the end and refined (``ready``; a long
    PDF's every page searchable) or failed; ``--wait searchable`` only until each is searchable (its first pass: a
    long PDF's first range of pages), ``--no-wait`` not at all. Prints when each became searchable and ready, then
    which are complete and which searchable only. The queue is run by the process that holds the data dir
    (:meth:`services.commands.CommandsPart.ingest`): a running ``mgrag serve`` or ``mgrag worker`` takes the jobs;
    when none runs, this command runs them itself while it waits."""
    t0 = time.monotonic()
    service = _service(args)
    until = JobState.QUEUED if args.no_wait else args.wait
    tty = sys.stderr.isatty() and not args.quiet and not args.json
    res = service.ingest(args.paths, None, wait=until, started=t0,
                         on_busy=lambda e: print(f"waiting: {e}", file=sys.stderr),
                         on_move=lambda row, job, new: _note(row, job, new, args, tty))
    if tty:
        print("\r\033[K", end="", file=sys.stderr)
    return _ingest_summary(res, args)


def _note(row: dict, job, new: tuple[str, ...], args, tty: bool) -> None:
    """Print (unless --json or --quiet) a job's moves: searchable, ready (``new``: where it just got to); a status
    line on a terminal meanwhile."""
    clear = "\r\033[K" if tty else ""
    if not args.json and not args.quiet:
        if "searchable" in new:
            print(f"{clear}  searchable {job.name}  after {row['searchable_s']:.1f} s", flush=True)
        if "ready" in new and job.two_phase and job.searchable_at != job.ready_at:
            print(f"{clear}  ready      {job.name}  after {row['ready_s']:.1f} s (refined)", flush=True)
    if tty and job.state in (*FIRST_PASS, JobState.REFINING):
        print(f"\r\033[K{job.name[:40]}: {job.describe()}"[:150], end="", file=sys.stderr, flush=True)


def _ingest_summary(res: dict, args) -> int:
    """The files as they are now (a refinement this process stopped went back to the queue): one line each, the
    counts, and which documents are complete (read to the end) and which searchable only so far."""
    rows, gen = res["files"], res["generation"]
    failed = [r for r in rows if r["status"] in ("refused", *ENDED_BADLY)]
    if args.json:
        print(json.dumps({"files": rows, "generation": gen}, indent=2))
        return 1 if failed else 0
    for r in rows:
        if r["status"] in ("refused", *ENDED_BADLY):
            print(f"  FAILED     {r['name']}: {r['message'] or r['status']}")
        else:
            counts_s = f"  chunks {'/'.join(str(c) for c in r['chunks'])}" if r.get("chunks") else ""
            extra = f" ({r['message']})" if r["message"] else ""
            print(f"  {r['status']:<10} {r['name']}{counts_s}{extra}")
    n = {k: sum(r["status"] == k for r in rows) for k in ("queued", "searchable", "refining", "ready", "duplicate")}
    pending = n["searchable"] + n["refining"]
    print(f"{n['ready']} ready, {pending} searchable (refinement pending), {n['queued']} queued, "
          f"{n['duplicate']} unchanged/duplicate, {len(failed)} failed; index generation "
          f"{gen if gen is not None else '-'}")
    complete = [r["name"] for r in rows if r["status"] == JobState.READY]
    partly = [r["name"] + (f" ({r['message'].removeprefix('searchable ').strip('()')} only)"
                           if reading_rest(r["message"]) else " (refinement pending)")
              for r in rows if r["status"] in (JobState.SEARCHABLE, JobState.REFINING)]
    if complete:
        print(f"complete (read to the end): {', '.join(complete)}")
    if partly:
        print(f"searchable, not complete yet: {', '.join(partly)}")
    if n["queued"] or pending:
        print(("the running `mgrag serve`/`mgrag worker` goes on with them in the background; `mgrag docs` shows "
               "their state" if res["served"] else
               "they go on when `mgrag serve` or `mgrag worker` runs on this data dir (`mgrag worker --until-idle`: "
               "now, then it exits); `mgrag docs` shows their state"))
    return 1 if failed else 0  # a script can tell that some file did not make it


def cmd_jobs(args) -> int:
    """The ingestion queue: active jobs (and, with --all, finished ones)."""
    service = _service(args)
    if args.clear:
        print(f"removed {service.clear_finished_jobs()} finished job(s)")
        return 0
    rows = service.queue_jobs(finished=args.all)
    beat = service.queue_runner()
    if args.json:
        print(json.dumps({"runner": beat, "jobs": [j.to_dict() for j in rows]}, indent=2, default=str))
        return 0
    print(f"queue run by {beat['cmd']} (pid {beat['pid']} on {beat['host']}, {beat['executor']} workers)" if beat
          else "no process runs the queue now (`mgrag serve`, `mgrag worker` or `mgrag ingest` run it)")
    for j in rows:
        print(f"  job {j.job_id:<5} {j.doc_id[:40]:<40} {j.describe()}")
    if not rows:
        print("  (no jobs)" if args.all else "  (nothing queued or running)")
    return 0


def cmd_cancel(args) -> int:
    """Cancel jobs by id, or the active job of a document (id or name)."""
    service = _service(args)
    rc = 0
    for ref in args.refs:
        try:
            job_id, what = service.cancel_job(ref)
            print(f"job {job_id}: {what}")
        except ValueError as e:  # JobError
            print(f"error: {e}", file=sys.stderr)
            rc = 2
    return rc


def cmd_worker(args) -> int:
    """Run the ingestion queue. With ``queue_url`` (Redis): a compute worker for the data dir's holder, on any
    machine. Without: this process takes the data dir and runs its queue (as `mgrag serve` does, without the web
    app), until interrupted or, with --until-idle, until nothing is left to do."""
    service = _service(args)

    def started(runner) -> None:
        print(f"running the ingestion queue of {service.settings.data_dir} ({runner.n_first} first-pass and "
              f"{runner.n_refine} refinement lane(s)); Ctrl-C stops", file=sys.stderr)

    return service.run_queue(until_idle=args.until_idle, on_start=started)


def cmd_reingest(args) -> int:
    """Re-ingest every document, or those named (:meth:`services.commands.CommandsPart.reingest_library`), or finish
    an interrupted re-ingestion (``--resume``)."""
    service = _service(args, writer=True)
    if args.resume:
        if args.docs or args.chunker or args.theta or args.lg_mode or args.copy:
            print("error: --resume finishes the re-ingestion that was interrupted, as it was asked: it takes no "
                  "documents, --chunker, --theta, --lg-mode or --copy", file=sys.stderr)
            return 2
        report = service.resume_library(allow_partial=args.allow_partial, progress=not args.quiet)
        if report is None:
            print("no interrupted re-ingestion to resume")
            return 0
        return _reingested(service, report, args)
    if args.copy:
        if args.docs or args.chunker or args.theta or args.lg_mode:
            print("error: --copy keeps every document's chunks: it takes no documents, --chunker, --theta or --lg-mode",
                  file=sys.stderr)
            return 2
        return _reingested(service, service.reingest_library([], allow_partial=args.allow_partial,
                                                             progress=not args.quiet), args)
    try:  # named documents: only those re-chunked (with their own chunker/θ if given), the rest copied
        report = service.reingest_library(args.docs or None, args.chunker, args.theta, allow_partial=args.allow_partial,
                                          progress=not args.quiet, reread=args.reread)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return _reingested(service, report, args)


def _reingested(service, report, args) -> int:
    """A re-ingestion's report printed; 1 when it failed (the live index unchanged), else 0."""
    _print_report(report)
    if report.failed and not args.allow_partial:
        live = service.ctx.catalog.live_generation()
        print(f"re-ingestion failed; the live index (generation {live.gen if live else '-'}) is unchanged",
              file=sys.stderr)
        return 1
    return 0


def cmd_docs(args) -> int:
    """Reads the catalog only (SQLite, safe beside a running writer such as `mgrag serve`); no store, no lock. Each
    document's ``state``: queued, extracting, searchable, refining, ready, failed (with the reason) or cancelled."""
    live, rows = _service(args).library_states()
    if args.json:
        print(json.dumps({"generation": live.__dict__ if live else None, "documents": rows}, indent=2, default=str))
        return 0
    if live:
        print(f"index generation {live.gen}: chunker={live.chunker} theta={live.theta} embedder={live.embedder}")
    print(f"{'document':<32} {'ver':>3} {'size':>10} {'parents':>8} {'θ/2':>6} {'θ/4':>6} {'secs':>7}  state")
    for r in rows:
        own = r.get("chunking")
        print(f"{r['doc_id'][:32]:<32} {r['version'] or '-':>3} {r['size'] or 0:>10} {r['n_l0'] or 0:>8} "
              f"{r['n_l1'] or 0:>6} {r['n_l2'] or 0:>6} {r['seconds'] or 0:>7.1f}  {r['detail']}"
              + (f"  (own: chunker={own['chunker']} theta={own['theta']})" if own else ""))
    if not rows:
        print("(no documents; run `mgrag ingest PATH`)")
    return 0


def cmd_delete(args) -> int:
    """Delete a document as the web app does (its evaluations' evidence and conversations' mentions go too)."""
    service = _service(args, writer=True)
    try:
        doc_id = service.delete_document(args.doc)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"deleted {doc_id}")
    return 0


def _print_sources(final, out=None) -> None:
    out = out or sys.stdout
    print("\nSources:" if not final.abstained else "\nClosest passages (none supports an answer):", file=out)

    for c in final.sources:
        lv = ", ".join(f"L{k}={v:.3f}" for k, v in sorted(c.level_scores.items()))
        mark = "*" if c in final.citations else " "
        print(f" {mark}[{c.number}] {c.doc_id} {c.label or f'chars {c.start}-{c.end}'} score {c.score:.3f}"
              f" (matched level {c.matched_level}{'; ' + lv if lv else ''})", file=out)
        for x in c.support:
            where = source_place(None, None, False, c.unit, [x])
            print(f"      supporting sentence, {where + ', ' if where else ''}chars {x['start']}-{x['end']}: "
                  f"{' '.join(x['text'].split())[:160]}", file=out)


def _run_turn(service, question: str, args, history=None):
    """One question, through the chat's own :meth:`services.chat.ChatPart.ask` (every document, or those of
    ``--doc``): with grounding on (the default) the reply once checked against the sources, with what is happening
    meanwhile on stderr (a terminal only); with grounding off the draft streamed to stdout. Returns the final
    Answer."""
    final, streamed = None, False
    live = not args.json and not service.settings.grounding  # nothing unchecked is printed
    events = service.ask(question, k=args.k, budget_words=args.budget, retriever=args.retriever, backend=args.backend,
                         scope=service.find_documents(getattr(args, "doc", None)), history=history,
                         no_retrieval=getattr(args, "no_retrieval", None))
    for kind, value in events:
        if kind == "status" and not args.json and sys.stderr.isatty():
            print(f"[{value}]", file=sys.stderr)
        elif kind == "token" and live:
            print(value, end="", flush=True)
            streamed = True
        elif kind == "done":
            final = value
    if not args.json and (not streamed or final.text != final.draft):
        if streamed:
            print("\n")
        print(final.text, end="")
    return final


def _report_turn(final, args) -> None:
    if args.json:
        print(json.dumps(final.to_dict(), indent=None if getattr(args, "jsonl", False) else 2, default=str),
              flush=True)
        return
    print()
    if final.rewrite != "none":
        print(f"(searched for: {final.query})")
    _print_sources(final)
    t = final.timings
    print(f"\nlevel weights: {format_weights(final.weights, final.router)}")
    from services.render import timing_line

    print(f"{final.backend} via {final.retriever}: {timing_line(t)}", flush=True)


def cmd_ask(args) -> int:
    from services.chat import EmptyIndexError

    service = _service(args)
    if service.ctx.embedded:  # an embedded store opens in one process at a time: say so before loading any model
        service.ctx.writer_lock()
    try:
        final = _run_turn(service, args.question, args)
    except (ValueError, EmptyIndexError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    _report_turn(final, args)
    if final.error:
        print(f"error: the {final.backend} backend failed: {final.error} (the sources above were still retrieved)",
              file=sys.stderr)
        return 4
    return 0


def cmd_chat(args) -> int:
    """An interactive conversation over the same code as ``ask``: each line is a question; a follow-up is
    rewritten to a standalone query from the earlier turns. ``/reset`` starts a new conversation; EOF or
    ``/quit`` ends. With ``--json``, one JSON answer object per line per turn."""
    from services.chat import EmptyIndexError

    service = _service(args)
    if service.ctx.embedded:  # as `ask`: one process at a time opens an embedded store
        service.ctx.writer_lock()
    args.jsonl = True
    history: list[dict] = []
    interactive = sys.stdin.isatty()
    failed = False
    while True:
        if interactive:
            print("you> ", end="", flush=True)
        line = sys.stdin.readline()
        if not line:
            break
        q = line.strip()
        if not q:
            continue
        if q in ("/quit", "/exit"):
            break
        if q == "/reset":
            history.clear()
            if not args.json:
                print("(new conversation)")
            continue
        try:
            final = _run_turn(service, q, args, history)
        except (ValueError, EmptyIndexError) as e:
            print(f"error: {e}", file=sys.stderr)
            failed = True
            continue
        _report_turn(final, args)
        if final.error:
            print(f"error: the {final.backend} backend failed: {final.error}", file=sys.stderr)
            failed = True
        history += [{"role": "user", "content": q, "query": final.query},
                    {"role": "assistant", "content": final.text}]
        if not args.json:
            print()
    return 4 if failed else 0


def format_weights(weights, note: str = "") -> str:
    """``parent 0.81, θ/2 0.20, θ/4 0.03 (trained router ...)``, or ``uniform (no trained router)``."""
    names = {0: "parent", 1: "θ/2", 2: "θ/4"}
    if not weights:
        return note or "-"
    if note.startswith("uniform"):
        return note
    shown = ", ".join(f"{names.get(i, LEVEL_NAMES[i] if i < len(LEVEL_NAMES) else f'L{i}')} {w:.2f}"
                      for i, w in enumerate(weights))
    return f"{shown} ({note})" if note else shown


def cmd_train_router(args) -> int:
    """Soft labels from the ingested corpus, a trained MoG router, its loss curves (see router/pipeline.py)."""
    service = _service(args, writer=True)
    out = args.out or str(service.settings.data_dir / "router")
    try:
        rep = service.train_router_on(args.questions, out, lr=args.lr, epochs=args.epochs, patience=args.patience,
                                      seed=args.seed, progress=not args.quiet, similarity=args.similarity,
                                      encoder=args.encoder, hidden=tuple(args.hidden), labels=args.labels,
                                      inputs=args.inputs)
    except (QuestionsFileError, ValueError) as e:  # router.model's RouterError is a ValueError
        print(f"error: {e}", file=sys.stderr)
        return 2
    h, lab = rep["history"], rep["labels"]
    if isinstance(lab, dict):
        print(f"trained on {lab['train']['n']} questions (validation {lab['val']['n']}, held out {lab['test']['n']}); "
              f"best level in the training labels: {lab['train']['best_level']}")
    else:
        print(f"trained on {rep['n_train']} questions (validation {rep['n_val']}); {lab} labels, inputs "
              f"{'+'.join(rep['inputs'])}")
    print(f"validation BCE {h['best_val']:.4f} at epoch {h['best_epoch']} of {len(h['train'])}"
          f"{' (stopped early)' if h['stopped_early'] else ''}; a constant router predicting the mean training label "
          f"scores {rep['val_bce_of_label_prior'] or float('nan'):.4f}; {rep['seconds']:.0f} s")
    print(f"saved {out}/config.json + model.safetensors, loss curves {out}/loss.png")
    return 0


def cmd_export_index(args, client=None) -> int:
    """Copy the live generation to a Qdrant server (``ingest/store/export.py``); ``client`` injects a qdrant-client."""
    service = _service(args, writer=True)
    s = service.settings
    try:
        rep = service.export_index(args.to, args.api_key, batch=args.batch, progress=not args.quiet, client=client)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    per = ", ".join(f"L{lv} {n}" for lv, n in rep.points.items())
    print(f"exported generation {rep.gen} to {args.to}: {per} points ({rep.sent} sent by this run"
          f"{', resumed' if rep.resumed else ''}); aliases {s.collection_prefix}_L* point at it. "
          f"Serve it with MGRAG_QDRANT_URL={args.to} and this data dir.")
    return 0


def cmd_setup_models(args) -> int:
    """Provision the offline models (convert the shipped Gemma GGUF once) and check the embedder loads."""
    ctx = _ctx(args)

    s = ctx.settings
    print("chunker LM:", resolve_lm_path(s.lm_model, s.cache_dir))
    if s.offline_model == QWEN_LM:
        print("offline answer model:", resolve_qwen_path(s.cache_dir))
    else:
        print("offline answer model:", resolve_lm_path(s.offline_model, s.cache_dir))
    print("embedder:", ctx.embedder.name, f"({ctx.embedder.dim} dims)")
    return 0


def cmd_settings(args) -> int:
    from core.settings import settings_table

    if args.choices:
        print(components.markdown_table(components.CHUNKERS, "chunker") + "\n\n"
              + components.markdown_table(components.BACKENDS, "synth_backend"))
    elif args.table:
        print(settings_table())
    else:
        print(_settings(args).model_dump_json(indent=2))
    return 0


def cmd_serve(args) -> int:
    """The web app (Chat, Admin, Evaluate) on ``ui_host:ui_port``."""
    from ui.app import serve

    overrides = {k: v for k, v in {"ui_host": args.host, "ui_port": args.port}.items() if v is not None}
    ctx = _ctx(args)
    ctx.writer_lock(open_index=False)  # before any model loads; the app's own context (same process) opens the store
    s = ctx.settings.model_copy(update=overrides)
    return serve(s)


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors as one line (``mgrag ask: error: ...``) and exit code 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def _int_at_least(lo: int):
    def parse(v: str) -> int:
        try:
            n = int(v)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {v!r}") from None
        if n < lo:
            raise argparse.ArgumentTypeError(f"must be at least {lo}, got {n}")
        return n
    parse.__name__ = f"integer >= {lo}"
    return parse


def cmd_inspect(args) -> int:
    """The chunk inspector's PNG and HTML page for a document or file
    (:meth:`services.commands.CommandsPart.inspect_to`), and its summary."""
    service = _service(args)
    try:
        words = None
        if args.words:
            a, _, b = args.words.partition(":")
            if not (a.isdigit() and b.isdigit() and int(a) < int(b)):
                raise ValueError(f"--words takes FROM:TO in words, e.g. 0:2000, got {args.words!r}")
            words = (int(a), int(b))
        summary, png, page = service.inspect_to(args.doc, Path(args.out), theta=args.theta, question=args.question,
                                                words=words)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(summary, indent=1, ensure_ascii=False, default=str))
    print(f"wrote {png} and {page}")
    return 0


def cmd_users(args) -> int:
    """Web app accounts: with at least one, `mgrag serve` requires a login and uploads and conversations belong
    to the user."""
    from core.settings import Settings

    settings = Settings(**({"data_dir": args.data_dir} if args.data_dir else {}))
    users = Users(settings.data_dir / ".secrets" / "users.sqlite")
    try:
        if args.action == "list":
            print("\n".join(users.names()) or "(no users: the web app needs no login)")
        elif args.action == "remove":
            print(_remove_user(args, users))
        else:
            pw = (sys.stdin.readline().rstrip("\n") if args.password_stdin
                  else getpass.getpass(f"password for {args.name}: "))
            users.add(args.name, pw)
            print(f"{args.name} can log in (a running `mgrag serve` requires logins after a restart "
                  "if it had no users)")
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


def _remove_user(args, users: Users) -> str:
    """`mgrag users remove NAME [--documents delete|keep|to:OTHER]` (:meth:`services.admin.AdminPart.remove_account`):
    deleting or handing over documents writes to the index, so it takes the data dir's writer lock (a running
    `mgrag serve` holds it: use its Admin tab)."""
    from services.admin import removal_mode

    if users.id_of(args.name) is None:
        raise ValueError(f"no user {args.name!r}")
    mode, _ = removal_mode(args.documents)
    return _service(args, writer=mode in ("delete", "to")).remove_account(args.name, args.documents)


def cmd_admin(args) -> int:
    """`mgrag admin password`: the Admin tab's password kept in the data dir (made if there is none); with
    ``--reset`` a new random one, shown this once. The password alone goes to stdout."""
    from core.settings import Settings
    from services.service import stored_admin_password

    settings = Settings(**({"data_dir": args.data_dir} if args.data_dir else {}))
    if settings.admin_password:
        print("error: the admin password is the admin_password setting (MGRAG_ADMIN_PASSWORD or mgrag.toml), "
              "which wins over a kept one: change it there", file=sys.stderr)
        return 2
    password, made = stored_admin_password(settings.data_dir, reset=args.reset)
    print(password)
    where = settings.data_dir / ".secrets" / "admin_password"
    print(f"{'a new password, ' if made else ''}kept in {where} (user {settings.admin_user})"
          + ("; a running `mgrag serve` uses it after a restart" if args.reset else ""), file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="mgrag", description="MGRAG: chat with your documents (LGMGC + MoG).")
    p.add_argument("--data-dir", help="data directory (MGRAG_DATA_DIR)")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    _add_ingest_commands(sub)
    _add_library_commands(sub)
    _add_question_commands(sub)
    _add_tool_commands(sub)
    _add_web_commands(sub)


    add_api_parsers(sub)
    add_bench_parser(sub)
    return p


def _add_ingest_commands(sub) -> None:
    """`mgrag` subcommands: the ingestion queue: ingest, jobs, cancel, worker."""
    s = sub.add_parser("ingest", help="ingest files and folders (queued; searchable in seconds, refined after)",
                       description="Queue files and folders for ingestion and wait until each is complete: read to "
                                   "the end and refined (a long PDF's every page searchable), or failed; with --wait "
                                   "searchable only until its quick first pass is committed (a long PDF's first "
                                   "pages). A running `mgrag serve` or `mgrag worker` on the same data dir takes the "
                                   "jobs; otherwise this command runs them while it waits. At the end it says which "
                                   "documents are complete and which searchable only so far.")
    s.add_argument("paths", nargs="+")
    s.add_argument("--wait", choices=("searchable", "ready"), default="ready",
                   help="wait until each file is complete: read to the end and refined (ready, the default), or only "
                        "until searchable (its first pass: a long PDF's first range of pages; the rest is read when "
                        "`mgrag serve` or `mgrag worker` runs)")
    s.add_argument("--no-wait", action="store_true", help="only queue the files and return")
    s.add_argument("--json", action="store_true", help="per file: state, searchable_s and ready_s (seconds from the "
                                                        "start of the command), chunks")
    s.add_argument("--quiet", action="store_true", help="no progress lines")
    s.set_defaults(func=cmd_ingest)

    s = sub.add_parser("jobs", help="the ingestion queue: what is queued and running")
    s.add_argument("--all", action="store_true", help="finished jobs too")
    s.add_argument("--clear", action="store_true", help="remove finished jobs from the list")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_jobs)

    s = sub.add_parser("cancel", help="cancel queued or running ingestion jobs (job id, or document id or name)")
    s.add_argument("refs", nargs="+", metavar="JOB|DOC")
    s.set_defaults(func=cmd_cancel)

    s = sub.add_parser("worker", help="run the ingestion queue: with MGRAG_QUEUE_URL a scale-out worker (any machine), "
                                      "else this data dir's queue without the web app")
    s.add_argument("--until-idle", action="store_true", help="exit when nothing is left to do")
    s.set_defaults(func=cmd_worker)


def _add_library_commands(sub) -> None:
    """`mgrag` subcommands: the documents: reingest, docs, delete."""
    s = sub.add_parser("reingest", help="rebuild the index from stored originals (atomic switch)",
                       description="Rebuild every document into a new index generation and switch atomically; or, "
                                   "naming documents, re-chunk only those (with --chunker/--theta: for them only) "
                                   "and copy the rest.")
    s.add_argument("docs", nargs="*", metavar="DOC", help="documents to rebuild (name or hash prefix); default: all")
    s.add_argument("--chunker", choices=tuple(components.CHUNKERS),
                   help="MGRAG_CHUNKER: " + components.choices_help(components.CHUNKERS))
    s.add_argument("--theta", type=_int_at_least(4))
    s.add_argument("--lg-mode", choices=("exact", "streaming"))
    s.add_argument("--allow-partial", action="store_true", help="switch even if some documents fail")
    s.add_argument("--copy", action="store_true",
                   help="keep every document's chunks and vectors and rebuild the index from them (no chunking, no "
                        "embedding): an index written by an earlier version gains its keywords in the store")
    s.add_argument("--reread", choices=("auto", "all", "none"), default="auto",
                   help="read documents again from their stored originals: auto (default) those an older version's "
                        "reader read, all, or none (re-cut the stored text)")
    s.add_argument("--resume", action="store_true",
                   help="finish a re-ingestion whose process stopped before it switched (the documents it wrote "
                        "stay; `mgrag serve` resumes it by itself; a new re-ingestion drops it)")
    s.add_argument("--quiet", action="store_true")
    s.set_defaults(func=cmd_reingest)

    s = sub.add_parser("docs", help="list documents")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_docs)

    s = sub.add_parser("delete", help="delete a document (by id, name or hash prefix)")
    s.add_argument("doc")
    s.set_defaults(func=cmd_delete)


def _question_options(s) -> None:
    """The options `mgrag ask` and `mgrag chat` share."""
    s.add_argument("--k", type=_int_at_least(1), help="hits per level (MGRAG_TOP_K)")
    s.add_argument("--budget", type=_int_at_least(50), help="context budget in words (MGRAG_CONTEXT_WORDS)")
    s.add_argument("--retriever", choices=("dense", "bm25", "hybrid"), help="MGRAG_RETRIEVER")
    s.add_argument("--backend", choices=tuple(components.BACKENDS),
                   help="MGRAG_SYNTH_BACKEND: " + components.choices_help(components.BACKENDS))


def _add_question_commands(sub) -> None:
    """`mgrag` subcommands: questions: ask, chat."""
    s = sub.add_parser("ask", help="answer a question from the indexed documents")
    s.add_argument("question")
    _question_options(s)
    s.add_argument("--no-retrieval", metavar="DOC", help="baseline: answer from DOC truncated to 3500 words")
    s.add_argument("--doc", action="append", metavar="DOC",
                   help="search only this document (id, name or hash prefix; repeat for several)")
    s.add_argument("--json", action="store_true", help="print the whole answer object as JSON")
    s.set_defaults(func=cmd_ask)

    s = sub.add_parser("chat", help="a conversation: one question per line on stdin, follow-ups understood")
    _question_options(s)
    s.add_argument("--doc", action="append", metavar="DOC",
                   help="search only this document (id, name or hash prefix; repeat for several)")
    s.add_argument("--json", action="store_true", help="one JSON answer object per line for each turn")
    s.set_defaults(func=cmd_chat)


def _add_tool_commands(sub) -> None:
    """`mgrag` subcommands: the router, the chunk inspector, the export, the models."""
    s = sub.add_parser("train-router", help="train the MoG router on questions over the ingested corpus")
    s.add_argument("--questions", action="append", required=True, metavar="FILE.jsonl",
                   help="questions in the ../shared/bench format (repeat for several sets)")
    s.add_argument("--out", help="router folder to write (default: DATA_DIR/router, which `mgrag ask` then uses)")
    s.add_argument("--similarity", choices=("encoder", "tfidf", "hitrate"), default="encoder",
                   help="how snippets are scored against the label to make soft labels (MoG App. E)")
    s.add_argument("--encoder", help="query encoder: default the index's embedder (shared with retrieval); "
                                     "or a RoBERTa model, e.g. roberta-base (MoG's choice; must be available offline)")
    s.add_argument("--hidden", type=int, nargs="+", default=[128], help="MLP hidden layer sizes")
    s.add_argument("--labels", choices=("mog", "retrieval"), default="mog",
                   help="mog: MoG's soft labels (best BM25 snippet per level vs the label); retrieval: the level that "
                        "alone ranks the evidence best in the dense search")
    s.add_argument("--inputs", type=lambda v: tuple(x.strip() for x in v.split(",") if x.strip()), default=("query",),
                   help="what the router reads: query (the query vector), profile (the score profile of each "
                        "level's search), or query,profile")
    s.add_argument("--lr", type=float, default=1e-3)
    s.add_argument("--epochs", type=int, default=300, help="most epochs (early stopping on the validation split)")
    s.add_argument("--patience", type=int, default=30)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--quiet", action="store_true", help="no progress bars")
    s.set_defaults(func=cmd_train_router)

    s = sub.add_parser("inspect", help="the chunk inspector: boundary probabilities, the cuts of LG, recursive and "
                                       "MG, and a question's matches, as a PNG and an HTML page")
    s.add_argument("doc", help="an ingested document (id, name or hash prefix) or a file")
    s.add_argument("--question", help="show which chunks of each level match it, with their weighted scores")
    s.add_argument("--theta", type=_int_at_least(8), help="θ in words (default MGRAG_THETA)")
    s.add_argument("--lg-mode", choices=("exact", "streaming"))
    s.add_argument("--words", help="word range of the plot, FROM:TO (default the first 3,000 words)")
    s.add_argument("--out", default=".", help="folder for inspect-<doc>.png and .html (default: here)")
    s.set_defaults(func=cmd_inspect)

    s = sub.add_parser("export-index", help="copy the live index to a Qdrant server (resumable)")
    s.add_argument("--to", required=True, metavar="URL", help="Qdrant server, e.g. http://localhost:6333")
    s.add_argument("--api-key", help="API key of that server")
    s.add_argument("--batch", type=int, default=512, help="points per request")
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.set_defaults(func=cmd_export_index)

    s = sub.add_parser("setup-models", help="provision the offline models (once)")
    s.set_defaults(func=cmd_setup_models)


def _add_web_commands(sub) -> None:
    """`mgrag` subcommands: the web app and its accounts, the settings."""
    s = sub.add_parser("serve", help="start the web app (MGRAG_UI_HOST:MGRAG_UI_PORT, default 127.0.0.1:7860)")
    s.add_argument("--host", help="address to listen on (MGRAG_UI_HOST)")
    s.add_argument("--port", type=_int_at_least(1), help="port (MGRAG_UI_PORT)")
    s.set_defaults(func=cmd_serve)

    s = sub.add_parser("users", help="web app accounts (with any, the web app requires a login)")
    s.add_argument("action", choices=("add", "remove", "list"))
    s.add_argument("name", nargs="?", default="")
    s.add_argument("--password-stdin", action="store_true", help="read the password from standard input")
    s.add_argument("--documents", metavar="delete|keep|to:OTHER",
                   help="remove: what becomes of the user's documents and conversations: deleted, kept (nobody but "
                        "the admin sees them) or handed to user OTHER; needed when the user owns any")
    s.set_defaults(func=cmd_users)

    s = sub.add_parser("admin", help="the Admin tab's password, when MGRAG_ADMIN_PASSWORD is not set",
                       description="`mgrag admin password` shows the Admin tab's password kept in the data dir "
                                   "(.secrets/admin_password, made at the first `mgrag serve`); --reset makes a new "
                                   "random one and shows it once.")
    s.add_argument("what", choices=("password",))
    s.add_argument("--reset", action="store_true", help="replace it with a new random password")
    s.set_defaults(func=cmd_admin)

    s = sub.add_parser("settings", help="show the effective settings")
    s.add_argument("--table", action="store_true", help="markdown table of every setting and its default")
    s.add_argument("--choices", action="store_true", help="markdown tables of the chunkers and the answer backends")
    s.set_defaults(func=cmd_settings)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        return 130
    except Exception as e:
        from core.datalock import DataDirBusy

        if isinstance(e, DataDirBusy):
            print(f"error: {e}", file=sys.stderr)
            return 5
        if isinstance(e, QueueSecretError):  # `mgrag worker`/`serve` with MGRAG_QUEUE_URL: one line, how to make one
            print(f"error: {e}", file=sys.stderr)
            return 2
        if isinstance(e, OSError) and e.errno == errno.ENOSPC:  # a full disk before any document was written
            print(f"error: {e.strerror or e}", file=sys.stderr)
            return 6
        from pydantic import ValidationError

        if isinstance(e, ValidationError):  # a setting out of range (flag, env var or mgrag.toml): one line each
            for err in e.errors():
                where = ".".join(str(x) for x in err["loc"]) or "settings"
                print(f"error: setting {where}: {err['msg']} (got {err.get('input')!r})", file=sys.stderr)
            return 2
        from core.models import ModelNotAvailable

        if isinstance(e, ModelNotAvailable):
            print(f"error: {e}", file=sys.stderr)
            return 3
        if isinstance(e, ImportError) and "mgrag[" in str(e):  # an extra not installed: the message names it
            print(f"error: {e}", file=sys.stderr)
            return 3
        from services.commands import BenchError

        if isinstance(e, (BenchError, FileNotFoundError)) and args.cmd == "bench":
            print(f"error: {e}", file=sys.stderr)
            return 2
        raise
    finally:
        while _opened:  # a command run in-process (tests, scripts) leaves the data dir free for the next one
            _opened.pop().close()


if __name__ == "__main__":
    sys.exit(main())
