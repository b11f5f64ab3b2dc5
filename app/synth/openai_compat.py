"""Any OpenAI-compatible chat-completions endpoint (vLLM, Ollama, llama.cpp server, TGI), streamed over SSE.

Failures become :class:`SynthesisError` with the cause named: endpoint down (connection refused), slow
(connect/read/total timeouts, all settings), an HTTP error status, or a response that is not the protocol.
"""
from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence

from app.synth.base import SynthesisError, build_messages
from core.components import registered

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): httpx


@registered
class OpenAICompatSynthesizer:
    @classmethod
    def from_settings(cls, s) -> OpenAICompatSynthesizer:
        """The client configured by settings ``s`` (answers, and the lumber chunker's LLM)."""
        return cls(s.openai_base_url, s.openai_model, s.openai_api_key, connect_timeout=s.llm_connect_timeout_s,
                   read_timeout=s.llm_read_timeout_s, total_timeout=s.llm_total_timeout_s, max_tokens=s.max_new_tokens)

    @classmethod
    def from_context(cls, ctx, kept) -> OpenAICompatSynthesizer:
        return cls.from_settings(ctx.settings)

    @staticmethod
    def why_not(settings) -> str | None:
        return None if settings.openai_base_url else (
            "no endpoint: the admin sets one on the Admin tab (Ollama, llama.cpp server, vLLM, any "
            "OpenAI-compatible server)")

    def __init__(self, base_url: str | None, model: str, api_key: str | None = None, *, connect_timeout: float = 5.0,
                 read_timeout: float = 60.0, total_timeout: float = 120.0, max_tokens: int = 256):
        self.base_url = (base_url or "").rstrip("/")
        self.model = model
        self.api_key = api_key
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.total_timeout = total_timeout
        self.max_tokens = max_tokens

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def _client(self):
        import httpx

        timeout = httpx.Timeout(connect=self.connect_timeout, read=self.read_timeout, write=self.read_timeout,
                                pool=self.connect_timeout)
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        return httpx.Client(timeout=timeout, headers=headers)

    def _check_configured(self) -> None:
        if not self.base_url:
            raise SynthesisError("no OpenAI-compatible endpoint is configured; set MGRAG_OPENAI_BASE_URL "
                                 "(e.g. http://127.0.0.1:8000/v1) and MGRAG_OPENAI_MODEL")

    def complete(self, messages: list[dict], max_tokens: int | None = None) -> str:
        """One non-streamed completion (used by LLM-driven chunkers)."""
        return "".join(self._stream(messages, max_tokens or self.max_tokens))

    def stream(self, question: str, sources: Sequence, history: Sequence | None = None) -> Iterator[str]:
        yield from self._stream(build_messages(question, sources, history), self.max_tokens)

    def _stream(self, messages: list[dict], max_tokens: int) -> Iterator[str]:
        import httpx

        self._check_configured()
        body = {"model": self.model, "messages": messages, "stream": True, "temperature": 0, "max_tokens": max_tokens}
        deadline = time.monotonic() + self.total_timeout
        try:
            with self._client() as client, client.stream("POST", self.url, json=body) as r:
                if r.status_code != 200:
                    r.read()
                    raise SynthesisError(_status_problem(self.url, r.status_code, r.text))
                if "application/json" in r.headers.get("content-type", ""):  # server ignored stream=true
                    r.read()
                    yield _content_of(self.url, r.text, streamed=False)
                    return
                for line in r.iter_lines():
                    if time.monotonic() > deadline:
                        raise SynthesisError(f"{self.url} exceeded the total time limit of {self.total_timeout:.0f} s "
                                             "(MGRAG_LLM_TOTAL_TIMEOUT_S)")
                    line = line.strip()
                    if not line or line.startswith(":"):
                        continue
                    if not line.startswith("data:"):
                        raise SynthesisError(f"{self.url} sent something that is not server-sent events: {line[:80]!r}")
                    data = line[5:].strip()
                    if data == "[DONE]":
                        return
                    piece = _content_of(self.url, data, streamed=True)
                    if piece:
                        yield piece
        except httpx.ConnectError as e:
            raise SynthesisError(f"cannot connect to {self.url} (is the server running? MGRAG_OPENAI_BASE_URL)") from e
        except httpx.TimeoutException as e:
            raise SynthesisError(f"{self.url} timed out ({e.__class__.__name__}; connect {self.connect_timeout:.0f} s, "
                                 f"read {self.read_timeout:.0f} s: "
                                 "MGRAG_LLM_CONNECT_TIMEOUT_S / MGRAG_LLM_READ_TIMEOUT_S)") from e
        except httpx.HTTPError as e:
            raise SynthesisError(f"{self.url} failed: {e.__class__.__name__}: {e}") from e


def _content_of(url: str, data: str, streamed: bool) -> str:
    try:
        obj = json.loads(data)
        choice = obj["choices"][0]
        part = choice["delta"] if streamed else choice["message"]
        return part.get("content") or ""
    except (json.JSONDecodeError, KeyError, IndexError, TypeError, AttributeError) as e:
        raise SynthesisError(f"{url} returned a response that is not chat-completions JSON: {data[:120]!r}") from e


def _explain(url: str, e: Exception) -> str:
    """What failed talking to ``url``, in words a user can act on."""
    import httpx

    if isinstance(e, httpx.ConnectError):
        cause = str(e).lower()
        if "name or service" in cause or "nodename" in cause or "getaddrinfo" in cause:
            return f"cannot resolve the host of {url}: check the address"
        return f"cannot connect to {url}: nothing is listening there (is the server running? is the port right?)"
    if isinstance(e, httpx.TimeoutException):
        return f"{url} did not answer in time ({e.__class__.__name__})"
    if isinstance(e, httpx.UnsupportedProtocol):
        return f"{url} is not an http:// or https:// address"
    return f"{url} failed: {e.__class__.__name__}: {e}"


def _status_problem(url: str, code: int, body: str) -> str:
    if code in (401, 403):
        return f"{url} refused the API key (HTTP {code}): check the key"
    if code == 404:
        return (f"{url} was not found (HTTP 404): the base URL should end in /v1 (e.g. http://127.0.0.1:11434/v1 "
                "for Ollama), or the model name is wrong")
    return f"{url} answered HTTP {code}: {body[:160]!r}"


def list_models(base_url: str, api_key: str | None = None, timeout: float = 10.0) -> list[str]:
    """The model ids an OpenAI-compatible endpoint serves (``GET {base_url}/models``); :class:`SynthesisError`
    naming what failed (address, connection, key, path, protocol)."""
    import httpx

    base = (base_url or "").strip().rstrip("/")
    if not base:
        raise SynthesisError("enter the endpoint's base URL, e.g. http://127.0.0.1:11434/v1 (Ollama)")
    url = f"{base}/models"
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        r = httpx.get(url, headers=headers, timeout=timeout)
    except httpx.HTTPError as e:
        raise SynthesisError(_explain(url, e)) from e
    if r.status_code != 200:
        raise SynthesisError(_status_problem(url, r.status_code, r.text))
    try:
        ids = [m["id"] for m in r.json()["data"]]
    except (ValueError, KeyError, TypeError) as e:
        raise SynthesisError(f"{url} did not answer with an OpenAI model list: {r.text[:120]!r}") from e
    return sorted(ids)


def check_endpoint(base_url: str, model: str, api_key: str | None = None, timeout: float = 30.0) -> str:
    """Lists the endpoint's models and asks ``model`` for a few tokens; returns what worked, or raises
    :class:`SynthesisError` naming the step that failed."""
    t0 = time.monotonic()
    models = list_models(base_url, api_key, timeout=min(timeout, 10.0))
    if not model:
        raise SynthesisError(f"the endpoint serves {len(models)} model(s); pick one ({', '.join(models[:5])})")
    if models and model not in models:
        raise SynthesisError(f"model {model!r} is not among the endpoint's models: {', '.join(models[:8])}")
    synth = OpenAICompatSynthesizer(base_url, model, api_key, connect_timeout=5.0, read_timeout=timeout,
                                    total_timeout=timeout, max_tokens=8)
    reply = synth.complete([{"role": "user", "content": "Reply with the word: ready"}], max_tokens=8).strip()
    if not reply:
        raise SynthesisError(f"model {model!r} answered with nothing")
    return f"connected: {len(models)} model(s) listed; {model} answered {reply[:40]!r} in {time.monotonic() - t0:.1f} s"
