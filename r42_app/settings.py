"""R42 configuration: one object, read from the environment, with defaults that run on a laptop.

Every variable is documented in the README's configuration table.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_MODEL = "claude-haiku-4-5"
_ORIGIN = re.compile(r"(https?)://([a-z0-9.-]+|\[[0-9a-f:]+\])(?::(\d{1,5}))?")


MAX_BACKEND_WORKERS = 16


def _workers() -> int:
    raw = os.environ.get("R42_BACKEND_WORKERS", "").strip() or "1"
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_BACKEND_WORKERS:
        raise SystemExit(f"R42_BACKEND_WORKERS must be a whole number from 1 to {MAX_BACKEND_WORKERS}, got {raw!r}")
    return int(raw)


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise SystemExit(f"{name} must be a whole number, got {raw!r}") from exc
    if not 0 < value < 65536:
        raise SystemExit(f"{name} must be a port between 1 and 65535, got {value}")
    return value


def _flag(name: str, default: bool) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise SystemExit(f"{name} must be true or false, got {raw!r}")


def _count(name: str, default: int, maximum: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or not 1 <= int(raw) <= maximum:
        raise SystemExit(f"{name} must be a whole number from 1 to {maximum}, got {raw!r}")
    return int(raw)


def _origins(name: str) -> tuple[str, ...]:
    raw = os.environ.get(name, "")
    origins = []
    for entry in (e.strip().lower() for e in raw.split(",")):  # browsers send Origin in lower case
        if not entry:
            continue
        match = _ORIGIN.fullmatch(entry)
        if match is None or (match[3] and not 0 < int(match[3]) < 65536):
            raise SystemExit(f"{name} must be a comma-separated list of origins like https://host or "
                             f"http://host:port (no path, no wildcard), got {entry!r}")
        origins.append(entry)
    return tuple(origins)


@dataclass(frozen=True)
class Settings:
    """Everything R42 reads from its environment."""

    port: int = 3000
    pb_port: int = 8090
    data_dir: Path = field(default_factory=lambda: Path("data").resolve())
    demo_password: str = field(default="r42-demo-2026", repr=False)  # secrets stay out of repr() (issue 21)
    anthropic_api_key: str = field(default="", repr=False)
    anthropic_base_url: str = ""
    model: str = DEFAULT_MODEL
    embed_model: str = ""
    injection_model: str = ""  # R42_INJECTION_MODEL (default tools/injection-model.json, trained by make setup)
    chroma_url: str = ""
    chroma_token: str = field(default="", repr=False)  # R42_CHROMA_TOKEN: the token of the Chroma server at CHROMA_URL
    redis_url: str = field(default="", repr=False)  # REFLEX_REDIS_URL or R42_REDIS_URL (several workers' state)
    backend_workers: int = 1  # R42_BACKEND_WORKERS (r42 serve --workers)
    pb_url_override: str = ""
    app_indexer: bool = True
    app_costs: bool = True  # R42_APP_COSTS=0: the backend leaves AI cost events to `r42 worker --role cost`
    vector_cache_mb: int = 1024  # R42_VECTOR_CACHE_MB: passage vectors kept in memory for search, all tenants
    model_timeout: float = 60.0
    cors_origins: tuple[str, ...] = ()
    capability_overrides_enabled: bool = True  # false: the rollback switch (exact `capability_scopes` lists)
    cost_tracking: bool = True  # AI_COST_TRACKING_ENABLED
    price_table: str = ""  # R42_PRICE_TABLE: another model price file (JSON)
    upgrade_url: str = "/admin/costs"  # R42_UPGRADE_URL: where a tenant without credits can get more
    mcp_enabled: bool = True  # R42_MCP_ENABLED
    rag_snippets_enabled: bool = True  # R42_RAG_SNIPPETS_ENABLED=false: no search snippets in the prompt
    mcp_config: str = ""  # R42_MCP_CONFIG (default: mcp.json in the data dir)
    chat_per_minute: int = 12  # questions per user per minute (window and API alike) ...
    chat_burst: int = 4  # ... with this many at once
    session_hours: int = 8  # R42_SESSION_HOURS: a sign-in's token lives this long, never extended (SECURITY.md)

    @property
    def injection_model_file(self) -> Path:
        return Path(self.injection_model) if self.injection_model else \
            Path(__file__).resolve().parents[1] / "tools" / "injection-model.json"

    @property
    def pb_url(self) -> str:
        """Base URL of the PocketBase server the app talks to."""
        return self.pb_url_override or f"http://127.0.0.1:{self.pb_port}"

    @property
    def pb_data_dir(self) -> Path:
        return self.data_dir / "pb_data"

    @property
    def superuser_file(self) -> Path:
        """Generated superuser credentials (mode 0600, never committed or logged)."""
        return self.data_dir / "superuser.json"

    @property
    def mcp_config_file(self) -> Path:
        """The MCP servers to connect to at boot (R42_MCP_CONFIG, else mcp.json in the data dir)."""
        return Path(self.mcp_config).expanduser() if self.mcp_config else self.data_dir / "mcp.json"

    @property
    def mcp_demo_messages(self) -> Path:
        """Where the demo MCP server leaves its messages for admins (shown on /admin/tools)."""
        return self.data_dir / "mcp-demo-messages.jsonl"

    @property
    def chroma_dir(self) -> Path:
        """The embedded Chroma index (used when CHROMA_URL is not set)."""
        return self.data_dir / "chroma"

    @property
    def app_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def own_origins(self) -> tuple[str, ...]:
        """The addresses the app itself is opened at."""
        return (self.app_url, f"http://localhost:{self.port}")

    @property
    def allowed_origins(self) -> tuple[str, ...]:
        """Origins whose pages may call the backend (CORS, the /_event websocket): the app's own, then
        R42_CORS_ORIGINS."""
        return (*self.own_origins, *self.cors_origins)

    @property
    def offline(self) -> bool:
        """True when no Anthropic key is set: R42 answers extractively and says so."""
        return not self.anthropic_api_key


def load_settings() -> Settings:
    """Read the settings from the environment (call again after changing os.environ)."""
    env = os.environ
    return Settings(
        port=_int("R42_PORT", 3000),
        pb_port=_int("R42_PB_PORT", 8090),
        data_dir=Path(env.get("R42_DATA_DIR") or "data").expanduser().resolve(),
        demo_password=env.get("R42_DEMO_PASSWORD") or "r42-demo-2026",
        anthropic_api_key=env.get("ANTHROPIC_API_KEY", ""),
        anthropic_base_url=env.get("ANTHROPIC_BASE_URL", ""),
        model=env.get("R42_MODEL") or DEFAULT_MODEL,
        embed_model=env.get("R42_EMBED_MODEL", ""),
        injection_model=env.get("R42_INJECTION_MODEL", ""),
        chroma_url=env.get("CHROMA_URL", ""),
        chroma_token=env.get("R42_CHROMA_TOKEN", "").strip(),
        redis_url=env.get("REFLEX_REDIS_URL") or env.get("R42_REDIS_URL", ""),
        backend_workers=_workers(),
        pb_url_override=env.get("R42_PB_URL", ""),
        app_indexer=_flag("R42_APP_INDEXER", True),
        app_costs=_flag("R42_APP_COSTS", True),
        capability_overrides_enabled=_flag("R42_CAPABILITY_OVERRIDES_ENABLED", True),
        cost_tracking=_flag("AI_COST_TRACKING_ENABLED", True),
        price_table=env.get("R42_PRICE_TABLE", ""),
        upgrade_url=env.get("R42_UPGRADE_URL") or "/admin/costs",
        mcp_enabled=_flag("R42_MCP_ENABLED", True),
        rag_snippets_enabled=_flag("R42_RAG_SNIPPETS_ENABLED", True),
        mcp_config=env.get("R42_MCP_CONFIG", ""),
        chat_per_minute=_count("R42_CHAT_PER_MINUTE", 12, 10_000),
        chat_burst=_count("R42_CHAT_BURST", 4, 1_000),
        vector_cache_mb=_count("R42_VECTOR_CACHE_MB", 1024, 1 << 20),
        model_timeout=float(_count("R42_MODEL_TIMEOUT", 60, 600)),
        cors_origins=_origins("R42_CORS_ORIGINS"),
        session_hours=_count("R42_SESSION_HOURS", 8, 24 * 7),
    )
