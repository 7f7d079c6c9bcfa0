"""Chroma recovers without a restart (issue 14): concurrent first opens succeed, a deleted index falls back
to fts with a truthful `mode_used` and is rebuilt by a re-index, a corrupt one likewise once a good copy
is back, and `failed` outbox rows are retried rather than abandoned."""

import shutil
import threading
import time
from datetime import datetime, timedelta, timezone

import pytest

from r42_app.services.adapters.vector_store import VectorStore
from r42_app.services.outbox.consumer import requeue_failed
from r42_app.services.outbox.indexer import Indexer
from r42_app.services.retrieval import FRESHNESS_S, Retriever
from r42_app.services.store.kb_store import OUTBOX_UPSERT, KBStore
from r42_app.services.store.pb import pb_time

pytestmark = pytest.mark.slow  # heavy: indexes destroyed and rebuilt, each on its own Chroma (~20 s)


def test_concurrent_first_opens_of_a_fresh_directory_succeed(tmp_path):
    errors, counts = [], []

    def open_and_count():
        try:
            counts.append(VectorStore(path=tmp_path / "fresh").count("t"))
        except Exception as exc:  # the bug this guards against: 'RustBindingsAPI' object has no attribute ...
            errors.append(repr(exc))

    threads = [threading.Thread(target=open_and_count) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and counts == [0] * 10


@pytest.fixture
def own_index(admin_pb, seeded, embedder, tmp_path):
    """Tenant acme indexed into a Chroma directory of this test only."""
    kb = KBStore(admin_pb)
    vectors = VectorStore(path=tmp_path / "chroma", model_id=embedder.model_id)
    indexer = Indexer(admin_pb, kb, vectors, embedder)
    acme = kb.require_tenant("acme")
    kb.emit_reindex(acme)
    indexer.drain(tenant_id=acme.id)
    return kb, vectors, indexer, Retriever(kb, vectors, embedder), acme, tmp_path / "chroma"


def test_a_deleted_index_falls_back_to_fts_and_a_reindex_restores_hybrid(own_index, embedder):
    kb, vectors, indexer, retriever, acme, path = own_index
    assert retriever.kb_search(acme, "heftruck veiligheid", "hybrid").mode_used == "hybrid"
    shutil.rmtree(path)
    # the running process keeps searching with the vectors it holds in memory ...
    assert retriever.kb_search(acme, "heftruck veiligheid", "hybrid").mode_used == "hybrid"
    restarted = Retriever(kb, vectors, embedder)  # ... one that starts now finds no index
    for mode in ("hybrid", "semantic"):
        result = restarted.kb_search(acme, "heftruck veiligheid", mode)
        assert result.mode_used == "fts" and result.hits  # honest about the fallback, still an answer
    kb.emit_reindex(acme)
    stats = indexer.drain(tenant_id=acme.id)
    assert stats.failed_rows == 0 and stats.topics_indexed > 0 and stats.passages > 0
    time.sleep(FRESHNESS_S)  # passages still missing are looked up again at most this often (a fast drain races it)
    assert restarted.kb_search(acme, "heftruck veiligheid", "hybrid").mode_used == "hybrid"  # same process


def test_a_corrupt_index_falls_back_and_a_good_copy_is_used_again(own_index, tmp_path):
    _kb, vectors, _indexer, retriever, acme, path = own_index
    good = tmp_path / "good"
    vectors.reset()
    shutil.copytree(path, good)
    (path / "chroma.sqlite3").write_bytes(b"this is not a database" * 100)
    vectors.reset()  # as after a failed call
    fresh = Retriever(retriever.kb, vectors, retriever.embedder)  # a process that opens it now
    assert fresh.kb_search(acme, "heftruck veiligheid", "semantic").mode_used == "fts"
    shutil.rmtree(path)
    shutil.copytree(good, path)
    again = Retriever(retriever.kb, vectors, retriever.embedder)
    assert again.kb_search(acme, "heftruck veiligheid", "semantic").mode_used == "semantic"


def test_failed_rows_are_retried_and_can_be_requeued(own_index, admin_pb):
    kb, _vectors, indexer, _retriever, acme, _path = own_index
    past = pb_time(datetime.now(timezone.utc) - timedelta(minutes=1))
    future = pb_time(datetime.now(timezone.utc) + timedelta(hours=1))
    payload = {"tenant": acme.id, "tenant_slug": acme.slug, "topic": "heftruck"}
    due = admin_pb.create("outbox", {"type": OUTBOX_UPSERT, "payload": payload, "status": "failed", "attempts": 8,
                                     "available_at": past})
    waiting = admin_pb.create("outbox", {"type": OUTBOX_UPSERT, "payload": payload, "status": "failed",
                                         "attempts": 8, "available_at": future})
    indexer.drain(tenant_id=acme.id)
    assert admin_pb.get("outbox", due["id"])["status"] == "done"  # retried once its wait was over
    assert admin_pb.get("outbox", waiting["id"])["status"] == "failed"
    assert requeue_failed(admin_pb, (OUTBOX_UPSERT,)) >= 1
    assert admin_pb.get("outbox", waiting["id"])["status"] == "pending"
    indexer.drain(tenant_id=acme.id)
    assert admin_pb.get("outbox", waiting["id"])["status"] == "done"
