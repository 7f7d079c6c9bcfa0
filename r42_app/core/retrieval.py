"""The pure half of R42's grounding: the per-tenant lexical index, the KB context block, chunks,
prompt snippets and the KB hash. Services add embeddings, Chroma and caching around it."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Iterable, Sequence

from r42_app.core.fence import SNIPPET_END, SNIPPET_START, defuse, fence, one_line  # noqa: F401 (re-exported)
from r42_app.core.injection import detect_injection_markers
from r42_app.core.kb import Relation, Topic
from r42_app.core.lexical import BM25Index, Hit, TfidfIndex, topic_terms
from r42_app.core.visible import visible_markdown
from r42_app.core.text import STOP_WORDS, WORD_RE, fold, tokenize, words

CONTEXT_TOPICS = 10
CONTEXT_CONTENT_TOPICS = 5
CONTEXT_CONTENT_CHARS = 1000
LEXICAL_CANDIDATES = 50
MAX_QUERY_CHARS = 2000
# The embedding model reads 128 tokens (what all-MiniLM-L6-v2 was trained on) and its English
# word pieces cost Dutch ~3.3 tokens a word, so chunks are short. Only the first `max_chunks`
# chunks are embedded (R42_EMBED_CHUNKS, default 1): embedding is the whole cost of indexing on
# a CPU, and on the evaluation sets more chunks barely moved re-ranking quality
# (docs/BENCHMARKS.md). Lexical search always covers the whole text.
CHUNK_WORDS = 40
CHUNK_OVERLAP = 10
MAX_CHUNKS = 1


def visible_topic(topic: Topic) -> Topic:
    """The topic as a reader sees it: its content without comments and hidden elements (core/visible.py)."""
    content = visible_markdown(topic.content)
    return topic if content == topic.content else replace(topic, content=content)


def kb_hash(topics: Iterable[Topic], relations: Iterable[Relation]) -> str:
    """A short hash that changes whenever any topic or relation changes."""
    digest = hashlib.sha256()
    for t in sorted(topics, key=lambda t: t.slug):
        digest.update("\x1f".join((t.slug, t.label, t.type, t.description, t.content)).encode())
        digest.update(b"\x1e")
    digest.update(b"\x1d")
    for r in sorted(relations, key=lambda r: r.key):
        digest.update("\x1f".join(r.key).encode() + b"\x1e")
    return digest.hexdigest()[:12]


def clean_query(query: str) -> str:
    """Trim and cap a query so a 10,000-character paste costs no more than a long question."""
    return " ".join((query or "").split())[:MAX_QUERY_CHARS]


def chunk_text(topic: Topic, size: int = CHUNK_WORDS, overlap: int = CHUNK_OVERLAP,
               max_chunks: int = MAX_CHUNKS) -> list[str]:
    """The topic's text in overlapping word windows for embedding: the first chunk starts with the
    label and description, later ones with the label only."""
    header = f"{topic.label}. {topic.description}"
    body = topic.content.split()
    if not body:
        return [header]
    step = max(1, size - overlap)
    chunks = []
    for start in range(0, len(body), step):
        chunks.append(f"{header if not chunks else topic.label}\n{' '.join(body[start:start + size])}")
        if start + size >= len(body) or len(chunks) >= max_chunks:
            break
    return chunks


class LabelMatcher:
    """Finds topics whose id or label appears verbatim in a message (case-insensitive, on word boundaries)."""

    def __init__(self, topics: Sequence[Topic]):
        self.phrases: dict[tuple[str, ...], list[int]] = {}
        for i, topic in enumerate(topics):
            for phrase in {tuple(words(topic.label)), tuple(topic.slug.split("-"))}:
                if phrase:
                    self.phrases.setdefault(phrase, []).append(i)
        self.max_len = max((len(p) for p in self.phrases), default=0)

    def spans(self, message: str) -> list[tuple[int, int, int]]:
        """(start, end, topic index) of every id or label phrase in the message, on word boundaries."""
        tokens = words(message)
        out = []
        for start in range(len(tokens)):
            for n in range(1, min(self.max_len, len(tokens) - start) + 1):
                out.extend((start, start + n, i) for i in self.phrases.get(tuple(tokens[start:start + n]), ()))
        return out

    def find(self, message: str) -> list[int]:
        """Topic indexes mentioned in the message, in order of first mention."""
        tokens = words(message)
        found: dict[int, None] = {}
        for start in range(len(tokens)):
            for n in range(1, min(self.max_len, len(tokens) - start) + 1):
                for i in self.phrases.get(tuple(tokens[start:start + n]), ()):
                    found.setdefault(i)
        return list(found)


# Words a chat question is wrapped in ("Vraag over partnerpensioen"): never search terms.
QUERY_FILLER = frozenset({"vraag", "vraagje"})
# Function words that tell English text from Dutch (words both languages use, such as "is", left out).
_ENGLISH = frozenset("the and to that for it with as on be are this by an or from which can not was you".split())
_DUTCH = frozenset("de het een en van dat op te voor met zijn niet aan er als bij om ook wordt door naar".split())


def english_share(topics: Sequence[Topic], budget: int = 200_000) -> float:
    """How English a knowledge base reads, 0 (Dutch) to 1 (English), from its function words (0.5 when
    it has too few to tell: lists of names or codes). The embedding model is English: hybrid search trusts it more on English KBs."""
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


@dataclass
class TenantIndex:
    """Everything lexical about one tenant's knowledge base, rebuilt when its hash changes."""

    topics: list[Topic]
    relations: list[Relation]
    hash: str
    tfidf: TfidfIndex
    bm25: BM25Index
    labels: LabelMatcher
    by_slug: dict[str, int] = field(default_factory=dict)
    english: float = 0.5
    _markers: dict[tuple[int, str], list[str]] = field(default_factory=dict, repr=False)

    def markers(self, i: int, part: str, text: str) -> list[str]:
        """The injection markers of one topic's text for the prompt, computed once per index."""
        key = (i, part)
        if key not in self._markers:
            self._markers[key] = detect_injection_markers(text)
        return self._markers[key]

    @classmethod
    def build(cls, topics: Sequence[Topic], relations: Sequence[Relation]) -> "TenantIndex":
        topics = [visible_topic(t) for t in topics]
        docs = [topic_terms(t) for t in topics]
        return cls(
            topics=topics,
            relations=list(relations),
            hash=kb_hash(topics, relations),
            tfidf=TfidfIndex(docs),
            bm25=BM25Index(docs),
            labels=LabelMatcher(topics),
            by_slug={t.slug: i for i, t in enumerate(topics)},
            english=english_share(topics),
        )

    def named(self, query: str) -> list[int]:
        """Topics the query names by their exact label or id, when that name is what it asks about: a name
        of two or more words, or one that makes up at least half of the query's content words ("Wat is
        partnerpensioen?", "Vraag-een over partnerpensioen?"). A common word inside a longer question is not
        a name ("sort a list of records" does not name the topic `list`). A name inside a longer matched
        name does not count on its own (`bijzonder partnerpensioen` does not also name `partnerpensioen`).
        Longest name first, then in order of mention."""
        spans = self.labels.spans(query)
        content = sum(1 for w in words(clean_query(query)) if w not in STOP_WORDS)
        kept: dict[int, tuple[int, int]] = {}
        for start, end, i in spans:
            if any(s <= start and end <= e and (e - s) > (end - start) for s, e, _ in spans):
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
            if len(parts) > 1 and joined in self.bm25.vocab.ids:
                terms.append(joined)
            else:
                terms.extend(p for p in parts if p not in STOP_WORDS and p not in QUERY_FILLER)
        return terms

    def coverage(self, query: str) -> float:
        """Share of the query's terms that occur verbatim in this KB (English questions on a Dutch KB score low)."""
        terms = self.query_terms(query)
        return sum(1 for t in terms if t in self.bm25.vocab.ids) / len(terms) if terms else 0.0

    def lexical_candidates(self, query: str, k: int = LEXICAL_CANDIDATES) -> list[Hit]:
        """BM25 (with the compound fallback) top-k for a query."""
        return self.bm25.search(self.query_terms(query), k)


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
    (5) ~1000 characters of content for up to 5 topics, named first, then best-ranked; (6) the KB hash."""
    message = clean_query(message)
    ranked = [h.doc for h in index.tfidf.search(tokenize(message), CONTEXT_TOPICS)]
    mentioned = index.labels.find(message)
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
            flag = "suspect=true" if index.markers(i, "card", f"{t.label}\n{t.description}") else "suspect=false"
            lines.append(f"- {t.slug} · {one_line(t.label)} · {t.type}: {one_line(t.description)}{named} · {flag}")
        if relations:
            lines.append("Relations between these topics:")
            lines.extend(f"- {r.source} --{r.type}--> {r.target}" for r in relations)
        lines.append("Learning content, one block per topic:")
        for i in with_content:
            t = index.topics[i]
            content = t.content if len(t.content) <= CONTEXT_CONTENT_CHARS else t.content[:CONTEXT_CONTENT_CHARS].rsplit(" ", 1)[0] + " …"
            lines.append(fence(content or "(no learning content yet)", t.slug, t.label,
                               index.markers(i, "content", f"{t.label}\n{content}")))
    lines.append(f"KB hash: {index.hash}")
    return KBContext(
        text="\n".join(lines),
        topic_slugs=[index.topics[i].slug for i in selected],
        mentioned=[index.topics[i].slug for i in mentioned],
        content_slugs=[index.topics[i].slug for i in with_content],
        hash=index.hash,
    )


@dataclass
class Snippet:
    """One retrieved passage as it goes into the prompt."""

    ref: int
    slug: str
    label: str
    text: str
    score: float
    markers: list[str] = field(default_factory=list)

    @property
    def suspect(self) -> bool:
        return bool(self.markers)


def make_snippet(ref: int, topic: Topic, text: str, score: float) -> Snippet:
    """A snippet with its injection markers detected."""
    return Snippet(ref, topic.slug, topic.label, text, score, detect_injection_markers(f"{topic.label}\n{text}"))


def render_snippets(snippets: Sequence[Snippet]) -> str:
    """Snippets for the prompt: fenced data (core/fence.py), each with its [ref:N], slug, label and suspect flag."""
    return "\n".join(fence(s.text, s.slug, s.label, s.markers, ref=s.ref) for s in snippets)


def best_chunk(topic: Topic, query: str) -> str:
    """The chunk of a topic that shares most query terms (the lexical choice of snippet text)."""
    chunks = chunk_text(topic)
    terms = set(tokenize(query))
    return max(chunks, key=lambda c: (len(terms & set(tokenize(c))), -chunks.index(c)))
