"""The two grounding calls the chat turn uses, on the process-wide services:

    kb_search(tenant, query, mode="hybrid", top_k=5) -> SearchResult
    build_kb_context(tenant, message) -> KBContext

`tenant` is a Tenant (from the signed-in user) or a tenant slug.
"""

from __future__ import annotations

from r42_app.core.retrieval import KBContext
from r42_app.services import deps
from r42_app.services.kb_store import Tenant
from r42_app.services.retrieval import SearchResult


def _tenant(tenant: Tenant | str) -> Tenant:
    return tenant if isinstance(tenant, Tenant) else deps.retriever().tenant(tenant)


def kb_search(tenant: Tenant | str, query: str, mode: str = "hybrid", top_k: int = 5) -> SearchResult:
    """Top-k topics of the tenant for the query (modes fts | semantic | hybrid; see Retriever.kb_search)."""
    return deps.retriever().kb_search(_tenant(tenant), query, mode, top_k)


def build_kb_context(tenant: Tenant | str, message: str) -> KBContext:
    """The KB context block of the R42 spec for this message."""
    return deps.retriever().build_kb_context(_tenant(tenant), message)
