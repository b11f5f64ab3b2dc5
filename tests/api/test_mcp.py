"""`mgrag mcp` over stdio with the official MCP client: its tools search and answer through the HTTP API with the
key's rights."""
from __future__ import annotations

import json
import os
import sys

import anyio


def _session_call(api, key: str, calls: list[tuple[str, dict]]):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    url = api.base.removesuffix("/v1")
    env = {**os.environ, "MGRAG_API_KEY": key}
    params = StdioServerParameters(command=sys.executable, args=["-m", "api.mcp_server", "--url", url], env=env,
                                   cwd=os.getcwd())

    async def run():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                tools = sorted(t.name for t in (await s.list_tools()).tools)
                out = [await s.call_tool(name, args) for name, args in calls]
                return tools, out

    return anyio.run(run)


def _json(result) -> dict:
    return json.loads(result.content[0].text)


def test_mcp_tools_ask_and_search(api):
    tools, (asked, found, listed) = _session_call(api, api.alice, [
        ("ask", {"question": "How long has Mrs. Alder tended the light?"}),
        ("search", {"query": "lamp paraffin wound by hand", "k": 3}),
        ("list_documents", {})])
    assert tools == ["ask", "list_documents", "search"]
    a = _json(asked)
    assert "twenty-two years" in a["answer"] and a["citations"][0]["document"] == "lighthouse.md"
    assert _json(found)["passages"][0]["document"] == "lighthouse.md"
    assert "lighthouse.md" in [d["id"] for d in _json(listed)["documents"]]


def test_mcp_with_a_wrong_key_reports_the_servers_message(api):
    _, (out,) = _session_call(api, "mgrag-AAAAAAAA-" + "x" * 43, [("list_documents", {})])
    assert out.is_error and "valid API key" in out.content[0].text
