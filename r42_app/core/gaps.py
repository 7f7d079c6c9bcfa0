"""Knowledge gaps (issue 28): the questions of the question log that went unanswered or badly answered, in
groups of questions that ask the same thing.

A question counts as a miss when its answer was not grounded (core/relevance.py said the knowledge base has
nothing on it), when its retrieval score was low, when its answer got a thumbs-down, or when the same learner
asked again at once in other words (the rephrasing says the first answer did not help). Misses are grouped by
the cosine of their embeddings (the multilingual model: a Dutch and an English rephrasing land together).

Raw vectors of the small e5 model all sit within ~0.2 cosine of each other, and two English questions on
different subjects sit closer than a Dutch and an English one on the same subject. So each question's vector
is first centred on the mean of its language (the tenant's questions in that language, with the general
questions of core/gaps_background.py as a prior while there are few), which leaves what it is about; then
hierarchical grouping with LINKAGE linkage is cut at GROUP_SIMILARITY (bench/bench_gaps.py chose both on its
development set: pairwise F1 0.58 on the raw vectors, 0.72 centred; see docs/BENCHMARKS.md for the held-out set).

Pure: the caller gives the rows and their vectors (services/gaps.py embeds and reads PocketBase).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

GROUP_SIMILARITY = 0.12  # the cut, in centred cosine (bench/bench_gaps.py chose it on its development set)
LINKAGE = "complete"  # every two questions of a group at least that close: no chains across subjects
PRIOR_WEIGHT = 40  # the background questions count as this many of the tenant's own in a language's mean
LOW_SCORE = 0.0  # a best score at or below this is a miss even when grounded (no hit at all)
REPHRASE_WINDOW_S = 180  # the same learner asking again within this, in other words, marks the first a miss
MAX_EXAMPLES = 20
MAX_GROUPED = 3000  # the newest misses grouped at once (average linkage holds n² similarities)


@dataclass(frozen=True)
class Asked:
    """One row of the question log, as the gaps report reads it."""

    id: str
    question: str
    user_key: str
    created: datetime
    grounded: bool
    best_score: float = 0.0
    feedback: str = ""
    sources: Sequence[str] = ()


@dataclass
class Gap:
    id: str
    questions: list[Asked]
    closest: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.questions)

    @property
    def learners(self) -> int:
        return len({q.user_key for q in self.questions})

    @property
    def last(self) -> datetime:
        return max(q.created for q in self.questions)

    def examples(self, limit: int = MAX_EXAMPLES) -> list[str]:
        """The group's questions, newest first, each wording once."""
        seen: dict[str, None] = {}
        for q in sorted(self.questions, key=lambda q: q.created, reverse=True):
            seen.setdefault(q.question, None)
        return list(seen)[:limit]


def _unit(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim != 2:
        raise ValueError("vectors must be a 2-d array, one row per question")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


# Function words of questions that only one of the two languages uses ("is", "in", "of", "we", "was" are both).
_EN = frozenset("the and to that for it with as on be are this by an or from which can not you what how do does i my "
                "where when who if get there any at me am your our will should would could much many have has need "
                "a after off up after does did".split())
_NL = frozenset("de het een en van dat op te voor met zijn niet aan er als bij om ook wordt worden naar wat hoe ik "
                "mijn kan waar wanneer wie moet mag heb hebben je krijg welke hoeveel nog geen dan na".split())


def language(text: str) -> str:
    """"en" or "nl" (the default), from the question's function words."""
    words = re.findall(r"\w+", text.lower())
    return "en" if sum(w in _EN for w in words) > sum(w in _NL for w in words) else "nl"


def centred(vectors: np.ndarray, languages: Sequence[str], background: dict[str, np.ndarray] | None = None,
            prior_weight: float = PRIOR_WEIGHT) -> np.ndarray:
    """Each vector minus its language's mean (of these vectors, pulled toward `background[language]`, the mean of
    general questions, with the weight of `prior_weight` of them), at unit length."""
    unit = _unit(vectors)
    if len(unit) == 0:
        return unit
    langs = np.asarray(list(languages))
    out = np.empty_like(unit)
    for lang in set(langs.tolist()):
        mask = langs == lang
        total, weight = unit[mask].sum(axis=0), float(mask.sum())
        if background is not None and lang in background:
            total, weight = total + prior_weight * np.asarray(background[lang], dtype=np.float32), weight + prior_weight
        out[mask] = unit[mask] - total / weight
    return _unit(out)


def misses(rows: Sequence[Asked], unit: np.ndarray, similarity: float = GROUP_SIMILARITY) -> list[int]:
    """The indexes of the rows that went unanswered or badly answered (`unit`: their centred vectors)."""
    out = set()
    for i, row in enumerate(rows):
        if not row.grounded or row.best_score <= LOW_SCORE or row.feedback == "down":
            out.add(i)
    by_user: dict[str, list[int]] = {}
    for i in sorted(range(len(rows)), key=lambda i: rows[i].created):
        by_user.setdefault(rows[i].user_key, []).append(i)
    for asked in by_user.values():
        for a, b in zip(asked, asked[1:]):
            gap = (rows[b].created - rows[a].created).total_seconds()
            if 0 <= gap <= REPHRASE_WINDOW_S and rows[a].question != rows[b].question \
                    and float(unit[a] @ unit[b]) >= similarity:
                out.add(a)
    return sorted(out)


def cluster(vectors: np.ndarray, similarity: float = GROUP_SIMILARITY, method: str = LINKAGE) -> list[list[int]]:
    """Hierarchical groups (`method` linkage) of the rows, cut where the cosine falls under `similarity`; largest
    first. Give centred vectors (`centred`)."""
    unit = _unit(vectors)
    n = len(unit)
    if n == 0:
        return []
    if n == 1:
        return [[0]]
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import pdist

    distances = np.clip(pdist(unit, metric="cosine"), 0.0, 2.0)
    labels = fcluster(linkage(distances, method=method), t=1.0 - similarity,  # type: ignore[call-overload, arg-type]
                      criterion="distance")
    groups: dict[int, list[int]] = {}
    for i, label in enumerate(labels):
        groups.setdefault(int(label), []).append(i)
    return sorted(groups.values(), key=lambda g: (-len(g), g[0]))


def gap_id(questions: Sequence[Asked]) -> str:
    """A group's id: from its oldest question's row, so it stays while new questions join the group."""
    oldest = min(questions, key=lambda q: (q.created, q.id))
    return hashlib.sha256(oldest.id.encode()).hexdigest()[:12]


def find_gaps(rows: Sequence[Asked], vectors: np.ndarray, background: dict[str, np.ndarray] | None = None,
              similarity: float = GROUP_SIMILARITY) -> list[Gap]:
    """The groups of missed questions, most asked first (then most recent). `vectors`: the rows' query embeddings;
    `background`: the mean embedding of general questions per language (core/gaps_background.py)."""
    if len(rows) != len(vectors):
        raise ValueError("one vector per row")
    unit = centred(vectors, [language(r.question) for r in rows], background)
    missed = misses(rows, unit, similarity)
    missed = sorted(missed, key=lambda i: rows[i].created, reverse=True)[:MAX_GROUPED]
    if not missed:
        return []
    sub = unit[missed]
    gaps = []
    for members in cluster(sub, similarity):
        asked = [rows[missed[m]] for m in members]
        closest = [slug for slug, _n in Counter(s for q in asked for s in q.sources[:3]).most_common(3)]
        gaps.append(Gap(gap_id(asked), asked, closest))
    return sorted(gaps, key=lambda g: (-g.count, -g.last.timestamp()))


def pairwise_f1(truth: Sequence[str], predicted: Sequence[int]) -> tuple[float, float, float]:
    """(precision, recall, F1) over pairs: together when they should be, apart when they should not."""
    n = len(truth)
    tp = fp = fn = 0
    for i in range(n):
        for j in range(i + 1, n):
            same, together = truth[i] == truth[j], predicted[i] == predicted[j]
            tp += same and together
            fp += together and not same
            fn += same and not together
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


_LEAD = re.compile(r"^(?:(?:hoe|waar|wat|wanneer|wie|welke|waarom|hoeveel|kan|kun|mag|moet|heb|krijg|is|zijn|zit|"
                   r"how|where|what|when|who|which|why|can|do|does|is|are|should|may)\b[\s,]*)+"
                   r"(?:(?:ik|je|we|wij|er|men|i|you|we|there|a|an|the|de|het|een|mijn|my)\b\s*)*", re.I)
_TAIL = re.compile(r"\b(?:aan|aanvragen|doen|krijgen|vinden|zien|nu)\s*$", re.I)


def draft_topic(gap: Gap) -> dict[str, str]:
    """A draft topic for a gap, from its questions (no model): a label from its shortest Dutch question without
    the question words, a description that says it is a draft and which questions it should answer."""
    examples = gap.examples(5)
    dutch = [q for q in examples if language(q) == "nl"] or examples
    shortest = min(dutch, key=len) if dutch else ""
    label = _LEAD.sub("", shortest.strip().rstrip("?!. ")).strip()
    label = _TAIL.sub("", label).strip() or shortest.rstrip("?")
    label = (label[:1].upper() + label[1:])[:80]
    listed = "; ".join(f"“{q}”" for q in examples[:3])
    return {"label": label, "type": "concept",
            "description": f"Concept (uit Kennishiaten): beantwoordt vragen als {listed}"[:500]}
