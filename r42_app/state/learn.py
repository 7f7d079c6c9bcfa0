"""LearnState: the learner's knowledge base browser (topic list, filters and one topic's view)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time

import reflex as rx

from r42_app.container import services
from r42_app.core.documents import DOWNLOAD_LINK_S, download_url, pages_ref
from r42_app.core.hyphens import hyphenated
from r42_app.core.identity import Tenant
from r42_app.core.kb import (
    INVERSE_RELATION_LABELS,
    RELATION_LABELS,
    TOPIC_TYPES,
    TYPE_LABELS,
    Topic,
    filter_topics,
)
from r42_app.core.messages import msg
from r42_app.core.passages import heading_shift, split_passages
from r42_app.core.retrieval import content_language, visible_topic
from r42_app.services.store.pb import PBError
from r42_app.state.auth import AuthState

log = logging.getLogger(__name__)

MAX_LISTED = 300


@dataclasses.dataclass
class TopicCard:
    slug: str = ""
    label: str = ""
    type: str = ""
    type_label: str = ""
    description: str = ""
    label_breaks: str = ""  # the label with soft hyphens in its long words (core/hyphens.py): what a card shows


@dataclasses.dataclass
class PassageView:
    """One passage of a topic on its page: a citation opens the page at its anchor."""

    anchor: str = ""
    text: str = ""
    page: str = ""  # "p. 5" ("p. 5–6" across two) where a passage of a document reaches a new page, else ""


def topic_view(topic: Topic) -> tuple[Topic, list[PassageView]]:
    """The topic as its page shows it (core/retrieval.py visible_topic) and its passages: CPU, run in a thread."""
    shown = visible_topic(topic)
    return shown, passage_views(split_passages(shown.slug, shown.content))


def passage_views(passages) -> list[PassageView]:
    """The passages as the page shows them; a passage that reaches a new page of a document says its pages, in
    the words of its source chip (core/documents.py pages_ref: "p. 1–2" for a passage across two pages)."""
    views, last = [], 0
    for p in passages:
        end = max(p.page, p.last_page)
        views.append(PassageView(p.anchor, p.text, pages_ref(p.page, p.last_page) if p.page and end > last else ""))
        last = max(last, end)
    return views


@dataclasses.dataclass
class RelationLink:
    phrase: str = ""
    slug: str = ""
    label: str = ""
    type: str = ""


@dataclasses.dataclass
class TypeCount:
    type: str = ""
    label: str = ""
    count: int = 0


def _card(topic: Topic) -> TopicCard:
    return TopicCard(topic.slug, topic.label, topic.type, TYPE_LABELS.get(topic.type, topic.type), topic.description,
                     hyphenated(topic.label))


class LearnState(rx.State):
    """What the learn page and topic pages show; data comes from the signed-in user's tenant only."""

    loading: bool = True
    load_error: str = ""
    show_topics: bool = False  # phones: the topic list as a drawer over the page
    query: str = ""
    type_filter: str = ""
    visible: list[TopicCard] = []
    hidden_count: int = 0
    total: int = 0
    type_counts: list[TypeCount] = []

    topic: TopicCard = TopicCard()
    topic_content: str = ""
    heading_shift: int = 0  # levels its text's headings move so the highest is an h2 (under the page's h1)
    topic_lang: str = ""  # the language the open topic is written in (its `lang`), "" when its words do not tell
    passages: list[PassageView] = []
    topic_found: bool = True
    topic_loading: bool = True
    original_name: str = ""  # the file an imported topic came from ("Origineel: handboek.pdf")
    original_url: str = ""  # a signed link to it, for the tenant's users
    outgoing: list[RelationLink] = []
    incoming: list[RelationLink] = []

    _topics: list[Topic] = []
    _tenant_id: str = ""
    _shown: str = ""  # "tenant id/slug" of the topic shown, once read whole (load_topic)

    async def _tenant(self) -> Tenant | None:
        auth = await self.get_state(AuthState)
        user = await auth.user()
        if user is None:
            return None
        return user.tenant

    async def _apply_filter(self) -> None:
        topics, query, kind = self._topics, self.query, self.type_filter

        def cards() -> tuple[list[TopicCard], int]:  # folds every topic, hyphenates the shown labels: CPU
            hits = filter_topics(topics, query, kind)
            return [_card(t) for t in hits[:MAX_LISTED]], len(hits)

        self.visible, found = await asyncio.to_thread(cards)
        self.hidden_count = max(0, found - MAX_LISTED)

    async def _ensure_topics(self, tenant: Tenant, force: bool = False) -> None:
        if self._tenant_id == tenant.id and self._topics and not force:
            return
        self._topics = await asyncio.to_thread(services().kb.topic_summaries, tenant)
        self._tenant_id = tenant.id
        self.total = len(self._topics)
        self.type_counts = [
            TypeCount(t, TYPE_LABELS[t], sum(1 for x in self._topics if x.type == t)) for t in TOPIC_TYPES
        ]
        await self._apply_filter()

    @rx.event
    def toggle_topics(self):
        self.show_topics = not self.show_topics
        if self.show_topics:  # into the drawer: its filter first
            return rx.set_focus("topic-filter")
        return None

    @rx.event
    def close_topics(self):
        """The drawer's own close button (Escape clicks it: assets/r42.js): closed, the focus back on what opened
        it."""
        if not self.show_topics:
            return None
        self.show_topics = False
        return rx.set_focus("topics-toggle")

    @rx.event
    async def load_index(self):
        """on_load of `/`: the tenant's topics."""
        tenant = await self._tenant()
        if tenant is None:
            return
        self.loading = True
        self.load_error = ""
        yield
        try:
            await self._ensure_topics(tenant, force=True)
        except PBError as exc:
            log.error("loading topics failed: %s", exc)
            self.load_error = msg("topics.load_failed")
        self.loading = False

    @rx.event
    async def load_topic(self):
        """on_load of `/topics/[slug]`: one topic with its relations, from the user's tenant only."""
        self.show_topics = False  # a topic picked in the drawer: the drawer closes
        tenant = await self._tenant()
        if tenant is None:
            return
        slug = str(self.router.page.params.get("slug", ""))
        # a reload shows the topic the tab had at once: it stays while it is read again (no skeleton in between,
        # which took away what a quick reader had clicked or tabbed to); another topic (another tenant's, one read
        # in part: a load cut short by a move) shows the skeleton
        key = f"{tenant.id}/{slug}"
        self.topic_loading, self._shown = self._shown != key, ""
        self.load_error = ""
        yield
        store = services().kb
        try:
            await self._ensure_topics(tenant)
            self.loading = False
            topic = await asyncio.to_thread(store.topic, tenant, slug)
            relations = await asyncio.to_thread(store.relations_of, tenant, slug) if topic else []
        except PBError as exc:
            log.error("loading topic %s failed: %s", slug, exc)
            self.load_error = msg("topics.topic_load_failed")
            self.topic_loading = False
            return
        self.topic_found = topic is not None
        self.original_name, self.original_url = "", ""
        if topic is not None:
            try:
                doc = await asyncio.to_thread(services().documents.of_topic, tenant, slug)
            except PBError as exc:
                log.warning("reading the document of topic %s failed: %s", slug, exc)
                doc = None
            if doc is not None:
                self.original_name = doc.filename
                self.original_url = download_url(services().download_secret, tenant.id, doc.id,
                                                 int(time.time()) + DOWNLOAD_LINK_S)
        if topic is None:
            self.topic = TopicCard(slug=slug)
            self.topic_content = ""
            self.passages = []
            self.heading_shift = 0
            self.outgoing, self.incoming = [], []
        else:
            labels = {t.slug: t.label for t in self._topics}
            # what search and R42 read is what the page shows; reading it is CPU, never the event loop's work (one
            # tenant's hostile topic would hold up every tenant's page and chat)
            def view() -> tuple[Topic, list[PassageView], TopicCard, str, int]:
                shown, passages = topic_view(topic)
                return shown, passages, _card(shown), content_language([shown]), heading_shift(shown.content)

            shown, passages, self.topic, self.topic_lang, self.heading_shift = await asyncio.to_thread(view)
            self.topic_content = shown.content
            self.passages = passages
            self.outgoing = [
                RelationLink(RELATION_LABELS[r.type], r.target, labels.get(r.target, r.target), r.type)
                for r in relations
                if r.source == slug
            ]
            self.incoming = [
                RelationLink(INVERSE_RELATION_LABELS[r.type], r.source, labels.get(r.source, r.source), r.type)
                for r in relations
                if r.target == slug and r.source != slug
            ]
            self._shown = key
        self.topic_loading = False

    @rx.event
    async def set_query(self, value: str):
        self.query = value[:200]
        await self._apply_filter()

    @rx.event
    async def set_type_filter(self, value: str | list[str]):
        self.type_filter = value if isinstance(value, str) and value in TOPIC_TYPES else ""
        await self._apply_filter()

    @rx.event
    async def clear_filters(self):
        self.query = ""
        self.type_filter = ""
        await self._apply_filter()
