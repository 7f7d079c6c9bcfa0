"""The demo knowledge base in memory, with the reads of `KBStore` that the Retriever and the chat tools use.

For unit tests of the chat turn: the real `Retriever` over it, without an embedding model or vector store,
answers every mode with its lexical search (`mode_used` "fts"), on the seeded demo content.
"""

from __future__ import annotations

import json

from r42_app.core.identity import SignedInUser, Tenant
from r42_app.core.kb import Relation, Topic, parse_import
from r42_app.services.retrieval import Retriever
from r42_app.services.store.kb_store import TenantKB
from r42_app.services.store.seed import DEMO_TENANTS, SEED_DIR

LEARNER = SignedInUser("u-lotte", "learner@example.com", "Lotte de Leerling", "learner", "t-demo", "demo",
                       DEMO_TENANTS["demo"])


class MemoryKB:
    """Tenants' topics and relations in memory, as `r42 seed demo` would store them (read-only)."""

    def __init__(self, slugs: tuple[str, ...] = ("demo",)):
        self.tenants: dict[str, Tenant] = {}
        self.kbs: dict[str, TenantKB] = {}
        for slug in slugs:
            plan, issues = parse_import(json.loads((SEED_DIR / f"{slug}.json").read_text(encoding="utf-8")))
            assert plan is not None, issues
            tenant = Tenant(f"t-{slug}", slug, DEMO_TENANTS.get(slug, slug))
            self.tenants[slug] = tenant
            relations = sorted(plan.relations, key=lambda r: (r.source, r.type, r.target))  # KBStore's orders
            self.kbs[tenant.id] = TenantKB(tenant, sorted(plan.topics, key=lambda t: t.label), relations)

    def tenant(self, slug: str) -> Tenant | None:
        return self.tenants.get(slug)

    def fingerprint(self, tenant: Tenant) -> tuple:
        return ("memory", tenant.id)  # never changes: the index is built once

    def load(self, tenant: Tenant) -> TenantKB:
        return self.kbs[tenant.id]

    def topics(self, tenant: Tenant) -> list[Topic]:
        return list(self.kbs[tenant.id].topics)

    def topic(self, tenant: Tenant, slug: str) -> Topic | None:
        return next((t for t in self.kbs[tenant.id].topics if t.slug == slug), None)

    def relations(self, tenant: Tenant) -> list[Relation]:
        return list(self.kbs[tenant.id].relations)

    def relations_of(self, tenant: Tenant, slug: str) -> list[Relation]:
        return [r for r in self.kbs[tenant.id].relations if slug in (r.source, r.target)]


def memory_retriever(kb: MemoryKB | None = None) -> Retriever:
    """The real Retriever over the in-memory demo KB, lexical only (no embedder, no vector store)."""
    return Retriever(kb or MemoryKB(), vectors=None, embedder=None)
