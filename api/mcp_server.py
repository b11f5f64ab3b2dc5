"""``mgrag mcp``: an MCP server on stdio (the official ``mcp`` SDK) whose tools search the documents, answer from
them with citations and list them. It is a client of a running ``mgrag serve``'s HTTP API with an API key, so it
sees what the key's user sees, and the server keeps the one process that owns the data dir.

MCP clients (Claude Desktop, Cursor, Continue, …) start it as a command, e.g.
``{"command": "mgrag", "args": ["mcp", "--url", "http://127.0.0.1:7860"], "env": {"MGRAG_API_KEY": "mgrag-…"}}``."""
from __future__ import annotations

import argparse
import os
import sys

import httpx

# Imported where they are used, on purpose (heavy, optional or not needed by every caller): mcp

INSTRUCTIONS = ("MGRAG answers questions from the user's own documents. Use `ask` for an answer with numbered "
                "citations (it says so when the documents do not answer), `search` to read the passages found for "
                "a query, `list_documents` for the document ids a search or an answer can be limited to.")


def build_mcp(url: str, key: str, timeout_s: float = 300.0):
    try:
        from mcp.server.mcpserver import MCPServer
    except ImportError as e:
        raise SystemExit("mgrag mcp needs the MCP SDK: pip install 'mgrag[mcp]' (make setup installs it)") from e
    from mcp.server.mcpserver.exceptions import ToolError as ApiFailed  # its message reaches the client

    base = url.rstrip("/") + "/v1"
    http = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=timeout_s)

    def call(method: str, path: str, **kw) -> dict:
        try:
            r = http.request(method, path, **kw)
        except httpx.HTTPError as e:
            raise ApiFailed(f"MGRAG at {url} cannot be reached ({e}); is `mgrag serve` running?") from e
        if r.status_code >= 400:
            try:
                msg = r.json()["error"]["message"]
            except (ValueError, KeyError, TypeError):
                msg = r.text[:300]
            raise ApiFailed(f"MGRAG said ({r.status_code}): {msg}")
        return r.json()

    server = MCPServer("mgrag", instructions=INSTRUCTIONS)

    @server.tool(description="Answer a question from the documents, grounded, with numbered citations (document, "
                             "pages, section, the supporting sentences). Optionally limited to some document ids.")
    def ask(question: str, documents: list[str] | None = None) -> dict:
        body = {"model": "mgrag", "messages": [{"role": "user", "content": question}]}
        if documents:
            body["mgrag"] = {"documents": documents}
        out = call("POST", "/chat/completions", json=body)
        return {"answer": out["choices"][0]["message"]["content"], "abstained": out["mgrag"]["abstained"],
                "citations": [{k: c[k] for k in ("index", "document", "pages", "section", "support")}
                              for c in out["citations"]]}

    @server.tool(description="Retrieval only: the passages found for a query, best first, with their scores.")
    def search(query: str, k: int = 5, documents: list[str] | None = None) -> dict:
        out = call("POST", "/search", json={"query": query, "k": k, "documents": documents})
        return {"passages": [{k2: p[k2] for k2 in ("rank", "document", "score", "pages", "section", "text")}
                             for p in out["passages"]]}

    @server.tool(description="The documents you may search, with their state (searchable, ready, …).")
    def list_documents() -> dict:
        docs = call("GET", "/documents")["documents"]
        return {"documents": [{k: d[k] for k in ("id", "name", "state", "owner")} for d in docs]}

    return server


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="mgrag mcp", description=__doc__.split("\n\n")[0])
    p.add_argument("--url", default=os.environ.get("MGRAG_URL", "http://127.0.0.1:7860"),
                   help="the running `mgrag serve` (env MGRAG_URL; default http://127.0.0.1:7860)")
    args = p.parse_args(argv)
    key = os.environ.get("MGRAG_API_KEY", "")
    if not key:
        print("mgrag mcp: set MGRAG_API_KEY to an API key (an admin makes one with `mgrag keys add NAME --user "
              "USER`)", file=sys.stderr)
        return 2
    build_mcp(args.url, key).run("stdio")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
