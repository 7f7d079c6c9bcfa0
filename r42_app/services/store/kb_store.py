"""The knowledge base in PocketBase: tenants, topics and relations.

Every write goes through batch requests: a graph edit and a topic's deletion in one (all or nothing, up to
BATCH_SIZE writes), an import in
batches of BULK_BATCH (an upsert by slug: one that stopped halfway is completed by running it again; services/store/
pb.py says why not in one). PocketBase itself (pb_hooks/) writes
the `outbox` row of every topic create, update and delete in the same transaction, whoever writes,
and refuses relations whose ends do not exist; this store does not write outbox rows for its own
writes (that would index twice). Callers decide *who* may write (admins only); this store decides
*what* is a valid write, using the shared rules in `r42_app.core.kb`, for messages people can act on.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from r42_app.core.capabilities import CAPABILITIES, DEFAULT_CAPABILITIES
from r42_app.core.delta import GraphSnapshot, Rejected, ValidDelta, validate_delta
from r42_app.core.errors import UserError
from r42_app.core.identity import Tenant
from r42_app.core.kb import (
    ImportPlan,
    Issue,
    Relation,
    Topic,
    check_relation_endpoints,
    check_slug,
    export_document,
    parse_import,
    parse_relation,
    parse_topic,
)
from r42_app.core.tenants import DEFAULT_CREDITS
from r42_app.core.text import nl_sort_key
from r42_app.services.store.pb import BULK_BATCH, BatchRequest, PBError, PocketBase, quote

OUTBOX_UPSERT = "rag.index.kbarticle.upsert"
OUTBOX_DELETE = "rag.index.kbarticle.delete"
BATCH_SIZE = 400  # the most writes of one all-or-nothing batch (graph edit, topic deletion, document); bulk: BULK_BATCH
BATCH_BYTES = 16 * 1024 * 1024  # PocketBase refuses batch bodies above 32 MB (pb_migrations/)


class KBError(UserError):
    """A knowledge-base write was refused; `issues` says which fields are wrong (each with its own code).
    `message` and `str()` stay English for the CLI; the UI shows `user_message` and the issues'."""

    def __init__(self, code: str, message: str, issues: Iterable[Issue] = (), **fields: object):
        super().__init__(code, message, **fields)
        self.message = message
        self.issues = list(issues)

    def __str__(self) -> str:
        if not self.issues:
            return self.message
        return self.message + "\n" + "\n".join(f"  - {issue}" for issue in self.issues)


@dataclass
class ImportResult:
    tenant: Tenant
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    relations_created: int = 0
    relations_unchanged: int = 0
    outbox_rows: int = 0
    created_tenant: bool = False

    def summary(self) -> str:
        return (
            f"{self.tenant.slug}: {self.created} topics created, {self.updated} updated, {self.unchanged} unchanged; "
            f"{self.relations_created} relations created, {self.relations_unchanged} unchanged"
        )


@dataclass
class TenantKB:
    """A tenant's whole knowledge base, as read in one go."""

    tenant: Tenant
    topics: list[Topic] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)


def _topic_from(row: dict[str, Any]) -> Topic:
    return Topic(
        slug=row["slug"],
        label=row["label"],
        type=row["type"],
        description=row.get("description", ""),
        content=row.get("content", ""),
    )


def _topic_body(topic: Topic) -> dict[str, Any]:
    return {
        "slug": topic.slug,
        "label": topic.label,
        "type": topic.type,
        "description": topic.description,
        "content": topic.content,
    }


def outbox_request(kind: str, tenant: Tenant | None, slug: str) -> BatchRequest | None:
    """An outbox row asking to re-index a topic (`rag-backfill`); topic writes get theirs from PocketBase.
    Topics of the global KB (no tenant) are never indexed."""
    if tenant is None or not tenant.id:
        return None
    payload = {"tenant": tenant.id, "tenant_slug": tenant.slug, "topic": slug}
    return BatchRequest.create("outbox", {"type": kind, "payload": payload, "status": "pending", "attempts": 0})


def _chunks(requests: list[BatchRequest], size: int = BULK_BATCH) -> Iterator[list[BatchRequest]]:
    """Consecutive runs of at most `size` requests whose JSON stays under BATCH_BYTES."""
    chunk: list[BatchRequest] = []
    used = 0
    for request in requests:
        cost = len(json.dumps(request.to_json(), ensure_ascii=False).encode()) + 1
        if chunk and (len(chunk) >= size or used + cost > BATCH_BYTES):
            yield chunk
            chunk, used = [], 0
        chunk.append(request)
        used += cost
    if chunk:
        yield chunk


class KBFingerprint(NamedTuple):
    """What changes whenever a tenant's knowledge graph does: its topics and relations, counted and last updated."""

    topics: int
    topics_updated: str
    relations: int
    relations_updated: str


class KBStore:
    """Reads and writes a tenant's knowledge base with a superuser connection."""

    def __init__(self, pb: PocketBase):
        self.pb = pb

    # -- tenants ------------------------------------------------------------------

    def tenant(self, slug: str) -> Tenant | None:
        row = self.pb.first("tenants", f"slug = {quote(slug)}")
        return Tenant(row["id"], row["slug"], row["name"]) if row else None

    def ensure_tenant(self, slug: str, name: str | None = None) -> tuple[Tenant, bool]:
        """Return the tenant, creating it when missing (chatbot on with the default capabilities, default credits).
        Only the demo seed does that; `r42 kb import` wants a tenant made by `r42 tenant create` (Tenants)."""
        existing = self.tenant(slug)
        if existing:
            return existing, False
        issues = check_slug(slug, "tenant")
        if issues:
            raise KBError("kb.bad_tenant", f"invalid tenant slug {slug!r}", issues, slug=slug)
        row = self.pb.create(
            "tenants",
            {"slug": slug, "name": name or slug.replace("-", " ").title(), "state": "active", "chatbot_enabled": True,
             "credits": DEFAULT_CREDITS,
             "chatbot_default_capabilities": [c for c in CAPABILITIES if c in DEFAULT_CAPABILITIES]},
        )
        return Tenant(row["id"], row["slug"], row["name"]), True

    def require_tenant(self, slug: str) -> Tenant:
        tenant = self.tenant(slug)
        if tenant is None:
            raise KBError("kb.unknown_tenant", f"unknown tenant {slug!r}", slug=slug)
        return tenant

    # -- reads --------------------------------------------------------------------

    def _topic_rows(self, tenant: Tenant, fields: str = "") -> list[dict[str, Any]]:
        """The tenant's topics by label (then id), read in id order and sorted here: at 100,000 topics, 28 s
        instead of PocketBase's 131 s for numbered pages sorted by label (docs/BENCHMARKS.md)."""
        rows = self.pb.all_by_id("topics", filter=f"tenant = {quote(tenant.id)}", fields=fields)
        rows.sort(key=lambda r: nl_sort_key(str(r.get("label") or "")))  # Dutch order: "Aanmelding" before "AOW"
        return rows

    def _relation_rows(self, tenant: Tenant, extra: str = "") -> list[dict[str, Any]]:
        flt = f"tenant = {quote(tenant.id)}" + (f" && ({extra})" if extra else "")
        return self.pb.all("relations", filter=flt, sort="source,type,target", fields="id,source,target,type")

    def topics(self, tenant: Tenant) -> list[Topic]:
        return [_topic_from(row) for row in self._topic_rows(tenant)]

    def topic_summaries(self, tenant: Tenant) -> list[Topic]:
        """Topics without their content (for lists)."""
        return [_topic_from(row) for row in self._topic_rows(tenant, fields="slug,label,type,description")]

    def topic(self, tenant: Tenant, slug: str) -> Topic | None:
        row = self._topic_row(tenant, slug)
        return _topic_from(row) if row else None

    def _topic_row(self, tenant: Tenant, slug: str) -> dict[str, Any] | None:
        return self.pb.first("topics", f"tenant = {quote(tenant.id)} && slug = {quote(slug)}")

    def relations(self, tenant: Tenant) -> list[Relation]:
        return [Relation(r["source"], r["target"], r["type"]) for r in self._relation_rows(tenant)]

    def relations_of(self, tenant: Tenant, slug: str) -> list[Relation]:
        rows = self._relation_rows(tenant, f"source = {quote(slug)} || target = {quote(slug)}")
        return [Relation(r["source"], r["target"], r["type"]) for r in rows]

    def fingerprint(self, tenant: Tenant) -> KBFingerprint:
        """Changes whenever a topic or relation of the tenant is created, updated or deleted (two cheap queries)."""
        flt = f"tenant = {quote(tenant.id)}"
        return KBFingerprint(*self.pb.change_marker("topics", flt), *self.pb.change_marker("relations", flt))

    def topics_updated_since(self, tenant: Tenant, updated: str) -> list[Topic]:
        """Topics created or updated at or after `updated` (a PocketBase timestamp, as `fingerprint` gives it)."""
        flt = f"tenant = {quote(tenant.id)} && updated >= {quote(updated)}"
        return [_topic_from(row) for row in self.pb.all("topics", filter=flt, sort="updated")]

    def topic_slugs(self, tenant: Tenant) -> set[str]:
        """The slugs of the tenant's topics (one light query: no content)."""
        return set(self._slugs(tenant))

    def topics_by_slug(self, tenant: Tenant, slugs: Iterable[str]) -> dict[str, Topic]:
        """The named topics of a tenant that exist (missing slugs are simply absent)."""
        out: dict[str, Topic] = {}
        slugs = sorted(set(slugs))
        for start in range(0, len(slugs), 50):
            part = slugs[start : start + 50]
            flt = f"tenant = {quote(tenant.id)} && (" + " || ".join(f"slug = {quote(s)}" for s in part) + ")"
            out.update({row["slug"]: _topic_from(row) for row in self.pb.all("topics", filter=flt)})
        return out

    def load(self, tenant: Tenant) -> TenantKB:
        return TenantKB(tenant, self.topics(tenant), self.relations(tenant))

    def _slugs(self, tenant: Tenant) -> dict[str, str]:
        return {row["slug"]: row["id"] for row in self._topic_rows(tenant, fields="id,slug")}

    # -- single writes (admin screens) --------------------------------------------

    def create_topic(self, tenant: Tenant, raw: dict[str, Any]) -> Topic:
        topic, issues = parse_topic(raw)
        if topic is None:
            raise KBError("kb.topic_invalid", "The topic is not valid.", issues)
        if self._topic_row(tenant, topic.slug):
            raise KBError("kb.topic_invalid", "The topic is not valid.",
                          [Issue("id", f"{topic.slug!r} already exists in this tenant", "kb.id_taken",
                                 {"slug": topic.slug})])
        self._run([BatchRequest.create("topics", {"tenant": tenant.id, **_topic_body(topic)})])
        return topic

    def update_topic(self, tenant: Tenant, slug: str, raw: dict[str, Any]) -> Topic:
        """Update label, type, description and content; the slug is the topic's stable id and never changes."""
        row = self._topic_row(tenant, slug)
        if row is None:
            raise KBError("kb.topic_missing", f"Topic {slug!r} does not exist.", slug=slug)
        topic, issues = parse_topic({**raw, "id": slug})
        if topic is None:
            raise KBError("kb.topic_invalid", "The topic is not valid.", issues)
        self._run([BatchRequest.update("topics", row["id"], _topic_body(topic))])
        return topic

    def delete_topic(self, tenant: Tenant, slug: str) -> int:
        """Delete a topic and every relation touching it; returns the number of relations removed. The topic of
        an imported document takes the document with it: its section topics, its row and its stored file."""
        row = self._topic_row(tenant, slug)
        if row is None:
            raise KBError("kb.topic_missing", f"Topic {slug!r} does not exist.", slug=slug)
        doc = self.pb.first("documents", f"tenant = {quote(tenant.id)} && id = {quote(row['document'])} && "
                            f"topic = {quote(slug)}") if row.get("document") else None
        sections = [r for r in self.pb.all("topics", filter=f"tenant = {quote(tenant.id)} && document = "
                                           f"{quote(doc['id'])}", fields="id,slug") if r["slug"] != slug] if doc else []
        rels = self._relation_rows(tenant, f"source = {quote(slug)} || target = {quote(slug)}")
        self._run([BatchRequest.delete("relations", r["id"]) for r in rels]
                  + [BatchRequest.delete("topics", r["id"]) for r in sections]  # PocketBase deletes their relations
                  + [BatchRequest.delete("topics", row["id"])]
                  + ([BatchRequest.delete("documents", doc["id"])] if doc else []), size=BATCH_SIZE)
        return len(rels)

    def document_sections(self, tenant: Tenant, slug: str) -> int:
        """How many section topics go with this topic when it is deleted (0 for a topic not of a document)."""
        row = self._topic_row(tenant, slug)
        if not row or not row.get("document"):
            return 0
        if not self.pb.first("documents", f"tenant = {quote(tenant.id)} && id = {quote(row['document'])} && "
                             f"topic = {quote(slug)}"):
            return 0
        return max(0, self.pb.list("topics", filter=f"tenant = {quote(tenant.id)} && document = "
                                   f"{quote(row['document'])}", per_page=1, total=True).get("totalItems", 1) - 1)

    def add_relation(self, tenant: Tenant, raw: dict[str, Any]) -> Relation:
        rel, issues = parse_relation(raw)
        if rel is None:
            raise KBError("kb.relation_invalid", "The relation is not valid.", issues)
        issues = check_relation_endpoints(rel, self._slugs(tenant))
        if issues:
            raise KBError("kb.relation_invalid", "The relation is not valid.", issues)
        existing = self._relation_rows(
            tenant, f"source = {quote(rel.source)} && target = {quote(rel.target)} && type = {quote(rel.type)}"
        )
        if existing:
            raise KBError("kb.relation_invalid", "The relation is not valid.",
                          [Issue("relation", "this relation already exists", "kb.relation_exists")])
        self._run([BatchRequest.create("relations", {"tenant": tenant.id, "source": rel.source, "target": rel.target,
                                                     "type": rel.type})])
        return rel

    def delete_relation(self, tenant: Tenant, rel: Relation) -> None:
        rows = self._relation_rows(
            tenant, f"source = {quote(rel.source)} && target = {quote(rel.target)} && type = {quote(rel.type)}"
        )
        if not rows:
            raise KBError("kb.relation_missing", "This relation does not exist (any more).")
        self._run([BatchRequest.delete("relations", rows[0]["id"])])

    # -- bulk ---------------------------------------------------------------------

    def validate_import(self, tenant_slug: str, data: Any) -> tuple[ImportPlan | None, list[Issue]]:
        """Validate a whole import document against the tenant's existing topics (no writes)."""
        tenant = self.tenant(tenant_slug)
        existing = self._slugs(tenant) if tenant else {}
        return parse_import(data, existing)

    def import_document(
        self,
        tenant_slug: str,
        data: Any,
        progress: Callable[[int, int], None] | None = None,
        tenant_name: str | None = None,
    ) -> ImportResult:
        """Validate the whole document, then upsert topics and relations by slug in batches of BULK_BATCH.

        Raises KBError (and writes nothing, not even the tenant) when any item is invalid. Unchanged topics are
        skipped, so importing the same file twice writes nothing new, and an import that PocketBase stopped halfway
        (KBError kb.write_failed: "Probeer het opnieuw") is completed by running it again.
        """
        plan, issues = self.validate_import(tenant_slug, data)
        if plan is None:
            raise KBError("kb.import_invalid", f"The import file is not valid ({len(issues)} problem(s)); nothing was "
                          "written.", issues, count=len(issues))
        tenant, created_tenant = self.ensure_tenant(tenant_slug, tenant_name)
        result = ImportResult(tenant=tenant, created_tenant=created_tenant)

        existing = {row["slug"]: row for row in self._topic_rows(tenant)}
        existing_rel = {(r["source"], r["target"], r["type"]) for r in self._relation_rows(tenant)}
        requests: list[BatchRequest] = []
        for topic in plan.topics:
            row = existing.get(topic.slug)
            if row is None:
                requests.append(BatchRequest.create("topics", {"tenant": tenant.id, **_topic_body(topic)}))
                result.created += 1
            elif _topic_from(row) != topic:
                requests.append(BatchRequest.update("topics", row["id"], _topic_body(topic)))
                result.updated += 1
            else:
                result.unchanged += 1
                continue
            result.outbox_rows += 1  # written by PocketBase with the topic
        for rel in plan.relations:
            if rel.key in existing_rel:
                result.relations_unchanged += 1
                continue
            requests.append(
                BatchRequest.create("relations", {"tenant": tenant.id, "source": rel.source, "target": rel.target,
                                                  "type": rel.type})
            )
            result.relations_created += 1
        self._run(requests, progress)
        return result

    def apply_delta(self, tenant: Tenant, delta: Any) -> ValidDelta:
        """Re-validate a proposed graph edit against the tenant's KB as it is now, then write its topics and
        relations in one batch request: all or nothing. Raises KBError with the reason."""
        kb = self.load(tenant)
        checked = validate_delta(delta.as_dict() if hasattr(delta, "as_dict") else delta,
                                 GraphSnapshot(kb.topics, kb.relations))
        if isinstance(checked, Rejected):
            raise KBError("kb.delta_stale", f"This edit can no longer be applied: {checked.message}")
        requests: list[BatchRequest | None] = []
        for t in checked.topics:
            topic = Topic(t.id, t.label, t.type, t.description, "")
            requests.append(BatchRequest.create("topics", {"tenant": tenant.id, **_topic_body(topic)}))
        for r in checked.relations:
            requests.append(BatchRequest.create("relations", {"tenant": tenant.id, "source": r.source,
                                                              "target": r.target, "type": r.type}))
        if len(requests) > BATCH_SIZE:
            raise KBError("kb.delta_too_large", "This edit is too large to apply at once.")
        self._run(requests, size=BATCH_SIZE)
        return checked

    def emit_reindex(self, tenant: Tenant) -> int:
        """Write an upsert outbox row for every topic of the tenant (`r42 chatbot rag-backfill`)."""
        requests = [outbox_request(OUTBOX_UPSERT, tenant, t.slug) for t in self.topic_summaries(tenant)]
        self._run(requests)
        return len(requests)

    def export_document(self, tenant_slug: str) -> dict[str, Any]:
        kb = self.load(self.require_tenant(tenant_slug))
        return export_document(kb.topics, kb.relations)

    # -- plumbing -----------------------------------------------------------------

    def _run(self, requests: Sequence[BatchRequest | None], progress: Callable[[int, int], None] | None = None,
             size: int = BULK_BATCH) -> None:
        """Send requests in batches (at most `size` requests and about BATCH_BYTES); each batch is one transaction.
        Single writes always fit in one; a write that must be all-or-nothing asks for BATCH_SIZE."""
        todo = [r for r in requests if r is not None]
        done = 0
        for chunk in _chunks(todo, size):
            try:
                self.pb.batch(chunk)
            except PBError as exc:
                raise KBError("kb.write_failed", f"PocketBase refused the write: {exc}") from exc
            done += len(chunk)
            if progress:
                progress(done, len(todo))
        if progress and not todo:
            progress(0, 0)
