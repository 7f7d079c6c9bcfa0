"""Ranking metrics for `r42 eval retrieval`: nDCG@k, Recall@k and MRR@k with graded relevance."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def ndcg_at_k(ranked: Sequence[str], rel: Mapping[str, float], k: int = 10) -> float:
    """Normalised discounted cumulative gain with gain 2^grade - 1."""
    gains = [(2 ** rel.get(doc, 0) - 1) / math.log2(i + 2) for i, doc in enumerate(ranked[:k])]
    ideal = sorted(rel.values(), reverse=True)[:k]
    best = sum((2 ** g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return sum(gains) / best if best > 0 else 0.0


def recall_at_k(ranked: Sequence[str], rel: Mapping[str, float], k: int = 10) -> float:
    relevant = {d for d, g in rel.items() if g > 0}
    return len(relevant & set(ranked[:k])) / len(relevant) if relevant else 0.0


def mrr_at_k(ranked: Sequence[str], rel: Mapping[str, float], k: int = 10) -> float:
    for i, doc in enumerate(ranked[:k]):
        if rel.get(doc, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0
