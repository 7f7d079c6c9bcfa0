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
# Hybrid score = (1 - w) * lexical (BM25 / best BM25) + w * semantic (cosine, min-max over candidates).
# The model is English and the KB Dutch: for a query whose words the KB uses (coverage >= threshold)
# the lexical side leads (w = MIN); the fewer of its words the KB knows, the more w moves to MAX
# (an English question on a Dutch KB is answered by the embeddings). Tuned on tests/data/eval_*.jsonl,
# see docs/BENCHMARKS.md.
SEMANTIC_WEIGHT_MIN = 0.2
SEMANTIC_WEIGHT_MAX = 1.0
COVERAGE_THRESHOLD = 0.5
# Semantic neighbours added to the lexical candidates, so a question with no word in common still finds something.
SEMANTIC_CANDIDATES = 10
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


def semantic_weight(coverage: float) -> float:
    """The semantic share of the hybrid score for a query with this lexical coverage."""
    shortfall = max(0.0, (COVERAGE_THRESHOLD - coverage) / COVERAGE_THRESHOLD)
    return SEMANTIC_WEIGHT_MIN + (SEMANTIC_WEIGHT_MAX - SEMANTIC_WEIGHT_MIN) * shortfall


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

    def _candidate_similarity(self, tenant: Tenant, vector: np.ndarray, slugs: list[str]) -> dict[str, tuple[float, str]] | None:
        try:
            chunks = self.vectors.topic_vectors(tenant.id, slugs, self.max_chunks)
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
                result.hits = [self._hit(index, slug, sim, text) for slug, (sim, text) in ranked if slug in index.by_slug]
                return result

        lexical = index.lexical_candidates(query, LEXICAL_CANDIDATES)
        if vector is not None and mode == "hybrid":
            slugs = [index.topics[h.doc].slug for h in lexical]
            w = semantic_weight(index.coverage(query))
            # Nearest chunks join the candidates only when the query's words are not the KB's own
            # (w above its minimum): otherwise the lexical candidates are re-ranked as they are.
            near = self._semantic_neighbours(tenant, vector, SEMANTIC_CANDIDATES) if w > SEMANTIC_WEIGHT_MIN else {}
            sims = self._candidate_similarity(tenant, vector, slugs) if near is not None else None
            if sims == {} and not near:  # nothing indexed for these topics: lexical it is, and it says so
                self._warn_once(f"empty:{tenant.id}", f"the semantic index holds nothing for tenant {tenant.slug}; "
                                f"using fts (run `r42 chatbot rag-backfill --tenant {tenant.slug} --now`)")
                sims = None
            if sims is not None:
                result.mode_used = "hybrid"
                sims.update({s: v for s, v in near.items() if s not in sims})
                candidates = list(dict.fromkeys(slugs + [s for s in near if s in index.by_slug]))
                lex = {index.topics[h.doc].slug: h.score for h in lexical}
                lex_scores = np.array([lex.get(s, 0.0) for s in candidates])
                lex_norm = lex_scores / lex_scores.max() if lex_scores.size and lex_scores.max() > 0 else lex_scores
                sem_norm = _minmax(np.array([sims.get(s, (0.0, ""))[0] for s in candidates]))
                fused = (1 - w) * lex_norm + w * sem_norm
                order = sorted(range(len(candidates)), key=lambda i: (-fused[i], candidates[i]))[:top_k]
                result.hits = [
                    self._hit(index, candidates[i], float(fused[i]), sims.get(candidates[i], (0.0, ""))[1] or None, query)
                    for i in order
                ]
                return result

        result.hits = [self._hit(index, index.topics[h.doc].slug, h.score, None, query) for h in lexical[:top_k]]
        return result

    def _hit(self, index: TenantIndex, slug: str, score: float, text: str | None, query: str = "") -> SearchHit:
        topic = index.topics[index.by_slug[slug]]
        return SearchHit(slug, topic.label, topic.type, score, text if text else best_chunk(topic, query))

    def build_kb_context(self, tenant: Tenant, message: str) -> KBContext:
        """The KB context block for the system prompt (see core.retrieval.build_kb_context_from_index)."""
        return build_kb_context_from_index(self.index(tenant), message, tenant.name)
