"""The offline answer (no API key: for such a tenant it is the product) reads like a careful extract:
no markdown, no sentence cut mid-way, no bare labels, and every sentence from a topic it cites."""

import json
import re
from pathlib import Path

import pytest

from r42_app.core.chat import REF_RE, offline_answer, plain_sections, plain_sentences
from r42_app.core.kb import Topic
from r42_app.core.retrieval import TenantIndex, make_snippet

DEMO = Path(__file__).resolve().parents[2] / "r42_app" / "seed_data" / "demo.json"
QUESTIONS = [
    "Wat is de dekkingsgraad?",
    "Hoe werkt waardeoverdracht?",
    "Wat is het pensioengevend salaris?",
    "Wanneer krijg ik AOW?",
    "Wat doet de actuaris?",
    "Wat gebeurt er met mijn pensioen als ik uit dienst ga?",
    "Wat is een partnerpensioen?",
    "Hoe wordt de franchise bepaald?",
    "Wat is indexatie?",
    "Wat staat er op het UPO?",
    "Wat is verevening bij een scheiding?",
    "Kan ik een klein pensioen afkopen?",
    "Wat is een premieregeling?",
    "Wie houdt toezicht op pensioenfondsen?",
    "Wat is het nabestaandenpensioen?",
]


@pytest.fixture(scope="module")
def index():
    doc = json.loads(DEMO.read_text(encoding="utf-8"))
    return TenantIndex.build([Topic(t["id"], t["label"], t["type"], t["description"], t.get("content", ""))
                              for t in doc["topics"]], [])


def answer(index, question):
    """As a turn does it: the top 5 topics (named ones first) as snippets, their full text for the answer."""
    named = [index.topics[i] for i in index.named(question)]
    found = named + [index.topics[h.doc] for h in index.lexical_candidates(question, 5) if index.topics[h.doc] not in named]
    snippets = [make_snippet(n, topic, topic.description, 1.0) for n, topic in enumerate(found[:5], start=1)]
    texts = {t.slug: f"{t.description}\n\n{t.content}" for t in found[:5]}
    return offline_answer(question, snippets, texts=texts), snippets, texts


@pytest.mark.parametrize("question", QUESTIONS)
def test_an_offline_answer_is_whole_sentences_of_the_topics_it_cites(index, question):
    text, snippets, texts = answer(index, question)
    assert REF_RE.search(text), text
    assert not re.search(r"(^|\n)\s*(#|[-*+] |\d+[.)] )|\*\*|__|`|\|", text), text  # no markdown syntax
    by_ref = {s.ref: s for s in snippets}
    for paragraph in text.split("\n\n"):  # a paragraph per cited topic, ending with its one chip
        body, ref = re.fullmatch(r"(.+) \[ref:(\d+)\]", paragraph).groups()
        topic_sentences = plain_sentences(texts[by_ref[int(ref)].slug])
        for sentence in plain_sentences(body):
            assert sentence in topic_sentences, (question, sentence)  # whole, and from the cited topic
            assert sentence[-1] in ".!?" and len(sentence.split()) >= 6


def test_markdown_becomes_sentences_without_headings_labels_or_cut_numbers():
    md = ("### Pensioengevend salaris\nWaardeoverdracht uitvoeren.\n\n- De **actuele dekkingsgraad** is een "
          "momentopname aan het eind van de maand.\n- Kort.\n\n| a | b |\n|---|---|\n\nZie [de wet](https://x.nl) "
          "voor de regels, bijv. De Pensioenwet die alles regelt. Bij 110% is er 1,10 euro per euro aanwezig.")
    assert plain_sentences(md) == [
        "De actuele dekkingsgraad is een momentopname aan het eind van de maand.",
        "Zie de wet voor de regels, bijv. De Pensioenwet die alles regelt.",
        "Bij 110% is er 1,10 euro per euro aanwezig.",
    ]


def test_a_sentence_off_the_question_is_left_out(index):
    text, _snippets, _texts = answer(index, "Wat is de dekkingsgraad?")
    assert "dekkingsgraad" in text.lower() and "AOW" not in text


def test_a_sentence_is_read_under_its_heading(index):
    """"Voor de komende jaren ligt die op 67 jaar" does not say what is 67: its section's heading does
    ("### AOW-leeftijd"). Read on its own the sentence shares no word with the question and the answer missed it."""
    text, _snippets, _texts = answer(index, "Wat is de AOW-leeftijd?")
    assert "67 jaar" in text, text


def test_sections_come_from_headings_and_a_snippets_passage_paths():
    """As core/retrieval.py `snippet_passages` writes a snippet: passages joined by "…", each under its "§ heading
    path" line. A "§" line elsewhere is the text's own ("§ 4 van de wet" wrapped onto its own line)."""
    snippet = ("§ Regels › Termijnen\n### Termijnen\n\nDie duurt zes maanden na de aanvraag van de deelnemer.\n"
               "…\nDe laatste zin van een passage vóór de volgende telt ook.\n…\n§ Uitvoering\n"
               "- Een lijstje dat bij de uitvoering hoort, netjes.\nZie artikel 3 en\n§ 4 van de wet voor de regels.\n"
               "#hashtag\nNog een zin die onder dezelfde kop blijft staan.")
    assert plain_sections(snippet) == [
        ("Termijnen", "Die duurt zes maanden na de aanvraag van de deelnemer."),
        ("", "De laatste zin van een passage vóór de volgende telt ook."),  # "…" ends a passage, and no sentence
        ("Uitvoering", "Een lijstje dat bij de uitvoering hoort, netjes."),
        ("Uitvoering", "Zie artikel 3 en § 4 van de wet voor de regels."),
        ("Uitvoering", "Nog een zin die onder dezelfde kop blijft staan."),
    ]


def test_of_a_section_that_matches_the_sentence_with_its_own_words_comes_first():
    """A heading's words count for every sentence under it; of equal scores the sentence that says them itself
    is first, and a sentence without a word is never quoted."""
    from r42_app.core.chat import sentence_scores
    text = ("### Franchise\n\nHet pensioenreglement bepaalt de hoogte ervan elk jaar opnieuw.\n\n"
            "1 . . . . . .\n\nDe franchise wordt van het pensioengevend salaris afgetrokken.")
    rows = sentence_scores("Wat is de franchise?", [(1, text)])
    assert [sentence for *_, sentence in rows] == [
        "De franchise wordt van het pensioengevend salaris afgetrokken.",
        "Het pensioenreglement bepaalt de hoogte ervan elk jaar opnieuw."]
