"""``mgrag bench``: retrieval and QA benchmarks over ``../shared/bench``-format sets (see app/evaluation/harness.py)."""
from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import sys
import time
from pathlib import Path

from app.evaluation import bench as B
from app.evaluation.answers import CANDIDATES, answers_section, answers_table, followups_table, rescore, run_answers
from app.evaluation.harness import (
    ALL_CHUNKERS,
    DEFAULT_CHUNKERS,
    DEFAULT_THETAS,
    PROFILES,
    BenchError,
    bench_context,
    profiled_set,
    qa_table,
    retrieval_plots,
    retrieval_tables,
    run_qa,
    run_retrieval,
    write_results,
)
from app.evaluation.peers import PEERS
from app.synth import make_synthesizer
from app.synth.hf import load_offline_synthesizer
from core.components import BACKENDS

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): torch and core.settings,
# app.evaluation.filings

SETS = ("chroma", "gutenqa_emma")


def _csv(s: str) -> list[str]:
    return [x.strip() for x in s.split(",") if x.strip()]


def _thetas(s: str) -> list[int]:
    try:
        out = [int(x) for x in _csv(s)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--theta takes comma-separated integers, got {s!r}") from None
    if not out or any(t < 8 for t in out):
        raise argparse.ArgumentTypeError(f"--theta values must be integers >= 8, got {s!r}")
    return out


def _context(args):
    from core.settings import Settings

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    kw = {"data_dir": args.data_dir} if getattr(args, "data_dir", None) else {}
    return bench_context(Settings(**kw))


def _results_dir(args) -> Path:
    return Path(args.results_dir) if args.results_dir else B.RESULTS_DIR


def _command_line(args) -> str:
    return "mgrag " + shlex.join(sys.argv[1:]) if sys.argv and sys.argv[0].endswith("mgrag") else \
        f"mgrag bench {args.bench_cmd} --set {args.set} ..."


def _check_chunkers(names) -> None:
    bad = [n for n in names if n not in ALL_CHUNKERS]
    if bad:
        raise BenchError(f"unknown chunker(s) {', '.join(bad)}; choose from {', '.join(ALL_CHUNKERS)}")


def retrieval_section(res: dict, plots: list[Path], command: str) -> str:
    rel = [os.path.relpath(p, B.ROOT) for p in plots]
    cached = len(cached_before(res))
    lines = [f"### Retrieval: {res['set']}", "", f"`{command}` ({res.get('subset') or 'all documents'}; "
             f"{res['total_seconds'] / 60:.1f} min, 1-min load mean {res['load']['load1_mean']:.2f}, "
             f"peak RSS {res['peak_rss_mb']:,.0f} MiB{f'; {cached} chunkings from the cache' if cached else ''})",
             "", retrieval_tables(res), ""]
    lines += [f"![{p}]({p})" for p in rel]
    return "\n".join(lines)


def qa_section(res: dict, command: str, note: str) -> str:
    return "\n".join([
        f"### QA: {res['set']}", "",
        f"`{command}` ({note}; synthesizer {res['synthesizer']}; {res['seconds'] / 60:.1f} min). F1 ×100, "
        f"LongBench `qa_f1_score`, generation capped per subset as LongBench does.", "", qa_table(res)])


def cmd_retrieval(args, ctx=None, write_section: bool | None = None) -> dict:
    bench, note = profiled_set(args.set, args.profile)
    if args.docs:
        bench = B.BenchSet(bench.name, {d: t for d, t in bench.docs.items() if d in args.docs},
                           [q for q in bench.questions if q.doc_id in args.docs])
        note += f"; docs {', '.join(args.docs)}"
    if args.max_questions:
        bench.questions = bench.questions[:args.max_questions]
        note += f"; first {args.max_questions} questions"
    peers = [] if args.peers in (["none"], []) else args.peers
    chunkers = list(args.chunkers) + [p for p in peers if p not in args.chunkers]
    _check_chunkers(chunkers)
    ctx = ctx or _context(args)
    res = run_retrieval(bench, chunkers, args.theta, ctx, use_cache=not args.fresh, subset=note,
                        progress=None if args.quiet else print)
    out = _results_dir(args)
    path = write_results(f"retrieval_{res['set']}.json", res, out)
    plots = retrieval_plots(res, out / "plots")

    print(retrieval_tables(res))
    print(f"\nwrote {path} and {', '.join(str(p) for p in plots)}")
    if write_section if write_section is not None else args.write_section:
        B.write_section(f"retrieval-{res['set']}", retrieval_section(res, plots, _command_line(args)))
    return res


def _synthesizer(backend: str, ctx):
    if backend == "offline":
        return load_offline_synthesizer(ctx, max_new_tokens=ctx.settings.offline_max_new_tokens)

    return make_synthesizer(backend, ctx)


def cmd_qa(args, ctx=None, write_section: bool | None = None) -> dict:
    bench, note = profiled_set(args.set, args.profile)
    if args.max_questions:
        bench.questions = bench.questions[:args.max_questions]
        note += f"; first {args.max_questions} questions"
    _check_chunkers(args.chunkers)
    ctx = ctx or _context(args)
    synth = _synthesizer(args.backend, ctx)
    res = run_qa(bench, ctx, synth, chunkers=args.chunkers, theta=args.theta[0], use_cache=not args.fresh,
                 progress=None if args.quiet else print)
    res["synthesizer"] = args.backend
    res["subset"] = note
    path = write_results(f"qa_{res['set']}.json", res, _results_dir(args))
    print(qa_table(res))
    print(f"\nwrote {path}")
    if write_section if write_section is not None else args.write_section:
        B.write_section(f"qa-{res['set']}", qa_section(res, _command_line(args), note))
    return res


def cmd_all(args) -> int:
    """What `make bench` runs: both retrieval sets and the QA set, each writing its BENCHMARKS.md section."""
    t0 = time.perf_counter()
    ctx = _context(args)
    bench_dir = Path(args.bench_dir) if args.bench_dir else B.BENCH_DIR
    results = []
    for name in SETS:
        ns = argparse.Namespace(**{**vars(args), "set": str(bench_dir / name), "docs": None, "bench_cmd": "retrieval"})
        res = cmd_retrieval(ns, ctx, write_section=False)
        results.append(res)
        plots = [_results_dir(args) / "plots" / f"{name}_retrieval_at_k.png",
                 _results_dir(args) / "plots" / f"{name}_evidence_recall_theta.png"]
        cmd = (f"mgrag bench retrieval --set ../shared/bench/{name} --profile {args.profile} --chunkers "
               f"{','.join(args.chunkers)} --theta {','.join(map(str, args.theta))}")
        B.write_section(f"retrieval-{name}", retrieval_section(res, plots, cmd))
    ns = argparse.Namespace(**{**vars(args), "set": str(bench_dir / "longbench_sample"), "chunkers": args.qa_chunkers,
                               "theta": [300], "bench_cmd": "qa"})
    res = cmd_qa(ns, ctx, write_section=False)
    cmd = (f"mgrag bench qa --set ../shared/bench/longbench_sample --profile {args.profile} --chunkers "
           f"{','.join(args.qa_chunkers)} --backend {args.backend}")
    B.write_section("qa-longbench_sample", qa_section(res, cmd, res["subset"]))
    minutes = (time.perf_counter() - t0) / 60
    B.write_section("bench-run", bench_run_section(minutes, args.profile, args.fresh, B.machine_info(), results,
                                                   time.strftime("%Y-%m-%d")))
    print(f"bench all: {minutes:.1f} min")
    return 0


# chunkings whose time is another's: lg is lgmgc's level 0, automerge scores li-hierarchical's chunks
DERIVED = {"lg", "li-hierarchical+automerge"}


def cached_before(res: dict) -> list[tuple[str, str, str, float]]:
    """``(set, chunker, θ, chunk seconds)`` of the chunkings a retrieval run read from the cache that were not made
    earlier in the same run (lgmgc reads the pass lg made); derived ones (lg, automerge) are not chunkings."""
    out = []
    for c, runs in res["runs"].items():
        if c in DERIVED:
            continue
        for t, x in runs.items():
            lg = res["runs"].get("lg", {}).get(t) if c == "lgmgc" else None
            if isinstance(x, dict) and x.get("cached") and not (isinstance(lg, dict) and not lg.get("cached")):
                out.append((res["set"], c, t, float(x.get("chunk_seconds") or 0.0)))
    return out


def bench_run_section(minutes: float, profile: str, fresh: bool, info: dict, results: list[dict], day: str) -> str:
    """The ``bench-run`` section: how long the run took, and how much chunking it read from the cache instead of
    doing (with the time that chunking took when it was made), so a cold run's length can be read off."""
    cached = [x for res in results for x in cached_before(res)]
    line = (f"`make bench` (= `mgrag bench all --profile {profile}`{' --fresh' if fresh else ''}) last ran on {day} "
            f"in **{minutes:.1f} minutes** on {info.get('cpu')} ({info.get('affinity')} cores, torch "
            f"{info.get('torch')}, {info.get('torch_threads')} threads).")
    if not cached:
        return line + " Every chunking was made in this run (none read from the cache)."
    secs = sum(x[3] for x in cached)
    sets = sorted({x[0] for x in cached})
    return (line + f" {len(cached)} retrieval chunkings ({', '.join(sets)}) were read from the cache "
            f"(`~/.cache/mgrag/bench`); making them took {secs / 60:.1f} min when they were made, so a cold run "
            f"(a fresh machine, or `--fresh`) takes about **{minutes + secs / 60:.0f} minutes** by these figures.")


def cmd_report(args) -> int:
    """Re-render the BENCHMARKS.md sections from the JSON results (after a formatting change, no re-run)."""

    out = _results_dir(args)
    for name in SETS:
        p = out / f"retrieval_{name}.json"
        if p.exists():
            res = json.loads(p.read_text(encoding="utf-8"))
            plots = retrieval_plots(res, out / "plots")
            cmd = (f"mgrag bench retrieval --set ../shared/bench/{name} --profile "
                   f"{res.get('subset', '').split(' profile')[0] or 'full'} --chunkers {','.join(res['chunkers'])} "
                   f"--theta {','.join(map(str, res['thetas']))}")
            B.write_section(f"retrieval-{name}", retrieval_section(res, plots, cmd))
            print(f"rendered {p}")
    p = out / "qa_longbench_sample.json"
    if p.exists():
        res = json.loads(p.read_text(encoding="utf-8"))
        cmd = (f"mgrag bench qa --set ../shared/bench/longbench_sample --profile "
               f"{res.get('subset', '').split(' profile')[0] or 'full'} --chunkers {','.join(res['chunkers'])} "
               f"--backend {res['synthesizer']}")
        B.write_section("qa-longbench_sample", qa_section(res, cmd, res.get("subset", "")))
        print(f"rendered {p}")
    return 0


DEFAULT_ANSWER_CANDIDATES = ("qwen-500", "hybrid-qwen-500", "gemma-500", "hybrid-gemma-500", "extractive",
                             "openai-stub", "gemma-1500", "gemma-1500-ungrounded")


def cmd_answers(args) -> int:
    """``mgrag bench answers``: see app/evaluation/answers.py."""
    from core.settings import Settings

    out = _results_dir(args)
    if args.filings:
        return cmd_filings(args, out)
    if args.candidates is None:
        args.candidates = list(DEFAULT_ANSWER_CANDIDATES)
    if args.report:
        res = json.loads((out / "answers.json").read_text(encoding="utf-8"))
        for extra in args.merge or ():  # configurations measured by another run (its command is kept with them)
            other = json.loads(Path(extra).read_text(encoding="utf-8"))
            for name, c in other["candidates"].items():
                res["candidates"][name] = {**c, "command": other.get("command"), "seconds": other.get("seconds"),
                                           "load": other.get("load")}
            res.setdefault("merged", []).append({"command": other.get("command"), "seconds": other.get("seconds"),
                                                 "load": other.get("load"), "candidates": list(other["candidates"])})
        if args.rescore:
            rescore(res, Settings())
        if args.merge or args.rescore:
            write_results("answers.json", res, out)
    else:
        bad = [c for c in args.candidates + [args.followups_with] if c and c not in CANDIDATES]
        if bad:
            raise BenchError(f"unknown configuration(s) {', '.join(bad)}; choose from {', '.join(CANDIDATES)}")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
        kw = {"data_dir": args.data_dir} if getattr(args, "data_dir", None) else {}
        if args.threads:
            import torch

            torch.set_num_threads(args.threads)
            kw["torch_threads"] = args.threads
        res = run_answers(Settings(**kw), args.candidates, followups_with=args.followups_with or None,
                          llm_rewrite=not args.no_llm_rewrite, max_questions=args.max_questions, fresh=args.fresh,
                          timing=args.timing,
                          progress=None if args.quiet else print,
                          checkpoint=lambda r: write_results("answers.partial.json", r, out))
        res["command"] = _answers_command(args)
        path = write_results("answers.json", res, out)
        print(f"wrote {path}")
    print(answers_table(res))
    if "followups" in res:
        print(followups_table(res))
    if args.write_section or args.report:
        B.write_section("answers", answers_section(res, res.get("command") or _answers_command(args)))
    return 0


def cmd_filings(args, out) -> int:
    """``mgrag bench answers --filings DOCS``: see app/evaluation/filings.py."""
    from app.evaluation.filings import DEFAULT_CANDIDATES, filings_table, run_filings
    from core.settings import Settings

    names = args.candidates or list(DEFAULT_CANDIDATES)
    command = ("mgrag bench answers --filings DOCS --candidates " + ",".join(names)
               + (f" --chunker {args.chunker}" if args.chunker else ""))
    if args.report:
        res = json.loads((out / "filings_answers.json").read_text(encoding="utf-8"))
    else:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
        kw = {"data_dir": args.data_dir} if args.data_dir else {}
        if args.chunker:
            kw["chunker"] = args.chunker
        if args.threads:
            kw["torch_threads"] = args.threads
        res = run_filings(Settings(router="none", **kw), args.filings, names, fresh=args.fresh,
                          progress=None if args.quiet else print,
                          checkpoint=lambda r: write_results("filings_answers.partial.json", r, out))
        res["command"] = command
        print(f"wrote {write_results('filings_answers.json', res, out)}")
    table = filings_table(res)
    print(table)
    if args.write_section or args.report:
        B.write_section("filings_answers", f"`{res.get('command', command)}` ({res['chunker']} first pass; "
                                           f"{res['machine'].get('cpu', '')}):\n\n{table}")
    return 0


def _answers_command(args) -> str:
    parts = ["mgrag bench answers", "--candidates " + ",".join(args.candidates)]
    if args.followups_with:
        parts.append(f"--followups-with {args.followups_with}")
    if args.threads:
        parts.append(f"--threads {args.threads}")
    if args.max_questions:
        parts.append(f"--max-questions {args.max_questions}")
    if args.timing != 5:
        parts.append(f"--timing {args.timing}")
    return " ".join(parts)


def add_bench_parser(sub) -> None:
    p = sub.add_parser("bench", help="retrieval and QA benchmarks (bench sets in ../shared/bench format)")
    bsub = p.add_subparsers(dest="bench_cmd", required=True)

    def common(s, chunkers_default, theta_default):
        s.add_argument("--chunkers", type=_csv, default=list(chunkers_default),
                       help=f"comma-separated, from: {', '.join(ALL_CHUNKERS)}")
        s.add_argument("--theta", type=_thetas, default=list(theta_default), help="comma-separated θ values (words)")
        s.add_argument("--profile", choices=sorted(PROFILES), default="full",
                       help="which part of each set (standard: what `make bench` runs in 45 min)")
        s.add_argument("--max-questions", type=int, help="only the first N questions")
        s.add_argument("--fresh", action="store_true", help="ignore the chunk cache: measure every chunking again")
        s.add_argument("--results-dir", help="where JSON and plots go (default bench/results)")
        s.add_argument("--write-section", action="store_true", help="also update this set's section of BENCHMARKS.md")
        s.add_argument("--quiet", action="store_true")

    s = bsub.add_parser("retrieval", help="DCG@k, Recall@k, evidence recall within the budget, per chunker and θ")
    s.add_argument("--set", required=True, help="a set's directory (e.g. ../shared/bench/chroma) or its name")
    common(s, DEFAULT_CHUNKERS, DEFAULT_THETAS)
    s.add_argument("--peers", type=_csv, default=list(PEERS), help=f"other libraries' chunkers: {', '.join(PEERS)}; "
                   "'none' for none")
    s.add_argument("--docs", type=_csv, help="only these doc ids")
    s.set_defaults(func=lambda a: (cmd_retrieval(a), 0)[1])

    s = bsub.add_parser("qa", help="LongBench QA F1 per subset: retrieved context vs no retrieval")
    s.add_argument("--set", required=True)
    common(s, ("lgmgc",), (300,))
    s.add_argument("--backend", default="offline", choices=tuple(BACKENDS))
    s.set_defaults(func=lambda a: (cmd_qa(a), 0)[1])

    s = bsub.add_parser("all", help="what `make bench` runs: chroma and gutenqa_emma retrieval, longbench QA")
    common(s, DEFAULT_CHUNKERS, DEFAULT_THETAS)
    s.set_defaults(profile="standard")
    s.add_argument("--peers", type=_csv, default=list(PEERS))
    s.add_argument("--qa-chunkers", type=_csv, default=["lgmgc"])
    s.add_argument("--backend", default="offline", choices=tuple(BACKENDS))
    s.add_argument("--bench-dir", help="the folder holding the sets (default ../shared/bench)")
    s.set_defaults(func=cmd_all)

    s = bsub.add_parser("answers", help="answer quality, abstention, cited hallucinations and follow-ups per "
                                        "answering configuration")
    s.add_argument("--candidates", type=_csv, default=None,
                   help="configurations (app/evaluation/answers.py CANDIDATES; default: "
                        f"{','.join(DEFAULT_ANSWER_CANDIDATES)}, or with --filings "
                        "extractive,hybrid-gemma-500,qwen-500,hybrid-qwen-500)")
    s.add_argument("--filings", metavar="DOCS", help="the filings dev set (bench/data/filings_qa.jsonl) instead: DOCS "
                   "is docugami/KG-RAG-datasets' sec-10-q/data/v1/docs folder; results in filings_answers.json")
    s.add_argument("--data-dir", help="with --filings: the index folder to build or reuse (default MGRAG_DATA_DIR)")
    s.add_argument("--chunker", help="with --filings: the chunker (default: the setting; mg is the first pass)")
    s.add_argument("--followups-with", default="qwen-500",
                   help="the configuration that answers the follow-ups' first turns ('' to skip the follow-ups)")
    s.add_argument("--no-llm-rewrite", action="store_true", help="measure only the rule-based follow-up rewrite")
    s.add_argument("--threads", type=int, help="torch threads (1: one core's worth, for a shared machine)")
    s.add_argument("--max-questions", type=int, help="only the first N answerable questions (and their "
                                                     "unanswerable twins)")
    s.add_argument("--results-dir", help="where answers.json goes (default bench/results)")
    s.add_argument("--fresh", action="store_true", help="generate again instead of reading the drafts cached by an "
                                                        "earlier run (~/.cache/mgrag/bench/answers)")
    s.add_argument("--write-section", action="store_true", help="also update the 'answers' section of BENCHMARKS.md")
    s.add_argument("--report", action="store_true", help="re-render the table from bench/results/answers.json")
    s.add_argument("--merge", action="append", metavar="ANSWERS.json",
                   help="with --report: add the configurations of another run's results (e.g. slow ones run beside)")
    s.add_argument("--rescore", action="store_true", help="with --report: recompute the citation metrics from the "
                                                          "replies (the same retrieval finds their sources again)")
    s.add_argument("--timing", type=int, default=5, help="time the offline configurations side by side on the first "
                                                          "N answerable questions, generating afresh (0: skip)")
    s.add_argument("--quiet", action="store_true")
    s.set_defaults(func=cmd_answers)

    s = bsub.add_parser("report", help="re-render BENCHMARKS.md's sections from bench/results/*.json")
    s.add_argument("--results-dir", help="where the JSON results are (default bench/results)")
    s.set_defaults(func=cmd_report)
