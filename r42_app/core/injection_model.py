"""The learned half of the injection markers: a linear model over hashed character and word n-grams.

A passage is scored window by window (`windows`: its paragraphs, a long one in runs of sentences) and its score
is the highest: an attack paragraph hidden in a long passage is not diluted by the ordinary text around it, and
the ordinary text of a handbook is judged paragraph by paragraph, as the model was trained.

Pure Python at inference (~0.1-0.3 ms a window). Its weights are trained at setup from public attack corpora
and benign prose (`python -m bench.injection_learned`, run by `make setup`; never committed) and loaded by
`services.injection`; `core.injection` adds a `learned` marker when the model flags a text. How it was trained
and how it fares on attacks and text it never saw: docs/BENCHMARKS.md.
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
FEATURES = "ngrams-windows-v2"  # what a model file's weights are for; another version is refused whole
_WORDS = re.compile(r"[a-z0-9']+(?:-[a-z0-9']+)*")  # a hyphenated word is one (e-mail, aow-leeftijd)
_PARAGRAPHS = re.compile(r"\n\s*\n")
_SENTENCES = re.compile(r"(?<=[.!?:;])\s+")
WINDOW_WORDS = 80  # a paragraph longer than this is scored in runs of sentences of about this many words
MAX_WINDOWS = 24  # at most this many windows of a text are scored (a passage has a handful)


def windows(text: str) -> list[str]:
    """What `LinearModel.score` reads: each paragraph of `text`, a long one cut into runs of whole sentences of
    about WINDOW_WORDS words (with one sentence of overlap); the whole text when it is a single short one."""
    out: list[str] = []
    for para in _PARAGRAPHS.split(text or ""):
        words = para.split()
        if not words:
            continue
        if len(words) <= WINDOW_WORDS * 1.5:
            out.append(para)
            continue
        run: list[str] = []
        count = 0
        for sentence in _SENTENCES.split(para):
            run.append(sentence)
            count += len(sentence.split())
            if count >= WINDOW_WORDS:
                out.append(" ".join(run))
                run, count = run[-1:], len(run[-1].split())
        if len(run) > 1 or not out:
            out.append(" ".join(run))
    return out[:MAX_WINDOWS] or [text or ""]


def features(text: str) -> dict[int, float]:
    """Hashed, l2-normalised counts of character 3- to 5-grams inside words (with a space on each side, so word
    starts and ends count) and of word uni- and bigrams."""
    folded = fold(text or "")[:4000]
    words = _WORDS.findall(folded)
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
    """`score(text)` is the model's probability that the text holds an injection attempt: the highest of its
    windows' (see `windows`)."""

    weights: dict[int, float]
    bias: float
    threshold: float
    meta: dict[str, Any] = field(default_factory=dict)

    def window_score(self, text: str) -> float:
        z = self.bias + sum(self.weights.get(k, 0.0) * v for k, v in features(text).items())
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))

    def score(self, text: str) -> float:
        return max(self.window_score(w) for w in windows(text))

    def flags(self, text: str) -> bool:
        return self.score(text) >= self.threshold

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LinearModel:
        """From the JSON the trainer writes; ValueError on anything else (a damaged file, or one trained for other
        features, is never half used)."""
        try:
            weights = {int(k): float(v) for k, v in dict(data["weights"]).items()}
            model = cls(weights, float(data["bias"]), float(data["threshold"]), dict(data.get("meta") or {}))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"not an injection model: {exc}") from exc
        bad = any(k < 0 or k >= DIM or not math.isfinite(v) for k, v in weights.items())
        if bad or not weights or not 0.0 < model.threshold < 1.0:
            raise ValueError("not an injection model: threshold, feature index or weight out of range")
        if model.meta.get("features") != FEATURES:
            raise ValueError(f"an injection model for other features ({model.meta.get('features')!r}, not "
                             f"{FEATURES!r}): make setup trains it again")
        return model

    def as_dict(self) -> dict[str, Any]:
        return {"weights": {str(k): round(v, 5) for k, v in self.weights.items()}, "bias": self.bias,
                "threshold": self.threshold, "meta": {**self.meta, "features": FEATURES}}
