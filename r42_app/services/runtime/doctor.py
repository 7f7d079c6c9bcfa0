"""`r42 doctor`: the troubleshooting list as checks, each OK / WARN / FAIL with the command that fixes it."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

from r42_app.core.capabilities import AccessRow
from r42_app.core.identity import Tenant
from r42_app.core.redact import redacted_url
from r42_app.services.adapters.embeddings import Embedder
from r42_app.services.adapters.mailer import Mailer
from r42_app.services.adapters.mcp import McpHub, McpRegistry
from r42_app.services.adapters.vector_store import COMPACT_RATIO, VectorStore, VectorStoreUnavailable
from r42_app.services.retrieval import READY_SHARE, Retriever
from r42_app.services.runtime.pb_server import pocketbase_binary
from r42_app.services.store.costs import OUTBOX_COST, CreditStore
from r42_app.services.store.kb_store import OUTBOX_DELETE, OUTBOX_UPSERT, KBStore
from r42_app.services.store.pb import PocketBase, pb_time, quote
from r42_app.settings import Settings

OK, WARN, FAIL = "OK", "WARN", "FAIL"
BACKLOG_WARN = 1000


@dataclass(frozen=True)
class Check:
    name: str
    status: str
    detail: str
    fix: str = ""
    data: dict | None = None  # a check's figures for `--json` under its own key (replication: state, lag_s, target)

    def as_dict(self) -> dict:
        out = asdict(self)
        data = out.pop("data")
        return {**out, **({self.name: data} if data is not None else {})}


def _run(name: str, fn: Callable[[], list[Check]]) -> list[Check]:
    """One check; an unexpected failure is itself a FAIL with the reason (the doctor never crashes)."""
    try:
        return fn()
    except Exception as exc:
        return [Check(name, FAIL, f"{type(exc).__name__}: {exc}")]


class Doctor:
    def __init__(self, cfg: Settings, pb: PocketBase, embedder: Embedder, vectors: VectorStore):
        self.cfg = cfg
        self.pb = pb
        self.embedder = embedder
        self.vectors = vectors
        self.kb = KBStore(pb)

    def run(self, tenant_slug: str | None = None) -> list[Check]:
        tenants = self._tenants(tenant_slug)
        checks: list[Check] = []
        checks += _run("pocketbase", self.pocketbase)
        checks += _run("embedding model", self.embedding_model)
        checks += _run("vector index", lambda: self.index_coverage(tenants))
        checks += self.rag_snippets()
        checks += _run("injection model", self.injection_model)
        checks += _run("outbox", self.outbox)
        checks += _run("cost tracking", self.cost_tracking)
        checks += _run("capabilities", lambda: self.legacy_rows(tenants))
        checks += _run("credits", lambda: self.credits(tenants))
        checks += _run("mcp", self.mcp)
        checks += _run("mail", self.mail)
        checks += _run("replication", self.replication)
        return checks

    def replication(self) -> list[Check]:
        """PocketBase's database replicated by Litestream (R42_REPLICA_URL, issue 50): off, replicating with its lag,
        behind, or stopped (FAIL: writes since are in no replica)."""
        from r42_app.services.runtime.replication import DB_NAME, STALE_S, litestream_running, status

        db = self.cfg.pb_data_dir / DB_NAME
        now = status(db, self.cfg.replica_url, litestream_running(db) if self.cfg.replica_url else None)
        data = now.to_json()
        if now.state == "off":
            return [Check("replication", WARN, "off (R42_REPLICA_URL is not set): a lost disk loses everything since "
                          "the last `r42 backup create`", "set R42_REPLICA_URL=file:///another/disk/r42-replica "
                          "(or s3://bucket/path) and restart", data)]
        lag = "" if now.lag_s is None else f", {now.lag_s:.1f} s behind the last write"
        if now.state == "replicating":
            return [Check("replication", OK, f"replicating to {now.target}{lag}", data=data)]
        if now.state == "behind":
            return [Check("replication", FAIL, f"the replica at {now.target} is more than {STALE_S:.0f} s behind{lag}",
                          f"see {self.cfg.data_dir / 'litestream.log'}", data)]
        if now.state == "stopped":
            return [Check("replication", FAIL, f"not replicating to {now.target}{lag}: Litestream is not running",
                          f"start R42 with R42_REPLICA_URL set (r42 serve starts it); see "
                          f"{self.cfg.data_dir / 'litestream.log'}", data)]
        return [Check("replication", WARN, f"replication to {now.target}: state unknown", data=data)]

    def mail(self) -> list[Check]:
        """Invitations and resets: mailed through SMTP, or links the admins hand over (issue 46)."""
        mailer = Mailer.from_settings(self.cfg)
        if not mailer.on:
            return [Check("mail", WARN, "off (R42_SMTP_HOST is not set): invitation and reset links are shown to the "
                          "admin and printed by the CLI, to hand over; \"Wachtwoord vergeten?\" says to ask the admin",
                          "set R42_SMTP_HOST (and R42_SMTP_PORT, R42_SMTP_USER, R42_SMTP_PASSWORD, R42_SMTP_TLS, "
                          "R42_MAIL_FROM) and restart R42")]
        problem = mailer.probe()
        if problem:
            return [Check("mail", FAIL, f"{mailer.describe()}: {problem}",
                          "check the R42_SMTP_* settings and that the server answers from this machine")]
        return [Check("mail", OK, f"{mailer.describe()} answers; links start with {self.cfg.link_base}")]

    def _tenants(self, slug: str | None) -> list[Tenant]:
        if slug:
            return [self.kb.require_tenant(slug)]
        return [self.kb.require_tenant(r["slug"]) for r in self.pb.all("tenants", fields="slug", sort="slug")]

    def pocketbase(self) -> list[Check]:
        version = subprocess.run([str(pocketbase_binary()), "--version"], capture_output=True, text=True,
                                 timeout=10).stdout.strip() or "unknown version"
        if not self.pb.health():
            return [Check("pocketbase", FAIL, f"{self.cfg.pb_url} does not answer ({version})",
                          "start R42 (`make run`), or see data/pocketbase.log")]
        return [Check("pocketbase", OK, f"{self.cfg.pb_url} answers; {version}")]

    def embedding_model(self) -> list[Check]:
        started = time.perf_counter()
        vector = self.embedder.encode(["Wat is de dekkingsgraad?"])[0]
        took = time.perf_counter() - started
        return [Check("embedding model", OK, f"{self.embedder.model_id} loads; "
                                              f"{len(vector)} dimensions in {took:.1f} s")]

    def index_coverage(self, tenants: list[Tenant]) -> list[Check]:
        """Per tenant: how many passages have a vector (of the current model), how big the index is and whether
        it reads; for an embedded store also its size on disk against what it holds."""
        out: list[Check] = []
        retriever = Retriever(self.kb, self.vectors, None, cache_bytes=1 << 62)
        raw = 0
        for tenant in tenants:
            name = f"index {tenant.slug}"
            rebuild = f"r42 chatbot rag-backfill --tenant {tenant.slug} --now --rebuild"
            try:
                stats = self.vectors.stats(tenant.id)
                have, total = retriever.coverage(tenant)
                segment = self.vectors.segment_bytes(tenant.id)
            except VectorStoreUnavailable as exc:
                out.append(Check(name, FAIL, f"the index cannot be read ({exc}): semantic search falls back to fts",
                                 rebuild))
                continue
            vectors = stats["vectors"]
            raw += vectors * self.embedder.dimension * 4
            size = f"{vectors:,} vectors" + (f", {segment / 1e6:.1f} MB on disk" if segment else "")
            ceiling = 3 * vectors * self.embedder.dimension * 4 + 8_000_000
            if segment > ceiling or stats["written"] > (COMPACT_RATIO + 1) * vectors + 10_000:
                out.append(Check(name, FAIL, f"the index is bloated ({size}; written {stats['written']:,} "
                                 "since its last compaction)", rebuild))
            elif total == 0:
                out.append(Check(name, OK, "no topics yet"))
            elif have == total:
                out.append(Check(name, OK, f"all {total:,} passages are in the vector index ({size}, "
                                 f"{self.vectors.model_id})"))
            elif have >= READY_SHARE * total:
                out.append(Check(name, WARN, f"{have:,} of {total:,} passages are in the vector index ({size}); "
                                 "the rest wait in the outbox",
                                 f"r42 chatbot rag-backfill --tenant {tenant.slug} --now"))
            else:
                where = redacted_url(self.cfg.chroma_url) or self.cfg.chroma_dir
                out.append(Check(name, FAIL if have == 0 else WARN,
                                 f"{have:,} of {total:,} passages are in the vector index ({where}, "
                                 f"{self.vectors.model_id}): search uses fts until {READY_SHARE:.0%} are "
                                 "(after a change of model the app re-embeds them in the background)",
                                 f"r42 chatbot rag-backfill --tenant {tenant.slug} --now"))
            others = self.vectors.other_models(tenant.id)
            if others:
                out.append(Check(f"{name} (old model)", WARN, f"{len(others)} index(es) of another embedding model "
                                 "are still stored; the indexer drops them once the current one is complete"))
        total_bytes = self.vectors.size_bytes()
        if total_bytes:
            status = FAIL if total_bytes > 3 * raw + 50_000_000 else OK
            out.append(Check("index size", status, f"{total_bytes / 1e6:.1f} MB on disk for {raw / 1e6:.1f} MB of "
                             f"vectors ({self.cfg.chroma_dir})",
                             "r42 chatbot rag-backfill --tenant '*' --now --rebuild" if status == FAIL else ""))
        return out

    def outbox(self) -> list[Check]:
        kinds = f"(type = {quote(OUTBOX_UPSERT)} || type = {quote(OUTBOX_DELETE)} || type = {quote(OUTBOX_COST)})"
        pending = self.pb.list("outbox", filter=f'status = "pending" && {kinds}', fields="id", per_page=1,
                               total=True).get("totalItems", 0)
        failed = self.pb.list("outbox", filter=f'status = "failed" && {kinds}', sort="-updated",
                              fields="id,type,last_error", per_page=3, total=True)
        now = pb_time(datetime.now(UTC))
        held = self.pb.list("outbox", filter=f'status = "pending" && lease_until > {quote(now)} && {kinds}',
                            fields="id", per_page=1, total=True).get("totalItems", 0)
        out = [Check("outbox backlog", WARN if pending > BACKLOG_WARN else OK,
                     f"{pending} row(s) waiting, {held} of them leased by a worker right now",
                     "is the app (or `r42 worker`) running?" if pending > BACKLOG_WARN else "")]
        count = failed.get("totalItems", 0)
        if count:
            errors = "; ".join(f"{r['type']}: {r.get('last_error', '')[:120]}" for r in failed.get("items", []))
            out.append(Check("outbox failures", FAIL, f"{count} failed row(s), e.g. {errors}",
                             "fix the cause above, then `r42 outbox retry`"))
        else:
            out.append(Check("outbox failures", OK, "no failed rows"))
        return out

    def injection_model(self) -> list[Check]:
        from r42_app.services.adapters.injection import load_learned_model

        try:
            model = load_learned_model(self.cfg.injection_model_file)
        except ValueError as exc:
            return [Check("injection model", WARN, f"learned injection detector unavailable, rules only: {exc}",
                          "make setup (or python -m bench.injection_learned --out tools/injection-model.json)")]
        return [Check("injection model", OK, f"learned detector loaded: {len(model.weights):,} features, "
                      f"threshold {model.threshold:.2f}")]

    def rag_snippets(self) -> list[Check]:
        if self.cfg.rag_snippets_enabled:
            return [Check("rag snippets", OK, "search snippets go into the model's prompt")]
        return [Check("rag snippets", WARN, "off (R42_RAG_SNIPPETS_ENABLED=false): the model answers from the KB "
                      "context and its tools only; the index is kept up to date",
                      "unset R42_RAG_SNIPPETS_ENABLED (or set it to true) and restart R42")]

    def cost_tracking(self) -> list[Check]:
        last = self.pb.list("ai_cost_events", sort="-created", fields="created", per_page=1).get("items", [])
        when = f"last cost event {last[0]['created'][:19]}" if last else "no cost events yet"
        if not self.cfg.cost_tracking:
            return [Check("cost tracking", WARN, f"off (AI_COST_TRACKING_ENABLED=false); {when}",
                          "unset AI_COST_TRACKING_ENABLED to record AI cost")]
        return [Check("cost tracking", OK, f"on; {when}")]

    def legacy_rows(self, tenants: list[Tenant]) -> list[Check]:
        out = []
        for tenant in tenants:
            records = self.pb.all("chatbot_access", filter=f"tenant = {quote(tenant.id)}")
            rows = [AccessRow.from_record(r) for r in records]
            legacy = sum(1 for r in rows if r is not None and r.is_legacy)
            if legacy:
                out.append(Check(f"capabilities {tenant.slug}", WARN, f"{legacy} user(s) still have an old fixed list",
                                 f"r42 chatbot migrate-legacy --tenant {tenant.slug}"))
        return out or [Check("capabilities", OK, "no old fixed lists")]

    def credits(self, tenants: list[Tenant]) -> list[Check]:
        store = CreditStore(self.pb)
        out = []
        for tenant in tenants:
            c = store.show(tenant)
            if not c.unlimited and c.credits <= 0:
                out.append(Check(f"credits {tenant.slug}", WARN,
                                 f"{c.credits:.2f} credits: R42 refuses questions (402)",
                                 f"r42 credits add --tenant {tenant.slug} 5000"))
        return out or [Check("credits", OK, "every tenant has credit (or an unlimited plan)")]

    def mcp(self) -> list[Check]:
        hub = McpHub.from_file(self.cfg.mcp_config_file, McpRegistry(), enabled=self.cfg.mcp_enabled)
        if hub.config_error:
            return [Check("mcp", FAIL, hub.config_error, f"fix {self.cfg.mcp_config_file}")]
        if not hub.connections:
            return [Check("mcp", OK, "no MCP servers configured" + ("" if self.cfg.mcp_enabled else " (switched off)"))]

        async def probe():
            try:
                await hub.start(wait=20)
                return [(s.name, s.state, s.last_error, len(s.tools)) for s in hub.statuses()]
            finally:
                await hub.stop()

        out = []
        for name, state, error, tools in asyncio.run(probe()):
            if state == "connected":
                out.append(Check(f"mcp {name}", OK, f"connected, {tools} tool(s)"))
            else:
                out.append(Check(f"mcp {name}", FAIL, f"not connected: {error}",
                                 f"check the server in {self.cfg.mcp_config_file} (`r42 mcp status`)"))
        return out

