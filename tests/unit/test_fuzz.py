"""Hostile and random input never crashes a parser (issue 14): import files, proposed graph edits, the
stored chat thread, stored suggestion rows and chat messages either parse or are refused with a reason."""

import json

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from r42_app.core.chat import ChatInputError, validate_messages
from r42_app.core.delta import GraphSnapshot, Rejected, ValidDelta, describe_delta, validate_delta
from r42_app.core.kb import RELATION_TYPES, TOPIC_TYPES, Relation, Topic, parse_import
from r42_app.core.thread import parse
from tests.conftest import examples

KB = GraphSnapshot([Topic("aow", "AOW", "concept", "d"), Topic("pensioen", "Pensioen", "concept", "d")],
                   [Relation("aow", "pensioen", "part_of")])
text = st.text(max_size=30) | st.sampled_from(["aow", "pensioen", "part_of", "concept", "\ud800", "\x00", "💥" * 5])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats(allow_nan=True) | text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["topics", "relations", "reason", "id", "label", "type", "description", "content", "source",
                         "target", "version", "messages", "role", "status", "citations", "delta", "ref", "slug"])
        | st.text(max_size=5), inner, max_size=5),
    max_leaves=25)
FUZZ = settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(json_values)
def test_an_import_file_is_parsed_or_refused_with_issues(data):
    plan, issues = parse_import(data, {})
    assert (plan is None) == bool(issues)  # a plan, or the reasons there is none
    assert all(str(issue) for issue in issues)


# a proposed edit in the shape the model writes one, often valid: topics the knowledge base has (by id, or by
# label in another case or spacing), repeated ones, self-relations and cycles (json_values brings the hostile values)
ids = st.sampled_from(["nieuw", "nieuw-b", "aow", "pensioen"])
labels = st.sampled_from(["Nieuw", "Nieuw  B", "nieuw b", "AOW", "Aow", "PENSIOEN", " pensioen "])
words = st.sampled_from(["Waarom \u200b💥", "Een omschrijving."])
edits = st.fixed_dictionaries({
    "reason": words,
    "topics": st.lists(st.fixed_dictionaries({"id": ids, "label": labels, "type": st.sampled_from(TOPIC_TYPES),
                                              "description": words}), max_size=3),
    "relations": st.lists(st.fixed_dictionaries({"source": ids, "target": ids,
                                                 "type": st.sampled_from(RELATION_TYPES)}), max_size=3)})


@FUZZ
@example({"reason": "Waarom.", "topics": [{"id": "nieuw", "label": "Aow", "type": "concept", "description": "Iets."}],
          "relations": [{"source": "nieuw", "target": "pensioen", "type": "part_of"}]})  # AOW, in another case
@given(json_values | edits)
def test_a_proposed_edit_is_valid_or_rejected_with_reasons(data):
    checked = validate_delta(data, KB)
    lines = describe_delta(data)  # what the reviewer reads of it, whatever it is
    assert all(isinstance(line, str) and line.strip() for line in lines)
    if isinstance(checked, Rejected):
        assert checked.reasons and all(isinstance(r, str) and r.strip() for r in checked.reasons)
        return
    assert isinstance(checked, ValidDelta)
    written = checked.as_dict()
    # nothing the knowledge base has is proposed again, by its id or by its label in any case
    assert not {t.id for t in checked.topics} & {"aow", "pensioen"}
    assert not {t.label.casefold() for t in checked.topics} & {"aow", "pensioen"}
    # the reviewer is shown what would be written, a line per new topic (by its label) and per relation
    shown = describe_delta(written)
    assert len(shown) == len(checked.topics) + len(checked.relations) > 0
    assert all(t.label in line for t, line in zip(checked.topics, shown))
    again = validate_delta(written, KB)  # and what is written is valid as it stands
    assert isinstance(again, ValidDelta) and again.as_dict() == written


@FUZZ
@given(json_values | text)
def test_a_stored_thread_parses_or_is_replaced(raw):
    stored = raw if isinstance(raw, str) else json.dumps(raw)
    messages, problem = parse(stored)
    assert (messages is None) == bool(problem)


@FUZZ
@given(json_values)
def test_chat_messages_are_accepted_or_refused_with_a_message(raw):
    try:
        messages = validate_messages(raw)
    except ChatInputError as exc:
        assert str(exc)
    else:
        assert messages and messages[-1].role == "user"
        for m in messages:  # what reaches the model is valid Unicode
            m.content.encode("utf-8")


@FUZZ
@given(json_values)
def test_a_stored_suggestion_row_never_breaks_the_reader(delta):
    from r42_app.services.store.suggestions import _suggestion

    s = _suggestion({"id": "x", "delta": delta, "status": "pending", "reason": delta if isinstance(delta, str) else ""})
    assert isinstance(s.valid, bool) and (s.valid or s.problem)
