"""Warm before ready (issue 25): a worker says "warming" until it has searched once in every tenant (that loads
the embedding model, the index and the vectors), and then ready -- also when warming failed, so that R42 still
starts (the first question then loads what is missing)."""

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


class FakeServices:
    def __init__(self, retriever):
        self.retriever, self.admin_pb = retriever, FakePB()


def test_a_worker_is_warming_until_every_tenant_was_searched_once():
    warmup, retriever = Warmup(), FakeRetriever()
    assert warmup.summary()["state"] == "warming" and not warmup.ready
    warmup.run(FakeServices(retriever))
    assert retriever.searched == [("demo", "hybrid"), ("acme", "hybrid")]
    assert warmup.ready and warmup.summary()["tenants"] == 2


def test_a_failed_warm_up_still_makes_the_worker_ready():
    warmup = Warmup()
    warmup.run(FakeServices(FakeRetriever(fail=True)))
    assert warmup.ready and warmup.summary()["tenants"] == 0
