"""Grouping of missed questions (issue 28), on paraphrased learner questions written by the R42 team: each group
asks one thing in 3-6 rephrasings, Dutch with English ones among them, and neighbouring groups are close on
purpose (asking for leave vs how many days are left).

- bench/data/gap_questions.json, 36 groups: the development set. The methods and cuts were chosen on it; the
  sweep below is on it.
- bench/data/gap_questions_test.json, 16 groups: written after the first method (centring, complete linkage) was
  chosen and measured once at it. Its figures for the methods tried on 2026-12-03 were seen while choosing
  (its misses were not read): it is no longer unseen.
- bench/data/gap_questions_unseen.json, 24 groups on other subjects, written on 2026-12-03 before that day's
  experiments; its misses were read while choosing: a development set now.
- bench/data/gap_questions_final.json, 22 groups on other subjects again, written after the locally scaled method
  was chosen: measured at its settings, its misses not read. Its figures for two cuts of the refining step were
  seen while choosing that step (late 2026-12-03): it no longer counts as unseen.
- bench/data/gap_questions_blind.json, 32 groups on other subjects again, written late on 2026-12-03 before any
  figure on it: measured with the two candidate methods, its misses not read; its figures were in view when the
  refining step was adopted: seen.
- bench/data/gap_questions_sixth.json, 34 groups on other subjects again, written on 2026-12-04 by a helper who
  had seen neither the grouping's misses nor the other sets' questions, and measured with the two methods that
  existed then. That the refining step gained there too (as on every set before) made it the committed method,
  so this set chose between two methods: seen.
- bench/data/gap_questions_seventh.json, 34 groups on other subjects again, written on 2026-12-04 by another
  helper after the refining step was adopted: measured at the committed settings only, its misses not read.

Reported: the pairwise precision, recall and F1 (pairs grouped together when they should be, apart when they
should not), against baselines in the same run: every wording its own group (a report without embeddings groups
only identical questions), TF-IDF words, the raw e5 vectors, the centred vectors with complete linkage, and the
locally scaled vectors with average linkage alone (before the refining step). A tenant's log holds a few
groups among single questions, not 36 neighbouring groups at once, so the F1 is also measured on random draws of
2-7 groups with up to 9 single questions of other groups. And the cost per 1,000 questions on this machine: the
embedding (one thread) and the grouping."""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np

from r42_app.core.gaps import (
    GROUP_CUT,
    LINKAGE,
    MAX_GROUPED,
    NEIGHBOURS,
    PAIR_CUT,
    centred,
    cluster,
    group,
    language,
    link,
    pairwise_f1,
    refine,
    scaled,
)

DATA = Path(__file__).resolve().parent / "data"
SETS = (("development", "gap_questions.json"), ("held-out, seen", "gap_questions_test.json"),
        ("2026-12-03, read", "gap_questions_unseen.json"), ("final, seen", "gap_questions_final.json"),
        ("blind, seen", "gap_questions_blind.json"), ("sixth, seen", "gap_questions_sixth.json"),
        ("seventh, unseen", "gap_questions_seventh.json"))
SWEEP = (-0.14, -0.10, -0.08, -0.06, -0.04, -0.02, 0.0, 0.04)
REFINE_SWEEP = (-0.16, -0.14, -0.12, -0.10, -0.08, -0.06, -0.04)
DRAWS = 40
SMALL_DRAWS = 60
PAIR_SWEEP = (None, 0.0, 0.1, 0.2, 0.3)  # None: no pair is parted
Grouping = Callable[[np.ndarray], list[list[int]]]


def load(path: Path) -> tuple[list[str], list[str]]:
    """(questions, their group ids)."""
    questions, groups = [], []
    for entry in json.loads(path.read_text(encoding="utf-8"))["groups"]:
        questions.extend(entry["questions"])
        groups.extend([entry["id"]] * len(entry["questions"]))
    return questions, groups


def labels(groups: list[list[int]], n: int) -> list[int]:
    out = [0] * n
    for label, members in enumerate(groups):
        for m in members:
            out[m] = label
    return out


def tfidf(texts: list[str]) -> np.ndarray:
    words = [re.findall(r"\w+", t.lower()) for t in texts]
    vocab = {w: i for i, w in enumerate(sorted({w for ws in words for w in ws}))}
    df = Counter(w for ws in words for w in set(ws))
    out = np.zeros((len(texts), len(vocab)), dtype=np.float32)
    for row, ws in enumerate(words):
        for w, c in Counter(ws).items():
            out[row, vocab[w]] = c * np.log(len(texts) / df[w])
    return out


def subsets(truth: list[str], seed: int = 7) -> list[list[int]]:
    """DRAWS random logs: 2-7 whole groups and 0-9 single questions of other groups (indexes)."""
    rng = np.random.default_rng(seed)
    names = sorted(set(truth))
    out = []
    for _ in range(DRAWS):
        picked = set(rng.choice(names, size=int(rng.integers(2, 8)), replace=False).tolist())
        members = [i for i, g in enumerate(truth) if g in picked]
        others = [i for i, g in enumerate(truth) if g not in picked]
        members += rng.choice(others, size=int(rng.integers(0, 10)), replace=False).tolist()
        out.append(members)
    return out


def singles(truth: list[str], size: int, seed: int = 11) -> list[list[int]]:
    """SMALL_DRAWS random logs of `size` questions, each of another group (indexes)."""
    rng = np.random.default_rng(seed)
    names = sorted(set(truth))
    by_group = {name: [i for i, g in enumerate(truth) if g == name] for name in names}
    return [[int(rng.choice(by_group[name])) for name in rng.choice(names, size=size, replace=False)]
            for _ in range(SMALL_DRAWS)]


def run() -> str:
    from r42_app.services.adapters.e5 import E5Model
    from r42_app.services.gaps import background

    model = E5Model(threads=1)
    means, pool = background(model.encode_queries)
    sets = []
    started, count = time.process_time(), 0
    for name, file in SETS:
        questions, truth = load(DATA / file)
        raw = model.encode_queries(questions)
        count += len(questions)
        sets.append((name, questions, truth, raw, [language(q) for q in questions]))
    embed_ms = (time.process_time() - started) / count * 1000

    def centred_of(raw: np.ndarray, langs: list[str]) -> np.ndarray:
        return centred(raw, langs, means)

    methods: list[tuple[str, Callable[[list[str], np.ndarray, list[str]], list[list[int]]]]] = [
        ("baseline: every wording its own group", lambda q, raw, langs: [[i] for i in range(len(q))]),
        ("baseline: TF-IDF words, average linkage 0.3", lambda q, raw, langs: cluster(tfidf(q), 0.3, "average")),
        ("baseline: raw e5 vectors, average linkage 0.86", lambda q, raw, langs: cluster(raw, 0.86, "average")),
        ("previous: centred e5, complete linkage 0.12",
         lambda q, raw, langs: cluster(centred_of(raw, langs), 0.12, "complete")),
        ((f"previous (2026-12-03): centred e5, locally scaled ({NEIGHBOURS} neighbours, the general questions among "
          f"them), {LINKAGE} linkage {GROUP_CUT}"), lambda q, raw, langs: link(scaled(centred_of(raw, langs), pool))),
        (f"previous (2026-12-04): the same, then refined by local moves at the same cut ({GROUP_CUT})",
         lambda q, raw, langs: group(scaled(centred_of(raw, langs), pool), pair_cut=None)),
        ((f"**committed (2026-12-07): the same, a group of two parted under {PAIR_CUT}**"),
         lambda q, raw, langs: group(scaled(centred_of(raw, langs), pool))),
    ]

    def measure(how, questions, truth, raw, langs) -> tuple[float, float, float]:
        return pairwise_f1(truth, labels(how(questions, raw, langs), len(questions)))

    fmt = lambda r: f"{r[0]:.3f} / {r[1]:.3f} / **{r[2]:.3f}**"  # noqa: E731
    described = "; ".join(f"{name}: {len(set(t))} groups, {len(q)} questions ({sum(x == 'en' for x in ln)} English)"
                          for name, q, t, _raw, ln in sets)
    lines = [f"Sets: {described}.", "",
             "| grouping | " + " | ".join(f"{name} P / R / F1" for name, *_ in sets) + " |",
             "|---|" + "---|" * len(sets)]
    for title, how in methods:
        lines.append(f"| {title} | " + " | ".join(fmt(measure(how, q, t, raw, ln)) for _n, q, t, raw, ln in sets)
                     + " |")
    dutch = []
    for _n, q, t, raw, ln in sets:
        keep = [i for i, lang in enumerate(ln) if lang == "nl"]
        f1 = measure(methods[-1][1], [q[i] for i in keep], [t[i] for i in keep], raw[keep], ["nl"] * len(keep))[2]
        dutch.append(f"{f1:.3f}")
    lines += ["", "The committed grouping on the Dutch questions only (the English rephrasings left out), F1: "
              + " / ".join(dutch) + "."]
    nearest = []
    for _n, _q, t, raw, ln in sets:
        sims = scaled(centred_of(raw, ln), pool)
        np.fill_diagonal(sims, -np.inf)
        nearest.append(f"{np.mean([t[i] == t[j] for i, j in enumerate(sims.argmax(axis=1))]):.3f}")
    lines += ["", "Nearest-neighbour accuracy, committed similarities (a question's nearest other question asks the "
              "same thing; a rough ceiling: a question whose nearest neighbour is in another group is seldom grouped "
              "right): " + " / ".join(nearest) + "."]
    lines += ["", (f"Mean F1 over {DRAWS} random logs of 2-7 groups and 0-9 single questions of other groups "
                   "(the same draws for every method):"), "",
              "| grouping | " + " | ".join(name for name, *_ in sets) + " |", "|---|" + "---|" * len(sets)]
    for title, how in methods[3:]:
        cells = []
        for _n, q, t, raw, ln in sets:
            scores = []
            for members in subsets(t):
                scores.append(measure(how, [q[i] for i in members], [t[i] for i in members], raw[members],
                                      [ln[i] for i in members])[2])
            cells.append(f"{np.mean(scores):.3f}")
        lines.append(f"| {title.strip('*')} | " + " | ".join(cells) + " |")
    lines += ["", ("Small logs: logs of a few single questions, each of another group (so none should be grouped with "
                   f"another), {SMALL_DRAWS} per size and set: the share of logs in which the report groups any two "
                   "(lower is better; the sets' groups are neighbours on purpose, so some of five are near):"), "",
              "| grouping | log of | " + " | ".join(name for name, *_ in sets) + " |", "|---|---|" + "---|" * len(sets)]
    def grouped_share(raw: np.ndarray, langs: list[str], draws: list[list[int]], pair_cut: float | None) -> float:
        """The share of `draws` (logs of single questions) in which the report groups any two."""
        return float(np.mean([any(len(g) > 1 for g in group(scaled(centred_of(raw[d], [langs[i] for i in d]), pool),
                                                            pair_cut=pair_cut)) for d in draws]))

    for title, pair_cut in (("previous (2026-12-04)", None), (f"committed (parted under {PAIR_CUT})", PAIR_CUT)):
        for size in (2, 5):
            cells = [f"{grouped_share(raw, ln, singles(t, size), pair_cut):.2f}" for _n, _q, t, raw, ln in sets]
            lines.append(f"| {title} | {size} questions | " + " | ".join(cells) + " |")
    lines += ["", ("The cut for a group of two, tried on every set (all seven seen for this choice; F1 of the whole "
                   "set / mean F1 of the random logs above / share of two-question logs grouped):"), "",
              "| set | " + " | ".join("none" if c is None else f"{c:.2f}" for c in PAIR_SWEEP) + " |",
              "|---|" + "---|" * len(PAIR_SWEEP)]
    for name, q, t, raw, ln in sets:
        cells = []
        for pair_cut in PAIR_SWEEP:
            how = lambda q, raw, langs, c=pair_cut: group(scaled(centred_of(raw, langs), pool), pair_cut=c)  # noqa: E731
            sub = np.mean([measure(how, [q[i] for i in m], [t[i] for i in m], raw[m], [ln[i] for i in m])[2]
                           for m in subsets(t)])
            two = grouped_share(raw, ln, singles(t, 2), pair_cut)
            cells.append(f"{measure(how, q, t, raw, ln)[2]:.3f} / {sub:.3f} / {two:.2f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    _n, q, t, raw, ln = sets[0]
    dev = scaled(centred_of(raw, ln), pool)
    lines += ["", "The cut of the linkage, swept on the development set only (before the refining step):", "",
              "| linkage | " + " | ".join(f"{c:+.2f}" for c in SWEEP) + " |", "|---|" + "---|" * len(SWEEP)]
    for method in ("average", "complete"):
        lines.append(f"| {method} | " + " | ".join(f"{pairwise_f1(t, labels(link(dev, c, method), len(q)))[2]:.3f}"
                                                   for c in SWEEP) + " |")
    lines += ["", (f"The cut of the refining step (after average linkage at {GROUP_CUT}), on the three sets read "
                   "while it was tried on 2026-12-03 (F1 of the whole set):"), "",
              "| set | " + " | ".join(f"{c:+.2f}" for c in REFINE_SWEEP) + " |", "|---|" + "---|" * len(REFINE_SWEEP)]
    for name, q, t, raw, ln in sets[:3]:
        sims = scaled(centred_of(raw, ln), pool)
        lines.append(f"| {name} | " + " | ".join(
            f"{pairwise_f1(t, labels(refine(sims, link(sims), c), len(q)))[2]:.3f}" for c in REFINE_SWEEP) + " |")
    everything = np.concatenate([centred_of(raw, ln) for _n, _q, _t, raw, ln in sets])
    costs = []
    for size in (1000, MAX_GROUPED):
        vectors = np.concatenate([everything] * (size // len(everything) + 1))[:size]
        vectors = vectors + np.random.default_rng(7).normal(0, 0.01, vectors.shape).astype(np.float32)
        started = time.process_time()
        sims = scaled(vectors, pool)
        linked = link(sims)
        link_ms = (time.process_time() - started) * 1000
        refine(sims, linked)
        costs.append(f"{size:,} misses {link_ms:.0f} ms + {(time.process_time() - started) * 1000 - link_ms:.0f} ms")
    lines += ["", (f"Cost per 1,000 questions (CPU, one thread, this machine): embedding {embed_ms:.1f} s "
              f"({embed_ms:.1f} ms a question; a turn embeds its question anyway, the report embeds again). "
              f"Scaling and linking, plus the refining step: {'; '.join(costs)} (the report groups at most "
              f"{MAX_GROUPED:,}, the newest).")]
    return "\n".join(lines)
