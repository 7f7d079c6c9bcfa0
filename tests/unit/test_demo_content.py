"""The demo knowledge base that `r42 seed demo` loads: big enough, Dutch, and valid."""

import json
from collections import Counter

import pytest

from r42_app.core.kb import RELATION_TYPES, TOPIC_TYPES, parse_import
from r42_app.services.store.seed import SEED_DIR


@pytest.fixture(scope="module")
def demo():
    return json.loads((SEED_DIR / "demo.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", ["demo", "acme"])
def test_seed_files_pass_import_validation(name):
    plan, issues = parse_import(json.loads((SEED_DIR / f"{name}.json").read_text(encoding="utf-8")))
    assert issues == []


def test_demo_has_enough_topics_of_every_type(demo):
    counts = Counter(t["type"] for t in demo["topics"])
    assert sum(counts.values()) >= 40
    assert set(counts) == set(TOPIC_TYPES)


def test_demo_content_is_500_to_1500_chars_with_one_sentence_description(demo):
    for topic in demo["topics"]:
        assert 500 <= len(topic["content"]) <= 1500, topic["id"]
        assert topic["description"].rstrip().endswith("."), topic["id"]


def test_demo_relations_use_all_four_types(demo):
    counts = Counter(r["type"] for r in demo["relations"])
    assert sum(counts.values()) >= 50
    assert set(counts) == set(RELATION_TYPES)


def test_demo_uses_the_compounds_retrieval_relies_on(demo):
    text = " ".join(t["content"].lower() for t in demo["topics"])
    for word in ["pensioenregeling", "partnerpensioen", "waardeoverdracht", "nabestaandenpensioen", "dekkingsgraad"]:
        assert word in text
