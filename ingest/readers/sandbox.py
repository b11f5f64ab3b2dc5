"""Run a document extractor in a child process with a memory cap and a CPU-time limit.

A hostile file (a compressed DOCX that unpacks to gigabytes, a PDF whose content streams never end) then costs one
short-lived child process, not the server: the child's address space is capped with ``RLIMIT_AS`` and its CPU time
with ``RLIMIT_CPU``. The limit is on work done, not on the clock: a file read while the machine is busy with other
work takes longer but uses no more CPU, so it is not stopped for it. The child reports each page it finishes;
one that neither finishes nor reports for :func:`stall_s` (a child blocked without using CPU) is killed. The child
is started with ``spawn`` (a fresh interpreter: no inherited threads, locks or models), so this is safe to call
from the web server's worker threads; it does not import the parent's ``__main__`` (spawn's default: the ``mgrag``
command's imports, 0.4 CPU-seconds a child, a benchmark's more), only the module of the function it runs.

Every failure comes back as one sentence (:class:`SandboxError`'s ``problem``) with no traceback and no path of
this machine; the detail goes to the log.

>>> run_limited("ingest.readers.sandbox:_echo", ("x.txt", b"hi"), name="x.txt", timeout_s=30, memory_mb=1024)
'hi'
"""
from __future__ import annotations

import contextlib
import importlib
import logging
import multiprocessing as mp
import multiprocessing.spawn
import re
import signal
import threading
import traceback

log = logging.getLogger(__name__)

# What an OCR engine may use beyond the file's limits while it reads one page (ingest/readers/ocr.py): RapidOCR's models
# and its detector on a page scaled to at most 2000 px take ~1.4 GB of address space (0.9 GB resident) with one thread,
# and 5-10 CPU-seconds a page on these machines (BENCHMARKS.md "OCR").
OCR_ALLOWANCE_MB = 2048
OCR_CPU_S = 60.0

_report = None  # in a child: sends a progress message to the parent (:func:`progress`)


class SandboxError(Exception):
    """Extraction in the child failed; ``problem`` is the one-line reason (no file name, no traceback, no path)."""

    def __init__(self, problem: str):
        super().__init__(problem)
        self.problem = problem


class _CpuLimit(Exception):
    """Raised in the child by SIGXCPU: the soft CPU-time limit was reached."""


_TRACEBACK = re.compile(r"\s*Traceback \(most recent call last\).*", re.S)
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[\\/][\w.@+~-]+){2,}[\\/]?|\S*(?:site|dist)-packages\S*")


def public_problem(text: str, limit: int = 300) -> str:
    """``text`` as a person may see it: its first line, without a traceback and with every path of this machine cut
    to its last part (``/srv/x/site-packages/onnx/main.py`` → ``main.py``), at most ``limit`` characters.

    >>> public_problem("ONNXRuntimeError: Traceback (most recent call last):\\n  File \\"/usr/lib/x.py\\", line 9")
    'ONNXRuntimeError'
    >>> public_problem("cannot open /work/data/spool/ab12.bin: denied")
    'cannot open ab12.bin: denied'
    """
    text = _TRACEBACK.sub("", str(text or "")).strip()
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    first = _PATH.sub(lambda m: re.split(r"[\\/]", m.group().rstrip("\\/"))[-1], first).rstrip(" :")
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def progress(payload=None) -> None:
    """In an extraction child: tell the parent a unit of work (a page) is done; elsewhere nothing."""
    if _report is not None:
        _report(payload)


def _echo(name: str, data: bytes) -> str:  # for the doctest and the tests
    return data.decode()


def _on_xcpu(signum, frame):  # pragma: no cover - runs in the child
    raise _CpuLimit()


def _child(conn, target: str, args: tuple, memory_mb: int, cpu_s: float, cpu_extra_s: float) -> None:
    global _report
    try:
        import resource

        cap = int(memory_mb) * 2**20
        # the soft limits are the file's; the hard limits leave room that only ocr_allowance() opens
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap + OCR_ALLOWANCE_MB * 2**20))
        soft = max(1, int(cpu_s + 0.999))
        resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + int(cpu_extra_s) + 5))
        signal.signal(signal.SIGXCPU, _on_xcpu)
    except (ImportError, ValueError, OSError, AttributeError):  # pragma: no cover - not on this platform
        pass
    _report = lambda payload: conn.send(("progress", payload))  # noqa: E731
    try:
        module, func = target.split(":")
        result = getattr(importlib.import_module(module), func)(*args)
        conn.send(("ok", result))
    except MemoryError:
        conn.send(("memory", ""))
    except _CpuLimit:
        conn.send(("cpu", ""))
    except BaseException as e:  # the extractor's own errors carry their message to the parent
        problem = getattr(e, "problem", None)
        if problem is None and "bad_alloc" in str(e):  # a C++ library (ONNX Runtime) out of memory
            conn.send(("memory", ""))
        else:
            conn.send(("error", (problem, e.__class__.__name__, traceback.format_exc(limit=6))))
    finally:
        conn.close()


@contextlib.contextmanager
def ocr_allowance():
    """In the extraction child, while an OCR engine reads one bounded page image: the memory cap raised by
    :data:`OCR_ALLOWANCE_MB` (to the hard limit the child was started with) and back afterwards, and
    :data:`OCR_CPU_S` more CPU-seconds. Outside a capped child it changes nothing."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cpu_soft, cpu_hard = resource.getrlimit(resource.RLIMIT_CPU)
    except (ImportError, ValueError, OSError):  # pragma: no cover - no rlimits on this platform
        yield
        return
    if cpu_soft != resource.RLIM_INFINITY and cpu_hard != resource.RLIM_INFINITY:
        resource.setrlimit(resource.RLIMIT_CPU, (min(cpu_hard, cpu_soft + int(OCR_CPU_S)), cpu_hard))
    if hard == resource.RLIM_INFINITY or soft == hard:
        yield
        return
    resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


_bare = threading.local()  # set while this thread starts an extraction child


def _preparation_data(name, _real=multiprocessing.spawn.get_preparation_data):
    """multiprocessing's data for a spawned child, without the parent's main module while :func:`run_limited`
    starts one: the child needs only the module of its target, which it imports by name."""
    data = _real(name)
    if getattr(_bare, "on", False):
        data.pop("init_main_from_path", None)
        data.pop("init_main_from_name", None)
    return data


if not hasattr(multiprocessing.spawn.get_preparation_data, "__wrapped__"):  # once, whatever reloads this module
    _preparation_data.__wrapped__ = multiprocessing.spawn.get_preparation_data  # type: ignore[attr-defined]
    multiprocessing.spawn.get_preparation_data = _preparation_data


def stall_s(timeout_s: float) -> float:
    """How long a child may go without finishing or reporting a page before it is killed: ten times its CPU
    budget (a loaded machine runs it slower; a child that waits that long without working is stuck)."""
    return 10.0 * timeout_s


def run_limited(target: str, args: tuple, *, name: str, timeout_s: float, memory_mb: int, ocr_pages: int = 0,
                on_progress=None):
    """``module:function(*args)`` in a child process; its return value, or :class:`SandboxError` saying what went
    wrong. ``timeout_s``: the CPU-seconds it may use; ``ocr_pages``: how many pages it may read by OCR (each
    allowed :data:`OCR_CPU_S` more); ``on_progress(payload)``: each :func:`progress` the child reports."""
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, target, args, memory_mb, timeout_s, OCR_CPU_S * ocr_pages),
                       daemon=True, name=f"mgrag-extract-{name[:40]}")
    _bare.on = True
    try:
        proc.start()
    finally:
        _bare.on = False
    child.close()
    wait = stall_s(timeout_s)
    try:
        while True:
            if not parent.poll(wait):
                raise SandboxError(f"extraction made no progress for {wait:g} s and was stopped (a page or part that "
                                   "never finishes)")
            try:
                kind, payload = parent.recv()
            except (EOFError, OSError) as e:  # the child died without a word: killed by a limit or a signal
                proc.join(5)
                if proc.exitcode in (-signal.SIGKILL, -signal.SIGXCPU):
                    raise SandboxError(_cpu_problem(timeout_s)) from e
                raise SandboxError(f"extraction stopped unexpectedly (exit code {proc.exitcode}); it may have needed "
                                   f"more than {memory_mb} MB (MGRAG_EXTRACT_MEMORY_MB)") from e
            if kind != "progress":
                break
            if on_progress is not None:
                on_progress(payload)
    finally:
        parent.close()
        if proc.is_alive():
            proc.kill()
        proc.join(5)
    if kind == "ok":
        return payload
    if kind == "memory":
        raise SandboxError(f"extraction needed more than {memory_mb} MB of memory (MGRAG_EXTRACT_MEMORY_MB); raise "
                           "that limit to read it")
    if kind == "cpu":
        raise SandboxError(_cpu_problem(timeout_s))
    problem, cls, tb = payload
    if problem is None:
        log.warning("extraction of %s failed in the child:\n%s", name, tb)
        raise SandboxError(f"extraction failed ({cls}); the details are in the server's log")
    log.debug("extraction of %s failed in the child:\n%s", name, tb)
    raise SandboxError(public_problem(problem))


def _cpu_problem(timeout_s: float) -> str:
    return (f"extraction used more than {timeout_s:g} CPU-seconds (MGRAG_EXTRACT_TIMEOUT_S) without finishing; "
            "raise that limit to read it")
