"""The learned half of the injection markers: a linear model over hashed character and word n-grams.

Pure Python at inference (~0.2 ms for a snippet). Its weights are trained at setup from public
attack corpora (`python -m bench.injection_learned`, run by `make setup`; never committed) and
loaded by `services.injection`; `core.injection` adds a `learned` marker when the model flags a text.
How it was trained and how it fares on attacks it never saw: docs/BENCHMARKS.md.
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from r42_app.core.text import fold

DIM = 1 << 18
_WORDS = re.compile(r"[a-z0-9']+")


def features(text: str) -> dict[int, float]:
    """Hashed, l2-normalised counts of character 3- to 5-grams inside words (with a space on each side,
    so word starts and ends count) and of word uni- and bigrams."""
    words = _WORDS.findall(fold(text or "")[:4000])
    counts: dict[int, float] = {}

    def add(gram: str) -> None:
        key = zlib.crc32(gram.encode()) % DIM
        counts[key] = counts.get(key, 0.0) + 1.0

    for i, word in enumerate(words):
        add("w:" + word)
        if i:
            add(f"b:{words[i - 1]} {word}")
        padded = f" {word} "
        for n in (3, 4, 5):
            for start in range(max(1, len(padded) - n + 1)):
                add("c:" + padded[start:start + n])
    norm = math.sqrt(sum(v * v for v in counts.values())) or 1.0
    return {k: v / norm for k, v in counts.items()}


@dataclass
class LinearModel:
    """`score(text)` is the model's probability that the text is an injection attempt."""

    weights: dict[int, float]
    bias: float
    threshold: float
    meta: dict[str, Any] = field(default_factory=dict)

    def score(self, text: str) -> float:
        z = self.bias + sum(self.weights.get(k, 0.0) * v for k, v in features(text).items())
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))

    def flags(self, text: str) -> bool:
        return self.score(text) >= self.threshold

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LinearModel:
        """From the JSON the trainer writes; ValueError on anything else (a damaged file is never half used)."""
        try:
            weights = {int(k): float(v) for k, v in dict(data["weights"]).items()}
            model = cls(weights, float(data["bias"]), float(data["threshold"]), dict(data.get("meta") or {}))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"not an injection model: {exc}") from exc
        bad = any(k < 0 or k >= DIM or not math.isfinite(v) for k, v in weights.items())
        if bad or not weights or not 0.0 < model.threshold < 1.0:
            raise ValueError("not an injection model: threshold, feature index or weight out of range")
        return model

    def as_dict(self) -> dict[str, Any]:
        return {"weights": {str(k): round(v, 5) for k, v in self.weights.items()}, "bias": self.bias,
                "threshold": self.threshold, "meta": self.meta}
