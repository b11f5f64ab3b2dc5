"""The HTTP API under ``/v1``, on the web app's server (``mgrag serve``): an OpenAI-compatible chat endpoint that
answers from the documents with citations, REST for documents (upload, list, get, delete) and search, behind API
keys (:mod:`services.keys`). The schema is served at ``/v1/openapi.json`` (and an explorer at ``/v1/docs``).

Every request names its key as ``Authorization: Bearer mgrag-…``; the key's user decides what it sees (the shared
library and the user's own uploads) and owns what it uploads. Errors are JSON in OpenAI's shape,
``{"error": {"message", "type", "code"}}``, with a message that names the problem."""
from __future__ import annotations

import asyncio
import json
import logging
import secrets
import shutil
import threading
import time
from collections import deque
from dataclasses import asdict
from pathlib import Path
from typing import Any, Iterator, Literal

from fastapi import Depends, FastAPI, File, Request, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from services.chat import EmptyIndexError

log = logging.getLogger(__name__)

MODEL = "mgrag"  # the configured backend; "mgrag-<backend>" picks one


class ApiError(Exception):
    def __init__(self, status: int, message: str, code: str = "invalid_request", headers: dict | None = None):
        super().__init__(message)
        self.status, self.message, self.code, self.headers = status, message, code, headers or {}


# -- wire format ---------------------------------------------------------------------------------------------
class Message(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str
    content: str | list[dict[str, Any]] | None = None


class Options(BaseModel):
    """MGRAG's own options of a chat completion (the ``mgrag`` field; with the ``openai`` SDK pass
    ``extra_body={"mgrag": {...}}``)."""
    model_config = ConfigDict(extra="forbid")
    documents: list[str] | None = Field(None, description="Search only these documents (ids as listed by "
                                                          "GET /v1/documents); default: every document you may see.")
    k: int | None = Field(None, ge=1, le=100, description="Passages retrieved per level (setting top_k).")
    budget_words: int | None = Field(None, ge=50, le=20000, description="Words of context (setting budget_words).")
    retriever: Literal["dense", "bm25", "hybrid"] | None = Field(None, description="Setting retriever.")


MAX_MESSAGES = 200  # a conversation's turns in one request (the answer reads the last few)
MAX_JSON_BODY = 2 * 2**20  # a chat or search request (uploads alone may be larger: BodyLimit)


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="allow")  # temperature, max_tokens, … are accepted and ignored
    model: str = MODEL
    messages: list[Message] = Field(..., min_length=1, max_length=MAX_MESSAGES)
    stream: bool = False
    mgrag: Options | None = None


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str
    k: int = Field(5, ge=1, le=100)
    retriever: Literal["dense", "bm25", "hybrid"] | None = None  # None: the setting's
    documents: list[str] | None = None


# -- keys and limits -----------------------------------------------------------------------------------------
MAX_IN_FLIGHT_PER_KEY = 4  # requests of one key being served at once (a hostile run held every thread with 45)


class InFlight:
    """At most ``per_key`` requests of each key at once; :meth:`enter` says False past it."""

    def __init__(self, per_key: int = MAX_IN_FLIGHT_PER_KEY):
        self.per_key, self._n, self._lock = per_key, {}, threading.Lock()

    def enter(self, name: str) -> bool:
        with self._lock:
            if self._n.get(name, 0) >= self.per_key:
                return False
            self._n[name] = self._n.get(name, 0) + 1
            return True

    def leave(self, name: str) -> None:
        with self._lock:
            self._n[name] = self._n.get(name, 1) - 1
            if self._n[name] <= 0:
                del self._n[name]


class RateLimit:
    """At most ``per_minute`` requests per key in any 60 s."""

    def __init__(self, per_minute: int):
        self.per_minute = per_minute
        self._seen: dict[str, deque] = {}
        self._lock = threading.Lock()

    def take(self, who: str) -> float:
        """0 if the request may go on, else the seconds until it may."""
        now = time.monotonic()
        with self._lock:
            q = self._seen.setdefault(who, deque())
            while q and now - q[0] >= 60:
                q.popleft()
            if len(q) >= self.per_minute:
                return 60 - (now - q[0])
            q.append(now)
            return 0.0


def _text(content) -> str:
    """A message's text: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    return "\n".join(str(p.get("text", "")) for p in content or () if p.get("type") == "text")


def history_of(messages: list[Message]) -> tuple[str, list[dict]]:
    """(the question, the conversation before it) of a chat request: the last message must be the user's; system
    messages are not read (the answer's instructions are the product's own)."""
    turns = [m for m in messages if m.role in ("user", "assistant")]
    if not turns or turns[-1].role != "user":
        raise ApiError(400, "the last message must be the user's question (role 'user')")
    question = _text(turns[-1].content).strip()
    if not question:
        raise ApiError(400, "the last user message is empty; it is the question")
    return question, [{"role": m.role, "content": _text(m.content)} for m in turns[:-1]]


def citation_json(service, c) -> dict:
    """One cited source as the API returns it: document, place (pages and section), the passage, the sentences
    that support the answer and a viewer link (valid for the viewer's token lifetime)."""
    d = asdict(c)
    link = service.view_link(d, [(x["start"], x["end"]) for x in c.support if "start" in x])
    return {"index": c.number, "document": c.name or c.doc_id, "pages": c.pages, "unit": c.unit,
            "section": " › ".join(c.headings), "place": c.label, "passage": c.parent_text,
            "matched_text": c.matched_text, "score": round(float(c.score), 4),
            "support": [{"text": x.get("text", ""), "start": x.get("start"), "end": x.get("end"),
                         "score": x.get("score")} for x in c.support],
            "view_url": "/" + link if link else None}


# -- the app -------------------------------------------------------------------------------------------------
def _caller(service, limit: RateLimit, inflight: InFlight):
    """The dependency that names a request's key: 401 without one or with a wrong one, 429 past its rate limit or
    its requests in flight; it counts the request in flight until it is answered."""

    def caller(request: Request):
        """The key of the request (401 without one or with a wrong one), within its rate limit (429)."""
        auth = request.headers.get("authorization", "")
        key = auth[7:].strip() if auth[:7].lower() == "bearer " else None
        found = service.api_keys.check(key)
        if found is None:
            raise ApiError(401, "a valid API key is needed: send 'Authorization: Bearer mgrag-…' (an admin makes "
                                "one with `mgrag keys add NAME --user USER` or on the Admin tab)",
                           "invalid_api_key", {"WWW-Authenticate": "Bearer"})
        if service.users and service.users.name_of(found.user_id) is None:  # its account (by id) is gone
            raise ApiError(401, f"the user of key {found.name!r} no longer exists", "invalid_api_key")
        wait = limit.take(found.name)
        if wait:
            raise ApiError(429, f"key {found.name!r} made more than {limit.per_minute} requests in a minute "
                                f"(setting api_requests_per_minute); retry in {wait:.0f} s", "rate_limited",
                           {"Retry-After": str(max(1, round(wait)))})
        if not inflight.enter(found.name):
            raise ApiError(429, f"key {found.name!r} has {inflight.per_key} requests being served already; wait for "
                                "one to finish", "too_many_in_flight", {"Retry-After": "1"})
        try:
            yield found
        finally:
            inflight.leave(found.name)

    return caller


def build_api(service, *, requests_per_minute: int | None = None):
    """The ``/v1`` FastAPI app for ``service`` (a :class:`services.service.AppService`), its bodies not capped: the
    web server puts :class:`BodyLimit` in front of it (:func:`ui.app.own_routes`); elsewhere mount it with
    :func:`mount_api`."""
    limit = RateLimit(requests_per_minute or service.settings.api_requests_per_minute)
    inflight = InFlight()
    api = FastAPI(title="MGRAG API", version="1", docs_url="/docs", openapi_url="/openapi.json",
                  description=__doc__)

    @api.exception_handler(ApiError)
    def _api_error(request, e: ApiError):
        kind = {401: "authentication_error", 403: "permission_error", 404: "not_found_error",
                429: "rate_limit_error"}.get(e.status, "invalid_request_error")
        return JSONResponse({"error": {"message": e.message, "type": kind, "code": e.code}}, e.status,
                            headers=e.headers)

    @api.exception_handler(RequestValidationError)
    def _invalid(request, e: RequestValidationError):
        problems = "; ".join(f"{'.'.join(str(x) for x in err.get('loc', ()) if x != 'body') or 'body'}: "
                             f"{err.get('msg')}" for err in e.errors())
        return JSONResponse({"error": {"message": f"the request is not valid: {problems}",
                                       "type": "invalid_request_error", "code": "invalid_request"}}, 400)

    caller = _caller(service, limit, inflight)

    @api.get("/models", summary="The models: the configured backend and each backend by name")
    def models(key=Depends(caller)):
        now = int(time.time())
        ids = [MODEL] + [f"{MODEL}-{b}" for b, why in service.backends().items() if why is None]
        return {"object": "list", "data": [{"id": i, "object": "model", "created": now, "owned_by": "mgrag"}
                                           for i in ids]}

    @api.post("/chat/completions", summary="A grounded answer from the documents (OpenAI's chat format)")
    def chat(body: ChatRequest, key=Depends(caller)):
        backend = _backend(service, body.model)
        question, history = history_of(body.messages)
        opts = body.mgrag or Options()
        scope = _scope(service, key.owner, opts.documents)
        events = service.ask(question, k=opts.k, budget_words=opts.budget_words, retriever=opts.retriever,
                             backend=backend, owner=key.owner, scope=scope, history=history)
        cid, created = "chatcmpl-" + secrets.token_hex(12), int(time.time())
        if body.stream:
            return StreamingResponse(_stream(service, events, cid, created, body.model), media_type="text/event-stream")
        answer = _finish(events)
        return {"id": cid, "object": "chat.completion", "created": created, "model": body.model,
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": _content(service, answer)}}],
                **_extras(service, answer)}

    @api.post("/documents", summary="Upload documents (multipart, field 'files'); ?wait=true returns when searchable")
    async def upload(files: list[UploadFile] = File(...), wait: bool = False, key=Depends(caller)):
        # the spooling and queueing in a worker thread; the wait on the event loop, holding no thread (a hostile
        # run's 45 waiting uploads held every thread of the pool: the other keys' requests timed out)
        rows, ids = await run_in_threadpool(_enqueue_upload, service, files, key.owner)
        if wait and ids:
            await wait_searchable(service, ids, timeout_s=600)
        return {"documents": await run_in_threadpool(_upload_rows, service, rows, key.owner)}

    @api.get("/documents", summary="The documents this key may search, with their state")
    def documents(key=Depends(caller)):
        out = {"documents": [_doc_json(r, key.owner) for r in _visible(service, key.owner)]}
        note = reach_note(service)
        return {**out, "note": note} if note else out

    @api.get("/documents/{doc_id:path}", summary="One document with its state")
    def document(doc_id: str, key=Depends(caller)):
        return _doc_json(_one(service, key.owner, doc_id), key.owner)

    @api.delete("/documents/{doc_id:path}", summary="Delete one of your uploads")
    def delete(doc_id: str, key=Depends(caller)):
        row = _one(service, key.owner, doc_id)
        if row["owner"] != key.owner:
            raise ApiError(403, f"{doc_id!r} is in the shared library; only the admin can delete it", "forbidden")
        try:
            service.delete_own(key.owner, [row["doc_id"]])
        except ValueError as e:
            raise ApiError(409, str(e)) from e
        return {"deleted": doc_id}

    @api.post("/search", summary="Retrieval only: the passages and the hits per level, with their scores")
    def search(body: SearchRequest, key=Depends(caller)):
        return _search(service, body, key.owner)

    return api


MAX_FILES_PER_UPLOAD = 16
UPLOAD_ROUTE = "/documents"  # POST: the API's one upload route (``/v1/documents`` on the web server)


def upload_limit(settings) -> int:
    """The largest upload request: :data:`MAX_FILES_PER_UPLOAD` files of ``max_file_mb`` each and 1 MB of multipart
    overhead."""
    return int(settings.max_file_mb * 2**20) * MAX_FILES_PER_UPLOAD + 2**20


class BodyLimit:
    """ASGI middleware in front of every route of the web server (:func:`ui.app.launch` puts it there, before
    Gradio's routes, its login and its auth): a request body is refused (413, a short JSON error) before it is read
    when it declares more than its route's limit, or while it streams past it without declaring its length. Uploads
    (``POST`` to one of ``uploads``: ``/v1/documents``, Gradio's upload route) may be up to ``limit``, so one request
    cannot fill the disk with the multipart parser's temporary files; every other route (Gradio's queue, run and call
    routes, its login, the viewer, /v1's chat and search) up to ``json_limit``: a hostile run froze the server with
    an 80 MB ``messages`` array (JSON parsing holds ~36× the body in memory), and three 150 MB bodies to Gradio's
    ``/gradio_api/queue/join`` held 2 GB. Websockets pass untouched; answers streamed over SSE are plain GETs."""

    def __init__(self, app, limit: int, uploads: tuple[str, ...], json_limit: int = MAX_JSON_BODY):
        self.app, self.upload_limit, self.json_limit = app, limit, json_limit
        self.uploads = frozenset(u.rstrip("/") for u in uploads)

    def is_upload(self, scope) -> bool:
        path, root = scope.get("path", ""), scope.get("root_path", "")
        if root and path.startswith(root + "/"):  # served under a prefix: the route is what follows it
            path = path[len(root):]
        return scope.get("method") == "POST" and path.rstrip("/") in self.uploads

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        upload = self.is_upload(scope)
        limit = self.upload_limit if upload else self.json_limit
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            return await _too_large(send, limit, upload)
        state = {"seen": 0, "refused": False}

        async def counted():
            if state["refused"]:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                state["seen"] += len(message.get("body", b""))
                if state["seen"] > limit:  # answer now; the app reads a disconnect and its reply is dropped
                    state["refused"] = True
                    await _too_large(send, limit, upload)
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message):
            if not state["refused"]:
                await send(message)

        try:
            await self.app(scope, counted, guarded_send)
        except Exception:
            if not state["refused"]:
                raise


async def _too_large(send, limit: int, upload: bool = True) -> None:
    why = (f"at most {MAX_FILES_PER_UPLOAD} files of max_file_mb each); send fewer or smaller files" if upload else
           "for a chat or search request, a question or any other request but an upload); send a shorter "
           "conversation")
    body = json.dumps({"error": {"message": f"the request is larger than {limit / 2**20:.1f} MB ({why}",
                                 "type": "invalid_request_error", "code": "request_too_large"}}).encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def api_app(service):
    """:func:`build_api` with its request bodies capped (:class:`BodyLimit`), for a server that has no cap of its own.
    The web server (:func:`ui.app.launch`) mounts :func:`build_api` itself at ``/v1``: its one BodyLimit in front of
    every route covers ``/v1`` too."""
    return BodyLimit(build_api(service), upload_limit(service.settings), (UPLOAD_ROUTE,))


def mount_api(app, service) -> None:
    """Serve :func:`api_app` under ``/v1`` of an existing server app ``app``."""
    app.mount("/v1", api_app(service))


def _backend(service, model: str) -> str | None:
    if model in (MODEL, "", None):
        return None
    name = model.removeprefix(MODEL + "-")
    why = service.backends().get(name, "unknown") if model.startswith(MODEL + "-") else "unknown"
    if why == "unknown":
        raise ApiError(404, f"no model {model!r}; GET /v1/models lists them ('{MODEL}' is the configured backend)",
                       "model_not_found")
    if why is not None:
        raise ApiError(400, f"model {model!r} cannot run here: {why}", "model_unavailable")
    return name


def _scope(service, owner: str, documents: list[str] | None) -> list[str] | None:
    """The doc ids of the documents a request names by their API ids (the names the key's user sees)."""
    if not documents:
        return None
    labels = service.document_labels(owner)
    by_label = {labels.get(d, d): d for d in service.searchable_documents(owner)}
    unknown = [d for d in documents if d not in by_label]
    if unknown:
        raise ApiError(404, f"no document {unknown[0]!r} among those this key may search (GET /v1/documents)",
                       "document_not_found")
    return [by_label[d] for d in documents]


def _finish(events):
    try:
        for kind, value in events:
            if kind == "done":
                return value
    except (ValueError, EmptyIndexError) as e:
        raise ApiError(400, str(e)) from e
    raise ApiError(500, "the answer did not complete", "internal_error")


BROWSER_UPLOADS_NOTE = ("This API key searches the shared library (`mgrag ingest`) and the files uploaded with "
                        "it (POST /v1/documents). This server has no user accounts, so a file uploaded in a browser "
                        "belongs to that browser alone and no API key searches it.")


def reach_note(service) -> str | None:
    """What a key cannot see and why, where that is a surprise: without user accounts a browser's uploads are its
    own, and a key (made for a name, not for a browser) never sees them (issue 32: the only symptom was an
    abstention). The same words whatever exists, so they reveal nobody's documents."""
    return None if service.users else BROWSER_UPLOADS_NOTE


def _content(service, answer) -> str:
    """The answer's text; an abstention says what the key searches when it may not see a browser's uploads."""
    note = reach_note(service) if answer.abstained else None
    return f"{answer.text}\n\n({note})" if note else answer.text


def _extras(service, answer) -> dict:
    """MGRAG's fields of a completion: the cited sources, whether it abstained, and what was searched."""
    note = reach_note(service) if answer.abstained else None
    return {"citations": [citation_json(service, c) for c in answer.citations],
            "mgrag": {"abstained": answer.abstained, "query": answer.query, "rewrite": answer.rewrite,
                      "backend": answer.backend, "retriever": answer.retriever, "error": answer.error,
                      "sources": len(answer.sources), **({"note": note} if note else {}),
                      **({"routed": answer.grounding["routed"]} if answer.grounding.get("routed") else {})}}


def _stream(service, events, cid: str, created: int, model: str) -> Iterator[str]:
    """Server-sent events in OpenAI's chunk format. Only the checked answer is sent (a draft that grounding would
    change never leaves the server, as in the web app); the last chunk carries the citations."""
    def chunk(delta: dict, finish=None, **extra) -> str:
        return "data: " + json.dumps({"id": cid, "object": "chat.completion.chunk", "created": created,
                                      "model": model, "choices": [{"index": 0, "delta": delta,
                                                                   "finish_reason": finish}], **extra}) + "\n\n"

    yield chunk({"role": "assistant", "content": ""})
    try:
        answer = _finish(events)
    except ApiError as e:
        yield "data: " + json.dumps({"error": {"message": e.message, "type": "invalid_request_error",
                                               "code": e.code}}) + "\n\n"
        return
    words = _content(service, answer).split(" ")
    for i in range(0, len(words), 8):
        yield chunk({"content": " ".join(words[i:i + 8]) + (" " if i + 8 < len(words) else "")})
    yield chunk({}, "stop", **_extras(service, answer))
    yield "data: [DONE]\n\n"


def _visible(service, owner: str) -> list[dict]:
    """The documents ``owner`` may see, each with ``label``: its API id, the name the user sees
    (:meth:`AppService.document_states`)."""
    return service.document_states(owner)


def _one(service, owner: str, doc_id: str) -> dict:
    for r in _visible(service, owner):
        if r["label"] == doc_id:
            return r
    raise ApiError(404, f"no document {doc_id!r} among those this key may see (GET /v1/documents lists them)",
                   "document_not_found")


def _doc_json(r: dict, owner: str) -> dict:
    return {"id": r["label"], "name": r["name"], "kind": r.get("kind"), "size": r.get("size"),
            "version": r.get("version"), "owner": "you" if r.get("owner") == owner else "library",
            "state": r["state"], "searchable": r["searchable"], "detail": r["detail"], "progress": r.get("progress"),
            "eta_s": r.get("eta_s"), "error": r.get("error"), "job_id": r.get("job_id"),
            "chunks": [r.get(f"n_l{i}") for i in range(3)] if r.get("n_l0") is not None else None}


async def wait_searchable(service, ids: list[str], timeout_s: float, poll_s: float = 0.5) -> None:
    """Until each job of ``ids`` is searchable or has failed (or ``timeout_s``), polling without holding a thread."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if await run_in_threadpool(service.all_searchable, ids):
            return
        await asyncio.sleep(poll_s)


def _enqueue_upload(service, files, owner: str) -> tuple[list[dict], list[str]]:
    """Spool each part into the upload folder (refused past ``max_file_mb``) and queue them for ``owner``."""
    if not files:
        raise ApiError(400, "no files: send them as multipart form field 'files'")
    if len(files) > MAX_FILES_PER_UPLOAD:
        raise ApiError(400, f"{len(files)} files in one request; send at most {MAX_FILES_PER_UPLOAD} at a time")
    limit = int(service.settings.max_file_mb * 2**20)
    spool = Path(service.upload_root) / f"api-{secrets.token_hex(8)}"
    spool.mkdir(parents=True, mode=0o700)
    try:
        paths, names, too_big = [], [], []
        for i, f in enumerate(files):
            p = spool / str(i)
            p.mkdir()
            path = p / "upload"
            size = _spool(f, path, limit)
            if size > limit:
                too_big.append(f.filename or "(unnamed)")
                continue
            paths.append(path)
            names.append(f.filename or "")
        if too_big:
            raise ApiError(413, f"{too_big[0]}: the file is larger than the {service.settings.max_file_mb:g} MB "
                                "limit (setting max_file_mb); nothing was uploaded", "file_too_large")
        return service.enqueue_files(paths, names=names, owner=owner)
    finally:
        shutil.rmtree(spool, ignore_errors=True)


def _upload_rows(service, rows: list[dict], owner: str) -> list[dict]:
    rows = service.upload_rows(rows)
    return [{"name": r["name"], "status": r["status"], "message": r.get("message", ""), "job_id": r.get("job_id"),
             "id": _doc_id(service, r, owner)} for r in rows]


def _doc_id(service, row: dict, owner: str) -> str | None:
    """The API id of an upload's document: the name its user sees (:meth:`AppService.upload_label`)."""
    return service.upload_label(row, owner)


def _spool(f, path: Path, limit: int) -> int:
    size = 0
    with open(path, "wb") as out:
        while chunk := f.file.read(1 << 20):
            size += len(chunk)
            if size > limit:
                break
            out.write(chunk)
    return size


def _search(service, body: SearchRequest, owner: str) -> dict:
    """The passages of a search (:meth:`AppService.search`: retried as the chat's is when it raced a re-ingestion) and
    the hits per level, among the documents ``owner`` may search."""
    scope = _scope(service, owner, body.documents)
    try:
        got = service.search(body.query, k=body.k, retriever=body.retriever, owner=owner, scope=scope)
    except (ValueError, EmptyIndexError) as e:
        raise ApiError(400, str(e)) from e
    passages = []
    for src in got.sources:
        d = asdict(src)
        passages.append({"rank": d["rank"], "document": d["name"] or d["doc_id"], "score": round(float(d["score"]), 4),
                         "pages": d["pages"], "unit": d["unit"], "section": " › ".join(d["headings"]),
                         "text": d["text"], "matched_level": d["matched_level"], "matched_text": d["matched_text"],
                         "level_scores": {str(k): round(float(v), 4) for k, v in d["level_scores"].items()}})
    levels = service.level_hits(body.query, k=body.k, retriever=got.retriever, owner=owner)
    labels = service.document_labels(owner)
    levels = [{**r, "document": labels.get(r["document"], r["document"])} for r in levels
              if not scope or r["document"] in scope]
    return {"passages": passages, "weights": list(got.weights), "levels": levels}
