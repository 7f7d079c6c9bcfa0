"""GraphState: the `/graph` page. Learners read their tenant's graph; admins also see pending
suggestions as dashed nodes and links. The page polls a per-tenant fingerprint, so writes made
anywhere (chat chips, approvals, the editor, imports) show up without a reload."""

from __future__ import annotations

import asyncio
import dataclasses
import logging

import reflex as rx

from r42_app.container import services
from r42_app.core.graph import GraphView, build_view, excerpt, neighbours, search_nodes
from r42_app.core.kb import INVERSE_RELATION_LABELS, RELATION_LABELS, TYPE_LABELS, Relation
from r42_app.core.messages import msg, number
from r42_app.services.store.pb import PBError
from r42_app.state.auth import AuthState
from r42_app.state.chat import ChatState

log = logging.getLogger(__name__)


@dataclasses.dataclass
class NodeHit:
    id: str = ""
    label: str = ""
    type: str = ""
    type_label: str = ""


@dataclasses.dataclass
class NeighbourRow:
    slug: str = ""
    label: str = ""
    type: str = ""
    phrase: str = ""
    pending: bool = False


@dataclasses.dataclass
class Panel:
    slug: str = ""
    label: str = ""
    type: str = ""
    type_label: str = ""
    description: str = ""
    excerpt: str = ""
    pending: bool = False
    neighbours: list[NeighbourRow] = dataclasses.field(default_factory=list)


def _fingerprint(user) -> tuple:
    """The tenant's graph change marker (plus its suggestions' for admins): blocking, run in a thread."""
    marker = services().kb.fingerprint(user.tenant)
    return marker + services().suggestions.fingerprint(user.tenant) if user.is_admin else marker


def _fetch(user) -> tuple:
    """(fingerprint, topics, relations, pending suggestion deltas): blocking, run in a thread."""
    store = services().kb
    seen = _fingerprint(user)
    pending = ([s.delta for s in services().suggestions.list(user.tenant, "pending") if s.valid]
               if user.is_admin else [])
    return seen, store.topic_summaries(user.tenant), store.relations(user.tenant), pending


def ask_question(label: str) -> str:
    """The question "Ask R42 about this" puts in the chat box."""
    return msg("graph.ask", label=label)


class GraphState(rx.State):
    loading: bool = True
    load_error: str = ""
    nodes: list[dict] = []
    links: list[dict] = []
    topic_count: int = 0
    relation_count: int = 0
    counts: str = ""  # "2.000 onderwerpen · 2.999 relaties"
    pending_count: int = 0
    show_pending: bool = False

    query: str = ""
    hits: list[NodeHit] = []
    focus_id: str = ""
    focus_seq: int = 0

    selected: str = ""
    panel: Panel = Panel()

    _view: GraphView | None = None
    _pending_descriptions: dict[str, str] = {}
    _seen: tuple = ()

    async def _user(self):
        return await (await self.get_state(AuthState)).user()

    async def _fingerprint(self, user) -> tuple:
        return await asyncio.to_thread(_fingerprint, user)

    async def _refresh(self, user) -> None:
        def fetch_and_build():  # in a thread: the layout data of a large graph is not the event loop's work
            seen, topics, relations, pending = _fetch(user)
            return seen, topics, relations, pending, build_view(topics, relations, pending)

        seen, topics, relations, pending, view = await asyncio.to_thread(fetch_and_build)
        self._seen = seen
        self._view = view
        self._pending_descriptions = {str(t.get("id", "")): str(t.get("description", ""))
                                      for d in pending for t in d["topics"]}
        self.nodes = [n.as_dict() for n in view.nodes]
        self.links = [link.as_dict() for link in view.links]
        self.topic_count = len(topics)
        self.relation_count = len(relations)
        self.pending_count = view.pending_count
        self.counts = msg("graph.counts", topics=number(len(topics)), relations=number(len(relations)))
        self.show_pending = user.is_admin
        await self._search()

    @rx.event
    async def load(self):
        """on_load of `/graph`."""
        user = await self._user()
        if user is None:
            return
        self.loading, self.load_error = True, ""
        self.selected, self.panel, self.query, self.hits = "", Panel(), "", []
        yield
        try:
            await self._refresh(user)
        except PBError as exc:
            log.error("loading the graph failed: %s", exc)
            self.load_error = msg("graph.load_failed")
        self.loading = False

    @rx.event
    async def poll(self, _tick: str = ""):
        """Every few seconds while the page is open: redraw when the tenant's graph (or, for admins,
        its suggestions) changed anywhere."""
        user = await self._user()
        if user is None or self.loading:
            return
        try:
            if await self._fingerprint(user) == self._seen:
                return
            await self._refresh(user)
        except PBError as exc:
            log.warning("graph refresh failed: %s", exc)
            return
        if self.selected:
            await self._fill_panel(user, self.selected)

    # -- search ---------------------------------------------------------------------------

    async def _search(self) -> None:
        if self._view is None or not self.query.strip():
            self.hits = []
            return
        found = await asyncio.to_thread(search_nodes, self._view.nodes, self.query)  # folds every label
        self.hits = [NodeHit(n.id, n.label, n.type, TYPE_LABELS.get(n.type, n.type)) for n in found]

    @rx.event
    async def set_query(self, value: str):
        self.query = str(value)[:120]
        await self._search()

    @rx.event
    async def submit_search(self, _form: dict | None = None):
        """Enter in the search box: focus the best match."""
        if self.hits:
            return GraphState.focus(self.hits[0].id)
        if self.query.strip() and await self._user() is not None:  # (in the reader's language)
            return rx.toast.info(msg("graph.not_found", query=self.query.strip()))

    @rx.event
    async def focus(self, node_id: str):
        """Centre the graph on a node and open its panel."""
        self.focus_id = node_id
        self.focus_seq += 1
        self.query, self.hits = "", []
        return await self._select(node_id)  # in the same round trip

    # -- the side panel -------------------------------------------------------------------

    async def _fill_panel(self, user, slug: str) -> None:
        view = self._view
        node = next((n for n in view.nodes if n.id == slug), None) if view else None
        if view is None or node is None:
            self.selected, self.panel = "", Panel()  # not (or no longer) in this user's graph
            return
        labels = {n.id: (n.label, n.type) for n in view.nodes}
        pending_nodes = {n.id for n in view.nodes if n.pending}
        rels = [Relation(link.source, link.target, link.type) for link in view.links]
        pending_links = {(link.source, link.target, link.type) for link in view.links if link.pending}
        rows = [NeighbourRow(n.slug, n.label, n.type,
                             (RELATION_LABELS if n.outgoing else INVERSE_RELATION_LABELS).get(n.relation, n.relation),
                             n.slug in pending_nodes or ((slug, n.slug, n.relation) if n.outgoing
                                                         else (n.slug, slug, n.relation)) in pending_links)
                for n in neighbours(slug, rels, labels)]
        if node.pending:
            text = ""
            description = self._pending_descriptions.get(slug, "")
        else:
            # deleted meanwhile: the next poll drops the node
            topic = await asyncio.to_thread(services().kb.topic, user.tenant, slug)
            text = await asyncio.to_thread(excerpt, topic.content) if topic else ""  # CPU: reads the content
            description = topic.description if topic else ""
        self.panel = Panel(slug, node.label, node.type, TYPE_LABELS.get(node.type, node.type), description, text,
                           node.pending, rows)
        self.selected = slug

    @rx.event
    async def select(self, node_id: str):
        """A node clicked on the canvas (or a neighbour in the panel)."""
        return await self._select(node_id)

    async def _select(self, node_id: str):
        user = await self._user()
        if user is None:
            return
        try:
            await self._fill_panel(user, str(node_id))
        except PBError as exc:
            log.error("loading topic %s for the graph failed: %s", node_id, exc)
            return rx.toast.error(msg("graph.topic_load_failed"))

    @rx.event
    def close_panel(self):
        self.selected, self.panel = "", Panel()

    @rx.event
    def ask(self):
        """"Ask R42 about this": open the chat with a question about the selected topic, ready to send."""
        if not self.panel.label:
            return
        return ChatState.open_with(ask_question(self.panel.label))
