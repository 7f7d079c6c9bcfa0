"""`validate_delta`: the strict gate between a `propose_graph_delta` tool call and the knowledge graph.

A delta proposes at most 3 topics and 5 relations. Topics that already exist (same id, or same
label ignoring case) are dropped, and relations may then point at the existing topic. Relations
need both ends in the KB or in the delta, no self-references, allowed types, and may not close a
cycle through `part_of` or through `depends_on` edges (checked with networkx). Anything else
malformed rejects the whole delta, with reasons a model and a learner can read.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from r42_app.core.errors import UserError
from r42_app.core.kb import RELATION_LABELS, RELATION_TYPES, TOPIC_TYPES, TYPE_LABELS, Relation, Topic, check_slug
from r42_app.core.messages import msg, word
from r42_app.core.tools import (  # noqa: F401 - the limits are this module's too (importers read them here)
    MAX_DESCRIPTION,
    MAX_ID,
    MAX_LABEL,
    MAX_REASON,
    MAX_RELATIONS,
    MAX_TOPICS,
    ProposeGraphDeltaInput,
    ToolInputError,
    parse_input,
)

ACYCLIC_TYPES = ("part_of", "depends_on")


class KnowledgeGraph(Protocol):
    topics: list[Topic]
    relations: list[Relation]


@dataclass(frozen=True)
class DeltaTopic:
    id: str
    label: str
    type: str
    description: str


@dataclass(frozen=True)
class DeltaRelation:
    source: str
    target: str
    type: str


@dataclass(frozen=True)
class ValidDelta:
    """What would really be added, plus notes on what was dropped as already known."""

    reason: str
    topics: tuple[DeltaTopic, ...]
    relations: tuple[DeltaRelation, ...]
    notes: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"reason": self.reason, "topics": [asdict(t) for t in self.topics],
                "relations": [asdict(r) for r in self.relations]}


@dataclass(frozen=True)
class Rejected:
    reasons: tuple[str, ...] = field(default_factory=tuple)

    @property
    def message(self) -> str:
        return "; ".join(self.reasons)


def validate_delta(delta: Any, kb: KnowledgeGraph,
                   shape: type[ProposeGraphDeltaInput] = ProposeGraphDeltaInput) -> ValidDelta | Rejected:
    """Check a proposed graph edit against the tenant's current knowledge graph (pure; no writes): first its shape,
    the tool's own input model (core/tools.py: limits, types, required text), then what only the graph can say."""
    if not isinstance(delta, dict):
        return Rejected(("the edit must be an object with reason, topics and relations",))
    try:  # an edit without topics (or relations) has none
        parsed = parse_input(shape, {"topics": [], "relations": [], **delta})
    except ToolInputError as exc:
        return Rejected(exc.reasons)
    problems: list[str] = []
    for i, t in enumerate(parsed.topics):
        problems += [str(p) for p in check_slug(t.id, f"topics[{i}].id")]
    for i, r in enumerate(parsed.relations):
        problems += [str(p) for end in ("source", "target") for p in check_slug(getattr(r, end),
                                                                                 f"relations[{i}].{end}")]
    if problems:
        return Rejected(tuple(problems))
    reason = parsed.reason

    existing_ids = {t.slug for t in kb.topics}
    existing_labels = {t.label.casefold(): t.slug for t in kb.topics}
    alias: dict[str, str] = {}  # proposed id -> the id it turned out to be
    topics: list[DeltaTopic] = []
    notes: list[str] = []
    for raw in parsed.topics:
        tid, label, folded = raw.id, raw.label, raw.label.casefold()
        if tid in existing_ids or folded in existing_labels:
            alias[tid] = tid if tid in existing_ids else existing_labels[folded]
            notes.append(f"{label} already exists as {alias[tid]}")
            continue
        if tid in alias or any(t.id == tid or t.label.casefold() == folded for t in topics):
            alias.setdefault(tid, next((t.id for t in topics if t.id == tid or t.label.casefold() == folded), tid))
            notes.append(f"{label} is proposed twice")
            continue
        topics.append(DeltaTopic(tid, label, raw.type, raw.description))
        alias[tid] = tid

    known = existing_ids | {t.id for t in topics}
    existing_edges = {(r.source, r.target, r.type) for r in kb.relations}
    relations: list[DeltaRelation] = []
    for i, raw_relation in enumerate(parsed.relations):
        where = f"relations[{i}]"
        source, target = (alias.get(raw_relation.source, raw_relation.source),
                          alias.get(raw_relation.target, raw_relation.target))
        rtype = raw_relation.type
        if source == target:
            problems.append(f"{where} relates {source} to itself")
            continue
        missing = [s for s in (source, target) if s not in known]
        if missing:
            problems.append(f"{where} points at {', '.join(missing)}, "
                            "which is neither in the knowledge base nor in this edit")
            continue
        edge = DeltaRelation(source, target, rtype)
        if (source, target, rtype) in existing_edges:
            notes.append(f"{source} {rtype} {target} already exists")
        elif edge in relations:
            notes.append(f"{source} {rtype} {target} is proposed twice")
        else:
            relations.append(edge)
    if problems:
        return Rejected(tuple(problems))

    import networkx as nx  # here, not at the top: a command or page that checks no edit starts sooner

    for acyclic in ACYCLIC_TYPES:
        graph = nx.DiGraph([(r.source, r.target) for r in kb.relations if r.type == acyclic])
        for edge in (r for r in relations if r.type == acyclic):
            if (graph.has_node(edge.target) and graph.has_node(edge.source)
                    and nx.has_path(graph, edge.target, edge.source)):
                path = " → ".join(nx.shortest_path(graph, edge.target, edge.source))
                problems.append(f"{edge.source} {acyclic} {edge.target} would close a {acyclic} cycle "
                                f"({edge.source} → {path})")
            else:
                graph.add_edge(edge.source, edge.target)
    if problems:
        return Rejected(tuple(problems))

    if not topics and not relations:
        return Rejected(("everything in this edit is already in the knowledge base",))
    return ValidDelta(reason, tuple(topics), tuple(relations), tuple(notes))


@dataclass
class GraphSnapshot:
    """A knowledge graph as plain lists (anything with .topics and .relations will do)."""

    topics: list[Topic]
    relations: list[Relation]


class StoredDeltaError(UserError, ValueError):
    """A stored delta (a suggestion row, a chat message) does not have the shape the app writes."""


def _stored_text(value: Any, where: str, limit: int) -> str:
    if not isinstance(value, str):
        raise StoredDeltaError("delta.stored_not_text", f"{where} is not text", where=where)
    if len(value) > limit:
        raise StoredDeltaError("delta.stored_too_long", f"{where} is longer than {limit} characters", where=where,
                               limit=limit)
    return value


def _stored_choice(value: Any, where: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise StoredDeltaError("delta.stored_not_choice", f"{where} is not one of {', '.join(allowed)}", where=where,
                               allowed=", ".join(allowed))
    return value


# what a stored delta that is not an object is instead, as its catalogue code
_NOT_AN_OBJECT = {list: "delta.stored_list", str: "delta.stored_text", int: "delta.stored_number",
                  float: "delta.stored_number", bool: "delta.stored_bool", type(None): "delta.stored_empty"}


def read_stored_delta(raw: Any) -> dict[str, Any]:
    """A stored delta as `{reason, topics: [{id, label, type, description}], relations: [{source, target,
    type}]}` with only those keys, or StoredDeltaError saying (its `user_message`, for the admin who sees it)
    what is wrong. Stored rows are untrusted (another writer, an older version, a hand edit): readers call
    this and show a bad row as invalid instead of failing the page that lists it."""
    if not isinstance(raw, dict):
        kind = type(raw).__name__
        raise StoredDeltaError(_NOT_AN_OBJECT.get(type(raw), "delta.stored_other"), f"the delta is {kind}, not an "
                               "object", kind=kind)
    topics, relations = raw.get("topics", []), raw.get("relations", [])
    if not isinstance(topics, list) or not isinstance(relations, list):
        raise StoredDeltaError("delta.stored_not_lists", "topics and relations must be lists")
    if len(topics) > MAX_TOPICS or len(relations) > MAX_RELATIONS:
        raise StoredDeltaError("delta.stored_too_many", f"more than {MAX_TOPICS} topics or {MAX_RELATIONS} relations",
                               topics=MAX_TOPICS, relations=MAX_RELATIONS)
    out_topics, out_relations = [], []
    for i, t in enumerate(topics):
        if not isinstance(t, dict):
            raise StoredDeltaError("delta.stored_not_object", f"topics[{i}] is not an object", where=f"topics[{i}]")
        out_topics.append({"id": _stored_text(t.get("id"), f"topics[{i}].id", MAX_ID),
                           "label": _stored_text(t.get("label"), f"topics[{i}].label", MAX_LABEL),
                           "type": _stored_choice(t.get("type"), f"topics[{i}].type", TOPIC_TYPES),
                           "description": _stored_text(t.get("description", ""), f"topics[{i}].description",
                                                       MAX_DESCRIPTION)})
    for i, r in enumerate(relations):
        if not isinstance(r, dict):
            raise StoredDeltaError("delta.stored_not_object", f"relations[{i}] is not an object",
                                   where=f"relations[{i}]")
        out_relations.append({"source": _stored_text(r.get("source"), f"relations[{i}].source", MAX_ID),
                              "target": _stored_text(r.get("target"), f"relations[{i}].target", MAX_ID),
                              "type": _stored_choice(r.get("type"), f"relations[{i}].type", RELATION_TYPES)})
    reason = _stored_text(raw.get("reason", ""), "reason", 2 * MAX_REASON)
    return {"reason": reason, "topics": out_topics, "relations": out_relations}


def describe_delta(delta: Any, labels: dict[str, str] | None = None) -> list[str]:
    """What a proposed edit would add, in the language of the moment: topics with their type ("Nieuw onderwerp:
    Wezenpensioen (Concept)"), relations with the labels the topic pages use ("Wezenpensioen → is onderdeel van →
    Nabestaandenpensioen"; a new topic by its label, an existing one by its label in `labels`, slug to label,
    else by its id). A malformed delta is described as such (never an exception)."""
    try:
        clean = read_stored_delta(delta)
    except StoredDeltaError:
        return [msg("delta.unreadable")] if delta else []
    names = {**(labels or {}), **{t["id"]: t["label"] for t in clean["topics"]}}
    lines = [msg("delta.new_topic", label=t["label"], type=word(TYPE_LABELS.get(t["type"], t["type"])))
             for t in clean["topics"]]
    lines += [f"{names.get(r['source'], r['source'])} → {word(RELATION_LABELS.get(r['type'], r['type']))} → "
              f"{names.get(r['target'], r['target'])}" for r in clean["relations"]]
    return lines
