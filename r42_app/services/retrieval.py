"""kb_search and build_kb_context for a tenant: lexical index cache, embeddings and Chroma re-rank.

The lexical side (BM25 candidates, TF-IDF context) is always there. The semantic side (embedding
model + Chroma) may be missing; then every mode falls back to `fts`, says so in `mode_used`, and
logs the reason once per process.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from r42_app.core.retrieval import (
    LEXICAL_CANDIDATES,
    chunk_text,
    MAX_CHUNKS,
    KBContext,
    Snippet,
    TenantIndex,
    best_chunk,
    build_kb_context_from_index,
    clean_query,
    make_snippet,
)
from r42_app.core.text import tokenize
from r42_app.services.embeddings import Embedder, EmbeddingUnavailable, QueryBatcher
from r42_app.services.kb_store import KBStore, Tenant
from r42_app.services.vector_store import TenantLeak, VectorStore, VectorStoreUnavailable

log = logging.getLogger(__name__)

MODES = ("fts", "semantic", "hybrid")
# Hybrid score over the union of the lexical top LEXICAL_CANDIDATES and the semantic top SEMANTIC_CANDIDATES:
#   (1 - w) * lexical (BM25 / best BM25) + w * semantic (cosine, min-max over the candidates).
# The embedding model is English. On a Dutch KB the lexical side leads (w = SEMANTIC_WEIGHT_MIN); on an
# English KB the embeddings know better (w = SEMANTIC_WEIGHT_ENGLISH), in between by how English the KB
# reads (TenantIndex.english). The fewer of the query's words the KB uses, the more w moves to MAX (an
# English question on a Dutch KB is answered by the embeddings). Chosen on the Dutch sets and the dev half
# of the English stdlib set (tests/data/eval_*.jsonl), see docs/BENCHMARKS.md.
SEMANTIC_WEIGHT_MIN = 0.2
SEMANTIC_WEIGHT_ENGLISH = 0.75
SEMANTIC_WEIGHT_MAX = 1.0
COVERAGE_THRESHOLD = 0.5
SEMANTIC_CANDIDATES = 20
NEIGHBOURS_FROM = 0.5  # the semantic weight from which the semantic top joins the candidates
MAX_TOP_K = 50
# How long a checked index is trusted before PocketBase is asked again whether the KB changed:
# an edit is searchable within this time (the spec asks for within a second).
FRESHNESS_S = 0.5


class UnknownTenant(LookupError):
    pass


@dataclass
class SearchHit:
    slug: str
    label: str
    type: str
    score: float
    text: str


@dataclass
class SearchResult:
    mode: str
    mode_used: str
    hits: list[SearchHit] = field(default_factory=list)
    kb_hash: str = ""

    def snippets(self, index: TenantIndex) -> list[Snippet]:
        """Prompt snippets numbered [ref:1].. with injection markers detected."""
        out = []
        for n, hit in enumerate(self.hits, start=1):
            topic = index.topics[index.by_slug[hit.slug]]
            out.append(make_snippet(n, topic, hit.text, hit.score))
        return out


def semantic_weight(coverage: float, english: float = 0.0) -> float:
    """The semantic share of the hybrid score for a query with this lexical coverage, on a KB this English."""
    base = SEMANTIC_WEIGHT_MIN + (SEMANTIC_WEIGHT_ENGLISH - SEMANTIC_WEIGHT_MIN) * english
    shortfall = max(0.0, (COVERAGE_THRESHOLD - coverage) / COVERAGE_THRESHOLD)
    return base + (SEMANTIC_WEIGHT_MAX - base) * shortfall


def _minmax(values: np.ndarray) -> np.ndarray:
    if values.size == 0:
        return values
    lo, hi = float(values.min()), float(values.max())
    return np.ones_like(values) if hi - lo < 1e-9 else (values - lo) / (hi - lo)


class Retriever:
    """Per-process retrieval service; indexes are cached per tenant until its KB changes."""

    def __init__(self, kb: KBStore, vectors: VectorStore | None, embedder: Embedder | None,
                 max_chunks: int = MAX_CHUNKS):
        self.kb = kb
        self.max_chunks = max_chunks
        self.vectors = vectors
        self.embedder = embedder
        self._queries: QueryBatcher | None = None
        self._indexes: dict[str, tuple[tuple, TenantIndex]] = {}
        self._checked_at: dict[str, float] = {}
        self._lock = threading.Lock()
        self._warned: set[str] = set()

    # -- tenants and indexes -----------------------------------------------------------

    def tenant(self, slug: str) -> Tenant:
        tenant = self.kb.tenant(slug)
        if tenant is None:
            raise UnknownTenant(f"unknown tenant {slug!r}")
        return tenant

    def index(self, tenant: Tenant) -> TenantIndex:
        """The tenant's lexical index, rebuilt only when a topic or relation changed."""
        cached = self._indexes.get(tenant.id)
        now = time.monotonic()
        if cached and now - self._checked_at.get(tenant.id, 0.0) < FRESHNESS_S:
            return cached[1]
        fingerprint = self.kb.fingerprint(tenant)
        self._checked_at[tenant.id] = now
        if cached and cached[0] == fingerprint:
            return cached[1]
        with self._lock:
            cached = self._indexes.get(tenant.id)
            if cached and cached[0] == fingerprint:
                return cached[1]
            kb = self.kb.load(tenant)
            index = TenantIndex.build(kb.topics, kb.relations)
            if cached and cached[1].hash == index.hash:
                index = cached[1]
            self._indexes[tenant.id] = (fingerprint, index)
            return index

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning(message)

    # -- the semantic side ----------------------------------------------------------------

    def _embed_query(self, query: str) -> np.ndarray | None:
        if self.embedder is None or self.vectors is None:
            self._warn_once("no-semantic", "semantic search is not configured; using fts")
            return None
        try:
            if self._queries is None or self._queries.embedder is not self.embedder:
                self._queries = QueryBatcher(self.embedder)
            return self._queries.encode(query)
        except EmbeddingUnavailable as exc:
            self._warn_once("embedder", f"embedding model unavailable, falling back to fts: {exc}")
            return None

    def _semantic_neighbours(self, tenant: Tenant, vector: np.ndarray, k: int) -> dict[str, tuple[float, str]] | None:
        """slug -> (best cosine, best chunk text) of the k nearest chunks, or None when Chroma is down."""
        try:
            rows = self.vectors.nearest(tenant.id, vector, k)
        except (VectorStoreUnavailable, TenantLeak) as exc:
            self._warn_once("chroma", f"vector store unavailable, falling back to fts: {exc}")
            return None
        best: dict[str, tuple[float, str]] = {}
        for slug, _chunk, text, sim in rows:
            if slug not in best or sim > best[slug][0]:
                best[slug] = (sim, text)
        return best

    def _candidate_similarity(self, tenant: Tenant, index: TenantIndex, vector: np.ndarray,
                              slugs: list[str]) -> dict[str, tuple[float, str]] | None:
        """slug -> (best cosine, best chunk text) of these topics. Only ids the indexer wrote are asked for
        (the number of chunks follows from the topic's text): Chroma fails a whole lookup on ids it never had."""
        counts = {slug: len(chunk_text(index.topics[index.by_slug[slug]], max_chunks=self.max_chunks))
                  for slug in slugs if slug in index.by_slug}
        try:
            chunks = self.vectors.topic_vectors(tenant.id, counts)
        except (VectorStoreUnavailable, TenantLeak) as exc:
            self._warn_once("chroma", f"vector store unavailable, falling back to fts: {exc}")
            return None
        best: dict[str, tuple[float, str]] = {}
        if chunks.embeddings.size:
            sims = chunks.embeddings @ vector
            for slug, text, sim in zip(chunks.slugs, chunks.texts, sims.tolist()):
                if slug not in best or sim > best[slug][0]:
                    best[slug] = (sim, text)
        return best

    # -- public API ---------------------------------------------------------------------

    def kb_search(self, tenant: Tenant, query: str, mode: str = "hybrid", top_k: int = 5) -> SearchResult:
        """Top-k topics of `tenant` for `query`. Modes: fts (BM25 + compound fallback), semantic
        (Chroma nearest chunks) and hybrid (lexical candidates re-ranked with embedding similarity)."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}")
        top_k = max(1, min(int(top_k), MAX_TOP_K))
        index = self.index(tenant)
        query = clean_query(query)
        result = SearchResult(mode=mode, mode_used="fts", kb_hash=index.hash)
        if not tokenize(query):  # empty, whitespace, only stop words, punctuation or emoji
            return result
        vector = self._embed_query(query) if mode != "fts" and index.topics else None

        if vector is not None and mode == "semantic":
            near = self._semantic_neighbours(tenant, vector, top_k * 4)
            if near == {}:  # nothing indexed for this tenant: say so and answer lexically
                self._warn_once(f"empty:{tenant.id}", f"the semantic index holds nothing for tenant {tenant.slug}; "
                                f"using fts (run `r42 chatbot rag-backfill --tenant {tenant.slug} --now`)")
                near = None
            if near is not None:
                result.mode_used = "semantic"
                ranked = sorted(near.items(), key=lambda kv: -kv[1][0])[:top_k]
                hits = [self._hit(index, slug, sim, text) for slug, (sim, text) in ranked if slug in index.by_slug]
                result.hits = self._named_first(index, query, hits, top_k)
                return result

        lexical = index.lexical_candidates(query, LEXICAL_CANDIDATES)
        if vector is not None and mode == "hybrid":
            hits = self._hybrid(tenant, index, query, vector, lexical, top_k)
            if hits is not None:
                result.mode_used = "hybrid"
                result.hits = self._named_first(index, query, hits, top_k)
                return result

        hits = [self._hit(index, index.topics[h.doc].slug, h.score, None, query) for h in lexical[:top_k]]
        result.hits = self._named_first(index, query, hits, top_k)
        return result

    def _hybrid(self, tenant: Tenant, index: TenantIndex, query: str, vector: np.ndarray, lexical: list,
                top_k: int) -> list[SearchHit] | None:
        """The fused ranking, or None when the semantic side is unavailable or holds nothing for these topics."""
        w = semantic_weight(index.coverage(query), index.english)
        # The semantic top joins the candidates when the embeddings lead (an English KB, or a query in words
        # the KB does not use). Otherwise it changed no ranking on any evaluation set (thresholds 0.2 to 0.6
        # gave the same figures) and costs Chroma's tenant-filtered search (~25 ms at 10k topics).
        near = self._semantic_neighbours(tenant, vector, SEMANTIC_CANDIDATES) if w >= NEIGHBOURS_FROM else {}
        if near is None:
            return None
        near = {slug: v for slug, v in near.items() if slug in index.by_slug}
        slugs = [index.topics[h.doc].slug for h in lexical]
        sims = self._candidate_similarity(tenant, index, vector, [s for s in slugs if s not in near])
        if sims is None:
            return None
        sims.update(near)
        if not sims:  # nothing indexed for this tenant: lexical it is, and it says so
            self._warn_once(f"empty:{tenant.id}", f"the semantic index holds nothing for tenant {tenant.slug}; "
                            f"using fts (run `r42 chatbot rag-backfill --tenant {tenant.slug} --now`)")
            return None
        candidates = list(dict.fromkeys(slugs + sorted(near, key=lambda s: -near[s][0])))
        lex = {index.topics[h.doc].slug: h.score for h in lexical}
        lex_scores = np.array([lex.get(s, 0.0) for s in candidates])
        lex_norm = lex_scores / lex_scores.max() if lex_scores.size and lex_scores.max() > 0 else lex_scores
        sem_norm = _minmax(np.array([sims.get(s, (0.0, ""))[0] for s in candidates]))
        fused = (1 - w) * lex_norm + w * sem_norm
        order = sorted(range(len(candidates)), key=lambda i: (-fused[i], candidates[i]))[:top_k]
        return [self._hit(index, candidates[i], float(fused[i]), sims.get(candidates[i], (0.0, ""))[1] or None, query)
                for i in order]

    def _named_first(self, index: TenantIndex, query: str, hits: list[SearchHit], top_k: int) -> list[SearchHit]:
        """A topic the query names by its exact label or id comes first, in every mode (TenantIndex.named)."""
        named = [index.topics[i].slug for i in index.named(query)]
        if not named:
            return hits
        top = hits[0].score if hits else 1.0
        by_slug = {h.slug: h for h in hits}
        first = []
        for slug in named:
            hit = by_slug.pop(slug, None) or self._hit(index, slug, top, None, query)
            hit.score = max(hit.score, top)
            first.append(hit)
        return (first + [h for h in hits if h.slug in by_slug])[:top_k]

    def _hit(self, index: TenantIndex, slug: str, score: float, text: str | None, query: str = "") -> SearchHit:
        topic = index.topics[index.by_slug[slug]]
        return SearchHit(slug, topic.label, topic.type, score, text if text else best_chunk(topic, query))

    def build_kb_context(self, tenant: Tenant, message: str) -> KBContext:
        """The KB context block for the system prompt (see core.retrieval.build_kb_context_from_index)."""
        return build_kb_context_from_index(self.index(tenant), message, tenant.name)
