"""Stopping the app stops its MCP servers quietly: a server must never be left to find its client gone while it
answers, which printed a BrokenPipeError traceback per server on `make run`'s terminal at Ctrl-C."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from r42_app.core.mcp import McpConfig, McpServerSpec
from r42_app.services.adapters.mcp import McpHub, McpRegistry

ROOT = Path(__file__).resolve().parents[2]
# r42demo, slow to boot, its standard error into a file (the SDK hands a server this process's)
SLOW_START = ("import os, sys, time; os.dup2(os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT), 2); time.sleep(2); "
              "from r42_app.mcp_demo_server import main; main()")


def mcp_servers() -> list[psutil.Process]:
    return [p for p in psutil.Process().children(recursive=True) if "mcp_demo_server" in " ".join(p.cmdline())]


@pytest.mark.anyio
async def test_a_stop_while_the_servers_start_stops_them_without_a_traceback(tmp_path, caplog):
    """The app stopping soon after boot cancels `hub.start()` while a server still starts: it is stopped too
    (before, it was left running with a request it would answer into the dead app's pipe)."""
    server_err = tmp_path / "server.err"
    spec = McpServerSpec("r42demo", sys.executable, ("-c", SLOW_START, str(server_err)), {"PYTHONPATH": str(ROOT)})
    hub = McpHub(McpConfig(servers=(spec,)), McpRegistry())
    starting = asyncio.create_task(hub.start(wait=30))
    await asyncio.sleep(0.5)
    assert len(mcp_servers()) == 1
    starting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await starting
    deadline = time.monotonic() + 10
    while mcp_servers() and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert mcp_servers() == []
    err = server_err.read_text()
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert "never retrieved" not in caplog.text  # nor does the app complain of a wait it left behind


def test_the_demo_server_quits_quietly_when_its_client_is_gone():
    """Its client killed while it answers (the app's worker killed outright): exit 0, no traceback."""
    server = subprocess.Popen([sys.executable, "-m", "r42_app.cli", "mcp", "demo-server"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ})
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "test", "version": "1"}}}
    server.stdin.write((json.dumps(hello) + "\n").encode())
    server.stdin.flush()
    server.stdout.close()  # gone before the answer comes
    server.stdin.close()
    assert server.wait(60) == 0
    err = server.stderr.read().decode(errors="replace")
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
