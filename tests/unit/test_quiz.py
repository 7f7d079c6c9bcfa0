"""Quiz generation from the KB (answer unique, distractors of the same type, no duplicates) and the
quiz lock's expiry."""

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from r42_app.core.kb import Relation, Topic
from r42_app.core.quiz import (
    MIN_QUESTIONS,
    OPTIONS,
    QUIZ_MAX_MINUTES,
    QuizError,
    expires_at,
    generate_quiz,
    score,
)
from r42_app.core.text import fold
from tests.conftest import examples

SEED = Path(__file__).resolve().parents[2] / "r42_app" / "seed_data" / "demo.json"


def demo_kb():
    data = json.loads(SEED.read_text(encoding="utf-8"))
    topics = [Topic(t["id"], t["label"], t["type"], t["description"], t.get("content", "")) for t in data["topics"]]
    relations = [Relation(r["source"], r["target"], r["type"]) for r in data["relations"]]
    return topics, relations


def right_answers(q, topics, relations):
    """Every option that is a correct answer to q according to the KB (must be exactly one)."""
    by_slug = {t.slug: t for t in topics}
    good = []
    for slug in q.option_slugs:
        if q.kind == "description":
            ok = fold(by_slug[slug].description) == fold(by_slug[q.subject].description)
        elif q.kind == "part_of":
            ok = Relation(slug, q.subject, "part_of") in relations
        else:  # executed_by, depends_on: subject -> answer
            ok = Relation(q.subject, slug, q.kind) in relations
        if ok:
            good.append(slug)
    return good


def check_quiz(questions, topics, relations):
    by_slug = {t.slug: t for t in topics}
    assert len({q.id for q in questions}) == len(questions)  # no question twice
    for q in questions:
        assert len(q.options) == OPTIONS
        assert len({fold(o) for o in q.options}) == OPTIONS  # no duplicate options
        assert right_answers(q, topics, relations) == [q.option_slugs[q.answer]]  # answer unique and right
        assert len({by_slug[s].type for s in q.option_slugs}) == 1  # distractors of the answer's type
        assert q.subject not in q.option_slugs or q.kind == "description"
        assert [by_slug[s].label for s in q.option_slugs] == list(q.options)


@pytest.mark.parametrize("scope", ["all", "concept", "role", "process"])
def test_demo_kb_quizzes_are_valid_for_every_scope(scope):
    topics, relations = demo_kb()
    for seed in range(20):
        questions = generate_quiz(topics, relations, scope, count=8, seed=seed)
        assert len(questions) == 8
        check_quiz(questions, topics, relations)
        by_slug = {t.slug: t for t in topics}
        if scope != "all":
            assert {by_slug[q.option_slugs[q.answer]].type for q in questions} == {scope}


def test_quizzes_mix_question_kinds_and_vary_by_seed():
    topics, relations = demo_kb()
    questions = generate_quiz(topics, relations, "all", count=8, seed=1)
    assert {q.kind for q in questions} == {"description", "part_of", "executed_by", "depends_on"}
    other = generate_quiz(topics, relations, "all", count=8, seed=2)
    assert [q.id for q in questions] != [q.id for q in other]
    assert [q.id for q in generate_quiz(topics, relations, "all", count=8, seed=1)] == [q.id for q in questions]


def test_executed_by_questions_offer_roles_only():
    topics, relations = demo_kb()
    by_slug = {t.slug: t for t in topics}
    qs = [q for seed in range(10) for q in generate_quiz(topics, relations, "role", 10, seed) if q.kind == "executed_by"]
    assert qs and all(by_slug[s].type == "role" for q in qs for s in q.option_slugs)
    assert all(q.prompt.startswith("Welke rol voert ") for q in qs)


def test_ambiguous_descriptions_and_duplicate_labels_are_never_asked():
    topics = [Topic(f"c{i}", f"Concept {i}", "concept", f"Omschrijving {i}") for i in range(8)]
    topics += [Topic("twin-a", "Tweeling", "concept", "Zelfde"), Topic("twin-b", "Tweeling", "concept", "Anders"),
               Topic("same-1", "Eén", "concept", "Gedeelde omschrijving"),
               Topic("same-2", "Twee", "concept", "gedeelde OMSCHRIJVING")]
    questions = generate_quiz(topics, [], "all", count=20, seed=0)
    asked = {q.subject for q in questions}
    assert not asked & {"twin-a", "twin-b", "same-1", "same-2"}
    assert all("Tweeling" not in q.options for q in questions)
    check_quiz(questions, topics, [])


def test_a_distractor_that_is_also_right_is_never_offered():
    # every concept is part of "geheel": a part_of question about it would have no wrong options
    topics = [Topic("geheel", "Geheel", "concept", "Het geheel")]
    topics += [Topic(f"deel-{i}", f"Deel {i}", "concept", f"Deel nummer {i}") for i in range(6)]
    relations = [Relation(f"deel-{i}", "geheel", "part_of") for i in range(6)]
    questions = generate_quiz(topics, relations, "all", count=20, seed=3)
    assert not [q for q in questions if q.kind == "part_of"]
    check_quiz(questions, topics, relations)


def test_too_small_a_kb_says_so():
    topics = [Topic(f"c{i}", f"C {i}", "concept", f"d {i}") for i in range(3)]
    with pytest.raises(QuizError) as small:
        generate_quiz(topics, [], "all")
    assert "te weinig" in small.value.user_message
    with pytest.raises(QuizError):
        generate_quiz(demo_kb()[0], demo_kb()[1], "everything")


def test_count_is_clamped_to_at_least_five():
    topics, relations = demo_kb()
    assert len(generate_quiz(topics, relations, "all", count=1, seed=0)) == MIN_QUESTIONS


def test_score_counts_right_answers_and_skips():
    topics, relations = demo_kb()
    questions = generate_quiz(topics, relations, "all", count=5, seed=4)
    answers = {questions[0].id: questions[0].answer, questions[1].id: (questions[1].answer + 1) % OPTIONS}
    result = score(questions, answers)
    assert (result.correct, result.total, result.percent) == (1, 5, 20)
    assert [r.correct for r in result.reviews] == [True, False, False, False, False]
    assert result.reviews[2].chosen is None


@settings(max_examples=examples(60), deadline=None)
@given(st.integers(min_value=4, max_value=30), st.integers(min_value=0, max_value=60), st.integers(0, 10_000))
def test_random_graphs_give_valid_quizzes_or_a_clear_error(n, m, seed):
    import random

    rng = random.Random(seed)
    types = ("concept", "role", "process")
    topics = [Topic(f"t-{i}", f"Label {rng.randrange(n * 2)}", types[rng.randrange(3)], f"Omschrijving {rng.randrange(n)}")
              for i in range(n)]
    kinds = ("part_of", "executed_by", "depends_on", "related_to")
    relations = list({Relation(f"t-{rng.randrange(n)}", f"t-{rng.randrange(n)}", kinds[rng.randrange(4)])
                      for _ in range(m)})
    try:
        questions = generate_quiz(topics, relations, "all", count=10, seed=seed)
    except QuizError:
        return
    assert MIN_QUESTIONS <= len(questions) <= 10
    check_quiz(questions, topics, relations)


def test_a_session_expires_after_the_maximum_duration():  # the lock itself is PocketBase's filter (test_quiz_lock)
    start = datetime(2026, 11, 29, 10, 0, tzinfo=timezone.utc)
    end = expires_at(start)
    assert end - start == timedelta(minutes=QUIZ_MAX_MINUTES) == timedelta(minutes=30)
    assert expires_at(start, 5) == start + timedelta(minutes=5)
