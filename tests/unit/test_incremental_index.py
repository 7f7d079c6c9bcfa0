"""An edit goes into a tenant's index without rebuilding it (TenantIndex.updated): what a search then finds is
what a rebuilt index finds, readers holding the old index see the old KB, and a large delta rebuilds."""

import numpy as np

from r42_app.core import retrieval
from r42_app.core.kb import Relation, Topic
from r42_app.core.retrieval import TenantIndex, build_kb_context_from_index, kb_hash


def topic(slug, label, content, description="Een onderwerp."):
    return Topic(slug, label, "concept", description, content)


def base_topics():
    return [
        topic("partnerpensioen", "Partnerpensioen", "Na overlijden krijgt de partner een pensioen."),
        topic("waardeoverdracht", "Waardeoverdracht", "Je neemt je opgebouwde pensioen mee naar een nieuwe werkgever."),
        topic("aow", "AOW", "Iedereen die in Nederland woont bouwt AOW op."),
    ] + [topic(f"extra-{i}", f"Extra onderwerp {i}", f"Tekst over regeling nummer {i} en premie.") for i in range(20)]


def ranked(index, query):
    return [index.topics[h.doc].slug for h in index.lexical_candidates(query, 5)]


def test_an_edited_topic_is_found_by_its_new_words_and_no_longer_by_its_old_ones():
    old = TenantIndex.build(base_topics(), [])
    edited = topic("aow", "AOW", "De AOW-leeftijd stijgt mee met de levensverwachting; het kabinet maakt die vijf jaar vooruit bekend.")
    new = old.updated([edited])
    assert ranked(new, "levensverwachting")[0] == "aow"
    assert "aow" not in ranked(new, "woont Nederland")
    assert ranked(old, "woont Nederland")[0] == "aow"  # a reader holding the old index still has the old KB
    assert ranked(old, "levensverwachting") == []
    # the same as a full rebuild of the same topics
    rebuilt = TenantIndex.build(new.live_topics(), [])
    for q in ("levensverwachting kabinet", "partner pensioen", "premie regeling 7"):
        assert ranked(new, q)[:3] == ranked(rebuilt, q)[:3]
    assert new.hash == rebuilt.hash == kb_hash(new.live_topics(), []) != old.hash


def test_a_new_topic_is_found_and_named_and_a_deleted_one_is_gone_everywhere():
    index = TenantIndex.build(base_topics(), [Relation("partnerpensioen", "aow", "related_to")])
    index = index.updated([topic("nabestaanden", "Nabestaandenpensioen", "Uitkering voor wezen en partners.")],
                          deleted=["partnerpensioen"])
    assert ranked(index, "wezen")[0] == "nabestaanden"
    assert [index.topics[i].slug for i in index.named("Wat is nabestaandenpensioen?")] == ["nabestaanden"]
    assert "partnerpensioen" not in ranked(index, "partner overlijden")
    assert index.named("Wat is partnerpensioen?") == []
    context = build_kb_context_from_index(index, "Wat is partnerpensioen bij overlijden?")
    assert "partnerpensioen" not in context.topic_slugs
    assert {t.slug for t in index.live_topics()} == {t.slug for t in base_topics()} - {"partnerpensioen"} | {"nabestaanden"}
    assert index.hash == kb_hash(index.live_topics(), index.relations)


def test_editing_the_same_topic_again_and_again_keeps_one_live_version():
    index = TenantIndex.build(base_topics(), [])
    names = ["appelboom", "kersenpit", "druivenras", "perenmoes", "pruimentaart"]
    for name in names:
        index = index.updated([topic("aow", "AOW", f"Deze versie van de uitkering heet nu {name}.")])
    assert ranked(index, "pruimentaart") == ["aow"]
    assert ranked(index, "druivenras") == []
    assert sum(1 for t in index.live_topics() if t.slug == "aow") == 1


def test_an_unchanged_topic_is_not_taken_in_again():
    index = TenantIndex.build(base_topics(), [])
    assert index.updated([base_topics()[0]]) is index


def test_a_large_delta_rebuilds_the_index(monkeypatch):
    monkeypatch.setattr(retrieval, "DELTA_MAX_PASSAGES", 3)
    index = TenantIndex.build(base_topics(), [])
    for n in range(4):
        index = index.updated([topic(f"nieuw-{n}", f"Nieuw {n}", f"Inhoud met het woord {WORDS[n]}.")])
    assert index.bm25_delta is None and index.alive is None  # rebuilt: one segment again
    assert len(index.topics) == len(base_topics()) + 4
    assert all(ranked(index, WORDS[n]) == [f"nieuw-{n}"] for n in range(4))


WORDS = ["zonnebloem", "klaproos", "madeliefje", "korenbloem"]


def test_tfidf_context_scores_of_the_delta_match_a_rebuild_closely():
    index = TenantIndex.build(base_topics(), [])
    new = index.updated([topic("aow", "AOW", "Iedereen die in Nederland woont of werkt bouwt AOW op, 2% per jaar.")])
    rebuilt = TenantIndex.build(new.live_topics(), [])
    hits_new, _ = new.context_topics("AOW opbouw Nederland", 3)
    hits_rebuilt, _ = rebuilt.context_topics("AOW opbouw Nederland", 3)
    assert new.topics[hits_new[0].doc].slug == rebuilt.topics[hits_rebuilt[0].doc].slug == "aow"
    assert np.isclose(hits_new[0].score, hits_rebuilt[0].score, rtol=0.2)
