"""An independent MCP client (the Python `mcp` package) driving `ufo mcp serve`.

Usage: python mcp_client.py UFO_BINARY SCENARIO.json [--allow-actions]
Prints one JSON object: the tool names, the observation, and the outcome of an action.
"""

import asyncio
import base64
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def attr(obj, *names):
    for n in names:
        if hasattr(obj, n):
            return getattr(obj, n)
    return None


def summarise(result):
    parts = []
    for c in result.content:
        if c.type == "text":
            parts.append({"type": "text", "text": c.text})
        elif c.type == "image":
            png = base64.b64decode(c.data)
            parts.append({"type": "image", "mime": attr(c, "mime_type", "mimeType"),
                          "png": png[:8] == b"\x89PNG\r\n\x1a\n", "bytes": len(png)})
        else:
            parts.append({"type": c.type})
    return {"is_error": bool(attr(result, "is_error", "isError")), "content": parts}


async def main():
    binary, scenario = sys.argv[1], sys.argv[2]
    args = ["mcp", "serve", "--desktop", "sim:" + scenario]
    if "--allow-actions" in sys.argv[3:]:
        args.append("--allow-actions")
    params = StdioServerParameters(command=binary, args=args)
    out = {}
    async with stdio_client(params) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            out["tools"] = sorted(t.name for t in tools.tools)
            out["list_windows"] = summarise(await session.call_tool("list_windows", {}))
            out["observe"] = summarise(
                await session.call_tool("observe_window", {"window": "Writer"}))
            out["act"] = summarise(await session.call_tool(
                "act", {"window": "Writer", "control": "File name", "function": "set_text",
                        "args": {"text": "from python"}}))
            out["after"] = summarise(
                await session.call_tool("observe_window", {"window": "Writer"}))
    print(json.dumps(out))


asyncio.run(main())
