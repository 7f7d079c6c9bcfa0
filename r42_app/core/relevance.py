"""Whether the knowledge base has something relevant to a question: the signal that lets the offline answer
abstain ("niets gevonden"), tells the model when nothing relevant was found, and goes out as `grounded`.

The thresholds were chosen on the dev half of tests/data/abstain_nl.jsonl (off-topic and on-topic Dutch
questions on the demo KB) and checked on its held-out half: bench/bench_abstain.py prints both. The cosine
thresholds hold for the multilingual model (multilingual-e5-small, whose cosines sit in a narrow high band);
with another embedding model, or none, only the lexical rule applies.
"""

from __future__ import annotations

from dataclasses import dataclass

# the question is close in meaning to a passage: relevant whatever its words
SEMANTIC_SURE = 0.895
# close enough in meaning when the words back it up: a passage scores this much BM25 (raw, not normalised)
SEMANTIC_WITH_WORDS = 0.85
LEXICAL_WITH_MEANING = 6.0
# without usable embeddings: a strong BM25 match and most of the question's terms known to the KB
LEXICAL_ONLY = 5.0
COVERAGE_ONLY = 0.6


@dataclass(frozen=True)
class Relevance:
    """What retrieval saw of a question, before any ranking was normalised."""

    named: bool = False  # the question names a topic by its exact label or id
    lexical: float = 0.0  # the best passage's BM25 (with the compound fallback)
    coverage: float = 0.0  # share of the question's terms that occur in the KB
    semantic: float | None = None  # the best passage's cosine, when the model's thresholds are known

    @property
    def grounded(self) -> bool:
        """True when an answer may rest on the KB; False means "nothing about this in the knowledge base"."""
        if self.named:
            return True
        if self.semantic is None:
            return self.lexical >= LEXICAL_ONLY and self.coverage >= COVERAGE_ONLY
        return self.semantic >= SEMANTIC_SURE or (self.semantic >= SEMANTIC_WITH_WORDS
                                                  and self.lexical >= LEXICAL_WITH_MEANING)
