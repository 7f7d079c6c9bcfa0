"""External tools over MCP: the in-process registry, and the hub that connects to the configured MCP
servers with the official SDK (2.x client API), lists their tools and keeps them registered.

Each server gets a supervisor task: connect, list tools, register them as `<server>__<tool>`, ping
now and then; when the server dies (or a call finds it gone) its tools answer a structured
`not-invocable` result while the supervisor reconnects with backoff. Every call has a timeout.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from r42_app.core.forget import Needles, replaced
from r42_app.core.mcp import (
    TOOL_NAME,
    McpConfig,
    McpConfigError,
    McpServerSpec,
    mcp_tool_name,
    not_invocable,
    parse_mcp_config,
    tool_risk,
)
from r42_app.core.tools import RISKS

log = logging.getLogger(__name__)

PING_EVERY_S = 5.0  # how often an idle connection is checked
CONNECTION_CLOSED = -32000  # the JSON-RPC code the SDK raises when the server's connection is gone
BACKOFF_MAX_S = 30.0
STOP_GRACE_S = 1.0  # at a stop, how long a connection may take to close before it is cancelled


@dataclass
class CallOutcome:
    """What a tool call gave: `status` ok | error | timeout | not-invocable; `content` is what the model reads."""

    status: str
    content: str


Invoke = Callable[[dict[str, Any], dict[str, Any]], Awaitable[CallOutcome]]  # (arguments, request meta)


@dataclass
class McpToolEntry:
    name: str
    description: str
    input_schema: dict[str, Any]
    risk: str = "high"
    invoke: Invoke | None = None
    server: str = ""
    reason: str = ""  # why it cannot be invoked now (when invoke is None)


class McpRegistry:
    """MCP tools by their model-facing name. The tool registry asks it, at each turn, what to offer."""

    def __init__(self) -> None:
        self._entries: dict[str, McpToolEntry] = {}

    def register_mcp_tool_for_chatbot(self, tool_name: str, description: str, input_schema: dict[str, Any] | None,
                                      invoke: Invoke | None = None, risk: str = "high", server: str = "",
                                      reason: str = "") -> McpToolEntry:
        """Register (or replace) one tool. Without `invoke` it answers the not-invocable payload."""
        if not TOOL_NAME.match(tool_name):
            raise ValueError(f"tool name {tool_name!r} must match {TOOL_NAME.pattern}")
        if risk not in RISKS:
            raise ValueError(f"risk must be low or high, got {risk!r}")
        schema = input_schema if isinstance(input_schema, dict) else {"type": "object", "properties": {}}
        entry = McpToolEntry(tool_name, description or tool_name, schema, risk, invoke, server,
                             reason or ("" if invoke else "no way to call this tool is configured"))
        self._entries[tool_name] = entry
        return entry

    def entries(self) -> list[McpToolEntry]:
        return list(self._entries.values())

    def get(self, name: str) -> McpToolEntry | None:
        return self._entries.get(name)

    def of_server(self, server: str) -> list[McpToolEntry]:
        return [e for e in self._entries.values() if e.server == server]

    def clear(self) -> None:
        self._entries.clear()


DEFAULT_REGISTRY = McpRegistry()


def register_mcp_tool_for_chatbot(tool_name: str, description: str, input_schema: dict[str, Any] | None,
                                  invoke: Invoke | None = None, risk: str = "high") -> McpToolEntry:
    """Register a tool in the process's MCP registry (what `create_mcp_external_tools_provider` offers)."""
    return DEFAULT_REGISTRY.register_mcp_tool_for_chatbot(tool_name, description, input_schema, invoke, risk)


@dataclass
class ServerStatus:
    name: str
    transport: str
    state: str = "connecting"  # connecting | connected | failed | stopped
    last_error: str = ""
    tools: list[str] = field(default_factory=list)
    since: float = 0.0  # time.time() of the last change
    connects: int = 0  # successful connections so far (2 and more: it was reconnected)
    checks: int = 0  # idle checks (every PING_EVERY_S) the server answered, over all its connections


def _text(result: Any) -> str:
    """A call result as text for the model: structured content as JSON, else the text blocks."""
    if getattr(result, "structured_content", None) is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    parts = [getattr(block, "text", "") for block in getattr(result, "content", []) or []]
    return "\n".join(p for p in parts if p) or "(the tool returned nothing)"


class McpServerConnection:
    """One configured server, supervised: connected while it answers, reconnected with backoff."""

    def __init__(self, spec: McpServerSpec, registry: McpRegistry, config: McpConfig):
        self.spec = spec
        self.registry = registry
        self.config = config
        self.status = ServerStatus(spec.name, spec.transport, since=time.time())
        self.ready = asyncio.Event()  # set after the first attempt, connected or not
        self._client: Any = None
        self._lost = asyncio.Event()
        self._stop = asyncio.Event()

    def _target(self) -> Any:
        if self.spec.url:
            return self.spec.url
        from mcp import StdioServerParameters
        from mcp.client.stdio import get_default_environment

        return StdioServerParameters(command=self.spec.command, args=list(self.spec.args),
                                     env={**get_default_environment(), **dict(self.spec.env)})

    def _set(self, state: str, error: str = "") -> None:
        self.status.state, self.status.last_error, self.status.since = state, error, time.time()

    async def run(self) -> None:
        """Connect, serve, reconnect with backoff until stopped."""
        from mcp import Client

        attempt = 0
        while not self._stop.is_set():
            self._lost.clear()
            try:
                async with Client(self._target()) as client:
                    tools = (await asyncio.wait_for(client.list_tools(), self.config.timeout_s)).tools
                    self._client = client
                    self._register(tools)
                    self._set("connected")
                    self.status.connects += 1
                    attempt = 0
                    self.ready.set()
                    log.info("MCP server %s connected: %d tool(s)", self.spec.name, len(tools))
                    await self._watch(client)
            except Exception as exc:  # a server that fails to start, dies or hangs: keep trying
                if not self._stop.is_set():
                    log.warning("MCP server %s: %s", self.spec.name, exc or type(exc).__name__)
                    self._set("failed", str(exc) or type(exc).__name__)
            finally:
                self._client = None
                self._unavailable()
                self.ready.set()
            if self._stop.is_set():
                break
            delay = min(BACKOFF_MAX_S, 0.5 * 2 ** attempt)
            attempt += 1
            try:
                await asyncio.wait_for(self._stop.wait(), delay)
            except TimeoutError:
                pass
        self._set("stopped")

    async def _watch(self, client: Any) -> None:
        """Return when the server is gone (a failed ping or a call that found it gone) or on stop."""
        while not self._stop.is_set() and not self._lost.is_set():
            try:
                await asyncio.wait_for(self._lost.wait(), PING_EVERY_S)
            except TimeoutError:  # still there? (ping is gone from the protocol: ask for the tools)
                await asyncio.wait_for(client.list_tools(cache_mode="bypass"), self.config.timeout_s)
                self.status.checks += 1
        if self._lost.is_set() and not self._stop.is_set():
            raise ConnectionError("the server stopped answering")

    def _register(self, tools: list[Any]) -> None:
        names = []
        for tool in tools:
            try:
                name = mcp_tool_name(self.spec.name, tool.name)
            except ValueError as exc:
                log.warning("MCP server %s: %s", self.spec.name, exc)
                continue
            annotations = tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else None
            schema = tool.input_schema if isinstance(tool.input_schema, dict) else {"type": "object", "properties": {}}
            self.registry.register_mcp_tool_for_chatbot(name, tool.description or "", schema, self._invoker(tool.name),
                                                        tool_risk(name, annotations, self.config), self.spec.name)
            names.append(name)
        self.status.tools = names

    def _unavailable(self) -> None:
        reason = f"the MCP server {self.spec.name} is not connected" + (
            f" ({self.status.last_error})" if self.status.last_error else "")
        for entry in self.registry.of_server(self.spec.name):
            entry.invoke, entry.reason = None, reason

    def _invoker(self, tool: str) -> Invoke:
        async def invoke(arguments: dict[str, Any], meta: dict[str, Any]) -> CallOutcome:
            client = self._client
            name = mcp_tool_name(self.spec.name, tool)
            if client is None:
                return CallOutcome("not-invocable", json.dumps(not_invocable(name, "the server is reconnecting")))
            try:
                result = await asyncio.wait_for(client.call_tool(tool, arguments, meta=meta or None),
                                                self.config.timeout_s)
            except TimeoutError:
                return CallOutcome("timeout", json.dumps({"status": "timeout", "tool": name,
                                                          "reason": f"no answer within {self.config.timeout_s:g} s"}))
            except Exception as exc:
                from mcp import MCPError

                if isinstance(exc, MCPError) and exc.code != CONNECTION_CLOSED:  # the server answered: an error
                    return CallOutcome("error", json.dumps({"status": "error", "tool": name,
                                                            "reason": exc.error.message}))
                self._lost.set()  # the connection is gone: the supervisor reconnects
                return CallOutcome("not-invocable", json.dumps(not_invocable(name, f"the server went away: {exc}")))
            return CallOutcome("error" if result.is_error else "ok", _text(result))

        return invoke

    async def stop(self) -> None:
        self._stop.set()
        self._lost.set()


class McpHub:
    """Every configured server, started at boot (or never, with R42_MCP_ENABLED=false)."""

    def __init__(self, config: McpConfig, registry: McpRegistry, config_error: str = ""):
        self.config = config
        self.registry = registry
        self.config_error = config_error
        self.connections = [McpServerConnection(s, registry, config) for s in config.servers]
        self._tasks: list[asyncio.Task] = []

    @classmethod
    def from_file(cls, path: Path, registry: McpRegistry, enabled: bool = True) -> McpHub:
        """The servers of `path` (none when the file is missing, MCP is switched off, or the file is broken:
        then `config_error` says why, and the admin page shows it)."""
        if not enabled or not path.exists():
            return cls(McpConfig(), registry)
        try:
            return cls(parse_mcp_config(json.loads(path.read_text(encoding="utf-8"))), registry)
        except (McpConfigError, ValueError) as exc:
            log.error("MCP config %s is not usable: %s", path, exc)
            return cls(McpConfig(), registry, f"{path}: {exc}")

    async def start(self, wait: float = 15.0) -> float:
        """Start every server; wait until each has connected or failed once (at most `wait` s).
        Returns the seconds it took. Cancelled meanwhile (the app stops while the servers start), it stops
        them before it gives up: left alone, a server finds its client gone while it answers and prints a
        BrokenPipeError traceback on the app's terminal."""
        started = time.perf_counter()
        self._tasks = [asyncio.create_task(c.run(), name=f"mcp:{c.spec.name}") for c in self.connections]
        if self.connections:
            waiters = [asyncio.ensure_future(c.ready.wait()) for c in self.connections]
            try:
                _ready, waiting = await asyncio.wait(waiters, timeout=wait)
            except asyncio.CancelledError:
                await self.stop()
                raise
            finally:
                for waiter in waiters:
                    waiter.cancel()
            if waiting:
                log.warning("MCP: not every server answered within %.0f s; they keep trying", wait)
        self._declare_missing()
        return time.perf_counter() - started

    def _declare_missing(self) -> None:
        """Tools the config names (high_risk / low_risk) that no server provides yet are registered without a
        way to call them: the model gets the not-invocable payload and can say so."""
        for name in sorted(self.config.high_risk | self.config.low_risk):
            if self.registry.get(name) is None:
                server = name.split("__", 1)[0]
                risk = "high" if name in self.config.high_risk else "low"
                self.registry.register_mcp_tool_for_chatbot(
                    name, f"{name} (declared in the MCP config)", None, None, risk, server,
                    f"declared in the MCP config, but the server {server} does not provide it (or is not connected)")

    async def stop(self) -> None:
        """Stop every server the MCP way: its stdin closed, a grace period to exit, then a kill (the SDK does
        this when a connection ends, also when it is cancelled). A connection that has not ended after
        STOP_GRACE_S (still waiting for a slow server's first answer) is cancelled."""
        for c in self.connections:
            await c.stop()
        tasks, self._tasks = self._tasks, []
        if not tasks:
            return
        _ended, running = await asyncio.wait(tasks, timeout=STOP_GRACE_S)
        for task in running:
            task.cancel()
        if running:
            await asyncio.wait(running, timeout=10)
        for task in tasks:
            if task.done() and not task.cancelled() and task.exception() is not None:  # shutting down: logged only
                log.warning("MCP: %s ended with %r", task.get_name(), task.exception())

    def statuses(self) -> list[ServerStatus]:
        return [c.status for c in self.connections]


def read_demo_messages(path: Path, tenant: str, limit: int = 50) -> list[dict[str, str]]:
    """The newest messages the demo server's `send_message` left for one tenant (bad lines skipped)."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            m = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(m, dict) and m.get("tenant") == tenant:
            out.append({k: str(m.get(k, "")) for k in ("at", "user", "subject", "text")})
    return out[::-1][:limit]


DEMO_MESSAGES_ENV = "R42_MCP_DEMO_MESSAGES"  # r42_app/mcp_demo_server.py MESSAGES_ENV


def demo_message_files(config_file: Path, default: Path) -> list[Path]:
    """The files the MCP demo server R42 runs writes its messages to: the one /admin/tools shows (`default`, the
    data dir's), and each one named by R42_MCP_DEMO_MESSAGES for a server of the MCP config (`r42 user forget`
    forgets the user in all of them). A config that cannot be read names none."""
    files = [default]
    try:
        config = parse_mcp_config(json.loads(config_file.read_text(encoding="utf-8")))
    except (OSError, ValueError, McpConfigError):
        return files
    for spec in config.servers:
        named = str(spec.env.get(DEMO_MESSAGES_ENV, "") or "")
        if named and Path(named).expanduser() not in files:
            files.append(Path(named).expanduser())
    return files


def forget_in_demo_messages(path: Path, needles: Needles, pseudonym: str) -> tuple[int, int]:
    """`r42 user forget` in the demo server's messages file: the user's own messages deleted (what they wrote may
    hold their phone number or address, which no search for a name finds), their id, e-mail address and name
    replaced by the pseudonym in everyone else's. Rewritten in place under the lock the demo server appends under.
    Returns (messages deleted, messages rewritten)."""
    if not path.is_file():
        return 0, 0
    pattern = needles.pattern()
    own = {needles.email.lower(), needles.user_id.lower()} - {""}
    deleted = rewritten = 0
    with path.open("r+", encoding="utf-8") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        kept = []
        for line in fh.read().splitlines():
            try:
                message = json.loads(line)
            except json.JSONDecodeError:
                message = None
            if isinstance(message, dict):
                if str(message.get("user", "")).strip().lower() in own:
                    deleted += 1
                    continue
                changed = replaced(message, pattern, pseudonym)
                if changed != message:
                    rewritten += 1
                    line = json.dumps(changed, ensure_ascii=False)
            elif pattern.search(line):
                rewritten += 1
                line = pattern.sub(pseudonym, line)
            kept.append(line)
        if deleted or rewritten:
            fh.seek(0)
            fh.write("".join(f"{line}\n" for line in kept))
            fh.truncate()
    return deleted, rewritten
