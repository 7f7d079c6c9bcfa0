"""Issue 22: each tenant's index remembers its embedding model. After a change of model the indexer re-embeds
in the background; search says it uses fts meanwhile, `r42 doctor`'s figures show the progress, and the old
model's index is dropped once the new one is complete."""

import pytest

from r42_app.services.adapters.embeddings import make_embedder
from r42_app.services.adapters.vector_store import VectorStore
from r42_app.services.outbox.indexer import Indexer
from r42_app.services.retrieval import Retriever
from r42_app.services.store.kb_store import KBStore

pytestmark = pytest.mark.slow  # a second embedding model (MiniLM) loaded and run

TOPICS = [
    ("hooiland", "Hooiland", "De kwartelkoning roept 's nachts in het hooiland, van mei tot juli."),
    ("weide", "Weide", "Een grutto broedt in het voorjaar in natte graslanden met veel kruiden."),
    ("bos", "Bos", "In het bos zingt de merel al in februari, vaak vanaf een hoge tak."),
]


@pytest.fixture
def tenant(admin_pb, seeded):
    kb = KBStore(admin_pb)
    tenant, _ = kb.ensure_tenant("modelwissel")
    for slug, label, content in TOPICS:
        kb.create_topic(tenant, {"id": slug, "label": label, "type": "concept", "description": "Vogels.",
                                 "content": content})
    yield kb, tenant
    admin_pb.delete("tenants", tenant.id)


def test_a_new_model_re_embeds_in_the_background_with_fts_meanwhile(admin_pb, tenant, embedder, tmp_path):
    kb, tenant = tenant
    old_model = make_embedder("minilm")
    old = VectorStore(path=tmp_path / "chroma", model_id=old_model.model_id)
    Indexer(admin_pb, kb, old, old_model).drain(tenant.id)
    assert old.count(tenant.id) == len(TOPICS)

    new = VectorStore(path=tmp_path / "chroma", model_id=embedder.model_id)  # R42_EMBED_MODEL changed, restart
    indexer = Indexer(admin_pb, kb, new, embedder)
    retriever = Retriever(kb, new, embedder)
    assert indexer.ensure_current_model() >= len(TOPICS)  # every topic of every tenant without an index is queued
    res = retriever.kb_search(tenant, "Welke vogel hoor je 's nachts in het hooiland?", "hybrid", 3)
    assert res.mode_used == "fts" and res.hits[0].slug == "hooiland"  # still answers, and says how
    assert retriever.coverage(tenant) == (0, len(TOPICS))  # what `r42 doctor` reports as progress
    assert new.other_models(tenant.id)  # the old index is kept until the new one is complete

    indexer.drain(tenant.id)
    fresh = Retriever(kb, new, embedder)
    res = fresh.kb_search(tenant, "Which bird calls at night in the hay meadow?", "semantic", 3)
    assert res.mode_used == "semantic" and res.hits[0].slug == "hooiland"
    assert fresh.coverage(tenant) == (len(TOPICS), len(TOPICS))
    indexer.ensure_current_model()
    assert new.other_models(tenant.id) == []  # the old model's index is gone
    assert VectorStore(path=tmp_path / "chroma", model_id=old_model.model_id).count(tenant.id) == 0
