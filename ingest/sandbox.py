"""Run a document extractor in a child process with a memory cap and a time limit.

A hostile file (a compressed DOCX that unpacks to gigabytes, a PDF whose content streams never end) then costs one
short-lived child process, not the server: the child's address space is capped with ``RLIMIT_AS``, and the parent
kills it when the time limit passes. The child is started with ``spawn`` (a fresh interpreter: no inherited
threads, locks or models), so this is safe to call from the web server's worker threads.

>>> run_limited("ingest.sandbox:_echo", ("x.txt", b"hi"), name="x.txt", timeout_s=30, memory_mb=1024)
'hi'
"""
from __future__ import annotations

import importlib
import logging
import multiprocessing as mp
import traceback

log = logging.getLogger(__name__)


class SandboxError(Exception):
    """Extraction in the child failed; ``problem`` is the one-line reason (no file name)."""

    def __init__(self, problem: str):
        super().__init__(problem)
        self.problem = problem


def _echo(name: str, data: bytes) -> str:  # for the doctest and the tests
    return data.decode()


def _child(conn, target: str, args: tuple, memory_mb: int) -> None:
    try:
        import resource

        cap = int(memory_mb) * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    except (ImportError, ValueError, OSError):  # pragma: no cover - not on this platform: time limit only
        pass
    try:
        module, func = target.split(":")
        result = getattr(importlib.import_module(module), func)(*args)
        conn.send(("ok", result))
    except MemoryError:
        conn.send(("memory", ""))
    except BaseException as e:  # the extractor's own errors carry their message to the parent
        problem = getattr(e, "problem", None) or f"{e.__class__.__name__}: {e}"
        conn.send(("error", (problem, traceback.format_exc(limit=3))))
    finally:
        conn.close()


def run_limited(target: str, args: tuple, *, name: str, timeout_s: float, memory_mb: int):
    """``module:function(*args)`` in a child process; its return value, or :class:`SandboxError` saying what went
    wrong (the extractor's own message, too much memory, or too much time)."""
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, target, args, memory_mb), daemon=True,
                       name=f"mgrag-extract-{name[:40]}")
    proc.start()
    child.close()
    try:
        if not parent.poll(timeout_s):
            raise SandboxError(f"extraction took longer than {timeout_s:g} s (MGRAG_EXTRACT_TIMEOUT_S); "
                               "the file may be malformed or built to exhaust the server")
        try:
            kind, payload = parent.recv()
        except (EOFError, OSError) as e:  # the child died without a word: killed by the memory cap or a signal
            proc.join(5)
            raise SandboxError(f"extraction crashed (exit code {proc.exitcode}); it may have needed more than "
                               f"{memory_mb} MB (MGRAG_EXTRACT_MEMORY_MB)") from e
    finally:
        parent.close()
        if proc.is_alive():
            proc.kill()
        proc.join(5)
    if kind == "ok":
        return payload
    if kind == "memory":
        raise SandboxError(f"extraction needed more than {memory_mb} MB (MGRAG_EXTRACT_MEMORY_MB); "
                           "the file may be a decompression bomb")
    problem, tb = payload
    log.debug("extraction of %s failed in the child:\n%s", name, tb)
    raise SandboxError(problem)
