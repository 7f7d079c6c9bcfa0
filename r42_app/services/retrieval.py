"""kb_search and build_kb_context for a tenant, over passages: the lexical index, embeddings and exact search.

The lexical side (BM25 candidates, TF-IDF context, core/retrieval.py) is always there. The semantic side is
the embedding model plus the tenant's passage vectors: read from the vector store once, kept in memory
(exact cosine over every passage: ~1 ms per 10,000 passages, and never the approximations of an HNSW graph),
refreshed as passages change, and evicted with the least recently used tenants when the memory budget is
spent. Without it (no model, no store, or a tenant whose passages are not embedded yet, e.g. right after a
change of model) every mode falls back to `fts`, says so in `mode_used`, and logs the reason once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np

from r42_app.core.conversation import (
    ACROSS_OWN_WORDS,
    ADAPT,
    GRAPH_BOOST,
    MAX_WEIGHT,
    Understood,
    fuse,
    near_in_graph,
    own_words,
    understand,
)
from r42_app.core.identity import Tenant
from r42_app.core.relevance import FOLLOW_UP_ACROSS, Relevance
from r42_app.core.retrieval import (
    LEXICAL_CANDIDATES,
    LEXICAL_SECOND,
    KBContext,
    Snippet,
    TenantIndex,
    asks_across,
    build_kb_context_from_index,
    clean_query,
    make_snippet,
    passage_key,
    passages_markers,
    snippet_passages,
)
from r42_app.core.text import tokenize, words
from r42_app.services.adapters.embeddings import Embedder, EmbeddingUnavailable, QueryBatcher
from r42_app.services.adapters.vector_store import TenantLeak, VectorStore, VectorStoreUnavailable
from r42_app.services.store.kb_store import KBFingerprint, KBStore

log = logging.getLogger(__name__)

MODES = ("fts", "semantic", "hybrid")
# Hybrid score of a passage among the passages of the candidate topics (the lexical top LEXICAL_CANDIDATES,
# and, when the embeddings lead, the semantic top SEMANTIC_CANDIDATES):
#   (1 - w) * lexical (BM25 / best BM25) + w * semantic (cosine, min-max over the candidates);
# a topic scores as its best passage. w grows with how little of the query the KB's words cover (an English
# question on a Dutch KB is answered by the embeddings), from a base set by measurement (docs/BENCHMARKS.md):
# with the multilingual model one base for every KB (0.7 to 0.8 gave the same figures on the Dutch and English
# sets); with an English-only model (R42_EMBED_MODEL=minilm) the base depends on how English the KB reads.
SEMANTIC_WEIGHT_MULTILINGUAL = 0.75
SEMANTIC_WEIGHT_MIN = 0.2
SEMANTIC_WEIGHT_ENGLISH = 0.75
SEMANTIC_WEIGHT_MAX = 1.0
COVERAGE_THRESHOLD = 0.5
SEMANTIC_CANDIDATES = 20
NEIGHBOURS_FROM = 0.5  # the semantic weight from which the semantic top joins the candidates
MAX_TOP_K = 50
CONVERSATION_POOL = 20  # topics of each of a follow-up's two rankings that take part in their fusion
SNIPPET_PASSAGES = 3  # a snippet carries a topic's best passages: up to this many ...
SNIPPET_SECOND_SHARE = 0.6  # ... the later ones only when they score at least this share of the best
READY_SHARE = 0.9  # semantic search runs once this share of a tenant's passages has a vector
# How long a checked index is trusted before PocketBase is asked again whether the KB changed:
# an edit is searchable within this time (the spec asks for within a second).
FRESHNESS_S = 0.5
WARM_MARKERS_S = 3.0  # a worker's warm-up reads at most this long of a tenant's passages' injection markers
MAX_CACHED_INDEXES = 64  # tenants whose lexical index is kept in memory (least recently used go first) ...
INDEX_BYTES_PER_PASSAGE = 4000  # ... within a budget: a lexical index takes ~3.8 KB per passage (377 MB at 100k)
INDEX_CACHE_BYTES = 2 * 1024 * 1024 * 1024
VECTOR_CACHE_BYTES = 1024 * 1024 * 1024  # R42_VECTOR_CACHE_MB: passage vectors kept in memory, all tenants
# A tenant with more live passages than this (R42_VECTOR_ENGINE_PASSAGES) is searched by the vector engine (Chroma's
# own query, on the Chroma server) instead of in the worker's memory; never more than the budget holds either.
VECTOR_ENGINE_PASSAGES = 100_000
BYTES_PER_VECTOR = 384 * 4  # e5-small's 384 float32s: what the budget's passage limit is worked out with
ENGINE_NEIGHBOURS = 200  # passages the engine returns for one question (its graph searches at least this wide)
# A tenant bigger than this that no one asked yet in this worker gets its first answers from the engine while its
# vectors load into memory in the background (reading 50,000 vectors from Chroma takes ~8 s: bench vector-engine).
COLD_ENGINE_PASSAGES = 5_000
ENGINE_COUNT_S = 60.0  # how long the engine's count of a tenant's vectors (is it indexed yet?) is trusted


class UnknownTenant(LookupError):
    pass


@dataclass
class Grounding:
    """What a chat turn is grounded on: its question as understood in the conversation, the KB context block for
    the prompt, and the search whose hits are the turn's sources (`Retriever.ground`)."""

    understood: Understood
    context: KBContext
    result: SearchResult


@dataclass
class SearchHit:
    slug: str
    label: str
    type: str
    score: float
    text: str
    anchor: str = ""  # the best passage's anchor
    passages: list[int] = field(default_factory=list)  # indexes into the TenantIndex's passages, best first


@dataclass
class SearchResult:
    mode: str
    mode_used: str
    hits: list[SearchHit] = field(default_factory=list)
    kb_hash: str = ""
    relevance: Relevance = field(default_factory=Relevance)  # whether the KB has anything on the query

    def snippets(self, index: TenantIndex, start: int = 1) -> list[Snippet]:
        """Prompt snippets numbered [ref:start].. with injection markers detected; a passage of a document's page
        says the page in its label ("Handboek, p. 5")."""
        out = []
        for n, hit in enumerate(self.hits, start=start):
            topic = index.topics[index.by_slug[hit.slug]]
            best = index.passages[hit.passages[0]] if hit.passages else None
            markers = passages_markers(index, topic, hit.passages) if hit.passages else None
            out.append(make_snippet(n, topic, hit.text, hit.score, hit.anchor,
                                    best.page if best else 0, best.last_page if best else 0, markers))
        return out


def semantic_weight(coverage: float, english: float = 0.0, multilingual: bool = True) -> float:
    """The semantic share of the hybrid score for a query with this lexical coverage, on a KB this English."""
    base = SEMANTIC_WEIGHT_MULTILINGUAL if multilingual else \
        SEMANTIC_WEIGHT_MIN + (SEMANTIC_WEIGHT_ENGLISH - SEMANTIC_WEIGHT_MIN) * english
    shortfall = max(0.0, (COVERAGE_THRESHOLD - coverage) / COVERAGE_THRESHOLD)
    return base + (SEMANTIC_WEIGHT_MAX - base) * shortfall


def _live(index: TenantIndex) -> int:
    return len(index.passages) - (int(index.dead_passages.sum()) if index.dead_passages is not None else 0)


def _minmax(values: np.ndarray) -> np.ndarray:
    if values.size == 0:
        return values
    lo, hi = float(values.min()), float(values.max())
    return np.ones_like(values) if hi - lo < 1e-9 else (values - lo) / (hi - lo)


class CachedIndex(NamedTuple):
    """A tenant's lexical index in a worker, and the knowledge graph's fingerprint it was built from."""

    fingerprint: KBFingerprint
    kb_index: TenantIndex  # (not `index`: a tuple's own method)


@dataclass
class TenantVectors:
    """A tenant's passage vectors in memory, and which passages of its current index they cover."""

    rows: dict[str, int] = field(default_factory=dict)
    matrix: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    index_hash: str = ""
    passage_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    missing: list[str] = field(default_factory=list)  # keys of the live passages without a vector
    missing_at: list[int] = field(default_factory=list)  # and their indexes in the index's passages
    dead: np.ndarray | None = None
    live: int = 0
    lineage: str = ""
    aligned_to: tuple = ()
    _buffer: np.ndarray | None = None
    _keys: list[str] = field(default_factory=list)
    fetched_at: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def nbytes(self) -> int:
        return int(self._buffer.nbytes if self._buffer is not None else self.matrix.nbytes)

    def ready(self) -> bool:
        n = self.live
        return n > 0 and (n - len(self.missing)) >= READY_SHARE * n

    def add(self, keys: list[str], vectors: np.ndarray) -> None:
        fresh = [(k, v) for k, v in zip(keys, vectors) if k not in self.rows]
        if not fresh:
            return
        start = len(self.rows)
        block = np.asarray([v for _, v in fresh], dtype=np.float32)
        end = start + len(block)
        if self._buffer is None or end > len(self._buffer) or self._buffer.shape[1] != block.shape[1]:
            # grow by half again (an edit appends one vector: copying 154 MB per edit at 100k would not do)
            grown = np.empty((max(end, int(start * 1.5) + 64), block.shape[1]), dtype=np.float32)
            if start:
                grown[:start] = self.matrix
            self._buffer = grown
        self._buffer[start:end] = block
        self.matrix = self._buffer[:end]  # a view: readers holding the old view are undisturbed
        for offset, (key, _) in enumerate(fresh):
            self.rows[key] = start + offset
        if self.missing:
            self._map(self.missing_at)

    def _map(self, at: list[int]) -> None:
        """Look the passages `at` up again (vectors may have arrived); keeps `missing` those still without."""
        still = []
        for p, key in zip(at, self.keys_at(at)):
            row = self.rows.get(key, -1)
            self.passage_rows[p] = row
            if row < 0:
                still.append(p)
        self.missing_at = still
        self.missing = self.keys_at(still)

    def keys_at(self, at: list[int]) -> list[str]:
        return [self._keys[p] for p in at]

    def align(self, index: TenantIndex) -> list[str]:
        """Map the index's passages to rows; the live ones without a vector are `missing`. An index derived from
        the one last aligned (same lineage) costs only its new passages. Returns the keys newly missing."""
        if index.lineage == self.lineage and len(self.passage_rows) <= len(index.passages):
            start = len(self.passage_rows)
        else:
            start, self._keys, self.passage_rows, self.missing_at = 0, [], np.zeros(0, dtype=np.int64), []
        new_keys = [passage_key(p.slug, p.anchor) for p in index.passages[start:]]
        self._keys = self._keys + new_keys
        self.passage_rows = np.concatenate([self.passage_rows, np.fromiter(
            (self.rows.get(k, -1) for k in new_keys), dtype=np.int64, count=len(new_keys))])
        dead = index.dead_passages
        fresh = [p for p in range(start, len(index.passages)) if self.passage_rows[p] < 0]
        self.missing_at = [p for p in self.missing_at if dead is None or not dead[p]] + fresh
        self.missing = self.keys_at(self.missing_at)
        self.dead = dead
        self.live = len(index.passages) - (int(dead.sum()) if dead is not None else 0)
        self.lineage = index.lineage
        self.index_hash = index.hash
        self.aligned_to = index.aligned_key
        return self.keys_at(fresh)

    def similarities(self, vector: np.ndarray) -> np.ndarray:
        """Cosine of every passage of the aligned index with `vector`; NaN where a passage has no vector or is
        an old version of an edited topic."""
        out = np.full(len(self.passage_rows), np.nan, dtype=np.float32)
        if self.matrix.size:
            sims = self.matrix @ np.asarray(vector, dtype=np.float32)
            have = self.passage_rows >= 0
            if self.dead is not None:
                have &= ~self.dead
            out[have] = sims[self.passage_rows[have]]
        return out


class Retriever:
    """Per-process retrieval service; indexes and vectors are cached per tenant until its KB changes."""

    def __init__(self, kb: KBStore, vectors: VectorStore | None, embedder: Embedder | None,
                 cache_bytes: int = VECTOR_CACHE_BYTES, max_indexes: int = MAX_CACHED_INDEXES,
                 clock: Callable[[], float] = time.monotonic, engine_passages: int = VECTOR_ENGINE_PASSAGES,
                 cold_engine_passages: int = COLD_ENGINE_PASSAGES):
        self.kb = kb
        self.cold_engine_passages = cold_engine_passages
        self.loading: dict[str, threading.Thread] = {}  # tenants whose vectors load in the background
        # beyond this many live passages a tenant's vectors stay in the engine: in memory it would not fit the budget
        self.engine_passages = max(0, min(engine_passages, cache_bytes // BYTES_PER_VECTOR))
        self._positions: dict[str, tuple[str, dict[str, int]]] = {}  # engine tenants: index hash, key -> passage
        self._engine_counts: dict[str, tuple[float, int]] = {}  # engine tenants: (when, vectors stored)
        self.clock = clock  # seconds, for FRESHNESS_S only (a test moves it on instead of sleeping)
        self.vectors = vectors
        self.embedder = embedder
        self.cache_bytes = cache_bytes
        self._queries: QueryBatcher | None = None
        self._indexes: OrderedDict[str, CachedIndex] = OrderedDict()
        self.max_indexes = max_indexes
        self._checked_at: dict[str, float] = {}
        self._vectors: OrderedDict[str, TenantVectors] = OrderedDict()
        self._lock = threading.Lock()
        self._checks: dict[str, threading.Lock] = {}  # per tenant: one freshness check at a time
        self._checks_lock = threading.Lock()  # (not _lock: that one is held while an index loads)
        self._warned: set[str] = set()

    # -- tenants and indexes -----------------------------------------------------------

    def _check_lock(self, tenant_id: str) -> threading.Lock:
        with self._checks_lock:
            return self._checks.setdefault(tenant_id, threading.Lock())

    def tenant(self, slug: str) -> Tenant:
        tenant = self.kb.tenant(slug)
        if tenant is None:
            raise UnknownTenant(f"unknown tenant {slug!r}")
        return tenant

    def index(self, tenant: Tenant) -> TenantIndex:
        """The tenant's lexical index. Checked against PocketBase at most every FRESHNESS_S; an edit is taken in
        incrementally (only the topics updated since, TenantIndex.updated), a first use loads the whole KB."""
        cached = self._indexes.get(tenant.id)
        if cached and self.clock() - self._checked_at.get(tenant.id, 0.0) < FRESHNESS_S:
            self._indexes.move_to_end(tenant.id)
            return cached.kb_index
        # One check at a time per tenant: fifty turns that find the index stale together ask PocketBase once,
        # not fifty times (a check another turn finished while this one waited is as fresh as the rule asks).
        with self._check_lock(tenant.id):
            cached = self._indexes.get(tenant.id)
            now = self.clock()
            if cached and now - self._checked_at.get(tenant.id, 0.0) < FRESHNESS_S:
                return cached.kb_index
            fingerprint = self.kb.fingerprint(tenant)
            self._checked_at[tenant.id] = now
        if cached and cached.fingerprint == fingerprint:
            return cached.kb_index
        with self._lock:
            cached = self._indexes.get(tenant.id)
            if cached and cached.fingerprint == fingerprint:
                return cached.kb_index
            index = self._refresh(tenant, cached, fingerprint)
            self._indexes[tenant.id] = CachedIndex(fingerprint, index)
            self._indexes.move_to_end(tenant.id)
            while len(self._indexes) > 1 and (len(self._indexes) > self.max_indexes or sum(
                    len(c.kb_index.passages) for c in self._indexes.values()) * INDEX_BYTES_PER_PASSAGE
                                              > INDEX_CACHE_BYTES):
                # cold tenants go (their vectors too)
                gone, _ = self._indexes.popitem(last=False)
                self._vectors.pop(gone, None)
                self._checked_at.pop(gone, None)
            return index

    def _refresh(self, tenant: Tenant, cached: CachedIndex | None, fingerprint: KBFingerprint) -> TenantIndex:
        if cached is not None and cached.fingerprint.topics_updated:
            old, index = cached
            changed = self.kb.topics_updated_since(tenant, old.topics_updated)
            new = sum(1 for t in changed if t.slug not in index.by_slug)
            deleted: set[str] = set()
            if fingerprint.topics != old.topics + new:  # some topic is gone: find which (slugs only)
                deleted = set(index.by_slug) - self.kb.topic_slugs(tenant)
            relations = None
            if (fingerprint.relations, fingerprint.relations_updated) != (old.relations, old.relations_updated):
                relations = self.kb.relations(tenant)
            return index.updated(changed, deleted, relations)
        kb = self.kb.load(tenant)
        index = TenantIndex.build(kb.topics, kb.relations)
        return cached.kb_index if cached and cached.kb_index.hash == index.hash else index

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

    def tenant_vectors(self, tenant: Tenant, index: TenantIndex) -> TenantVectors | None:
        """The tenant's passage vectors aligned with `index`: loaded on first use, new passages fetched as the
        indexer stores them, None when the store cannot be read (or there is none)."""
        store = self.vectors
        if store is None:
            return None
        with self._lock:
            held = self._vectors.get(tenant.id)
            if held is None:
                held = self._vectors[tenant.id] = TenantVectors()
            self._vectors.move_to_end(tenant.id)
        try:
            with held.lock:
                first = held.index_hash == "" and not held.rows
                if first:
                    stored = store.vectors(tenant.id)
                    held.add(stored.keys, stored.vectors)
                    held.fetched_at = self.clock()
                fresh: list[str] = []
                if held.aligned_to != index.aligned_key:
                    fresh = held.align(index)
                    if len(held.rows) > 2 * max(1, held.live) + 1000:  # mostly stale: start over
                        held.rows, held.matrix, held._buffer = {}, np.zeros((0, 0), dtype=np.float32), None
                        stored = store.vectors(tenant.id)
                        held.add(stored.keys, stored.vectors)
                        held.lineage = ""
                        fresh = held.align(index)
                # Passages new to this index are looked up at once (an edit is searchable as soon as the indexer
                # stored it); the ones still missing after that, at most every FRESHNESS_S.
                if fresh and not first:
                    stored = store.vectors(tenant.id, fresh)
                    if stored.keys:
                        held.add(stored.keys, stored.vectors)
                elif held.missing and self.clock() - held.fetched_at >= FRESHNESS_S:  # stored since?
                    stored = store.vectors(tenant.id, held.missing)
                    held.fetched_at = self.clock()
                    if stored.keys:
                        held.add(stored.keys, stored.vectors)
        except (VectorStoreUnavailable, TenantLeak) as exc:
            self._warn_once("chroma", f"vector store unavailable, falling back to fts: {exc}")
            with self._lock:
                self._vectors.pop(tenant.id, None)
            return None
        self._evict()
        return held

    def _evict(self) -> None:
        """Drop the least recently used tenants' vectors while the cache is over its budget."""
        with self._lock:
            total = sum(v.nbytes for v in self._vectors.values())
            while total > self.cache_bytes and len(self._vectors) > 1:
                _tenant, dropped = self._vectors.popitem(last=False)
                total -= dropped.nbytes

    def by_engine(self, index: TenantIndex) -> bool:
        """Whether this tenant is searched by the vector engine: more live passages than a worker holds."""
        return self.vectors is not None and _live(index) > self.engine_passages

    def _position_of(self, tenant: Tenant, index: TenantIndex) -> dict[str, int]:
        """Passage key -> its place in `index` (built once per version of the index)."""
        held = self._positions.get(tenant.id)
        if held is None or held[0] != index.hash:
            held = (index.hash, {passage_key(p.slug, p.anchor): i for i, p in enumerate(index.passages)})
            self._positions[tenant.id] = held
        return held[1]

    def _engine_count(self, tenant: Tenant) -> int:
        assert self.vectors is not None
        at, n = self._engine_counts.get(tenant.id, (-ENGINE_COUNT_S, 0))
        if self.clock() - at >= ENGINE_COUNT_S:
            n = self.vectors.count(tenant.id)
            self._engine_counts[tenant.id] = (self.clock(), n)
        return n

    def _engine_similarities(self, tenant: Tenant, index: TenantIndex, vector: np.ndarray,
                             lexical: np.ndarray) -> np.ndarray | None:
        """Cosines from the vector engine for a tenant too big for memory: the engine's ENGINE_NEIGHBOURS nearest
        passages, and, read exactly, the passages of the topics the words point at (hybrid fuses those whatever the
        engine's graph found). NaN elsewhere: a passage neither near nor named counts as not similar."""
        assert self.vectors is not None
        live = _live(index)
        try:
            if self._engine_count(tenant) < READY_SHARE * live:
                self._warn_once(f"empty:{tenant.id}", f"the semantic index of tenant {tenant.slug} covers fewer than "
                                f"{READY_SHARE:.0%} of its {live} passages; using fts until the indexer is done")
                return None
            where = self._position_of(tenant, index)
            out = np.full(len(index.passages), np.nan, dtype=np.float32)
            for key, cosine in self.vectors.nearest(tenant.id, vector, ENGINE_NEIGHBOURS):
                at = where.get(key)
                if at is not None:
                    out[at] = cosine
            lex_topics = index.topic_scores(lexical, LEXICAL_SECOND)
            named = [int(t) for t in np.argsort(-lex_topics, kind="stable")[:LEXICAL_CANDIDATES] if lex_topics[t] > 0]
            rows = [r for t in named for r in index.passage_range(t) if np.isnan(out[r])]
            keys = [passage_key(index.passages[r].slug, index.passages[r].anchor) for r in rows]
            stored = self.vectors.vectors(tenant.id, keys) if keys else None
            if stored is not None and stored.keys:
                exact = dict(zip(stored.keys, stored.vectors @ np.asarray(vector, dtype=np.float32), strict=True))
                for r, key in zip(rows, keys, strict=True):
                    if key in exact:
                        out[r] = exact[key]
        except (VectorStoreUnavailable, TenantLeak) as exc:
            self._warn_once("chroma", f"vector store unavailable, falling back to fts: {exc}")
            return None
        if index.dead_passages is not None:
            out[index.dead_passages] = np.nan
        return out if np.isfinite(out).any() else None

    def _loaded(self, tenant: Tenant) -> bool:
        held = self._vectors.get(tenant.id)
        return held is not None and held.index_hash != ""

    def _load_in_background(self, tenant: Tenant, index: TenantIndex) -> None:
        """Start loading a tenant's vectors into memory in a thread of its own, once."""
        def load() -> None:
            try:
                self.tenant_vectors(tenant, index)
            finally:
                with self._lock:
                    self.loading.pop(tenant.id, None)

        with self._lock:
            if tenant.id in self.loading:
                return
            self.loading[tenant.id] = thread = threading.Thread(target=load, name=f"r42-vectors-{tenant.slug}",
                                                                daemon=True)
        thread.start()

    def _similarities(self, tenant: Tenant, index: TenantIndex, vector: np.ndarray,
                      lexical: np.ndarray) -> np.ndarray | None:
        if self.by_engine(index):
            return self._engine_similarities(tenant, index, vector, lexical)
        if self.vectors is not None and _live(index) > self.cold_engine_passages and not self._loaded(tenant):
            # a cold tenant: the engine answers now, and memory takes over once the vectors are in
            self._load_in_background(tenant, index)
            sims = self._engine_similarities(tenant, index, vector, lexical)
            if sims is not None:
                return sims
        held = self.tenant_vectors(tenant, index)
        if held is None:
            return None
        if not held.ready():
            self._warn_once(f"empty:{tenant.id}", f"the semantic index of tenant {tenant.slug} covers "
                            f"{held.live - len(held.missing)} of {held.live} passages; "
                            f"using fts until the indexer is done (`r42 doctor` shows progress; "
                            f"`r42 chatbot rag-backfill --tenant {tenant.slug} --now` rebuilds it)")
            return None
        return held.similarities(vector)

    # -- public API ---------------------------------------------------------------------

    def kb_search(self, tenant: Tenant, query: str, mode: str = "hybrid", top_k: int = 5) -> SearchResult:
        """Top-k topics of `tenant` for `query`, each with its best passages. Modes: fts (BM25 over passages
        with the compound fallback), semantic (exact cosine over passage vectors) and hybrid (both, fused)."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}")
        top_k = max(1, min(int(top_k), MAX_TOP_K))
        index = self.index(tenant)
        query = clean_query(query)
        result = SearchResult(mode=mode, mode_used="fts", kb_hash=index.hash)
        if not tokenize(query):  # empty, whitespace, only stop words, punctuation or emoji
            return result
        lexical = index.passage_scores(query)
        vector = self._embed_query(query) if mode != "fts" and index.topics else None
        sims = self._similarities(tenant, index, vector, lexical) if vector is not None else None

        if sims is not None and mode == "semantic":
            result.mode_used = "semantic"
            scores = np.nan_to_num(sims, nan=-1.0)
            hits = self._rank(index, scores, np.flatnonzero(np.isfinite(sims)), top_k, floor=-1.0)
        elif sims is not None and mode == "hybrid":
            result.mode_used = "hybrid"
            hits = self._hybrid(index, query, lexical, sims, top_k)
        else:
            hits = self._rank(index, lexical, np.flatnonzero(lexical > 0), top_k, second=LEXICAL_SECOND)
        result.hits = self._named_first(index, query, hits, lexical, top_k)
        result.relevance = self._relevance(index, query, lexical, sims)
        return result

    def _relevance(self, index: TenantIndex, query: str, lexical: np.ndarray, sims: np.ndarray | None) -> Relevance:
        """The raw signals of core/relevance.py; the cosine only for the model its thresholds were measured on."""
        semantic = None
        if sims is not None and getattr(self.embedder, "multilingual", False) and np.isfinite(sims).any():
            semantic = float(np.nanmax(sims))
        return Relevance(named=bool(index.named(query)), lexical=float(lexical.max()) if lexical.size else 0.0,
                         coverage=index.coverage(query), semantic=semantic, across=asks_across(query, index.english))

    def _hybrid(self, index: TenantIndex, query: str, lexical: np.ndarray, sims: np.ndarray,
                top_k: int) -> list[SearchHit]:
        w = semantic_weight(index.coverage(query), index.english, getattr(self.embedder, "multilingual", False))
        lex_topics = index.topic_scores(lexical, LEXICAL_SECOND)
        candidates = [h for h in np.argsort(-lex_topics, kind="stable")[:LEXICAL_CANDIDATES] if lex_topics[h] > 0]
        if w >= NEIGHBOURS_FROM:  # the embeddings lead: their top joins the candidates
            sem_topics = index.topic_scores(np.nan_to_num(sims, nan=-1.0))
            candidates += list(np.argsort(-sem_topics, kind="stable")[:SEMANTIC_CANDIDATES])
        candidates = [c for c in dict.fromkeys(int(c) for c in candidates) if index.is_alive(c)]
        if not candidates:
            return []
        rows = np.concatenate([np.arange(index.starts[i], index.starts[i + 1]) for i in candidates])
        lex = lexical[rows]
        lex_norm = lex / lex.max() if lex.size and lex.max() > 0 else lex
        sem = sims[rows]
        known = np.isfinite(sem)
        sem_norm = np.zeros_like(lex_norm)
        if known.any():
            sem_norm[known] = _minmax(sem[known])
        fused = np.full(len(index.passages), -1.0)
        fused[rows] = (1 - w) * lex_norm + w * sem_norm
        return self._rank(index, fused, rows, top_k, floor=-1.0)

    def _rank(self, index: TenantIndex, scores: np.ndarray, rows: np.ndarray, top_k: int,
              floor: float = 0.0, second: float = 0.0) -> list[SearchHit]:
        """Topics by their best passage among `rows` (scores above `floor`), each with its best passages."""
        if len(rows) == 0:
            return []
        masked = np.full(len(index.passages), floor)
        masked[rows] = scores[rows]
        topic_scores = index.topic_scores(masked, second)
        order = [int(i) for i in np.argsort(-topic_scores, kind="stable")[:top_k] if topic_scores[i] > floor]
        return [self._hit(index, i, float(topic_scores[i]), masked, floor) for i in order]

    def _hit(self, index: TenantIndex, i: int, score: float, passage_scores: np.ndarray,
             floor: float = 0.0) -> SearchHit:
        topic = index.topics[i]
        span = index.passage_range(i)
        ranked = sorted((p for p in span if passage_scores[p] > floor), key=lambda p: (-passage_scores[p], p))
        ranked = ranked or [span.start]
        best = passage_scores[ranked[0]]
        chosen = [ranked[0]] + [p for p in ranked[1:SNIPPET_PASSAGES]
                                if best > 0 and passage_scores[p] >= SNIPPET_SECOND_SHARE * best]
        # A snippet never mixes a suspect passage with clean ones: the model sees which passage holds the
        # instruction-like text, not a whole article flagged for one paragraph (the best passage decides).
        suspect = bool(index.passage_markers(chosen[0]))
        chosen = [p for p in chosen if bool(index.passage_markers(p)) == suspect]
        return SearchHit(topic.slug, topic.label, topic.type, score, snippet_passages(index, chosen),
                         index.passages[chosen[0]].anchor, chosen)

    def _named_first(self, index: TenantIndex, query: str, hits: list[SearchHit], lexical: np.ndarray,
                     top_k: int) -> list[SearchHit]:
        """A topic the query names by its exact label or id comes first, in every mode (TenantIndex.named)."""
        named = index.named(query)
        if not named:
            return hits
        top = hits[0].score if hits else 1.0
        by_slug = {h.slug: h for h in hits}
        first = []
        for i in named:
            hit = by_slug.pop(index.topics[i].slug, None) or self._hit(index, i, top, lexical)
            hit.score = max(hit.score, top)
            first.append(hit)
        return (first + [h for h in hits if h.slug in by_slug])[:top_k]

    def warm_markers(self, tenant: Tenant, budget_s: float = WARM_MARKERS_S) -> int:
        """Read the injection markers of the tenant's passages (and topic cards) into its index now, so that the
        first questions do not (~0.2-1 ms a passage: the first chat after a start paid ~30 ms for them). Stops
        after `budget_s`; the rest are read when a question first reaches them. Returns how many were read."""
        index = self.index(tenant)
        deadline = time.monotonic() + budget_s
        for i in range(len(index.topics)):
            index.card_markers(i)
        for p in range(len(index.passages)):
            if time.monotonic() > deadline:
                return p
            index.passage_markers(p)
        return len(index.passages)

    def understand(self, tenant: Tenant, questions: list[str], mode: str = "hybrid",
                   earlier_topic: bool = False) -> Understood:
        """The last of the user's `questions` (oldest first) as understood in its conversation (core/conversation.py):
        a topic named by its label is read from the tenant's index. `earlier_topic`: also search the earlier turn's
        first source (in the turn's `mode`) when the last question is fused with its context: only the benchmark's
        graph variant reads it (`about_slug`), a turn does not pay that search."""
        index = self.index(tenant)
        first: list[str] = []

        def about(earlier: Understood) -> str:  # what the earlier turn's first source was
            hits = self.search_in_conversation(tenant, earlier, mode, 1).hits
            first[:] = [hits[0].slug] if hits else []
            return hits[0].label if hits else ""

        understood = understand(questions, lambda text: bool(index.named(text)), about if earlier_topic else None)
        return replace(understood, about_slug=first[0]) if first else understood

    def _carries(self, tenant: Tenant, understood: Understood, alone: Relevance) -> bool:
        """Whether a follow-up's own words may rest on the earlier topic's grounding: it has words, and the ones of
        its own (pointing words aside) occur in the KB ("Hoe lang duurt dat?", "Waarom?"), unlike a new subject the
        KB knows nothing of ("En wat is de hoofdstad van Frankrijk?", "👍"). Asked in the KB's other language
        (`alone`: the question's own search), its words cannot be the KB's: a question that leans on the one before,
        with at most ACROSS_OWN_WORDS of its own and alone within FOLLOW_UP_ACROSS of a passage in meaning, rests on
        it ("Who pays for it?"); a short one far from every passage does not ("And the weather?"), nor a longer one
        ("And will it rain in Amsterdam tomorrow?"). (The benchmark patches ACROSS_OWN_WORDS here, where it is read.)"""
        question = understood.question
        if not words(question):
            return False
        own = own_words(question)
        if not own or self.index(tenant).coverage(" ".join(own)) >= COVERAGE_THRESHOLD:
            return True
        return (alone.across and understood.leans and len(own) <= ACROSS_OWN_WORDS
                and alone.semantic is not None and alone.semantic >= FOLLOW_UP_ACROSS)

    def search_in_conversation(self, tenant: Tenant, understood: Understood, mode: str = "hybrid",
                               top_k: int = 5, weight: float | None = None,
                               graph: float | None = None, adapt: float | None = None) -> SearchResult:
        """kb_search for a question in its conversation: a question that leans on earlier ones is searched alone
        and joined to them, the two rankings fused by how much it leans (core/conversation.py `fuse`); each topic
        keeps the passages of the search that gave it the most. Whether the KB has anything on it is read from the
        side that weighs most, but from the question alone when its own words are not the KB's (`_carries`). A
        question that stands on its own is one plain kb_search. `weight` (the share of the
        search in context) is the understood question's own unless given (the benchmark's fixed alternatives)."""
        if understood.rewritten:  # the model's standalone rewrite (chat/rewrite.py) is searched as a first question
            return self.kb_search(tenant, understood.rewritten, mode, top_k)
        if not understood.fuses:
            return self.kb_search(tenant, understood.question, mode, top_k)
        top_k = max(1, min(int(top_k), MAX_TOP_K))
        pool = max(top_k, CONVERSATION_POOL)
        alone = self.kb_search(tenant, understood.question, mode, pool)
        joined = self.kb_search(tenant, understood.in_context, mode, pool)
        weight = understood.weight if weight is None else weight
        adapt = ADAPT if adapt is None else adapt
        if adapt > 0 and understood.fuses:  # its own words the KB does not know: lean on the context more
            weight += adapt * max(0.0, MAX_WEIGHT - weight) * (1.0 - min(1.0, alone.relevance.coverage))
        best: dict[str, tuple[float, SearchHit]] = {}  # per topic: its larger share, and that search's hit
        for result, share in ((alone, 1.0 - weight), (joined, weight)):
            top = max((h.score for h in result.hits), default=0.0)
            for h in result.hits:
                part = share * max(0.0, h.score) / top if top > 0 else 0.0
                if h.slug not in best or part > best[h.slug][0]:
                    best[h.slug] = (part, h)
        ranked = fuse([(h.slug, h.score) for h in alone.hits], [(h.slug, h.score) for h in joined.hits], weight)
        boost = GRAPH_BOOST if graph is None else graph
        if understood.about_slug and boost > 0:  # (0 in the app: a walk over the relations only when measured)
            about, relations = understood.about_slug, self.index(tenant).relations
            near = {about} | {r.target for r in relations if r.source == about} | \
                {r.source for r in relations if r.target == about}
            ranked = near_in_graph(ranked, near, weight, boost)
        lead = joined if weight >= 0.5 else alone
        relevance = lead.relevance if lead is alone or self._carries(tenant, understood, alone.relevance) \
            else alone.relevance
        out = SearchResult(mode=mode, mode_used=lead.mode_used, kb_hash=lead.kb_hash, relevance=relevance)
        for slug, score in ranked[:top_k]:
            h = best[slug][1]
            out.hits.append(SearchHit(h.slug, h.label, h.type, score, h.text, h.anchor, h.passages))
        return out

    def ground(self, tenant: Tenant, questions: list[str], mode: str = "hybrid", top_k: int = 5,
               rewritten: str = "") -> Grounding:
        """A turn's grounding, for the chat (window and API) and `r42 search|context --history` alike: the last of
        the user's `questions` (oldest first) understood in its conversation, the KB context for it, its sources.
        `rewritten`: the model's standalone rewrite of the last question (chat/rewrite.py), which is then searched."""
        understood = self.understand(tenant, questions, mode)
        if rewritten:
            understood = replace(understood, rewritten=rewritten)
        return Grounding(understood, self.build_kb_context(tenant, understood.grounding),
                         self.search_in_conversation(tenant, understood, mode, top_k))

    def build_kb_context(self, tenant: Tenant, message: str) -> KBContext:
        """The KB context block for the system prompt (see core.retrieval.build_kb_context_from_index)."""
        return build_kb_context_from_index(self.index(tenant), message, tenant.name)

    def coverage(self, tenant: Tenant) -> tuple[int, int]:
        """(passages with a vector, passages) of the tenant's index, for `r42 doctor`."""
        index = self.index(tenant)
        n = _live(index)
        if self.by_engine(index):  # not loaded into memory to be counted
            assert self.vectors is not None
            try:
                stored = self.vectors.keys(tenant.id)
            except VectorStoreUnavailable:
                return (0, n)
            dead = index.dead_passages
            have = sum(1 for i, p in enumerate(index.passages)
                       if (dead is None or not dead[i]) and passage_key(p.slug, p.anchor) in stored)
            return (have, n)
        held = self.tenant_vectors(tenant, index)
        return (0 if held is None else n - len(held.missing), n)
