"""A local stub of the OpenAI chat-completions protocol on 127.0.0.1, for tests (streaming included)."""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class StubOpenAI:
    """``mode``: "ok" (SSE stream), "json" (ignores stream), "slow", "garbage", "error"."""

    def __init__(self, reply: str = "The keeper has tended the light for twenty-two years [1].", mode: str = "ok"):
        self.reply = reply
        self.mode = mode
        self.requests: list[dict] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                if stub.mode == "error":
                    self._send(500, "application/json", b'{"error": "model crashed"}')
                elif stub.mode == "garbage":
                    self._send(200, "text/event-stream", b"data: {not json at all\n\n")
                elif stub.mode == "json":
                    msg = {"choices": [{"message": {"role": "assistant", "content": stub.reply}}]}
                    self._send(200, "application/json", json.dumps(msg).encode())
                else:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    try:
                        if stub.mode == "slow":
                            time.sleep(3)
                        for word in stub.reply.split(" "):
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
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
