"""A stdio MCP server for tests: `slow` answers after the given seconds (for the per-call timeout)."""

import time

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("slow")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def slow(seconds: float = 5.0) -> dict:
    """Sleep, then answer."""
    time.sleep(seconds)
    return {"slept": seconds}


if __name__ == "__main__":
    server.run()
