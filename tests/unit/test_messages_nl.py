"""Admins read validation messages in Dutch, whatever rule produced them."""

from r42_app.core.kb import parse_relation, parse_topic
from r42_app.core.messages_nl import to_dutch


def test_topic_messages_in_dutch():
    _, issues = parse_topic({"id": "Geen Slug", "label": "", "type": "x", "description": "d" * 600})
    dutch = {i.where: to_dutch(i.message) for i in issues}
    assert dutch["topic.id"].startswith("Gebruik kleine letters")
    assert dutch["topic.label"] == "Dit veld is verplicht."
    assert dutch["topic.type"] == "Kies een van de toegestane waarden."
    assert dutch["topic.description"] == "Te lang: 600 tekens (maximaal 500)."


def test_relation_messages_in_dutch():
    _, issues = parse_relation({"source": "a", "target": "a", "type": "part_of"})
    assert to_dutch(issues[0].message) == "Een onderwerp kan geen relatie met zichzelf hebben."
    assert to_dutch("unknown topic 'x'") == "Onbekend onderwerp 'x'."
    assert to_dutch("iets onbekends") == "iets onbekends"
