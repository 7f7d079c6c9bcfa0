"""validate_delta: every rule, the cycle checks, and property tests (hypothesis)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from r42_app.core.delta import (
    MAX_RELATIONS,
    MAX_TOPICS,
    GraphSnapshot,
    Rejected,
    StoredDeltaError,
    ValidDelta,
    describe_delta,
    read_stored_delta,
    validate_delta,
)
from r42_app.core.kb import Relation, Topic
from r42_app.core.messages import msg
from tests.conftest import examples

KB = GraphSnapshot(
    topics=[Topic("pensioenregeling", "Pensioenregeling", "concept", "d"),
            Topic("partnerpensioen", "Partnerpensioen", "concept", "d"),
            Topic("pensioenadministrateur", "Pensioenadministrateur", "role", "d"),
            Topic("dekkingsgraad", "Dekkingsgraad", "concept", "d"),
            Topic("indexatie", "Indexatie", "concept", "d")],
    relations=[Relation("partnerpensioen", "pensioenregeling", "part_of"),
               Relation("indexatie", "dekkingsgraad", "depends_on")],
)


def topic(tid="wezenpensioen", label="Wezenpensioen", ttype="concept", description="Uitkering aan kinderen."):
    return {"id": tid, "label": label, "type": ttype, "description": description}


def delta(topics=(), relations=(), reason="Het wezenpensioen ontbreekt."):
    return {"reason": reason, "topics": list(topics), "relations": list(relations)}


def rel(source, target, rtype="part_of"):
    return {"source": source, "target": target, "type": rtype}


def test_a_good_delta_passes_with_trimmed_text():
    out = validate_delta(delta([topic(label="  Wezenpensioen ")], [rel("wezenpensioen", "pensioenregeling")]), KB)
    assert isinstance(out, ValidDelta) and out.topics[0].label == "Wezenpensioen"
    assert [(r.source, r.type, r.target) for r in out.relations] == [("wezenpensioen", "part_of", "pensioenregeling")]


def test_caps_are_enforced():
    too_many = delta([topic(f"t-{i}", f"T {i}") for i in range(4)])
    assert "at most 3 topics" in validate_delta(too_many, KB).message
    rels = [rel("partnerpensioen", "dekkingsgraad", "related_to")] * 6
    assert "at most 5 relations" in validate_delta(delta(relations=rels), KB).message


def test_ids_types_and_text_are_checked():
    assert "kebab-case" in validate_delta(delta([topic(tid="Wezen Pensioen")]), KB).message
    assert "type must be one of" in validate_delta(delta([topic(ttype="person")]), KB).message
    assert "label is required" in validate_delta(delta([topic(label="   ")]), KB).message
    assert "description is longer" in validate_delta(delta([topic(description="x" * 501)]), KB).message
    assert "reason is required" in validate_delta(delta([topic()], reason=""), KB).message
    bad = delta(relations=[rel("partnerpensioen", "dekkingsgraad", "owns")])
    assert "type must be one of" in validate_delta(bad, KB).message


def test_existing_topic_is_dropped_and_relations_point_at_it():
    out = validate_delta(delta([topic("partner-pensioen", "partnerPENSIOEN"), topic()],
                               [rel("wezenpensioen", "partner-pensioen", "related_to")]), KB)
    assert isinstance(out, ValidDelta) and [t.id for t in out.topics] == ["wezenpensioen"]
    assert out.relations[0].target == "partnerpensioen" and "already exists" in out.notes[0]


def test_duplicates_inside_the_delta_are_dropped():
    out = validate_delta(delta([topic(), topic(tid="wezen-pensioen")],
                               [rel("wezenpensioen", "pensioenregeling"), rel("wezen-pensioen", "pensioenregeling")]), KB)
    assert isinstance(out, ValidDelta) and len(out.topics) == 1 and len(out.relations) == 1


def test_relation_endpoints_must_exist_and_differ():
    assert "neither in the knowledge base" in validate_delta(delta(relations=[rel("nergens", "indexatie")]), KB).message
    assert "to itself" in validate_delta(delta(relations=[rel("indexatie", "indexatie", "related_to")]), KB).message
    out = validate_delta(delta(relations=[rel("Geen Slug!", "indexatie", "related_to")]), KB)  # a slug's own shape
    assert isinstance(out, Rejected) and "relations[0].source" in out.message and "indexatie" not in out.message


def test_part_of_cycle_is_rejected():
    out = validate_delta(delta(relations=[rel("pensioenregeling", "partnerpensioen")]), KB)
    assert isinstance(out, Rejected) and "part_of cycle" in out.message


def test_depends_on_cycle_through_new_topic_is_rejected():
    out = validate_delta(delta([topic("rente", "Rente")], [rel("dekkingsgraad", "rente", "depends_on"),
                                                           rel("rente", "indexatie", "depends_on")]), KB)
    assert isinstance(out, Rejected) and "depends_on cycle" in out.message


def test_cycles_of_other_types_are_fine():
    out = validate_delta(delta(relations=[rel("pensioenregeling", "partnerpensioen", "related_to")]), KB)
    assert isinstance(out, ValidDelta)


def test_nothing_new_is_rejected():
    out = validate_delta(delta([topic("x-y", "Partnerpensioen")], [rel("partnerpensioen", "pensioenregeling")]), KB)
    assert isinstance(out, Rejected) and "already in the knowledge base" in out.message


def test_not_an_object_is_rejected():
    assert isinstance(validate_delta("add stuff", KB), Rejected)
    assert isinstance(validate_delta({"reason": "x", "topics": "no"}, KB), Rejected)


ids = st.sampled_from(["pensioenregeling", "partnerpensioen", "dekkingsgraad", "indexatie", "nieuw-a", "nieuw-b",
                       "Nieuw C", "", "x"])
labels = st.sampled_from(["Nieuw A", "nieuw a", "Partnerpensioen", "Nieuw B", "", "  Spaties  "])
topics_st = st.lists(st.fixed_dictionaries({"id": ids, "label": labels,
                                            "type": st.sampled_from(["concept", "role", "process", "thing"]),
                                            "description": st.sampled_from(["Iets.", "", "x" * 600])}), max_size=5)
relations_st = st.lists(st.fixed_dictionaries({"source": ids, "target": ids, "type": st.sampled_from(
    ["related_to", "depends_on", "part_of", "executed_by", "owns"])}), max_size=7)
deltas = st.fixed_dictionaries({"reason": st.sampled_from(["Waarom.", "", "y" * 400]), "topics": topics_st,
                                "relations": relations_st})


@settings(max_examples=examples(400), deadline=None)
@given(deltas)
def test_any_output_is_valid_idempotent_and_within_caps(raw):
    out = validate_delta(raw, KB)
    if isinstance(out, Rejected):
        assert out.reasons
        return
    assert len(out.topics) <= MAX_TOPICS and len(out.relations) <= MAX_RELATIONS
    again = validate_delta(out.as_dict(), KB)
    assert isinstance(again, ValidDelta)
    assert (again.topics, again.relations, again.reason) == (out.topics, out.relations, out.reason)
    existing = {t.slug for t in KB.topics}
    assert not {t.id for t in out.topics} & existing
    known = existing | {t.id for t in out.topics}
    assert all(r.source in known and r.target in known and r.source != r.target for r in out.relations)


# -- stored deltas: every reader survives a malformed row (issue 10) -----------------------------

MALFORMED_STORED = [[1], "NOT-AN-OBJECT", 5, None, {"topics": "NOT-A-LIST"}, {"topics": 5},
                    {"relations": {"a": 1}}, {"topics": [{"id": 5, "label": "x", "type": "concept"}]},
                    {"topics": [1]}, {"relations": [{"source": "a", "target": None, "type": "part_of"}]},
                    {"topics": [topic()] * (MAX_TOPICS + 1)}, {"reason": ["not", "text"]},
                    {"topics": [topic(ttype="c")]}, {"relations": [rel("a", "b", "owns")]}]


def test_a_valid_delta_reads_back_as_written():
    written = validate_delta(delta([topic()], [rel("wezenpensioen", "pensioenregeling")]), KB)
    assert read_stored_delta(written.as_dict()) == written.as_dict()


def test_unknown_keys_are_dropped_when_reading():
    clean = read_stored_delta({**delta([{**topic(), "extra": "<script>"}]), "evil": 1})
    assert set(clean) == {"reason", "topics", "relations"} and "extra" not in clean["topics"][0]


@given(st.sampled_from(MALFORMED_STORED))
def test_malformed_stored_deltas_raise_a_stored_delta_error(raw):
    try:
        read_stored_delta(raw)
    except StoredDeltaError as exc:
        assert str(exc) and exc.user_message
    else:
        raise AssertionError(f"{raw!r} was read as valid")


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                        st.sampled_from(["reason", "topics", "relations", "id", "label", "type", "source"]),
                        inner, max_size=4), max_leaves=12))
@settings(max_examples=examples(300))
def test_describe_delta_never_raises(raw):
    lines = describe_delta(raw)
    assert isinstance(lines, list) and all(isinstance(line, str) for line in lines)


def test_describe_delta_names_a_malformed_delta():
    assert describe_delta([1]) == [msg("delta.unreadable")]
    assert describe_delta({}) == []  # no proposal at all: nothing to say
    assert describe_delta(delta([topic()])) == ["Nieuw onderwerp: Wezenpensioen (Concept)"]
