"""The graph page's data: nodes sized by degree, pending suggestions as extra dashed parts, neighbours,
node search and the panel excerpt."""

from r42_app.core.graph import (
    MAX_SIZE,
    MIN_SIZE,
    PENDING_HEX,
    TYPE_HEX,
    build_view,
    excerpt,
    neighbours,
    search_nodes,
)
from r42_app.core.kb import Relation, Topic

TOPICS = [Topic("pensioenregeling", "Pensioenregeling", "concept", "d"),
          Topic("partnerpensioen", "Partnerpensioen", "concept", "d"),
          Topic("pensioenadministrateur", "Pensioenadministrateur", "role", "d"),
          Topic("premie-innen", "Premie innen", "process", "d"),
          Topic("eenzaam", "Eenzaam onderwerp", "concept", "d")]
RELATIONS = [Relation("partnerpensioen", "pensioenregeling", "part_of"),
             Relation("premie-innen", "pensioenadministrateur", "executed_by"),
             Relation("premie-innen", "pensioenregeling", "related_to"),
             Relation("premie-innen", "ontbreekt", "related_to")]  # a dangling relation is not drawn


def by_id(view):
    return {n.id: n for n in view.nodes}


def test_nodes_colour_by_type_and_grow_with_degree():
    view = build_view(TOPICS, RELATIONS)
    nodes = by_id(view)
    assert nodes["pensioenregeling"].color == TYPE_HEX["concept"]
    assert nodes["pensioenadministrateur"].color == TYPE_HEX["role"]
    assert nodes["premie-innen"].color == TYPE_HEX["process"]
    assert nodes["premie-innen"].degree == 2 and nodes["pensioenregeling"].degree == 2
    assert nodes["premie-innen"].val == MAX_SIZE
    assert nodes["eenzaam"].degree == 0 and nodes["eenzaam"].val == MIN_SIZE
    assert MIN_SIZE < nodes["partnerpensioen"].val < MAX_SIZE
    assert not any(n.pending for n in view.nodes)
    assert [(link.source, link.type, link.target) for link in view.links] == [
        ("partnerpensioen", "part_of", "pensioenregeling"),
        ("premie-innen", "executed_by", "pensioenadministrateur"),
        ("premie-innen", "related_to", "pensioenregeling")]


def test_pending_deltas_add_dashed_nodes_and_links_once():
    delta = {"reason": "r", "topics": [{"id": "wezenpensioen", "label": "Wezenpensioen", "type": "concept",
                                        "description": "Voor kinderen."},
                                       {"id": "pensioenregeling", "label": "Pensioenregeling", "type": "concept",
                                        "description": "bestaat al"}],
             "relations": [{"source": "wezenpensioen", "target": "pensioenregeling", "type": "part_of"},
                           {"source": "partnerpensioen", "target": "pensioenregeling", "type": "part_of"},
                           {"source": "wezenpensioen", "target": "nergens", "type": "related_to"}]}
    view = build_view(TOPICS, RELATIONS, [delta, delta])
    nodes = by_id(view)
    assert nodes["wezenpensioen"].pending and nodes["wezenpensioen"].color == PENDING_HEX
    assert not nodes["pensioenregeling"].pending  # existing topic is not drawn twice
    assert len(view.nodes) == len(TOPICS) + 1
    pending = [(link.source, link.target) for link in view.links if link.pending]
    assert pending == [("wezenpensioen", "pensioenregeling")]  # existing link and dangling link left out
    assert view.pending_count == 2


def test_malformed_pending_deltas_are_skipped_not_fatal():
    good = {"reason": "r", "topics": [{"id": "wezenpensioen", "label": "Wezenpensioen", "type": "concept",
                                       "description": "Voor kinderen."}], "relations": []}
    view = build_view(TOPICS, RELATIONS, [[1], "x", {"topics": "NOT-A-LIST"}, {"topics": [7]}, good])
    assert [n.id for n in view.nodes if n.pending] == ["wezenpensioen"]


def test_a_graph_without_relations_still_has_sizes():
    view = build_view(TOPICS[:2], [])
    assert {n.val for n in view.nodes} == {MIN_SIZE}
    assert build_view([], []).nodes == ()


def test_neighbours_both_directions_with_the_relation():
    labels = {t.slug: (t.label, t.type) for t in TOPICS}
    around = neighbours("pensioenregeling", RELATIONS, labels)
    assert [(n.slug, n.relation, n.outgoing) for n in around] == [
        ("partnerpensioen", "part_of", False), ("premie-innen", "related_to", False)]
    out = neighbours("premie-innen", RELATIONS, labels)
    assert [(n.slug, n.outgoing) for n in out] == [("pensioenadministrateur", True), ("pensioenregeling", True)]


def test_search_ranks_exact_then_prefix_then_word_then_anywhere_ignoring_accents():
    view = build_view(TOPICS + [Topic("regeling", "Regeling", "concept", "d"),
                                Topic("cafe", "Café-regeling", "concept", "d")], RELATIONS)
    hits = [n.id for n in search_nodes(view.nodes, "regeling")]
    assert hits[0] == "regeling"
    assert set(hits) == {"regeling", "pensioenregeling", "cafe"}
    assert [n.id for n in search_nodes(view.nodes, "CAFE")] == ["cafe"]
    assert [n.id for n in search_nodes(view.nodes, "innen")] == ["premie-innen"]  # word prefix
    assert search_nodes(view.nodes, "   ") == []
    assert search_nodes(view.nodes, "zzz") == []
    assert len(search_nodes(view.nodes, "e", limit=3)) == 3


def test_excerpt_takes_the_first_paragraph_and_cuts_at_a_word():
    content = "# Titel\n\nDe eerste alinea\nloopt door.\n\nTweede alinea."
    assert excerpt(content) == "De eerste alinea loopt door."
    long = "woord " * 100
    cut = excerpt(long, limit=50)
    assert cut.endswith("…") and len(cut) <= 51 and "  " not in cut
    assert excerpt("") == ""
    assert excerpt("De **pensioenadministrateur** voert [het werk](/topics/x) uit.") == \
        "De pensioenadministrateur voert het werk uit."
