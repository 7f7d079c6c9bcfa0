"""Quizzes generated from a tenant's knowledge graph, and the rules of the quiz lock.

Question kinds (each with four options of the same topic type, one of them right):

- `description`: which topic does this description describe?
- `part_of`:     which topic is part of X?
- `executed_by`: which role carries out process Y?
- `depends_on`:  what does X depend on?

A question is only asked when its answer is unambiguous in the KB: the description belongs to one
topic only, and no distractor has the asked relation too. Distractors are plausible: the same type
as the right answer, never the subject itself, no two options with the same label.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from r42_app.core.errors import UserError
from r42_app.core.kb import TOPIC_TYPES, Relation, Topic
from r42_app.core.messages import msg
from r42_app.core.text import fold

MIN_QUESTIONS = 5
DEFAULT_QUESTIONS = 8
MAX_QUESTIONS = 20
OPTIONS = 4
QUIZ_MAX_MINUTES = 30
SCOPES = ("all", *TOPIC_TYPES)


class QuizError(UserError, ValueError):
    """The knowledge base cannot carry a quiz of this scope (too few topics or relations)."""


@dataclass(frozen=True)
class Question:
    id: str  # kind:subject, unique within a quiz
    kind: str
    prompt: str
    options: tuple[str, ...]  # labels
    option_slugs: tuple[str, ...]
    answer: int  # index into options
    subject: str  # the slug the question is about (for the review link)

    @property
    def answer_label(self) -> str:
        return self.options[self.answer]


@dataclass(frozen=True)
class Review:
    question: Question
    chosen: int | None

    @property
    def correct(self) -> bool:
        return self.chosen == self.question.answer


@dataclass(frozen=True)
class Score:
    reviews: tuple[Review, ...] = field(default_factory=tuple)

    @property
    def correct(self) -> int:
        return sum(1 for r in self.reviews if r.correct)

    @property
    def total(self) -> int:
        return len(self.reviews)

    @property
    def percent(self) -> int:
        return round(100 * self.correct / self.total) if self.total else 0


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def generate_quiz(topics: Iterable[Topic], relations: Iterable[Relation], scope: str = "all",
                  count: int = DEFAULT_QUESTIONS, seed: int | None = None) -> list[Question]:
    """`count` questions (at least MIN_QUESTIONS) whose right answers are topics of `scope`
    ("all" or a topic type). Raises QuizError when the KB cannot carry that many."""
    if scope not in SCOPES:
        raise QuizError("quiz.bad_scope", f"scope must be one of {', '.join(SCOPES)}")
    count = max(MIN_QUESTIONS, min(MAX_QUESTIONS, int(count)))
    rng = random.Random(seed)
    topics = [t for t in topics if t.label.strip()]
    by_slug = {t.slug: t for t in topics}
    rels = [r for r in relations if r.source in by_slug and r.target in by_slug and r.source != r.target]
    # one label per option: topics whose folded label repeats are never offered
    label_counts: dict[str, int] = {}
    for t in topics:
        label_counts[fold(t.label)] = label_counts.get(fold(t.label), 0) + 1
    offerable = [t for t in topics if label_counts[fold(t.label)] == 1]
    of_type: dict[str, list[Topic]] = {k: [t for t in offerable if t.type == k] for k in TOPIC_TYPES}

    def in_scope(t: Topic) -> bool:
        return scope == "all" or t.type == scope

    def options_for(answer: Topic, excluded: set[str]) -> tuple[tuple[str, ...], tuple[str, ...], int] | None:
        pool = [t for t in of_type[answer.type] if t.slug != answer.slug and t.slug not in excluded]
        if len(pool) < OPTIONS - 1:
            return None
        chosen = rng.sample(pool, OPTIONS - 1) + [answer]
        rng.shuffle(chosen)
        return tuple(t.label for t in chosen), tuple(t.slug for t in chosen), chosen.index(answer)

    candidates: list[Question] = []
    descriptions: dict[str, int] = {}
    for t in topics:
        descriptions[fold(t.description)] = descriptions.get(fold(t.description), 0) + 1
    for t in offerable:
        if not in_scope(t) or not t.description.strip() or descriptions[fold(t.description)] > 1:
            continue
        made = options_for(t, set())
        if made:
            candidates.append(Question(f"description:{t.slug}", "description",
                                       msg("quiz.prompt_description", description=t.description), *made, t.slug))

    def relation_questions(kind: str, answer_is_target: bool) -> None:
        # subject -> the set of topics that answer "which topic has this relation with subject"
        answers: dict[str, set[str]] = {}
        for r in rels:
            if r.type != kind:
                continue
            subject, answer = (r.source, r.target) if answer_is_target else (r.target, r.source)
            answers.setdefault(subject, set()).add(answer)
        for subject, right in sorted(answers.items()):
            good = [by_slug[s] for s in sorted(right) if s in by_slug and in_scope(by_slug[s])
                    and label_counts[fold(by_slug[s].label)] == 1]
            if not good:
                continue
            made = options_for(rng.choice(good), right | {subject})  # no distractor may also be right
            if made:
                prompt = msg(f"quiz.prompt_{kind}", subject=_short(by_slug[subject].label))
                candidates.append(Question(f"{kind}:{subject}", kind, prompt, *made, subject))

    relation_questions("part_of", answer_is_target=False)
    relation_questions("executed_by", answer_is_target=True)
    relation_questions("depends_on", answer_is_target=True)

    if len(candidates) < MIN_QUESTIONS:
        raise QuizError("quiz.too_small", f"the knowledge base carries {len(candidates)} questions, a quiz needs "
                        f"{MIN_QUESTIONS}", possible=len(candidates), minimum=MIN_QUESTIONS)
    # a mix of kinds: round-robin over the shuffled kinds
    by_kind: dict[str, list[Question]] = {}
    for q in candidates:
        by_kind.setdefault(q.kind, []).append(q)
    for qs in by_kind.values():
        rng.shuffle(qs)
    picked: list[Question] = []
    kinds = sorted(by_kind)
    rng.shuffle(kinds)
    while len(picked) < count and any(by_kind.values()):
        for kind in kinds:
            if by_kind[kind] and len(picked) < count:
                picked.append(by_kind[kind].pop())
    return picked


def score(questions: Iterable[Question], answers: dict[str, int]) -> Score:
    """Each question with the option the learner chose (None when skipped)."""
    return Score(tuple(Review(q, answers.get(q.id)) for q in questions))


# -- the lock ---------------------------------------------------------------------------------


def expires_at(started: datetime, minutes: int = QUIZ_MAX_MINUTES) -> datetime:
    return started + timedelta(minutes=minutes)
