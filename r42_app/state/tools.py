"""ToolsState: `/admin/tools`, the MCP servers of this R42, their tools and risk, the audit log of external
tool calls of the admin's tenant (with filters), and the demo server's messages for the tenant."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time

import reflex as rx

from r42_app.container import services
from r42_app.core.messages import N_, msg
from r42_app.core.text import clip
from r42_app.services.adapters.mcp import DEFAULT_REGISTRY, read_demo_messages
from r42_app.services.store.audit import TOOL_CALL_PREFIX
from r42_app.services.store.pb import PBError
from r42_app.state.admin_page import AdminPageMixin

log = logging.getLogger(__name__)

STATUS_LABELS = {"ok": N_("Gelukt"), "error": N_("Fout"), "timeout": N_("Te laat"),
                 "not-invocable": N_("Niet beschikbaar"), "rate_limited": N_("Te vaak"), "declined": N_("Geweigerd"),
                 "expired": N_("Niet bevestigd")}
STATE_LABELS = {"connected": N_("Verbonden"), "connecting": N_("Verbinden…"), "failed": N_("Mislukt"),
                "stopped": N_("Gestopt")}


@dataclasses.dataclass
class ServerRow:
    name: str = ""
    transport: str = ""
    state: str = ""
    state_label: str = ""
    error: str = ""
    tools: int = 0
    since: str = ""


@dataclasses.dataclass
class ToolRow:
    name: str = ""
    server: str = ""
    risk: str = ""
    available: bool = False
    description: str = ""


@dataclasses.dataclass
class CallRow:
    when: str = ""
    user: str = ""
    tool: str = ""
    status: str = ""
    status_label: str = ""
    duration: str = ""
    confirmed_by: str = ""
    arguments: str = ""
    outcome: str = ""


@dataclasses.dataclass
class MessageRow:
    when: str = ""
    user: str = ""
    subject: str = ""
    text: str = ""


def _ago(since: float) -> str:
    if not since:
        return ""
    seconds = max(0, int(time.time() - since))
    if seconds < 120:
        return msg("tools.seconds_ago", seconds=seconds)
    return msg("tools.minutes_ago", minutes=seconds // 60)


class ToolsState(AdminPageMixin, rx.State):
    config_error: str = ""
    config_file: str = ""
    servers: list[ServerRow] = []
    tools: list[ToolRow] = []
    calls: list[CallRow] = []
    messages: list[MessageRow] = []
    tool_filter: str = "all"
    status_filter: str = "all"
    tool_names: list[str] = []

    def _servers(self) -> None:
        hub = services().mcp_hub
        cfg = services().settings
        self.config_file = str(cfg.mcp_config_file) if cfg.mcp_enabled else "R42_MCP_ENABLED=false"
        self.config_error = hub.config_error
        self.servers = [ServerRow(s.name, s.transport, s.state, STATE_LABELS.get(s.state, s.state), s.last_error,
                                  len(s.tools), _ago(s.since)) for s in hub.statuses()]
        self.tools = [ToolRow(e.name, e.server, e.risk, e.invoke is not None, clip(e.description, 160))
                      for e in sorted(DEFAULT_REGISTRY.entries(), key=lambda e: e.name)]
        self.tool_names = ["all", *[t.name for t in self.tools]]

    async def _refresh(self, user) -> None:
        self._servers()
        tool = "" if self.tool_filter == "all" else self.tool_filter
        status = "" if self.status_filter == "all" else self.status_filter
        rows, messages = await asyncio.gather(
            asyncio.to_thread(services().tool_audit.recent, user.tenant_id, tool, status, 100),
            asyncio.to_thread(read_demo_messages, services().settings.mcp_demo_messages, user.tenant.slug))
        self.calls = [CallRow(str(r.get("created", ""))[:19].replace("T", " "),
                              ((r.get("expand") or {}).get("user") or {}).get("email", ""),
                              str(r.get("tool", "")).removeprefix(TOOL_CALL_PREFIX), str(r.get("status", "")),
                              STATUS_LABELS.get(str(r.get("status", "")), str(r.get("status", ""))),
                              f"{int(r.get('duration_ms') or 0)} ms", str(r.get("confirmed_by") or ""),
                              json.dumps(r.get("arguments"), ensure_ascii=False)[:200],
                              str(r.get("outcome") or "")[:200]) for r in rows]
        self.messages = [MessageRow(m["at"].replace("T", " ")[:19], m["user"], m["subject"], m["text"])
                         for m in messages]

    @rx.event
    async def load(self):
        """on_load of `/admin/tools`."""
        user = await self._admin()
        if user is None:
            return
        await self._reload(user, "tools.load_failed")

    @rx.event
    async def set_tool_filter(self, value: str):
        self.tool_filter = value if value in self.tool_names else "all"
        user = await self._admin()
        if user is not None:
            await self._refresh(user)

    @rx.event
    async def set_status_filter(self, value: str):
        self.status_filter = value if value == "all" or value in STATUS_LABELS else "all"
        user = await self._admin()
        if user is not None:
            await self._refresh(user)

    @rx.event
    async def poll(self, _tick: str = ""):
        """Every few seconds while the page is open: server status and new calls."""
        user = await self._admin()
        if user is None or self.loading:
            return
        try:
            await self._refresh(user)
        except PBError as exc:
            log.warning("tool calls refresh failed: %s", exc)
