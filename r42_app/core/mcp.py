"""External tools over MCP, the pure parts: the config file, tool names, risk, redaction and the
confirmation book that a high-risk call needs before it runs.

Config (`mcp.json`, the `mcpServers` shape other MCP clients use):

    {"mcpServers": {"time": {"command": "python", "args": ["-m", "mcp_server_time"], "env": {}},
                    "remote": {"url": "http://127.0.0.1:9000/mcp"}},
     "high_risk": ["r42demo__send_message"], "low_risk": ["time__get_current_time"],
     "timeout_seconds": 20, "calls_per_minute": 10}
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from r42_app.core.capabilities import MCP_SEPARATOR
from r42_app.core.errors import UserError

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
SERVER_NAME = re.compile(r"^[a-zA-Z0-9-]{1,30}$")  # no "_": `<server>__<tool>` must split one way only
DEFAULT_TIMEOUT_S = 20.0
DEFAULT_CALLS_PER_MINUTE = 10
CONFIRM_TTL_S = 300.0
SECRET_KEYS = re.compile(r"pass(word)?|secret|token|api[-_]?key|auth|credential|cookie|session", re.IGNORECASE)
REDACTED = "[verborgen]"


class McpConfigError(ValueError):
    """The MCP config file is not usable; the message lists every problem."""


@dataclass(frozen=True)
class McpServerSpec:
    name: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    url: str = ""

    @property
    def transport(self) -> str:
        return "http" if self.url else "stdio"


@dataclass(frozen=True)
class McpConfig:
    servers: tuple[McpServerSpec, ...] = ()
    high_risk: frozenset[str] = frozenset()
    low_risk: frozenset[str] = frozenset()
    timeout_s: float = DEFAULT_TIMEOUT_S
    calls_per_minute: int = DEFAULT_CALLS_PER_MINUTE


def parse_mcp_config(data: Any) -> McpConfig:
    """Read a parsed `mcp.json`; McpConfigError names every problem (nothing half-applied)."""
    problems: list[str] = []
    if not isinstance(data, dict):
        raise McpConfigError("the MCP config must be a JSON object with mcpServers")
    raw_servers = data.get("mcpServers", {})
    if not isinstance(raw_servers, dict):
        raise McpConfigError("mcpServers must be an object {name: {command, args, env} or {url}}")
    servers = []
    for name, spec in raw_servers.items():
        where = f"mcpServers.{name}"
        if not isinstance(name, str) or not SERVER_NAME.match(name):
            problems.append(f"{where}: a server name is 1-30 letters, digits or '-'")
            continue
        if not isinstance(spec, dict):
            problems.append(f"{where} must be an object")
            continue
        command, url = spec.get("command", ""), spec.get("url", "")
        args, env = spec.get("args", []), spec.get("env", {})
        if bool(command) == bool(url):
            problems.append(f"{where}: give either command (stdio) or url (streamable HTTP)")
        elif command and not isinstance(command, str):
            problems.append(f"{where}.command must be text")
        elif url and (not isinstance(url, str) or not re.match(r"^https?://", url)):
            problems.append(f"{where}.url must start with http:// or https://")
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            problems.append(f"{where}.args must be a list of text")
            args = []
        if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
            problems.append(f"{where}.env must map text to text")
            env = {}
        servers.append(McpServerSpec(name, command if isinstance(command, str) else "", tuple(args), dict(env),
                                     url if isinstance(url, str) else ""))
    lists = {}
    for key in ("high_risk", "low_risk"):
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            problems.append(f"{key} must be a list of tool names")
            value = []
        lists[key] = frozenset(value)
    overlap = lists["high_risk"] & lists["low_risk"]
    if overlap:
        problems.append(f"{', '.join(sorted(overlap))} cannot be both high_risk and low_risk")
    timeout = data.get("timeout_seconds", DEFAULT_TIMEOUT_S)
    rate = data.get("calls_per_minute", DEFAULT_CALLS_PER_MINUTE)
    if not isinstance(timeout, (int, float)) or not 0 < timeout <= 600:
        problems.append("timeout_seconds must be a number from 1 to 600")
        timeout = DEFAULT_TIMEOUT_S
    if not isinstance(rate, int) or not 1 <= rate <= 10_000:
        problems.append("calls_per_minute must be a whole number from 1 to 10000")
        rate = DEFAULT_CALLS_PER_MINUTE
    if problems:
        raise McpConfigError("; ".join(problems))
    return McpConfig(tuple(servers), lists["high_risk"], lists["low_risk"], float(timeout), rate)


def mcp_tool_name(server: str, tool: str) -> str:
    """`<server>__<tool>`, the name the model sees; ValueError when the API would refuse it."""
    name = f"{server}{MCP_SEPARATOR}{tool}"
    if not TOOL_NAME.match(name):
        raise ValueError(f"tool {name!r} cannot be offered: names are 1-64 letters, digits, '_' or '-'")
    return name


def tool_risk(name: str, annotations: Mapping[str, Any] | None, config: McpConfig) -> str:
    """The config decides first (by full name `<server>__<tool>`); else the tool's MCP annotations
    (`destructiveHint` true, or `readOnlyHint` false: high; read-only and not destructive: low); else high."""
    if name in config.high_risk:
        return "high"
    if name in config.low_risk:
        return "low"
    hints = annotations or {}
    if hints.get("destructiveHint") is True or hints.get("readOnlyHint") is False:
        return "high"
    if hints.get("readOnlyHint") is True:
        return "low"
    return "high"


def redact(value: Any) -> Any:
    """A copy of tool arguments fit for the audit log: values under secret-looking keys hidden."""
    if isinstance(value, dict):
        return {k: REDACTED if isinstance(k, str) and SECRET_KEYS.search(k) else redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


def not_invocable(tool: str, reason: str) -> dict[str, str]:
    """What the model gets for a tool that is registered but cannot run now."""
    return {"status": "not-invocable", "tool": tool, "reason": reason}


def arguments_digest(arguments: Any) -> str:
    """The exact arguments, canonically (key order and spacing do not matter)."""
    return hashlib.sha256(json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                                     default=str).encode()).hexdigest()


@dataclass(frozen=True)
class Confirmation:
    id: str
    user_id: str
    tool: str
    digest: str
    expires: float


class ConfirmationError(UserError):
    """A confirmation cannot be used: `kind` is unknown | other_user | expired | used (the API's status); the
    code is `confirm.<kind>` unless another is given."""

    code_prefix = "confirm."

    def __init__(self, kind: str, detail: str = "", code: str = ""):
        super().__init__(code or self.code_prefix + kind, detail or f"confirmation refused: {kind}")
        self.kind = kind


class ConfirmationBook:
    """Confirmations of high-risk calls: each bound to one user, one tool and the exact arguments,
    valid for CONFIRM_TTL_S and usable once (so text injected into a later turn cannot reuse one)."""

    def __init__(self, clock: Callable[[], float], ttl: float = CONFIRM_TTL_S):
        self.clock = clock
        self.ttl = ttl
        self._open: dict[str, Confirmation] = {}
        self._used: dict[str, float] = {}  # id -> when it would have expired (then forgotten)

    def issue(self, user_id: str, tool: str, arguments: Any, ttl: float | None = None) -> Confirmation:
        self._forget_expired()
        c = Confirmation(secrets.token_urlsafe(16), user_id, tool, arguments_digest(arguments),
                         self.clock() + (self.ttl if ttl is None else ttl))
        self._open[c.id] = c
        return c

    def redeem(self, confirmation_id: str, user_id: str, tool: str | None = None,
               arguments: Any = None) -> Confirmation:
        """Use a confirmation once. `tool` and `arguments`, when given, must be the ones it was issued for."""
        if confirmation_id in self._used:
            raise ConfirmationError("used", "this confirmation was used already")
        c = self._open.get(confirmation_id)
        if c is None:
            raise ConfirmationError("unknown", "no such confirmation (any more)")
        if c.user_id != user_id:
            raise ConfirmationError("other_user", "this confirmation is another user's")
        if self.clock() >= c.expires:
            del self._open[confirmation_id]
            raise ConfirmationError("expired", "this confirmation expired")
        if (tool is not None and tool != c.tool) or (arguments is not None and arguments_digest(arguments) != c.digest):
            raise ConfirmationError("unknown", "this confirmation is for another call",
                                    code="confirm.other_call")
        del self._open[confirmation_id]
        self._used[confirmation_id] = c.expires
        return c

    def _forget_expired(self) -> None:
        now = self.clock()
        for cid in [cid for cid, c in self._open.items() if now >= c.expires]:
            del self._open[cid]
        self._used = {cid: expires for cid, expires in self._used.items() if now < expires}
