"""`r42 mcp demo-server`: a small MCP server (stdio) to try external tools with, built on the SDK's
server API. Two tools:

- `pension_accrual` (read-only, low risk): the yearly and total pension accrual for a salary.
- `send_message` (it writes, so high risk: R42 asks the user first): leaves a message for the admins of
  the caller's organisation. R42 passes the tenant and user in the call's `_meta` (`r42/tenant`,
  `r42/user`); messages are appended to the JSONL file in R42_MCP_DEMO_MESSAGES, which the admin page
  `/admin/tools` shows per tenant.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

MESSAGES_ENV = "R42_MCP_DEMO_MESSAGES"
MAX_TEXT = 2000


def _meta(ctx: Context) -> dict[str, Any]:
    meta = getattr(ctx.request_context, "meta", None)
    if meta is None:
        return {}
    return meta if isinstance(meta, dict) else meta.model_dump(by_alias=True, exclude_none=True)


def build_server() -> MCPServer:
    server = MCPServer("r42demo", instructions="Demohulpmiddelen voor R42: pensioenopbouw berekenen en een bericht "
                                               "aan de beheerders.")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                                             open_world_hint=False))
    def pension_accrual(salary: float, franchise: float = 17545.0, accrual_percent: float = 1.75,
                        years: int = 1) -> dict[str, float]:
        """Pensioenopbouw per jaar in een middelloonregeling: (salaris - franchise) x opbouwpercentage, en het
        totaal over een aantal jaren. Bedragen in euro per jaar."""
        if salary < 0 or franchise < 0 or not 0 < accrual_percent <= 5 or not 1 <= years <= 60:
            raise ToolError("salary en franchise moeten 0 of meer zijn, accrual_percent tussen 0 en 5 en years "
                            "tussen 1 en 60")
        pensionable = max(0.0, salary - franchise)
        yearly = round(pensionable * accrual_percent / 100, 2)
        return {"pensionable_salary": round(pensionable, 2), "accrual_per_year": yearly,
                "accrual_total": round(yearly * years, 2)}

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                                             open_world_hint=False))
    def send_message(subject: str, text: str, ctx: Context) -> dict[str, str]:
        """Laat een bericht achter voor de beheerders van de organisatie van de gebruiker (zij lezen het in de
        beheerpagina's van R42)."""
        meta = _meta(ctx)
        tenant, user = str(meta.get("r42/tenant", "")), str(meta.get("r42/user", ""))
        if not tenant:
            raise ToolError("dit hulpmiddel werkt alleen via R42 (de aanvraag noemt geen organisatie)")
        subject, text = subject.strip()[:200], text.strip()[:MAX_TEXT]
        if not subject or not text:
            raise ToolError("onderwerp (subject) en tekst (text) zijn verplicht")
        path = Path(os.environ.get(MESSAGES_ENV) or "mcp-demo-messages.jsonl")
        path.parent.mkdir(parents=True, exist_ok=True)
        message = {"at": datetime.now(UTC).isoformat(timespec="seconds"), "tenant": tenant, "user": user,
                   "subject": subject, "text": text}
        with path.open("a", encoding="utf-8") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)  # `r42 user forget` rewrites the file under the same lock
            fh.write(json.dumps(message, ensure_ascii=False) + "\n")
        return {"status": "sent", "to": "de beheerders van de organisatie", "subject": subject}

    return server


def main() -> int:
    try:
        build_server().run()  # stdio
    except* BrokenPipeError:  # the client went away while this answered (it was killed): nobody is left to tell
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # nor at exit, when Python flushes standard output
    return 0
