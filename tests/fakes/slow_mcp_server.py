"""A stdio MCP server for tests: `slow` answers after the given seconds, `crash` ends the process."""

import os
import time

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("slow")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def slow(seconds: float = 5.0) -> dict:
    """Sleep, then answer."""
    time.sleep(seconds)
    return {"slept": seconds}


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def crash() -> dict:
    """End the server process mid-call."""
    os._exit(3)


if __name__ == "__main__":
    server.run()
