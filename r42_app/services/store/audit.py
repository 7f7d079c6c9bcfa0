"""Audit rows: settings changes (capabilities, credits: who changed what for whom, before and after) and
external tool calls (who called what, with which arguments, how it went, who confirmed it)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from r42_app.core.identity import Tenant
from r42_app.services.store.pb import BatchRequest, PocketBase, quote


def audit_request(tenant: Tenant, actor_id: str, actor: str, tool: str, target: str, what: str, before: str,
                  after: str) -> BatchRequest:
    """An `audit_log` create, to send in the same batch as the change it records. `actor` is an e-mail
    address, or `cli` for the operator's command line (then `actor_id` is empty)."""
    return BatchRequest.create("audit_log", {
        "tenant": tenant.id, "user": actor_id or None, "tool": tool,
        "arguments": {"actor": actor, "target": target, "what": what, "before": before, "after": after,
                      "at": datetime.now(UTC).isoformat(timespec="seconds")},
        "outcome": "ok"})


TOOL_CALL_PREFIX = "mcp:"  # audit_log.tool of an external tool call: mcp:<server>__<tool>


class ToolAudit:
    """One `audit_log` row per external tool call, whatever its outcome."""

    def __init__(self, pb: PocketBase):
        self.pb = pb

    def write(self, tenant_id: str, user_id: str, tool: str, arguments: Any, status: str, outcome: str,
              duration_ms: int, confirmed_by: str = "") -> None:
        self.pb.create("audit_log", {"tenant": tenant_id, "user": user_id or None, "tool": TOOL_CALL_PREFIX + tool,
                                     "arguments": arguments, "status": status, "outcome": outcome[:2000],
                                     "duration_ms": int(duration_ms), "confirmed_by": confirmed_by})

    def recent(self, tenant_id: str, tool: str = "", status: str = "", limit: int = 100) -> list[dict]:
        flt = f"tenant = {quote(tenant_id)} && tool ~ {quote(TOOL_CALL_PREFIX + '%')}"
        if tool:
            flt += f" && tool = {quote(TOOL_CALL_PREFIX + tool)}"
        if status:
            flt += f" && status = {quote(status)}"
        page = self.pb.list("audit_log", filter=flt, sort="-created,-id", per_page=limit, expand="user")
        return page.get("items", [])
