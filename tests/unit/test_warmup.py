"""Warm before ready (issue 25): a worker says "warming" until it has searched once in every tenant (that loads
the embedding model, the index and the vectors), and then ready -- also when warming failed, so that R42 still
starts (the first question then loads what is missing)."""

import pytest

from r42_app.services.runtime.warmup import Warmup


class FakeRetriever:
    def __init__(self, fail=False):
        self.searched, self.fail = [], fail

    def kb_search(self, tenant, query, mode, top_k):
        if self.fail:
            raise RuntimeError("model missing")
        self.searched.append((tenant.slug, mode))

    def build_kb_context(self, tenant, message):
        return None


class FakePB:
    def all(self, collection, **kwargs):
        assert collection == "tenants"
        return [{"id": "t1", "slug": "demo", "name": "Demo"}, {"id": "t2", "slug": "acme", "name": "Acme"}]


class FakeLLM:
    def __init__(self, fail=False):
        self.warmed, self.fail = 0, fail

    async def warm(self):
        if self.fail:
            raise RuntimeError("SDK changed")
        self.warmed += 1


class FakeChat:
    def __init__(self, llm):
        self.llm = llm


class FakeServices:
    def __init__(self, retriever, llm=None):
        self.retriever, self.admin_pb = retriever, FakePB()
        self.chat = FakeChat(llm)


def test_a_worker_is_warming_until_every_tenant_was_searched_once():
    warmup, retriever = Warmup(), FakeRetriever()
    assert warmup.summary()["state"] == "warming" and not warmup.ready
    warmup.run(FakeServices(retriever))
    assert retriever.searched == [("demo", "hybrid"), ("acme", "hybrid")]
    assert warmup.ready and warmup.summary()["tenants"] == 2


def test_warming_runs_the_model_client_once_and_a_failure_there_still_searches_every_tenant():
    llm, retriever = FakeLLM(), FakeRetriever()
    Warmup().run(FakeServices(retriever, llm))
    assert llm.warmed == 1 and len(retriever.searched) == 2
    broken, retriever = FakeLLM(fail=True), FakeRetriever()
    warmup = Warmup()
    warmup.run(FakeServices(retriever, broken))  # the first question then pays for the SDK's first use
    assert warmup.ready and len(retriever.searched) == 2 and warmup.summary()["tenants"] == 2


def test_a_failed_warm_up_still_makes_the_worker_ready():
    warmup = Warmup()
    warmup.run(FakeServices(FakeRetriever(fail=True)))
    assert warmup.ready and warmup.summary()["tenants"] == 0


def test_a_warm_worker_leaves_its_mark_for_serve_to_count(tmp_path):
    import os

    from r42_app.services.runtime.supervisor import _count

    marks = tmp_path / "run" / "warm"
    assert _count(marks) == 0  # no folder yet: none warm
    Warmup().run(FakeServices(FakeRetriever()), marks)
    assert [p.name for p in marks.iterdir()] == [str(os.getpid())] and _count(marks) == 1
    Warmup().run(FakeServices(FakeRetriever(fail=True)), marks)  # a failed warm-up is ready too (same pid here)
    assert _count(marks) == 1


def test_serve_waits_for_every_worker_not_only_the_one_health_reached(tmp_path, monkeypatch):
    import httpx

    from r42_app.services.runtime import supervisor

    class Health:
        def json(self):
            return {"status": "ok"}

    class Running:
        def poll(self):
            return None

    monkeypatch.setattr(httpx, "get", lambda *a, **k: Health())
    monkeypatch.setattr(supervisor.time, "sleep", lambda s: (marks / f"w{len(list(marks.iterdir()))}").touch())
    marks = tmp_path / "warm"
    marks.mkdir()
    # health says ok from the first worker on; serve waits until two workers have left their marks
    assert supervisor._wait_warm("http://x/api/health", Running(), 30, lambda: False, marks, 2) is True
    assert supervisor._count(marks) == 2
    assert supervisor._wait_warm("http://x/api/health", Running(), 0, lambda: False, marks, 3) is False  # timed out


def test_serve_gives_each_backend_worker_one_embedding_thread_unless_told(monkeypatch):
    from r42_app.services.runtime.supervisor import _reflex_env
    from r42_app.settings import load_settings

    monkeypatch.delenv("R42_EMBED_THREADS", raising=False)
    assert _reflex_env(load_settings())["R42_EMBED_THREADS"] == "1"
    monkeypatch.setenv("R42_EMBED_THREADS", "2")  # an operator's choice is kept
    assert _reflex_env(load_settings())["R42_EMBED_THREADS"] == "2"
    assert load_settings().embed_threads == 2
    monkeypatch.setenv("R42_EMBED_THREADS", "zero")
    with pytest.raises(SystemExit, match="R42_EMBED_THREADS"):
        load_settings()
