"""A local stub of the OpenAI chat-completions protocol on 127.0.0.1, for tests (streaming included)."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def echo_reply(body: dict) -> str:
    """A grounded stand-in for an LLM: the first sentence of source [1] in the prompt, cited."""
    import re

    user = body["messages"][-1]["content"]
    m = re.search(r"\[1\] \(from [^)]*\)\n(.+?[.!?])(\s|$)", user, re.S)
    return (m.group(1).replace("\n", " ") + " [1]") if m else "I cannot find it in the documents."


class StubOpenAI:
    """``mode``: "ok" (SSE stream), "json" (ignores stream), "slow" (the stream's headers, then nothing until
    ``release`` is set, as the stub's exit does), "garbage", "error".

    ``reply=None`` answers with :func:`echo_reply` (the first sentence of source [1]).
    """

    def __init__(self, reply: str = "The keeper has tended the light for twenty-two years [1].", mode: str = "ok",
                 models: tuple[str, ...] = ("stub-llm", "stub-llm-large"), api_key: str | None = None,
                 strict_models: bool = False):
        self.reply = reply
        self.mode = mode
        self.models = list(models)
        self.api_key = api_key  # when set, requests without "Bearer <api_key>" get HTTP 401
        self.strict_models = strict_models  # when set, a chat request for a model not in ``models`` gets HTTP 404
        self.requests: list[dict] = []
        self.release = threading.Event()  # "slow": the held stream goes on once this is set
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _authorised(self) -> bool:
                if stub.api_key and self.headers.get("Authorization") != f"Bearer {stub.api_key}":
                    self._send(401, "application/json", b'{"error": {"message": "invalid api key"}}')
                    return False
                return True

            def do_GET(self):
                stub.requests.append({"path": self.path, "auth": self.headers.get("Authorization")})
                if not self._authorised():
                    return
                if self.path.rstrip("/").endswith("/v1/models"):
                    data = {"object": "list", "data": [{"id": m, "object": "model"} for m in stub.models]}
                    self._send(200, "application/json", json.dumps(data).encode())
                else:
                    self._send(404, "text/plain", b"not found")

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                if not self._authorised():
                    return
                if not self.path.rstrip("/").endswith("/v1/chat/completions"):
                    self._send(404, "text/plain", b"not found")
                    return
                if stub.strict_models and body.get("model") not in stub.models:
                    self._send(404, "application/json",
                               json.dumps({"error": {"message": f"model {body.get('model')!r} not found"}}).encode())
                    return
                reply = stub.reply if stub.reply is not None else echo_reply(body)
                if stub.mode == "error":
                    self._send(500, "application/json", b'{"error": "model crashed"}')
                elif stub.mode == "garbage":
                    self._send(200, "text/event-stream", b"data: {not json at all\n\n")
                elif stub.mode == "json":
                    msg = {"choices": [{"message": {"role": "assistant", "content": reply}}]}
                    self._send(200, "application/json", json.dumps(msg).encode())
                else:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    try:
                        if stub.mode == "slow":
                            self.wfile.flush()
                            stub.release.wait(60)
                        for word in reply.split(" "):
                            chunk = {"choices": [{"delta": {"content": word + " "}, "index": 0}]}
                            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                            self.wfile.flush()
                        self.wfile.write(b"data: [DONE]\n\n")
                    except (BrokenPipeError, ConnectionResetError):
                        pass  # the client gave up (the timeout tests)

            def _send(self, code, ctype, data):
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # polled often: the exit's shutdown waits for the next poll
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


if __name__ == "__main__":  # a stand-in endpoint for trying the openai backend by hand
    import argparse

    ap = argparse.ArgumentParser(description="OpenAI-compatible stub on 127.0.0.1 (echoes source [1], cited)")
    ap.add_argument("--port", type=int, default=8011)
    a = ap.parse_args()
    stub = StubOpenAI(reply=None)
    stub.server.server_close()
    stub.server = ThreadingHTTPServer(("127.0.0.1", a.port), stub.server.RequestHandlerClass)
    print(f"serving on http://127.0.0.1:{a.port}/v1", flush=True)
    stub.server.serve_forever()
