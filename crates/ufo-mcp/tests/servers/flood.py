#!/usr/bin/env python3
"""A tiny MCP stdio server for tests: `echo` answers normally; `flood` answers with one line
that never ends (stopped at a safety limit of 256 MiB, so a broken client cannot exhaust the
machine). Its pid goes to $FLOOD_PIDFILE, and the bytes of flood it wrote to $FLOOD_SENT."""
import json
import os
import sys

LIMIT = 256 << 20

with open(os.environ["FLOOD_PIDFILE"], "w") as f:
    f.write(str(os.getpid()))


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def flood(request_id):
    out = sys.stdout.buffer
    out.write(b'{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"'
              % json.dumps(request_id).encode())
    chunk = b"x" * (1 << 20)
    sent = 0
    try:
        while sent < LIMIT:
            out.write(chunk)
            out.flush()
            sent += len(chunk)
            with open(os.environ["FLOOD_SENT"], "w") as f:
                f.write(str(sent))
    except BrokenPipeError:
        os._exit(0)
    sys.stdin.read()


for line in sys.stdin:
    request = json.loads(line)
    method, request_id = request.get("method"), request.get("id")
    if request_id is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": request_id, "result": {
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "flood", "version": "1"}}})
    elif method == "tools/list":
        schema = {"type": "object", "properties": {"text": {"type": "string"}}}
        send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": [
            {"name": "echo", "description": "Echo the text", "inputSchema": schema},
            {"name": "flood", "description": "Answer forever", "inputSchema": schema}]}})
    elif method == "tools/call" and request["params"]["name"] == "flood":
        flood(request_id)
    elif method == "tools/call":
        text = request["params"].get("arguments", {}).get("text", "")
        send({"jsonrpc": "2.0", "id": request_id,
              "result": {"content": [{"type": "text", "text": text}]}})
    else:
        send({"jsonrpc": "2.0", "id": request_id,
              "error": {"code": -32601, "message": "no such method"}})
