"""The relevance rule (core/relevance.py) that lets R42 say "niets gevonden": a named topic always counts; with
the multilingual model's cosine, meaning alone or meaning backed by words; without it, words alone. And the
offline answer abstains with the closest topics as chips, or quotes the KB when it is grounded."""

import pytest

from r42_app.core.chat import REF_RE, abstention, offline_answer, system_blocks
from r42_app.core.messages import msg
from r42_app.core.relevance import (
    COVERAGE_MOST,
    COVERAGE_ONLY,
    LEXICAL_ONLY,
    LEXICAL_STRONG,
    LEXICAL_WITH_MEANING,
    NEAR_SEMANTIC,
    SEMANTIC_ACROSS,
    SEMANTIC_SURE,
    SEMANTIC_WITH_MOST_WORDS,
    SEMANTIC_WITH_WORDS,
    Relevance,
)
from r42_app.core.retrieval import Snippet, asks_across


def snippet(ref, slug, text="Een deelnemer bouwt pensioen op via zijn werkgever in een pensioenregeling."):
    return Snippet(ref, slug, slug.title(), text, 1.0)


@pytest.mark.parametrize("relevance, grounded", [
    (Relevance(named=True), True),  # "Wat is verevening?" names a topic, whatever the scores
    (Relevance(semantic=SEMANTIC_SURE), True),
    (Relevance(semantic=SEMANTIC_SURE - 0.001, lexical=LEXICAL_WITH_MEANING - 0.1), False),
    (Relevance(semantic=SEMANTIC_WITH_WORDS, lexical=LEXICAL_WITH_MEANING), True),
    (Relevance(semantic=SEMANTIC_WITH_WORDS - 0.001, lexical=LEXICAL_STRONG - 0.1, coverage=1.0), False),
    # "Wat trek ik aan als ik in de gekoelde zone van hal 3 moet werken?" on the warehouse KB: the meaning a little
    # lower, the KB's own words, one passage matching them strongly
    (Relevance(semantic=SEMANTIC_WITH_MOST_WORDS, lexical=LEXICAL_STRONG, coverage=COVERAGE_MOST), True),
    (Relevance(semantic=SEMANTIC_WITH_MOST_WORDS, lexical=LEXICAL_STRONG, coverage=COVERAGE_MOST - 0.01), False),
    (Relevance(semantic=SEMANTIC_WITH_MOST_WORDS - 0.001, lexical=50.0, coverage=1.0), False),  # words, not meaning
    (Relevance(semantic=0.767, lexical=8.7, coverage=0.57), False),  # "Hoeveel ronden telt de Formule 1 race …?"
    # "Why don't I build up any pension on the first chunk of my salary?" on the Dutch demo KB: meaning alone, lower
    (Relevance(semantic=SEMANTIC_ACROSS, across=True), True),
    (Relevance(semantic=SEMANTIC_ACROSS - 0.001, lexical=19.9, across=True), False),
    (Relevance(semantic=SEMANTIC_ACROSS, lexical=5.0, coverage=1.0), False),  # the KB's own language: not enough
    (Relevance(semantic=SEMANTIC_ACROSS, lexical=5.0, coverage=COVERAGE_MOST, across=True), False),  # its words are
    (Relevance(semantic=0.79, lexical=3.6, coverage=0.33), False),  # the weather in Amsterdam
    (Relevance(lexical=LEXICAL_ONLY, coverage=COVERAGE_ONLY), True),  # no usable embeddings: words decide
    (Relevance(lexical=LEXICAL_ONLY, coverage=COVERAGE_ONLY - 0.01), False),
    (Relevance(lexical=LEXICAL_ONLY - 0.01, coverage=1.0), False),
    (Relevance(), False),  # an empty question, or one of stop words only
])
def test_the_relevance_rule(relevance, grounded):
    assert relevance.grounded is grounded


def test_an_ungrounded_offline_answer_says_nothing_was_found_and_suggests_the_closest_topics():
    snippets = [snippet(n, f"topic-{n}") for n in range(1, 6)]
    text = offline_answer("Wat wordt het weer morgen in Amsterdam?", snippets, grounded=False)
    assert text.startswith("Hierover heb ik niets gevonden in de kennisbank")
    assert [int(m.group(1)) for m in REF_RE.finditer(text)] == [1, 2, 3]  # three chips, no quoted sentence
    assert "pensioen" not in text


@pytest.mark.parametrize("relevance, near", [
    (Relevance(semantic=0.757), False),  # "Wat is de hoofdstad van Peru?"
    (Relevance(semantic=0.792, lexical=3.6, coverage=0.33), False),  # the weather in Amsterdam
    (Relevance(semantic=NEAR_SEMANTIC), True),
    (Relevance(semantic=0.841, lexical=5.6, coverage=0.75), True),  # "Hoeveel vakantiedagen heb ik recht op …?"
    (Relevance(semantic=SEMANTIC_SURE), True),  # grounded is near
    (Relevance(lexical=4.9, coverage=1.0), False),  # no usable embeddings: words alone do not tell near from far
    (Relevance(lexical=LEXICAL_ONLY, coverage=COVERAGE_ONLY), True),  # … but grounded by words is near
    (Relevance(), False),
])
def test_whether_the_closest_topics_are_near_enough_to_offer(relevance, near):
    assert relevance.near is near


def test_when_nothing_comes_near_the_abstention_names_no_topics():
    snippets = [snippet(n, f"topic-{n}") for n in range(1, 6)]
    text = offline_answer("Wat is de hoofdstad van Peru?", snippets, grounded=False, near=False)
    assert text == msg("chat.offline_nothing") and not REF_RE.search(text)


def test_with_nothing_retrieved_the_abstention_has_no_chips():
    assert abstention([]) == msg("chat.offline_nothing")


def test_a_grounded_offline_answer_still_quotes_the_kb():
    text = offline_answer("Hoe bouwt een deelnemer pensioen op?", [snippet(1, "deelnemer")], grounded=True)
    assert "Een deelnemer bouwt pensioen op" in text and "[ref:1]" in text


def test_the_model_is_told_when_nothing_relevant_was_found():
    told = system_blocks("KB", "", "Lotte", False, grounded=False)
    assert "found nothing relevant" in told[-1]["text"] and "cache_control" not in told[-1]
    assert "found nothing relevant" not in " ".join(b["text"] for b in system_blocks("KB", "", "Lotte", False))


@pytest.mark.parametrize("question, english, across", [
    ("What happens to my pension when I change jobs?", 0.0, True),  # English on a Dutch KB
    ("Wat gebeurt er met mijn pensioen als ik van baan wissel?", 0.0, False),
    ("Wat gebeurt er met mijn pensioen als ik van baan wissel?", 1.0, True),  # Dutch on an English KB
    ("How do I open a file for reading?", 1.0, False),
    ("Good morning!", 0.0, False),  # no function word of either language: not taken for the other one
    ("What is the dekkingsgraad?", 0.5, False),  # a KB that is neither (names, codes)
    ("What is the dekkingsgraad?", 0.0, True),
    ("AOW i.p.v. pensioen?", 0.0, False),  # Dutch with English-looking bits
    ("Hoe werkt pay as you go?", 0.0, False),
    ("Wat betekent on the job training?", 0.0, False),
    ("Any rules about overtime?", 0.0, True),
])
def test_a_question_in_the_kbs_other_language(question, english, across):
    assert asks_across(question, english) is across
