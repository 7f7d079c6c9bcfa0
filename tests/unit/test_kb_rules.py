"""The knowledge-base rules shared by the admin forms and `r42 kb import`."""

from r42_app.core.kb import (
    Relation,
    Topic,
    export_document,
    filter_topics,
    parse_import,
    parse_relation,
    parse_topic,
    slugify,
)

GOOD = {"id": "partnerpensioen", "label": "Partnerpensioen", "type": "concept", "description": "Een uitkering."}


def where(issues):
    return {issue.where for issue in issues}


def test_valid_topic_is_trimmed():
    topic, issues = parse_topic({**GOOD, "label": "  Partnerpensioen  "})
    assert issues == []
    assert topic == Topic("partnerpensioen", "Partnerpensioen", "concept", "Een uitkering.", "")


def test_slug_must_be_kebab_case():
    for bad in ["Partner", "partner pensioen", "partner--pensioen", "-partner", "partner_", ""]:
        _, issues = parse_topic({**GOOD, "id": bad})
        assert "topic.id" in where(issues), bad


def test_type_must_be_allowed_and_text_required():
    _, issues = parse_topic({**GOOD, "type": "person", "description": "   ", "label": 12})
    assert where(issues) == {"topic.type", "topic.description", "topic.label"}


def test_relation_rejects_self_reference_and_unknown_type():
    assert parse_relation({"source": "a", "target": "a", "type": "part_of"})[1]
    _, issues = parse_relation({"source": "a", "target": "b", "type": "owns"})
    assert where(issues) == {"relation.type"}


def test_import_reports_item_and_field():
    doc = {
        "topics": [GOOD, {**GOOD, "id": "Bad Id", "label": "Ander"}, {**GOOD, "label": "Dubbel"}],
        "relations": [{"source": "partnerpensioen", "target": "missing", "type": "part_of"}],
    }
    plan, issues = parse_import(doc)
    assert plan is None
    messages = [str(i) for i in issues]
    assert any(m.startswith("topics[1].id:") and "kebab-case" in m for m in messages)
    assert any(m.startswith("topics[2].id:") and "duplicate" in m for m in messages)
    assert any(m.startswith("relations[0].target:") and "unknown topic 'missing'" in m for m in messages)


def test_import_relation_may_point_at_existing_topic():
    doc = {"topics": [GOOD], "relations": [{"source": "partnerpensioen", "target": "pensioenregeling", "type": "part_of"}]}
    assert parse_import(doc)[0] is None
    plan, issues = parse_import(doc, existing_slugs={"pensioenregeling"})
    assert issues == [] and plan.relations == [Relation("partnerpensioen", "pensioenregeling", "part_of")]


def test_import_rejects_wrong_shapes():
    assert parse_import([])[0] is None
    _, issues = parse_import({"topics": {}, "extra": 1})
    assert where(issues) == {"topics", "extra"}


def test_export_round_trips_through_import():
    topics = [Topic("b", "B", "role", "Rol.", "x"), Topic("a", "A", "concept", "Begrip.", "")]
    rels = [Relation("a", "b", "executed_by")]
    plan, issues = parse_import(export_document(topics, rels))
    assert issues == []
    assert sorted(plan.topics, key=lambda t: t.slug) == sorted(topics, key=lambda t: t.slug)
    assert plan.relations == rels


def test_slugify_folds_diacritics():
    assert slugify("Beëindiging van het Partnerpensioen!") == "beeindiging-van-het-partnerpensioen"


def test_filter_topics_matches_words_and_type_label_first():
    topics = [
        Topic("premie-inning", "Premie-inning", "process", "Het innen van de pensioenpremie."),
        Topic("pensioenpremie", "Pensioenpremie", "concept", "Wat de werkgever betaalt."),
        Topic("actuaris", "Actuaris", "role", "Rekent aan verplichtingen."),
    ]
    assert [t.slug for t in filter_topics(topics, "premie")] == ["pensioenpremie", "premie-inning"]
    assert [t.slug for t in filter_topics(topics, "", "role")] == ["actuaris"]
    assert filter_topics(topics, "premie", "role") == []
    assert [t.slug for t in filter_topics(topics, "ACTUÁRIS")] == ["actuaris"]
