"""The pure half of R42's grounding: the per-tenant lexical index over passages, the KB context block,
prompt snippets and the KB hash. Services add embeddings, Chroma and caching around it."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from r42_app.core.documents import chip_label
from r42_app.core.fence import SNIPPET_END, SNIPPET_START, defuse, fence, one_line  # noqa: F401 (re-exported)
from r42_app.core.injection import MARKER_ORDER, detect_injection_markers
from r42_app.core.kb import Relation, Topic
from r42_app.core.lexical import BM25Index, Hit, TfidfIndex, passage_terms, top_hits
from r42_app.core.passages import Passage, overlap, split_passages
from r42_app.core.text import STOP_WORDS, WORD_RE, fold, tokenize, words
from r42_app.core.visible import visible_markdown, visible_text

CONTEXT_TOPICS = 10
CONTEXT_CONTENT_TOPICS = 5
CONTEXT_CONTENT_CHARS = 1000
LEXICAL_CANDIDATES = 50
# Lexically, a topic scores as its best passage plus half its second best: on the Dutch set that recovers most of
# what scoring whole topics had (chosen on the Dutch set during development), and a long article is not drowned
# out by short topics that repeat one term (docs/BENCHMARKS.md).
LEXICAL_SECOND = 0.5
MAX_QUERY_CHARS = 2000


def visible_topic(topic: Topic) -> Topic:
    """The topic as a reader sees it (core/visible.py): its label, description and content without the characters
    nobody sees, its content also without comments and hidden elements. What search indexes, the markers read,
    the model is given and the topic page shows."""
    label, description, content = visible_text(topic.label), visible_text(topic.description), \
        visible_markdown(topic.content)
    if (label, description, content) == (topic.label, topic.description, topic.content):
        return topic
    return replace(topic, label=label, description=description, content=content)


_MASK64 = (1 << 64) - 1


def _digest(*fields: str) -> int:
    return int.from_bytes(hashlib.sha256("\x1f".join(fields).encode()).digest()[:8], "big")


def topic_digest(t: Topic) -> int:
    return _digest("topic", t.slug, t.label, t.type, t.description, t.content)


def relations_digest(relations: Iterable[Relation]) -> int:
    return sum(_digest("relation", *r.key) for r in relations) & _MASK64


def _hash_of(topics_sum: int, relations_sum: int) -> str:
    return hashlib.sha256(f"{topics_sum:016x}{relations_sum:016x}".encode()).hexdigest()[:12]


def kb_hash(topics: Iterable[Topic], relations: Iterable[Relation]) -> str:
    """A short hash that changes whenever any topic or relation changes. It is a sum of per-topic and
    per-relation digests, so an edit updates it without reading every topic again."""
    return _hash_of(sum(topic_digest(t) for t in topics) & _MASK64, relations_digest(relations))


def clean_query(query: str) -> str:
    """Trim and cap a query so a 10,000-character paste costs no more than a long question; characters nobody
    sees go (core/visible.py), so search reads what the asker saw."""
    return " ".join(visible_text(query or "").split())[:MAX_QUERY_CHARS]


class LabelMatcher:
    """Finds topics whose id or label appears verbatim in a message (case-insensitive, on word boundaries).
    An extended matcher keeps its base's phrases and adds its own (no copy of the base per edit)."""

    def __init__(self, topics: Sequence[Topic], base: LabelMatcher | None = None):
        self.base = base
        self.phrases: dict[tuple[str, ...], list[int]] = {}
        for i, topic in enumerate(topics):
            for phrase in {tuple(words(topic.label)), tuple(topic.slug.split("-"))}:
                if phrase:
                    self.phrases.setdefault(phrase, []).append(i)

    def extended(self, topics: Sequence[Topic], offset: int) -> LabelMatcher:
        """A matcher that also knows `topics`, numbered from `offset` (this one is left as it is: readers may
        hold it). Its own phrases are this one's additions plus the new ones; the base is shared."""
        base = self.base if self.base is not None else self
        out = LabelMatcher((), base=base)
        out.phrases = {k: list(v) for k, v in self.phrases.items()} if self.base is not None else {}
        for i, topic in enumerate(topics, start=offset):
            for phrase in {tuple(words(topic.label)), tuple(topic.slug.split("-"))}:
                if phrase:
                    out.phrases.setdefault(phrase, []).append(i)
        return out

    def _trie(self) -> dict:
        """This matcher's own phrases as a trie of words (a node maps a word to the next node, None to the topic
        indexes whose phrase ends there); built on first use, never changed after."""
        trie = self.__dict__.get("_phrase_trie")
        if trie is None:
            trie = {}
            for phrase, indexes in self.phrases.items():
                node = trie
                for word in phrase:
                    node = node.setdefault(word, {})
                node[None] = list(indexes)
            self._phrase_trie = trie
        return trie

    def _matches(self, tokens: Sequence[str]) -> Iterator[tuple[int, int, int]]:
        """(start, end, topic index) of every phrase among the tokens, by start, then end, then the base's first.
        Walking the tries reads each word once per phrase it may continue, where building the tuple of every run of
        up to the longest label's words at every start cost the square of that length for each word."""
        tries = [m._trie() for m in (self.base, self) if m is not None]
        for start in range(len(tokens)):
            nodes, end = tries, start
            while nodes and end < len(tokens):
                word = tokens[end]
                end += 1
                nodes = [node[word] for node in nodes if word in node]
                for node in nodes:
                    for i in node.get(None, ()):
                        yield start, end, i

    def spans(self, message: str) -> list[tuple[int, int, int]]:
        """(start, end, topic index) of every id or label phrase in the message, on word boundaries."""
        return list(self._matches(words(message)))

    def find(self, message: str) -> list[int]:
        """Topic indexes mentioned in the message, in order of first mention."""
        return list(dict.fromkeys(i for _start, _end, i in self._matches(words(message))))


# Words a chat question is wrapped in ("Vraag over partnerpensioen"): never search terms.
QUERY_FILLER = frozenset({"vraag", "vraagje"})
# Function words that tell English text from Dutch (words both languages use, such as "is", left out).
_ENGLISH = frozenset("the and to that for it with as on be are this by an or from which can not was you".split())
_DUTCH = frozenset("de het een en van dat op te voor met zijn niet aan er als bij om ook wordt door naar".split())


def english_share(topics: Sequence[Topic], budget: int = 200_000) -> float:
    """How English a knowledge base reads, 0 (Dutch) to 1 (English), from its function words (0.5 when
    it has too few to tell: lists of names or codes). The embedding model is English: hybrid search trusts
    it more on English KBs."""
    en = nl = seen = 0
    for topic in topics:
        for word in words(f"{topic.description} {topic.content}"):
            en += word in _ENGLISH
            nl += word in _DUTCH
            seen += 1
        if seen >= budget:
            break
    if en + nl < max(20, 0.05 * seen):  # real prose is a third function words: this is neither language
        return 0.5
    return min(1.0, max(0.0, (en / (en + nl) - 0.25) / 0.5))


def content_language(topics: Sequence[Topic]) -> str:
    """The language a text of the knowledge base is written in, for its `lang` attribute: "en", "nl", or "" when
    its words do not tell (a screen reader then reads it in the page's language)."""
    share = english_share(topics)
    return "en" if share >= 0.65 else "nl" if share <= 0.35 else ""


# A question's function words: a question is short, so its question words and pronouns count too ("i" does not:
# "i.p.v." is Dutch).
_ENGLISH_ASKS = _ENGLISH | frozenset(
    "what how why when who where does do did my your should would will if there any about have has".split())
_DUTCH_ASKS = _DUTCH | frozenset("wat hoe waarom wanneer wie waar mijn ik je jij kan moet welke heb krijg".split())


def asks_across(question: str, english: float) -> bool:
    """Whether a question is asked in the other language of a KB that reads `english` (`english_share`): two or
    more of its function words English and more than twice its Dutch ones, on a Dutch KB, or the reverse on an
    English one ("Hoe werkt pay as you go?" is Dutch). False when it has too few to tell ("Good morning!") or the KB
    reads as neither (0.35-0.65)."""
    en = nl = 0
    for word in words(question):
        en += word in _ENGLISH_ASKS
        nl += word in _DUTCH_ASKS
    if 0.35 < english < 0.65:
        return False
    if english <= 0.35:
        return en >= 2 and en > 2 * nl
    return nl >= 2 and nl > 2 * en


def topic_passages(topic: Topic) -> list[Passage]:
    """A topic's passages; a topic without content is one empty passage (its label and description)."""
    return split_passages(topic.slug, topic.content) or [Passage(topic.slug, "", (), "", 0, 0)]


# A tenant's index takes edits into a delta segment; once the delta holds this many passages (or this share of the
# base), the next change rebuilds the whole index (core/lexical.py: the delta is scored with the base's statistics).
DELTA_MAX_PASSAGES = 5000
DELTA_MAX_SHARE = 0.2


def _topic_docs(topics: Sequence[Topic]) -> tuple[list[Passage], list[list[str]], list[int]]:
    """Passages, their weighted terms and the number of passages per topic."""
    passages: list[Passage] = []
    docs: list[list[str]] = []
    sizes: list[int] = []
    for topic in topics:
        parts = topic_passages(topic)
        for k, passage in enumerate(parts):
            # a passage's own words only: the overlap with the passage before helps the embedding model read a
            # passage in context, but lexically it made the next passage win on words that stand in this one
            # (its citation then pointed one page too far)
            docs.append(passage_terms(topic, passage.heading, passage.text, first=k == 0))
        passages.extend(parts)
        sizes.append(len(parts))
    return passages, docs, sizes


@dataclass
class TenantIndex:
    """Everything lexical about one tenant's knowledge base. The lexical indexes are over passages
    (core/passages.py); a topic scores as its best passage.

    Edits do not rebuild it: `updated` returns a new index that shares everything with this one and puts the
    edited topics' passages in a small delta segment, with the old versions' slots marked dead (`alive`). Readers
    holding the old index are never disturbed. Once the delta is large, `updated` rebuilds."""

    topics: list[Topic]
    relations: list[Relation]
    hash: str
    tfidf: TfidfIndex
    bm25: BM25Index
    labels: LabelMatcher
    by_slug: dict[str, int] = field(default_factory=dict)
    english: float = 0.5
    passages: list[Passage] = field(default_factory=list)
    starts: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))  # topic i: [starts[i], starts[i+1])
    # The delta segment: topics and passages after the base's (`base_topics`, `base_passages`).
    base_topics: int = 0
    base_passages: int = 0
    delta_docs: list[list[str]] = field(default_factory=list)
    bm25_delta: BM25Index | None = None
    tfidf_delta: TfidfIndex | None = None
    alive: np.ndarray | None = None  # per topic; None: all alive
    dead_passages: np.ndarray | None = None  # per passage; None: none dead
    # Indexes derived by `updated` from one build share its lineage: each one's passages extend the one before.
    lineage: str = field(default_factory=lambda: secrets.token_hex(6))
    topics_sum: int = 0
    relations_sum: int = 0
    _markers: dict[tuple[int, str], list[str]] = field(default_factory=dict, repr=False)

    def card_markers(self, i: int) -> list[str]:
        """The injection markers of topic `i`'s label and description, computed once per index."""
        key = (i, "card")
        if key not in self._markers:
            self._markers[key] = detect_injection_markers(f"{self.topics[i].label}\n{self.topics[i].description}")
        return self._markers[key]

    def passage_markers(self, p: int) -> list[str]:
        """The injection markers of passage `p` (with its heading path), computed once per index."""
        key = (p, "passage")
        if key not in self._markers:
            passage = self.passages[p]
            self._markers[key] = detect_injection_markers(f"{passage.heading_path}\n{passage.text}")
        return self._markers[key]

    @classmethod
    def build(cls, topics: Sequence[Topic], relations: Sequence[Relation]) -> TenantIndex:
        topics = [visible_topic(t) for t in topics]
        passages, docs, sizes = _topic_docs(topics)
        topics_sum = sum(topic_digest(t) for t in topics) & _MASK64
        relations_sum = relations_digest(relations)
        return cls(
            topics=topics,
            relations=list(relations),
            hash=_hash_of(topics_sum, relations_sum),
            tfidf=TfidfIndex(docs),
            bm25=BM25Index(docs),
            labels=LabelMatcher(topics),
            by_slug={t.slug: i for i, t in enumerate(topics)},
            english=english_share(topics),
            passages=passages,
            starts=np.asarray([0, *np.cumsum(sizes, dtype=np.int64)], dtype=np.int64),
            base_topics=len(topics),
            base_passages=len(passages),
            topics_sum=topics_sum,
            relations_sum=relations_sum,
        )

    @property
    def aligned_key(self) -> tuple:
        """What a per-passage array aligned with this index depends on (the hash alone does not say: an edit and
        its undo give the same hash but more passages)."""
        return (self.lineage, len(self.passages), self.hash)

    def live_topics(self) -> list[Topic]:
        """The current topics (without the old versions of edited ones)."""
        if self.alive is None:
            return list(self.topics)
        return [t for t, keep in zip(self.topics, self.alive) if keep]

    def is_alive(self, i: int) -> bool:
        return self.alive is None or bool(self.alive[i])

    def updated(self, changed: Sequence[Topic], deleted: Iterable[str] = (),
                relations: Sequence[Relation] | None = None) -> TenantIndex:
        """This index with `changed` topics created or replaced, `deleted` slugs gone and, when given, the new
        relations. Costs the changed topics plus the delta segment, not the whole knowledge base; rebuilds once
        the delta is large (DELTA_MAX_PASSAGES, DELTA_MAX_SHARE)."""
        changed = [visible_topic(t) for t in changed]
        changed = [t for t in changed if t.slug not in self.by_slug or self.topics[self.by_slug[t.slug]] != t]
        deleted = [slug for slug in dict.fromkeys(deleted) if slug in self.by_slug]
        relations = self.relations if relations is None else list(relations)
        if not changed and not deleted:
            if relations is self.relations:
                return self
            relations_sum = relations_digest(relations)
            return replace(self, relations=relations, relations_sum=relations_sum,
                           hash=_hash_of(self.topics_sum, relations_sum), _markers={})
        passages, docs, sizes = _topic_docs(changed)
        delta = len(self.passages) - self.base_passages + len(passages)
        if delta > DELTA_MAX_PASSAGES or delta > DELTA_MAX_SHARE * max(1, self.base_passages):
            topics = {t.slug: t for t in self.live_topics()}
            for slug in deleted:
                topics.pop(slug, None)
            topics.update({t.slug: t for t in changed})
            return TenantIndex.build(sorted(topics.values(), key=lambda t: t.label), relations)

        gone = [self.by_slug[t.slug] for t in changed if t.slug in self.by_slug] + [self.by_slug[s] for s in deleted]
        alive = np.ones(len(self.topics), dtype=bool) if self.alive is None else self.alive.copy()
        alive[gone] = False
        alive = np.concatenate([alive, np.ones(len(changed), dtype=bool)])
        dead = np.zeros(len(self.passages), dtype=bool) if self.dead_passages is None else self.dead_passages.copy()
        for i in gone:
            dead[self.starts[i]:self.starts[i + 1]] = True
        dead = np.concatenate([dead, np.zeros(len(passages), dtype=bool)])
        by_slug = dict(self.by_slug)
        for slug in deleted:
            del by_slug[slug]
        offset = len(self.topics)
        for k, t in enumerate(changed):
            by_slug[t.slug] = offset + k
        topics_sum = self.topics_sum
        for i in gone:
            topics_sum -= topic_digest(self.topics[i])
        topics_sum = (topics_sum + sum(topic_digest(t) for t in changed)) & _MASK64
        relations_sum = self.relations_sum if relations is self.relations else relations_digest(relations)
        delta_docs = self.delta_docs + docs
        return replace(
            self,
            topics=self.topics + changed,
            relations=relations,
            hash=_hash_of(topics_sum, relations_sum),
            labels=self.labels.extended(changed, offset),
            by_slug=by_slug,
            passages=self.passages + passages,
            starts=np.concatenate([self.starts, self.starts[-1] + np.cumsum(sizes, dtype=np.int64)]),
            delta_docs=delta_docs,
            bm25_delta=BM25Index(delta_docs, base=self.bm25),
            tfidf_delta=TfidfIndex(delta_docs, base=self.tfidf),
            alive=alive,
            dead_passages=dead,
            topics_sum=topics_sum,
            relations_sum=relations_sum,
            _markers={k: v for k, v in self._markers.items()
                      if k[0] < (offset if k[1] == "card" else len(self.passages))},
        )

    def _segments(self, base, delta, terms: Sequence[str]) -> np.ndarray:
        scores = base.scores(terms)
        if delta is not None:
            scores = np.concatenate([scores, delta.scores(terms)])
        if self.dead_passages is not None:
            scores[self.dead_passages] = 0.0
        return scores

    def knows(self, term: str) -> bool:
        """Whether a term occurs in the knowledge base (in either segment)."""
        return term in self.bm25.vocab.ids or (self.bm25_delta is not None and term in self.bm25_delta.vocab.ids)

    # -- passages -------------------------------------------------------------------------

    def passage_range(self, i: int) -> range:
        """The indexes of topic `i`'s passages in `passages`."""
        return range(int(self.starts[i]), int(self.starts[i + 1]))

    def topic_scores(self, passage_scores: np.ndarray, second: float = 0.0) -> np.ndarray:
        """Each topic's score: its best passage's, plus `second` times its second best (a topic that matches in
        two places is a little more likely the one; bounded, so a long topic does not win by length)."""
        if not self.topics:
            return np.zeros(0)
        best = np.maximum.reduceat(passage_scores, self.starts[:-1])
        if not second:
            return best
        lengths = np.diff(self.starts)
        rest = np.where(passage_scores == np.repeat(best, lengths), -np.inf, passage_scores)
        runner_up = np.maximum.reduceat(rest, self.starts[:-1])
        return best + second * np.where(np.isfinite(runner_up) & (runner_up > 0), runner_up, 0.0)

    def best_passages(self, i: int, passage_scores: np.ndarray, k: int = 3) -> list[int]:
        """Topic `i`'s k best passages for these scores (those that score), best first; its first passage when
        none does."""
        span = self.passage_range(i)
        ranked = sorted((p for p in span if passage_scores[p] > 0), key=lambda p: (-passage_scores[p], p))
        return ranked[:k] or [span.start]

    def passage_scores(self, query: str) -> np.ndarray:
        """BM25 (with the compound fallback) of every passage for a query."""
        return self._segments(self.bm25, self.bm25_delta, self.query_terms(query))

    def named(self, query: str) -> list[int]:
        """Topics the query names by their exact label or id, when that name is what it asks about: a name
        of two or more words, or one that makes up at least half of the query's content words ("Wat is
        partnerpensioen?", "Vraag-een over partnerpensioen?"). A common word inside a longer question is not
        a name ("sort a list of records" does not name the topic `list`). A name inside a longer matched
        name does not count on its own (`bijzonder partnerpensioen` does not also name `partnerpensioen`).
        Longest name first, then in order of mention."""
        spans = [span for span in self.labels.spans(query) if self.is_alive(span[2])]
        content = sum(1 for w in words(clean_query(query)) if w not in STOP_WORDS)
        # A span lies inside a longer one when a span that starts before it ends at or after its end, or one that
        # starts with it ends after it: the furthest end per start and before each start say so, in one pass
        # (comparing every pair was quadratic: 60 nested labels and a question of 250 words took 4.6 s).
        furthest: dict[int, int] = {}
        for start, end, _i in spans:
            furthest[start] = max(end, furthest.get(start, end))
        before: dict[int, int] = {}
        reach = -1
        for start in sorted(furthest):
            before[start] = reach
            reach = max(reach, furthest[start])
        kept: dict[int, tuple[int, int]] = {}
        for start, end, i in spans:
            if before[start] >= end or furthest[start] > end:
                continue  # inside a longer name
            label_words = len(words(self.topics[i].label))
            if label_words >= 2 or (content and label_words * 2 >= content):
                kept.setdefault(i, (-(end - start), start))
        return sorted(kept, key=lambda i: kept[i])

    def query_terms(self, query: str) -> list[str]:
        """The query's search terms: as `tokenize` makes them for the KB, except that a hyphenated word
        counts once (its joined form when the KB has it, like `premie-inning`; else its parts, so a stray
        `Vraag-een` is not two matches) and chat filler such as `vraag` is no term."""
        terms: list[str] = []
        for match in WORD_RE.findall(fold(clean_query(query))):
            parts = [p for p in match.split("-") if p]
            joined = "".join(parts)
            if len(parts) > 1 and self.knows(joined):
                terms.append(joined)
            else:
                terms.extend(p for p in parts if p not in STOP_WORDS and p not in QUERY_FILLER)
        return terms

    def coverage(self, query: str) -> float:
        """Share of the query's terms that occur verbatim in this KB (English questions on a Dutch KB score low)."""
        terms = self.query_terms(query)
        return sum(1 for t in terms if self.knows(t)) / len(terms) if terms else 0.0

    def lexical_candidates(self, query: str, k: int = LEXICAL_CANDIDATES) -> list[Hit]:
        """BM25 (with the compound fallback) top-k topics for a query, each scored by its best passage."""
        return top_hits(self.topic_scores(self.passage_scores(query), LEXICAL_SECOND), k)

    def context_topics(self, query: str, k: int) -> tuple[list[Hit], np.ndarray]:
        """The TF-IDF top-k topics (by best passage) and every passage's TF-IDF score."""
        scores = self._segments(self.tfidf, self.tfidf_delta, tokenize(query))
        return top_hits(self.topic_scores(scores, LEXICAL_SECOND), k), scores


@dataclass
class KBContext:
    """The KB context block for the system prompt, and which topics it contains."""

    text: str
    topic_slugs: list[str]
    mentioned: list[str]
    content_slugs: list[str]
    hash: str


def build_kb_context_from_index(index: TenantIndex, message: str, tenant_name: str = "") -> KBContext:
    """The R42 spec, step by step: (1) the index is given; (2) top 10 topics by TF-IDF with the compound
    fallback; (3) topics named verbatim always in; (4) relations only with both ends in the set;
    (5) ~1000 characters of content for up to 5 topics, named first, then best-ranked: the passages of each that
    fit the message best (the first ones when none does); (6) the KB hash."""
    message = clean_query(message)
    hits, passage_scores = index.context_topics(message, CONTEXT_TOPICS)
    ranked = [h.doc for h in hits]
    mentioned = [i for i in index.labels.find(message) if index.is_alive(i)]
    selected = list(dict.fromkeys(mentioned + ranked))
    chosen = {index.topics[i].slug for i in selected}
    relations = [r for r in index.relations if r.source in chosen and r.target in chosen]
    with_content = list(dict.fromkeys(mentioned + ranked))[:CONTEXT_CONTENT_TOPICS]

    lines = [f"KNOWLEDGE BASE CONTEXT{f' ({tenant_name})' if tenant_name else ''}"]
    if not selected:
        lines.append("No topic of the knowledge base matches this message.")
    else:
        lines.append("Topics (id · label · type: description · suspect flag), one line each:")
        for i in selected:
            t = index.topics[i]
            named = " [named in the message]" if i in mentioned else ""
            flag = "suspect=true" if index.card_markers(i) else "suspect=false"
            lines.append(f"- {t.slug} · {one_line(t.label)} · {t.type}: {one_line(t.description)}{named} · {flag}")
        if relations:
            lines.append("Relations between these topics:")
            lines.extend(f"- {r.source} --{r.type}--> {r.target}" for r in relations)
        lines.append("Learning content, one block per topic: the passages that fit the message best, in the "
                     "order of the topic, each under its heading path (§):")
        for i in with_content:
            t = index.topics[i]
            kept = passages_within(index, i, passage_scores, CONTEXT_CONTENT_CHARS)
            if not kept:
                lines.append(fence("(no learning content yet)", t.slug, t.label, index.card_markers(i)))
            # one block per run of passages alike: a suspect passage is fenced (and flagged) on its own
            for run in _runs_alike(index, kept):
                markers = sorted({m for p, _ in run for m in index.passage_markers(p)} | set(index.card_markers(i)))
                lines.append(fence(passages_text(index, run), t.slug, t.label, markers))
    lines.append(f"KB hash: {index.hash}")
    return KBContext(
        text="\n".join(lines),
        topic_slugs=[index.topics[i].slug for i in selected],
        mentioned=[index.topics[i].slug for i in mentioned],
        content_slugs=[index.topics[i].slug for i in with_content],
        hash=index.hash,
    )


MIN_PART_CHARS = 200  # the rest of a budget smaller than this is left unused rather than filled with a scrap


def passages_within(index: TenantIndex, i: int, scores: np.ndarray, budget: int) -> list[tuple[int, int]]:
    """Topic `i`'s passages that fit a message best within `budget` characters, as (passage, characters to
    show) in document order: by score (those that score), then from the start of the topic when none does. A
    passage that does not fit whole is shown in part when enough budget is left for it."""
    span = index.passage_range(i)
    ranked = sorted((p for p in span if scores[p] > 0), key=lambda p: (-scores[p], p)) or list(span)
    chosen, left = [], budget
    for p in ranked:
        size = len(index.passages[p].text)
        if size <= left:
            chosen.append((p, size))
            left -= size
        elif left >= MIN_PART_CHARS or not chosen:
            chosen.append((p, left))
            left = 0
        if left < MIN_PART_CHARS:
            break
    return sorted(chosen)


def _cut(text: str, limit: int) -> str:
    """`text` cut near `limit` characters: after a sentence when one ends in the second half, else at a word."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    end = max(cut.rfind(". "), cut.rfind(".\n"), cut.rfind("? "), cut.rfind("! "))
    return (cut[:end + 1] if end > limit // 2 else cut.rsplit(" ", 1)[0]) + " …"


def passages_text(index: TenantIndex, chosen: Sequence[tuple[int, int]]) -> str:
    """Passages for the prompt: each under its heading path (§), `…` where passages are left out (between
    them, and after the last when the topic goes on), each cut to its share of the budget."""
    parts, last = [], None
    for p, limit in chosen:
        passage = index.passages[p]
        if last is not None and passage.order != last + 1:
            parts.append("…")
        text = _cut(passage.text, limit)
        parts.append(f"§ {passage.heading_path}\n{text}" if passage.heading else text)
        last = passage.order
    if chosen and chosen[-1][0] + 1 < len(index.passages) and index.passages[chosen[-1][0] + 1].order > 0 \
            and not parts[-1].endswith("…"):
        parts.append("…")
    return "\n".join(parts)


def _runs_alike(index: TenantIndex, kept: list[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """`kept` (passage, limit) cut where a passage's suspect flag differs from the one before."""
    runs: list[list[tuple[int, int]]] = []
    for item in kept:
        flag = bool(index.passage_markers(item[0]))
        if runs and bool(index.passage_markers(runs[-1][-1][0])) == flag:
            runs[-1].append(item)
        else:
            runs.append([item])
    return runs


@dataclass
class Snippet:
    """One retrieved passage as it goes into the prompt."""

    ref: int
    slug: str
    label: str
    text: str
    score: float
    markers: list[str] = field(default_factory=list)
    anchor: str = ""  # the best passage's anchor: the citation opens the topic there

    @property
    def suspect(self) -> bool:
        return bool(self.markers)

    @property
    def url(self) -> str:
        return topic_url(self.slug, self.anchor)


def topic_url(slug: str, anchor: str = "") -> str:
    """Where a citation points: the topic page, scrolled to the passage when there is one."""
    return f"/topics/{slug}#{anchor}" if anchor else f"/topics/{slug}"


def make_snippet(ref: int, topic: Topic, text: str, score: float, anchor: str = "", page: int = 0,
                 last_page: int = 0, markers: Sequence[str] | None = None) -> Snippet:
    """A snippet with its injection markers (`markers`, its passages' as `passages_markers` gives them, else
    detected in the text); `page` (of a document's passage) goes into its label."""
    found = detect_injection_markers(f"{topic.label}\n{text}") if markers is None else list(markers)
    return Snippet(ref, topic.slug, chip_label(topic.label, page, last_page), text, score, found, anchor)


def passages_markers(index: TenantIndex, topic: Topic, passages: Sequence[int]) -> list[str]:
    """The injection markers of a snippet made of `passages`: theirs (each read once per index, on its own, so
    one suspect paragraph marks its passage and no other) and those of the topic's label."""
    found = set(detect_injection_markers(topic.label))
    for p in passages:
        found.update(index.passage_markers(p))
    return [name for name in MARKER_ORDER if name in found]


def snippet_passages(index: TenantIndex, chosen: Sequence[int]) -> str:
    """The text of a snippet: its passages (best first) under their heading paths."""
    parts = []
    for p in chosen:
        passage = index.passages[p]
        parts.append(f"§ {passage.heading_path}\n{passage.text}" if passage.heading else passage.text)
    return "\n…\n".join(parts)


def passage_key(slug: str, anchor: str) -> str:
    """A passage's key within its tenant (in the vector store): topic and anchor (`card` for a topic without
    content, whose one passage is its label and description)."""
    return f"{slug}#{anchor or 'card'}"


def embedding_inputs(topic: Topic) -> list[tuple[str, str]]:
    """(key, text) of every passage of a topic, as the embedding model reads them: the topic's label (and, for the
    first, its description), the heading path, the overlap with the passage before, then the passage."""
    topic = visible_topic(topic)
    parts = topic_passages(topic)
    out = []
    for k, passage in enumerate(parts):
        head = topic.label + (f". {topic.description}" if k == 0 and topic.description else "")
        if passage.heading:
            head += f" › {passage.heading_path}"
        before = overlap(passage, parts[k - 1] if k else None)
        out.append((passage_key(topic.slug, passage.anchor), "\n".join(x for x in (head, before, passage.text) if x)))
    return out


def render_snippets(snippets: Sequence[Snippet]) -> str:
    """Snippets for the prompt: fenced data (core/fence.py), each with its [ref:N], slug, label and suspect flag."""
    return "\n".join(fence(s.text, s.slug, s.label, s.markers, ref=s.ref) for s in snippets)
