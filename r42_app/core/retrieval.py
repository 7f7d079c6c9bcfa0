"""The pure half of R42's grounding: the per-tenant lexical index, the KB context block, chunks,
prompt snippets and the KB hash. Services add embeddings, Chroma and caching around it."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from r42_app.core.injection import detect_injection_markers
from r42_app.core.kb import Relation, Topic
from r42_app.core.lexical import BM25Index, Hit, TfidfIndex, topic_terms
from r42_app.core.text import tokenize, words

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
SNIPPET_START = "---SNIPPET START---"
SNIPPET_END = "---SNIPPET END---"


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

    def find(self, message: str) -> list[int]:
        """Topic indexes mentioned in the message, in order of first mention."""
        tokens = words(message)
        found: dict[int, None] = {}
        for start in range(len(tokens)):
            for n in range(1, min(self.max_len, len(tokens) - start) + 1):
                for i in self.phrases.get(tuple(tokens[start:start + n]), ()):
                    found.setdefault(i)
        return list(found)


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

    @classmethod
    def build(cls, topics: Sequence[Topic], relations: Sequence[Relation]) -> "TenantIndex":
        topics = list(topics)
        docs = [topic_terms(t) for t in topics]
        return cls(
            topics=topics,
            relations=list(relations),
            hash=kb_hash(topics, relations),
            tfidf=TfidfIndex(docs),
            bm25=BM25Index(docs),
            labels=LabelMatcher(topics),
            by_slug={t.slug: i for i, t in enumerate(topics)},
        )

    def coverage(self, query: str) -> float:
        """Share of the query's terms that occur verbatim in this KB (English questions on a Dutch KB score low)."""
        terms = tokenize(clean_query(query))
        return sum(1 for t in terms if t in self.bm25.vocab.ids) / len(terms) if terms else 0.0

    def lexical_candidates(self, query: str, k: int = LEXICAL_CANDIDATES) -> list[Hit]:
        """BM25 (with the compound fallback) top-k for a query."""
        return self.bm25.search(tokenize(clean_query(query)), k)


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
        lines.append("Topics (id · label · type: description):")
        for i in selected:
            t = index.topics[i]
            named = " [named in the message]" if i in mentioned else ""
            lines.append(f"- {t.slug} · {t.label} · {t.type}: {t.description}{named}")
        if relations:
            lines.append("Relations between these topics:")
            lines.extend(f"- {r.source} --{r.type}--> {r.target}" for r in relations)
        lines.append("Learning content:")
        for i in with_content:
            t = index.topics[i]
            content = t.content if len(t.content) <= CONTEXT_CONTENT_CHARS else t.content[:CONTEXT_CONTENT_CHARS].rsplit(" ", 1)[0] + " …"
            lines.append(f"### {t.label} ({t.slug})\n{content or '(no learning content yet)'}")
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


def _defuse(text: str) -> str:
    """Snippet text can never close its own snippet or open a fake one."""
    return text.replace(SNIPPET_START, "--- SNIPPET START ---").replace(SNIPPET_END, "--- SNIPPET END ---")


def render_snippets(snippets: Sequence[Snippet]) -> str:
    """Snippets for the prompt: data between markers, each with its [ref:N], slug, label and suspect flag."""
    blocks = []
    for s in snippets:
        head = f"[ref:{s.ref}] topic={s.slug} label={_defuse(s.label)!r} suspect={'true' if s.suspect else 'false'}"
        if s.suspect:
            head += f" markers={','.join(s.markers)}"
        blocks.append(f"{SNIPPET_START}\n{head}\n{_defuse(s.text)}\n{SNIPPET_END}")
    return "\n".join(blocks)


def best_chunk(topic: Topic, query: str) -> str:
    """The chunk of a topic that shares most query terms (the lexical choice of snippet text)."""
    chunks = chunk_text(topic)
    terms = set(tokenize(query))
    return max(chunks, key=lambda c: (len(terms & set(tokenize(c))), -chunks.index(c)))
