"""Issue 50, item 3: a tenant too big for a worker's memory is searched by the vector engine (Chroma's own query),
not loaded; small tenants keep exact search in memory. Here the demo tenant is made "big" by a threshold below its
size, so both paths answer the same questions over the same real vectors (e5, the seed indexed through the outbox).
Recall at scale (1,000,000 vectors) is bench/bench_vector_engine.py's."""

import numpy as np

from r42_app.services.retrieval import BYTES_PER_VECTOR, Retriever

QUESTIONS = ["Wat gebeurt er met mijn pensioen als ik overlijd?", "Hoe wordt de franchise berekend?",
             "Wie betaalt de pensioenpremie?", "Wanneer krijg ik AOW?", "wat doet een actuaris",
             "Kan ik mijn pensioen meenemen naar een nieuwe werkgever?", "indexatie van opgebouwde rechten",
             "Wat krijgen de kinderen na een overlijden?"]


def test_a_tenant_over_the_threshold_is_searched_by_the_engine_and_finds_what_exact_search_finds(indexed, embedder):
    kb, vectors, _indexer, exact = indexed
    engine = Retriever(kb, vectors, embedder, engine_passages=10)  # demo has ~150 passages: "too big"
    demo = kb.require_tenant("demo")
    index = engine.index(demo)
    assert engine.by_engine(index) and not exact.by_engine(exact.index(demo))
    for mode in ("semantic", "hybrid"):
        for question in QUESTIONS:
            want = [h.slug for h in exact.kb_search(demo, question, mode=mode, top_k=3).hits]
            got = engine.kb_search(demo, question, mode=mode, top_k=3)
            assert got.mode_used == mode, (mode, question)
            assert [h.slug for h in got.hits] == want, (mode, question)
    assert engine._vectors == {}  # nothing of the tenant's vectors was loaded into this worker
    # what doctor reports: the live passages with a stored vector, the same counted either way (a fresh exact
    # retriever: the shared one may hold vectors loaded before another test of this worker changed the tenant)
    assert engine.coverage(demo) == Retriever(kb, vectors, embedder).coverage(demo)


def test_a_tenant_bigger_than_the_memory_budget_never_enters_memory(indexed, embedder):
    """Whatever R42_VECTOR_ENGINE_PASSAGES says, a tenant whose vectors would not fit R42_VECTOR_CACHE_MB goes to
    the engine: a worker's vector memory stays within its budget whatever the tenants' sizes."""
    kb, vectors, _indexer, _exact = indexed
    budget = 100 * BYTES_PER_VECTOR  # room for 100 passage vectors; demo has more, acme fewer
    retriever = Retriever(kb, vectors, embedder, cache_bytes=budget, engine_passages=1_000_000)
    demo, acme = kb.require_tenant("demo"), kb.require_tenant("acme")
    assert retriever.kb_search(demo, "Wanneer krijg ik AOW?", mode="semantic").hits
    assert retriever.kb_search(acme, "Waar zet ik mijn fiets?", mode="semantic").hits
    held = sum(v.nbytes for v in retriever._vectors.values())
    assert set(retriever._vectors) == {acme.id} and held <= budget


def test_without_the_engine_the_big_tenant_falls_back_to_words(indexed, embedder):
    """The engine down (a Chroma server that does not answer): the question is still answered, by words."""
    kb, _vectors, _indexer, _exact = indexed
    from r42_app.services.adapters.vector_store import VectorStore

    gone = VectorStore(url="http://127.0.0.1:9", model_id=embedder.model_id)  # nothing listens on port 9
    retriever = Retriever(kb, gone, embedder, engine_passages=10)
    result = retriever.kb_search(kb.require_tenant("demo"), "Wat is de franchise?", mode="hybrid")
    assert result.mode_used == "fts" and result.hits[0].slug == "franchise"
    assert np.isfinite(result.relevance.lexical)


def test_a_cold_tenant_is_answered_by_the_engine_while_its_vectors_load_then_from_memory(indexed, embedder):
    """"Cold tenants load quickly": a tenant nobody asked yet in this worker, bigger than COLD_ENGINE_PASSAGES, does
    not wait for its vectors to be read from Chroma (50,000 take ~8 s): the engine answers its first question while
    they load in the background; the questions after that are searched exactly, in memory."""
    kb, vectors, _indexer, exact = indexed
    retriever = Retriever(kb, vectors, embedder, cold_engine_passages=10)
    demo = kb.require_tenant("demo")
    question = "Wat krijgen de kinderen na een overlijden?"
    want = [h.slug for h in exact.kb_search(demo, question, mode="hybrid", top_k=3).hits]
    first = retriever.kb_search(demo, question, mode="hybrid", top_k=3)
    assert first.mode_used == "hybrid" and [h.slug for h in first.hits] == want
    loading = retriever.loading.get(demo.id)
    if loading is not None:
        loading.join(60)
    assert retriever._loaded(demo) and not retriever.loading
    calls = []
    original = vectors.nearest
    vectors.nearest = lambda *a, **kw: calls.append(a) or original(*a, **kw)
    try:
        later = retriever.kb_search(demo, question, mode="hybrid", top_k=3)
    finally:
        del vectors.nearest
    assert [h.slug for h in later.hits] == want and calls == []  # from memory now, not the engine
