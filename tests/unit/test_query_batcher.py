"""Queries from many threads share model runs; a lone query is encoded at once; failures reach every waiter."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from r42_app.services.adapters.embeddings import QueryBatcher


class SlowEmbedder:
    """Stands in for the model: 30 ms per run whatever the batch size, and records each batch."""

    def __init__(self, fail: bool = False):
        self.batches: list[list[str]] = []
        self.fail = fail
        self.lock = threading.Lock()

    def encode_queries(self, texts):
        return self.encode(texts)

    def encode(self, texts):
        with self.lock:
            self.batches.append(list(texts))
        time.sleep(0.03)
        if self.fail:
            raise RuntimeError("model gone")
        return np.array([[float(len(t)), 1.0] for t in texts], dtype=np.float32)


def test_concurrent_queries_share_batches_and_each_gets_its_own_vector():
    model = SlowEmbedder()
    batcher = QueryBatcher(model)
    questions = [f"vraag {'x' * i}" for i in range(40)]
    with ThreadPoolExecutor(40) as pool:
        vectors = list(pool.map(batcher.encode, questions))
    assert [v[0] for v in vectors] == [float(len(q)) for q in questions]
    assert sorted(q for batch in model.batches for q in batch) == sorted(questions)
    assert len(model.batches) < 10, [len(b) for b in model.batches]  # 40 single runs without batching


def test_a_lone_query_is_encoded_alone_and_the_batcher_is_reusable():
    model = SlowEmbedder()
    batcher = QueryBatcher(model)
    assert batcher.encode("abc")[0] == 3.0
    assert batcher.encode("abcd")[0] == 4.0
    assert model.batches == [["abc"], ["abcd"]]


def test_a_failing_model_fails_every_waiter_and_nobody_hangs():
    batcher = QueryBatcher(SlowEmbedder(fail=True))
    with ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(batcher.encode, f"q{i}") for i in range(8)]
        for f in futures:
            with pytest.raises(RuntimeError, match="model gone"):
                f.result(timeout=5)
    with pytest.raises(RuntimeError):  # and the next call still runs (no stuck leader)
        batcher.encode("again")


def test_the_same_question_again_is_not_encoded_again_and_the_memory_is_bounded():
    model = SlowEmbedder()
    batcher = QueryBatcher(model, remember=2)
    with ThreadPoolExecutor(6) as pool:  # a client sending one question six times at once
        vectors = list(pool.map(batcher.encode, ["spam"] * 6))
    assert all(v[0] == 4.0 for v in vectors) and sum(b.count("spam") for b in model.batches) == 1
    with pytest.raises(ValueError):  # every caller shares the vector: nobody may change it
        vectors[0][0] = 9.0
    batcher.encode("a")
    batcher.encode("bb")  # "spam" is now the least recent of more than two: forgotten
    runs = len(model.batches)
    assert batcher.encode("bb")[0] == 2.0 and len(model.batches) == runs
    assert batcher.encode("spam")[0] == 4.0 and len(model.batches) == runs + 1
