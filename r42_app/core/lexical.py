"""Lexical retrieval over topics: TF-IDF and BM25 on sparse matrices, with the Dutch compound fallback.

Compound fallback (the R42 rule): a query term of at least `COMPOUND_MIN_LEN` characters that
matches no document term exactly also matches document terms that share a stem of at least
`COMPOUND_MIN_LEN` characters with it, or that contain it or are contained in it, at
`COMPOUND_WEIGHT` of the weight of an exact match. So `pensioen` finds `pensioenregeling` and
`partnerpensioen`, and `overdragen` finds `waardeoverdracht` (shared stem `overdr`).

"Share a stem" is read as: the first `COMPOUND_MIN_LEN` characters of one term occur in the
other. That covers common prefixes (`pensioenen` / `pensioenregeling`) and a stem inside a
compound (`overdr`agen / waarde`overdr`acht). A contained term must have at least
`COMPOUND_MIN_CONTAINED` characters, so `pensioenfondsen` does not match every `en` or `de`.
A fallback adds its weight for every term it matches: on the Dutch evaluation set summing beat
taking only the best match or only the longest shared stems (docs/BENCHMARKS.md).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # scipy is imported where an index is built: a command that builds none starts ~0.1 s sooner
    from scipy import sparse

from r42_app.core.kb import Topic
from r42_app.core.text import tokenize

COMPOUND_MIN_LEN = 6
COMPOUND_MIN_CONTAINED = 5
COMPOUND_WEIGHT = 0.5
# Field weights: the label says most about a topic, then its one-sentence description.
LABEL_WEIGHT = 3
DESCRIPTION_WEIGHT = 2
CONTENT_WEIGHT = 1
BM25_K1 = 1.5
BM25_B = 0.75
BM25_EPSILON = 0.25


def topic_terms(topic: Topic) -> list[str]:
    """The weighted bag of terms of a topic (fields repeated by weight, as rank_bm25 would see them)."""
    slug_words = topic.slug.replace("-", " ")
    return (
        tokenize(f"{topic.label} {slug_words}") * LABEL_WEIGHT
        + tokenize(topic.description) * DESCRIPTION_WEIGHT
        + tokenize(topic.content) * CONTENT_WEIGHT
    )


HEADING_WEIGHT = 2


def passage_terms(topic: Topic, heading: Sequence[str], text: str, first: bool) -> list[str]:
    """The weighted bag of terms of one passage: the topic's label (every passage is about its topic), its
    description (first passage only: said once per topic), the heading path, then the passage's text."""
    slug_words = topic.slug.replace("-", " ")
    return (
        tokenize(f"{topic.label} {slug_words}") * LABEL_WEIGHT
        + (tokenize(topic.description) * DESCRIPTION_WEIGHT if first else [])
        + tokenize(" ".join(heading)) * HEADING_WEIGHT
        + tokenize(text) * CONTENT_WEIGHT
    )


@dataclass(frozen=True)
class Hit:
    """A document index and its score."""

    doc: int
    score: float


class Vocabulary:
    """Term ids plus the n-gram lookups that make the compound fallback fast at 100k topics."""

    def __init__(self, terms: Iterable[str]):
        self.ids: dict[str, int] = {}
        for term in terms:
            self.ids.setdefault(term, len(self.ids))
        self._containing: dict[str, list[int]] = defaultdict(list)  # every 6-gram -> terms containing it
        self._prefixed: dict[str, list[int]] = defaultdict(list)  # 6-char prefix -> terms starting with it
        for term, tid in self.ids.items():
            if len(term) >= COMPOUND_MIN_LEN:
                self._prefixed[term[:COMPOUND_MIN_LEN]].append(tid)
                for gram in {term[i : i + COMPOUND_MIN_LEN] for i in range(len(term) - COMPOUND_MIN_LEN + 1)}:
                    self._containing[gram].append(tid)

    def __len__(self) -> int:
        return len(self.ids)

    def expand(self, term: str) -> list[tuple[int, float]]:
        """Vocabulary ids a query term matches, with their weight (1 exact, COMPOUND_WEIGHT fallback)."""
        exact = self.ids.get(term)
        if exact is not None:
            return [(exact, 1.0)]
        if len(term) < COMPOUND_MIN_LEN:
            return []
        matched: set[int] = set(self._containing.get(term[:COMPOUND_MIN_LEN], ()))
        for gram in {term[i : i + COMPOUND_MIN_LEN] for i in range(len(term) - COMPOUND_MIN_LEN + 1)}:
            matched.update(self._prefixed.get(gram, ()))  # each 6-gram once: a term has one prefix
        # Terms contained in this one: one of COMPOUND_MIN_LEN characters or more starts with a 6-gram of it, so
        # the prefixes above hold it already; only the shorter ones are looked up. (Every substring was, cubic in
        # a long query word: 2,000 letters took 0.8 s.)
        for short in range(COMPOUND_MIN_CONTAINED, COMPOUND_MIN_LEN):
            for start in range(len(term) - short + 1):
                tid = self.ids.get(term[start:start + short])
                if tid is not None:
                    matched.add(tid)
        return [(tid, COMPOUND_WEIGHT) for tid in sorted(matched)]


def _counts_matrix(docs: Sequence[Sequence[str]], vocab: Vocabulary) -> sparse.csr_matrix:
    rows, cols, vals = [], [], []
    for i, terms in enumerate(docs):
        for term, count in Counter(terms).items():
            rows.append(i)
            cols.append(vocab.ids[term])
            vals.append(count)
    from scipy import sparse

    return sparse.csr_matrix((np.array(vals, dtype=np.float64), (rows, cols)), shape=(len(docs), len(vocab)))


def top_hits(scores: np.ndarray, k: int) -> list[Hit]:
    """The k best positive scores as hits, best first (ties by index)."""
    return _top(scores, k)


def _top(scores: np.ndarray, k: int) -> list[Hit]:
    nonzero = np.flatnonzero(scores > 0)
    if nonzero.size == 0:
        return []
    if nonzero.size > k:
        part = np.argpartition(-scores[nonzero], k - 1)[:k]
        nonzero = nonzero[part]
    order = sorted(nonzero.tolist(), key=lambda i: (-scores[i], i))
    return [Hit(i, float(scores[i])) for i in order[:k]]


class _Index:
    def __init__(self, docs: Sequence[Sequence[str]]):
        self.n_docs = len(docs)
        self.vocab = Vocabulary(t for terms in docs for t in terms)
        self.counts = _counts_matrix(docs, self.vocab)

    def _query_weights(self, query_terms: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Matched vocabulary columns and their summed weights. A repeated query term counts again
        (as in rank_bm25); a compound fallback adds COMPOUND_WEIGHT for every term it matches."""
        weights: dict[int, float] = defaultdict(float)
        for term in query_terms:
            for tid, w in self.vocab.expand(term):
                weights[tid] += w
        return np.fromiter(weights.keys(), dtype=np.int64), np.fromiter(weights.values(), dtype=np.float64)

    def _scores(self, matrix: sparse.csc_matrix, query_terms: Sequence[str],
                column_scale: np.ndarray | None = None) -> np.ndarray:
        cols, weights = self._query_weights(query_terms)
        if cols.size == 0 or self.n_docs == 0:
            return np.zeros(self.n_docs)
        if column_scale is not None:
            weights = weights * column_scale[cols]
        return np.asarray(matrix[:, cols] @ weights).ravel()


def _base_values(base: _Index | None, vocab: Vocabulary,
                 base_values: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """For a delta segment: which of its terms the base knows (mask) and the base's value for them."""
    known = np.zeros(len(vocab), dtype=bool)
    values = np.zeros(len(vocab))
    if base is not None and base_values is not None:
        for term, tid in vocab.ids.items():
            bid = base.vocab.ids.get(term)
            if bid is not None:
                known[tid] = True
                values[tid] = base_values[bid]
    return known, values


class TfidfIndex(_Index):
    """Sublinear TF-IDF with L2-normalised document vectors; score = dot product with the query.

    With `base`, this is a delta segment: documents added after `base` was built, scored with the base's
    statistics (its idf for the terms it knows; a new term's idf from the base and delta together), so the
    two segments' scores are comparable and adding a document costs only the delta."""

    def __init__(self, docs: Sequence[Sequence[str]], base: TfidfIndex | None = None):
        super().__init__(docs)
        df = np.bincount(self.counts.indices, minlength=len(self.vocab))
        n = self.n_docs + (base.n_docs if base is not None else 0)
        self.idf = np.log((1 + n) / (1 + df)) + 1.0
        if base is not None:
            known, values = _base_values(base, self.vocab, base.idf)
            self.idf = np.where(known, values, self.idf)
        tf = self.counts.copy()
        tf.data = 1.0 + np.log(tf.data)
        # scipy-stubs type a sparse matrix times a 1-D array as dense; at run time it is a coo_matrix
        weighted = tf.multiply(self.idf).tocsr()  # type: ignore[attr-defined]
        norms = np.sqrt(np.asarray(weighted.multiply(weighted).sum(axis=1)).ravel())
        norms[norms == 0] = 1.0
        from scipy import sparse

        self.matrix = sparse.diags(1.0 / norms) @ weighted
        self._csc = self.matrix.tocsc()

    def scores(self, query_terms: Sequence[str]) -> np.ndarray:
        """Dot product of the query's tf-idf (query tf 1 per occurrence) with the document vectors."""
        return self._scores(self._csc, query_terms, self.idf)

    def search(self, query_terms: Sequence[str], k: int = 10) -> list[Hit]:
        return _top(self.scores(query_terms), k)


class BM25Index(_Index):
    """Okapi BM25 with exactly rank_bm25's BM25Okapi formula (k1, b, epsilon floor for negative idf),
    precomputed as one sparse term-weight matrix so a query is a few column sums."""

    idf: np.ndarray
    average_idf: float
    avgdl: float

    def __init__(self, docs: Sequence[Sequence[str]], k1: float = BM25_K1, b: float = BM25_B,
                 epsilon: float = BM25_EPSILON, base: BM25Index | None = None):
        """With `base`, a delta segment scored with the base's statistics (see TfidfIndex)."""
        super().__init__(docs)
        n = self.n_docs + (base.n_docs if base is not None else 0)
        df = np.bincount(self.counts.indices, minlength=len(self.vocab)).astype(np.float64)
        idf = np.log(n - df + 0.5) - np.log(df + 0.5) if n else df
        if base is not None:
            self.average_idf = base.average_idf
            idf = np.where(idf < 0, epsilon * self.average_idf, idf)
            known, values = _base_values(base, self.vocab, base.idf)
            idf = np.where(known, values, idf)
        else:
            self.average_idf = idf.sum() / len(idf) if len(idf) else 0.0
            if len(idf):
                idf = np.where(idf < 0, epsilon * self.average_idf, idf)
        self.idf = idf
        doc_len = np.array([len(d) for d in docs], dtype=np.float64)
        if base is not None and base.avgdl:
            avgdl = base.avgdl
        else:
            avgdl = doc_len.sum() / len(doc_len) if len(doc_len) else 0.0
        self.avgdl = avgdl
        coo = self.counts.tocoo()
        tf = coo.data
        norm = k1 * (1 - b + b * doc_len[coo.row] / avgdl) if n and avgdl else tf
        data = idf[coo.col] * tf * (k1 + 1) / (tf + norm)
        from scipy import sparse

        self._csc = sparse.csc_matrix((data, (coo.row, coo.col)), shape=self.counts.shape)

    def scores(self, query_terms: Sequence[str]) -> np.ndarray:
        return self._scores(self._csc, query_terms)

    def search(self, query_terms: Sequence[str], k: int = 50) -> list[Hit]:
        return _top(self.scores(query_terms), k)
