"""A first-time admin's gaps report, with the real embedding model: in a log of a few misses, questions on
unrelated subjects are separate gaps, and two wordings of one question are one (core/gaps.py PAIR_CUT)."""

from datetime import UTC, datetime, timedelta

import pytest

from r42_app.core.gaps import Asked, find_gaps
from r42_app.services.gaps import background


@pytest.fixture(scope="module")
def general(embedder):
    return background(embedder.encode_queries)


def gaps_of(embedder, general, questions):
    start = datetime(2026, 12, 1, tzinfo=UTC)
    rows = [Asked(f"row{i}", q, f"learner{i}", start + timedelta(hours=i), grounded=False)
            for i, q in enumerate(questions)]
    means, pool = general
    return [sorted(q.question for q in gap.questions)
            for gap in find_gaps(rows, embedder.encode_queries(questions), means, pool)]


@pytest.mark.parametrize("questions", [
    ["Wat is de hoofdstad van Peru?", "What is the funding ratio?"],  # grouped before: 0.003 above the cut
    ["Mag ik mijn hond meenemen naar kantoor?", "Hoe vraag ik een nieuwe laptop aan?"],
    ["Wat is de hoofdstad van Peru?", "Mag ik mijn hond meenemen naar kantoor?", "What is the funding ratio?"],
])
def test_unrelated_misses_in_a_small_log_are_separate_gaps(embedder, general, questions):
    assert sorted(gaps_of(embedder, general, questions)) == sorted([q] for q in questions)


def test_two_wordings_of_one_question_in_a_small_log_are_one_gap(embedder, general):
    pair = ["Waar kan ik parkeren bij het kantoor?", "Is er een parkeerplaats voor personeel?"]
    assert gaps_of(embedder, general, pair) == [sorted(pair)]
    third = "Hoeveel vakantiedagen heb ik nog over?"
    assert sorted(gaps_of(embedder, general, [*pair, third])) == sorted([sorted(pair), [third]])
