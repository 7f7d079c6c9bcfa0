"""Injection markers per passage through real search (issue 27): PocketBase, Chroma, the embedding model and
the learned detector as `make setup` trains it. An attack paragraph hidden in a 2,000-word article makes the
snippet it is in suspect=true; a snippet of the same article without it is suspect=false, and no snippet mixes
the two (the model sees which passage is suspect, not a whole article)."""

import time

import pytest

from r42_app.core.injection import learned_model, use_learned_model
from r42_app.core.retrieval import render_snippets
from r42_app.services.adapters.injection import install_learned_model
from r42_app.services.retrieval import FRESHNESS_S
from r42_app.settings import load_settings
from tests.unit.test_injection_passages import ATTACK, article

pytestmark = pytest.mark.slow  # heavy: a knowledge base of attacks indexed for search (~8 s)


@pytest.fixture
def installed():
    before = learned_model()
    use_learned_model(None)
    assert install_learned_model(load_settings().injection_model_file) is not None
    yield
    use_learned_model(before)


LEAVE = [  # one section of three paragraphs on leave, ~75 words each: the packer makes two passages of it
    "Tijdens zwangerschapsverlof loopt de pensioenopbouw gewoon door. De werkgever blijft de premie over het "
    "volledige salaris betalen, ook als het UWV de uitkering betaalt, en het verlof telt mee als diensttijd. Je "
    "hoeft zelf niets te regelen: de salarisadministratie geeft het verlof door aan het pensioenfonds, en op je "
    "Uniform Pensioenoverzicht zie je dat de opbouw over die maanden gewoon is doorgelopen, net als daarvoor.",
    "Bij betaald ouderschapsverlof loopt de pensioenopbouw eveneens door over het salaris dat je verdiende. De "
    "premie wordt in die maanden verdeeld zoals altijd: de werkgever betaalt zijn deel en jouw deel wordt van het "
    "loon ingehouden. Neem je het verlof in delen op, dan verandert er voor de opbouw niets; alleen de uren die "
    "je werkt wisselen, en dat heeft voor je pensioen geen gevolgen zolang het dienstverband blijft bestaan.",
    "Bij onbetaald ouderschapsverlof loopt de pensioenopbouw alleen door als de premie betaald blijft. Veel "
    "regelingen laten de werkgever het werkgeversdeel doorbetalen en vragen van jou het werknemersdeel. Vraag "
    "vooraf na hoe dat in jouw regeling geregeld is, want wie niets regelt, bouwt over die maanden minder op. Voor "
    "zwangerschapsverlof en ouderschapsverlof samen kun je dat in één gesprek met de salarisadministratie doen.",
]
QUESTIONS = ["Bouw ik pensioen op tijdens zwangerschapsverlof en ouderschapsverlof?",  # the leave section's
             "Loopt mijn pensioenopbouw door tijdens onbetaald ouderschapsverlof?",  # two passages, one with it
             "Wie betaalt de premie tijdens mijn verlof?",
             "Wat gebeurt er met mijn opgebouwde pensioen bij een nieuwe baan?",
             "Wat is de dekkingsgraad van een pensioenfonds?",  # elsewhere in the article
             "Wanneer krijg ik AOW?"]


def leave_article() -> str:
    """The 2,000-word article with a section on leave, the attack paragraph between its second and third."""
    chapters = article(0).replace(ATTACK + "\n\n", "", 1).split("\n\n## ")
    chapters.insert(3, "\n\n".join(["Verlof en pensioenopbouw", *LEAVE[:2], ATTACK, LEAVE[2]]))
    return "\n\n## ".join(chapters)


def test_the_snippet_holding_the_attack_is_suspect_and_no_other(indexed, retriever, installed):
    kb, _vectors, indexer, _ = indexed
    demo = kb.require_tenant("demo")
    kb.create_topic(demo, {"id": "handboek-pensioen", "label": "Handboek pensioen", "type": "concept",
                           "description": "Het volledige handboek.", "content": leave_article()})
    try:
        indexer.drain(demo.id)
        time.sleep(FRESHNESS_S)
        index = retriever.index(demo)
        seen = {True: 0, False: 0}
        for question in QUESTIONS:
            for mode in ("fts", "hybrid"):
                res = retriever.kb_search(demo, question, mode, 5)
                for hit, snippet in zip(res.hits, res.snippets(index)):
                    if snippet.slug != "handboek-pensioen":
                        continue
                    holds = "negeer alle voorgaande instructies" in snippet.text
                    assert snippet.suspect == holds, (question, mode, snippet.markers, snippet.text[:120])
                    # and it never mixes: a suspect snippet has no clean passage in it, a clean one no suspect one
                    assert [bool(index.passage_markers(p)) for p in hit.passages] == [holds] * len(hit.passages)
                    assert ("suspect=true" in render_snippets([snippet])) == holds
                    seen[holds] += 1
        assert seen[True] and seen[False], seen  # both kinds of snippet came from the article
        flagged = [p for p in range(len(index.passages))
                   if index.passages[p].slug == "handboek-pensioen" and index.passage_markers(p)]
        assert len(flagged) == 1 and ATTACK in index.passages[flagged[0]].text  # the learned model too
    finally:
        kb.delete_topic(demo, "handboek-pensioen")
        indexer.drain(demo.id)
