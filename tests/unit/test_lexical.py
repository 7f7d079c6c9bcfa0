"""Lexical retrieval: the Dutch compound fallback, TF-IDF behaviour and BM25 equal to rank_bm25."""

import random

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from r42_app.core.kb import Topic
from r42_app.core.lexical import COMPOUND_WEIGHT, BM25Index, TfidfIndex, Vocabulary, topic_terms
from r42_app.core.text import clip, fold, tokenize, words


def test_tokenizer_folds_keeps_numbers_and_joins_hyphenated_words():
    assert tokenize("Beëindiging van de AOW in 2027") == ["beeindiging", "aow", "2027"]
    assert tokenize("Premie-inning") == ["premie", "inning", "premieinning"]
    assert words("Verevening bij scheiding") == ["verevening", "bij", "scheiding"]
    assert tokenize("de het een the of") == []
    assert tokenize("🙂 !!! ...") == []
    assert fold("ne\u200bgeer") == "negeer"


@pytest.fixture
def vocab():
    return Vocabulary(["pensioenregeling", "partnerpensioen", "waardeoverdracht", "regeling", "en", "pensioen"])


def matched(vocab, term):
    inverse = {i: t for t, i in vocab.ids.items()}
    return {inverse[i]: w for i, w in vocab.expand(term)}


def test_exact_term_does_not_fall_back(vocab):
    assert matched(vocab, "pensioen") == {"pensioen": 1.0}


def test_compound_query_matches_pensioenregeling_and_partnerpensioen():
    v = Vocabulary(["pensioenregeling", "partnerpensioen", "werkgever"])
    assert matched(v, "pensioen") == {"pensioenregeling": COMPOUND_WEIGHT, "partnerpensioen": COMPOUND_WEIGHT}


def test_overdragen_matches_waardeoverdracht_through_shared_stem(vocab):
    assert "waardeoverdracht" in matched(vocab, "overdragen")


def test_longer_query_matches_contained_terms_but_not_tiny_ones(vocab):
    hits = matched(vocab, "pensioenregelingen")
    assert {"pensioenregeling", "regeling", "pensioen"} <= set(hits)
    assert "en" not in hits


def test_short_query_terms_never_fall_back(vocab):
    assert matched(vocab, "regel") == {}


def test_tfidf_ranks_label_matches_first_and_uses_fallback():
    topics = [
        Topic("partnerpensioen", "Partnerpensioen", "concept", "Uitkering aan de partner.", "Na overlijden."),
        Topic("aow", "AOW", "concept", "Basispensioen van de overheid.", "Over partnerpensioen gaat dit niet."),
        Topic("waardeoverdracht", "Waardeoverdracht", "process", "Pensioen meenemen.", "Naar een nieuwe uitvoerder."),
    ]
    index = TfidfIndex([topic_terms(t) for t in topics])
    assert [h.doc for h in index.search(tokenize("partnerpensioen"))][:2] == [0, 1]
    assert [h.doc for h in index.search(tokenize("pensioen overdragen"))][0] == 2
    assert index.search(tokenize("zzz")) == []


def test_index_over_no_documents_answers_empty():
    assert BM25Index([]).search(["x"]) == [] and TfidfIndex([]).search(["x"]) == []


def random_corpus(seed, n_docs=300, vocab_size=400):
    rng = random.Random(seed)
    words_ = [f"w{i}" for i in range(vocab_size)]
    return [[rng.choice(words_[: rng.randint(20, vocab_size)]) for _ in range(rng.randint(3, 40))]
            for _ in range(n_docs)], words_, rng


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sparse_bm25_equals_rank_bm25_on_a_random_corpus(seed):
    docs, words_, rng = random_corpus(seed)
    ours, theirs = BM25Index(docs), BM25Okapi(docs)
    for _ in range(25):
        query = [rng.choice(words_) for _ in range(rng.randint(1, 6))] + ["unknown-term"]
        np.testing.assert_allclose(ours.scores(query), theirs.get_scores(query), rtol=1e-9, atol=1e-12)


def test_clip_cuts_long_text_at_a_word_and_says_so():
    description = ("Pensioenopbouw per jaar in een middelloonregeling: (salaris - franchise) x opbouwpercentage, "
                   "en het totaal over een aantal jaren.")
    short = clip(description, 60)
    assert len(short) <= 60 and short.endswith("…")
    assert description.startswith(short[:-1]) and description[len(short) - 1] == " "  # a whole word, not a piece
    assert clip("  kort\n en  klaar ", 60) == "kort en klaar"  # short text: one line, untouched otherwise
    assert clip("x" * 100, 10) == "x" * 9 + "…"  # one long word: cut inside it, still within the limit
