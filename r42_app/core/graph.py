"""The knowledge-graph view: nodes and links for the force layout, node sizes by degree, neighbours
and node search. Pure: the page state feeds it topics, relations and pending suggestion deltas.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import networkx as nx

from r42_app.core.delta import StoredDeltaError, read_stored_delta
from r42_app.core.kb import RELATION_LABELS, TYPE_LABELS, Relation, Topic
from r42_app.core.messages import word
from r42_app.core.text import fold, link_texts

# Canvas colours of the topic types (Radix step 9 of the colours the badges use: blue, orange, grass).
TYPE_HEX = {"concept": "#0090ff", "role": "#f76b15", "process": "#46a758"}
PENDING_HEX = "#8b8d98"
MIN_SIZE = 1.0
MAX_SIZE = 10.0
SEARCH_LIMIT = 8
_EMPHASIS = re.compile(r"(\*\*|__|\*|`)")


@dataclass(frozen=True)
class GraphNode:
    id: str
    label: str
    type: str
    color: str
    val: float  # the force-graph node "value": its area, grown with the degree
    degree: int
    pending: bool = False

    def as_dict(self) -> dict[str, Any]:
        """What the canvas draws; its type's name in the language of the moment (the canvas looks up no words)."""
        return {"id": self.id, "label": self.label, "type": self.type,
                "type_label": word(TYPE_LABELS.get(self.type, self.type)), "color": self.color, "val": self.val,
                "degree": self.degree, "pending": self.pending}


@dataclass(frozen=True)
class GraphLink:
    source: str
    target: str
    type: str
    pending: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "target": self.target, "type": self.type, "pending": self.pending,
                "label": word(RELATION_LABELS.get(self.type, self.type))}  # what the graph writes on the link


@dataclass(frozen=True)
class GraphView:
    nodes: tuple[GraphNode, ...]
    links: tuple[GraphLink, ...]

    @property
    def pending_count(self) -> int:
        return sum(1 for n in self.nodes if n.pending) + sum(1 for link in self.links if link.pending)


def node_size(degree: int, max_degree: int) -> float:
    """Area grows with the degree (square-root scale), from MIN_SIZE for isolated topics to MAX_SIZE."""
    if max_degree <= 0:
        return MIN_SIZE
    return round(MIN_SIZE + (MAX_SIZE - MIN_SIZE) * math.sqrt(degree / max_degree), 2)


def build_view(topics: Iterable[Topic], relations: Iterable[Relation],
               pending_deltas: Iterable[dict[str, Any]] = ()) -> GraphView:
    """Nodes and links of a tenant's graph. Pending suggestion deltas (admins only) add dashed nodes
    and links; a pending topic that already exists is not drawn twice, and links whose ends are
    unknown are left out rather than breaking the layout; a malformed delta is skipped."""
    graph: nx.MultiDiGraph[str] = nx.MultiDiGraph()
    labels: dict[str, tuple[str, str]] = {}
    for t in topics:
        graph.add_node(t.slug)
        labels[t.slug] = (t.label, t.type)
    links: list[GraphLink] = []
    for r in relations:
        if r.source in labels and r.target in labels and r.source != r.target:
            graph.add_edge(r.source, r.target)
            links.append(GraphLink(r.source, r.target, r.type))
    known = set(labels)
    pending_nodes: dict[str, tuple[str, str]] = {}
    pending_links: set[tuple[str, str, str]] = set()
    existing_links = {(link.source, link.target, link.type) for link in links}
    for raw in pending_deltas:
        try:
            delta = read_stored_delta(raw)
        except StoredDeltaError:
            continue
        for t in delta["topics"]:
            slug, label, kind = t["id"], t["label"], t["type"]
            if slug and slug not in known and slug not in pending_nodes:
                pending_nodes[slug] = (label or slug, kind)
        for r in delta["relations"]:
            key = (r["source"], r["target"], r["type"])
            if key not in existing_links:
                pending_links.add(key)
    for slug, (label, kind) in pending_nodes.items():
        graph.add_node(slug)
        labels[slug] = (label, kind)
    for source, target, kind in sorted(pending_links):
        if source in labels and target in labels and source != target:
            graph.add_edge(source, target)
            links.append(GraphLink(source, target, kind, pending=True))
    degrees = dict(graph.degree())
    top = max(degrees.values(), default=0)
    nodes = tuple(
        GraphNode(slug, label, kind, PENDING_HEX if slug in pending_nodes else TYPE_HEX.get(kind, PENDING_HEX),
                  node_size(degrees.get(slug, 0), top), degrees.get(slug, 0), slug in pending_nodes)
        for slug, (label, kind) in labels.items()
    )
    return GraphView(nodes, tuple(links))


@dataclass(frozen=True)
class Neighbour:
    slug: str
    label: str
    type: str
    relation: str
    outgoing: bool  # this topic --relation--> neighbour


def neighbours(slug: str, relations: Iterable[Relation], labels: dict[str, tuple[str, str]]) -> list[Neighbour]:
    """The topics one relation away, both directions, sorted by relation type and label."""
    out = []
    for r in relations:
        if r.source == slug and r.target in labels:
            out.append(Neighbour(r.target, *labels[r.target], r.type, True))
        elif r.target == slug and r.source in labels:
            out.append(Neighbour(r.source, *labels[r.source], r.type, False))
    return sorted(out, key=lambda n: (n.relation, not n.outgoing, fold(n.label)))


def search_nodes(nodes: Iterable[GraphNode], query: str, limit: int = SEARCH_LIMIT) -> list[GraphNode]:
    """Nodes whose label or id matches the query (ignoring case and accents): exact label first,
    then label prefix, then word prefix, then anywhere; ties by degree, then label."""
    q = fold(query).strip()
    if not q:
        return []
    ranked = []
    for node in nodes:
        label = fold(node.label)
        if label == q:
            rank = 0
        elif label.startswith(q):
            rank = 1
        elif any(word.startswith(q) for word in label.split()):
            rank = 2
        elif q in label or q in node.id:
            rank = 3
        else:
            continue
        ranked.append((rank, -node.degree, label, node))
    ranked.sort(key=lambda item: item[:3])
    return [item[3] for item in ranked[:limit]]


def excerpt(content: str, limit: int = 320) -> str:
    """The first paragraph of markdown content as plain text (no emphasis or link syntax), cut at a word."""
    lines = [line.strip() for line in content.splitlines()]
    paragraphs: list[str] = []
    current: list[str] = []
    for line in lines:
        if not line:
            if current:
                paragraphs.append(" ".join(current))
                current = []
            continue
        if line.startswith("#"):
            continue
        current.append(line.lstrip("-*> ").strip())
    if current:
        paragraphs.append(" ".join(current))
    text = _EMPHASIS.sub("", link_texts(next((p for p in paragraphs if p), "")))
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0].rstrip(",.;:")
    return cut + "…"
