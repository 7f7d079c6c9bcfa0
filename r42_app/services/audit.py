"""Audit rows for settings changes (capabilities, credits): who changed what for whom, before and after."""

from __future__ import annotations

from datetime import datetime, timezone

from r42_app.services.kb_store import Tenant
from r42_app.services.pb import BatchRequest


def audit_request(tenant: Tenant, actor_id: str, actor: str, tool: str, target: str, what: str, before: str,
                  after: str) -> BatchRequest:
    """An `audit_log` create, to send in the same batch as the change it records. `actor` is an e-mail
    address, or `cli` for the operator's command line (then `actor_id` is empty)."""
    return BatchRequest.create("audit_log", {
        "tenant": tenant.id, "user": actor_id or None, "tool": tool,
        "arguments": {"actor": actor, "target": target, "what": what, "before": before, "after": after,
                      "at": datetime.now(timezone.utc).isoformat(timespec="seconds")},
        "outcome": "ok"})
