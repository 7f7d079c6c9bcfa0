"""The knowledge-base model: topics, relations and the rules every write path shares.

The admin forms, `r42 kb import` and (later) R42's graph edits all validate through
these functions, so a rule lives in exactly one place.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from r42_app.core.messages import N_, msg
from r42_app.core.text import fold

TopicType = Literal["concept", "role", "process"]
RelationType = Literal["related_to", "depends_on", "part_of", "executed_by"]
TOPIC_TYPES: tuple[str, ...] = get_args(TopicType)
RELATION_TYPES: tuple[str, ...] = get_args(RelationType)

SLUG_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
MAX_SLUG = 80
MAX_LABEL = 120
MAX_DESCRIPTION = 500
MAX_CONTENT = 20_000

TYPE_LABELS = {"concept": N_("Concept"), "role": N_("Rol"), "process": N_("Proces")}
TYPE_PLURALS = {"concept": N_("Concepten"), "role": N_("Rollen"), "process": N_("Processen")}
RELATION_LABELS = {
    "related_to": N_("hangt samen met"),
    "depends_on": N_("is afhankelijk van"),
    "part_of": N_("is onderdeel van"),
    "executed_by": N_("wordt uitgevoerd door"),
}


@dataclass(frozen=True)
class Topic:
    """One node of the knowledge graph; `slug` is its stable, kebab-case id within a tenant."""

    slug: str
    label: str
    type: str
    description: str
    content: str = ""


@dataclass(frozen=True)
class Relation:
    """A typed, directed edge between two topics of the same tenant, by slug."""

    source: str
    target: str
    type: str

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.source, self.target, self.type)


@dataclass(frozen=True)
class Issue:
    """One validation problem: `where` names the item and field, `message` says what is wrong (English, for
    the CLI and the model), `code` and `fields` say it in Dutch for the editor (`user_message`)."""

    where: str
    message: str
    code: str
    fields: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def user_message(self) -> str:
        return msg(self.code, **self.fields)

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message


@dataclass
class ImportPlan:
    """A fully validated import file, ready to be written."""

    topics: list[Topic] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)


def slugify(text: str) -> str:
    """Turn a label into a kebab-case slug suggestion (diacritics folded)."""
    return re.sub(r"[^a-z0-9]+", "-", fold(text)).strip("-")[:MAX_SLUG].strip("-")


def _text(value: Any, where: str, name: str, limit: int, required: bool, issues: list[Issue]) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        issues.append(Issue(where, f"{name} must be text", "kb.not_text"))
        return ""
    value = value.strip()
    if required and not value:
        issues.append(Issue(where, f"{name} is required", "kb.required"))
    elif len(value) > limit:
        issues.append(Issue(where, f"{name} is {len(value)} characters, the maximum is {limit}", "kb.too_long",
                            {"length": len(value), "maximum": limit}))
    return value


def check_slug(slug: Any, where: str = "id") -> list[Issue]:
    """Problems with a topic id, or an empty list."""
    if not isinstance(slug, str) or not slug.strip():
        return [Issue(where, "is required", "kb.required")]
    if len(slug) > MAX_SLUG:
        return [Issue(where, f"is longer than {MAX_SLUG} characters", "kb.id_too_long", {"maximum": MAX_SLUG})]
    if not SLUG_RE.match(slug):
        return [Issue(where, f"{slug!r} is not kebab-case (lowercase letters, digits and single hyphens)",
                      "kb.not_kebab")]
    return []


def parse_topic(raw: Any, where: str = "topic") -> tuple[Topic | None, list[Issue]]:
    """Validate one topic object (`id`, `label`, `type`, `description`, optional `content`)."""
    if not isinstance(raw, dict):
        return None, [Issue(where, "must be an object", "kb.not_object")]
    issues: list[Issue] = []
    slug = raw.get("id", raw.get("slug"))
    issues += check_slug(slug, f"{where}.id")
    label = _text(raw.get("label"), f"{where}.label", "label", MAX_LABEL, True, issues)
    ttype = raw.get("type")
    if ttype not in TOPIC_TYPES:
        issues.append(Issue(f"{where}.type", f"{ttype!r} is not one of {', '.join(TOPIC_TYPES)}", "kb.not_allowed"))
    description = _text(raw.get("description"), f"{where}.description", "description", MAX_DESCRIPTION, True, issues)
    content = _text(raw.get("content"), f"{where}.content", "content", MAX_CONTENT, False, issues)
    if issues:
        return None, issues
    assert isinstance(slug, str) and isinstance(ttype, str)  # check_slug and TOPIC_TYPES saw to that
    return Topic(slug=slug, label=label, type=ttype, description=description, content=content), []


def parse_relation(raw: Any, where: str = "relation") -> tuple[Relation | None, list[Issue]]:
    """Validate the shape of one relation object (`source`, `target`, `type`)."""
    if not isinstance(raw, dict):
        return None, [Issue(where, "must be an object", "kb.not_object")]
    issues: list[Issue] = []
    issues += check_slug(raw.get("source"), f"{where}.source")
    issues += check_slug(raw.get("target"), f"{where}.target")
    rtype = raw.get("type")
    if rtype not in RELATION_TYPES:
        issues.append(Issue(f"{where}.type", f"{rtype!r} is not one of {', '.join(RELATION_TYPES)}", "kb.not_allowed"))
    if not issues and raw["source"] == raw["target"]:
        issues.append(Issue(where, f"a topic cannot relate to itself ({raw['source']})", "kb.self_relation"))
    if issues:
        return None, issues
    assert isinstance(rtype, str)  # one of RELATION_TYPES
    return Relation(source=raw["source"], target=raw["target"], type=rtype), []


def check_relation_endpoints(rel: Relation, known_slugs: Iterable[str], where: str = "relation") -> list[Issue]:
    """Both ends of a relation must be topics of the same tenant."""
    known = known_slugs if isinstance(known_slugs, (set, frozenset, dict)) else set(known_slugs)
    return [
        Issue(f"{where}.{end}", f"unknown topic {slug!r}", "kb.unknown_topic", {"slug": slug})
        for end, slug in (("source", rel.source), ("target", rel.target))
        if slug not in known
    ]


def parse_import(data: Any, existing_slugs: Iterable[str] = ()) -> tuple[ImportPlan | None, list[Issue]]:
    """Validate a whole `kb import` document; nothing may be written unless the issue list is empty.

    Relations may point at topics in the file or at topics the tenant already has.
    """
    if not isinstance(data, dict):
        return None, [Issue("file", 'must be a JSON object {"topics": [...], "relations": [...]}',
                            "kb.file_not_object")]
    unknown_keys = set(data) - {"topics", "relations"}
    issues: list[Issue] = [Issue(key, "unknown key (expected topics and relations)", "kb.unknown_key")
                           for key in sorted(unknown_keys)]
    raw_topics = data.get("topics", [])
    raw_relations = data.get("relations", [])
    if not isinstance(raw_topics, list):
        issues.append(Issue("topics", "must be a list", "kb.not_list"))
        raw_topics = []
    if not isinstance(raw_relations, list):
        issues.append(Issue("relations", "must be a list", "kb.not_list"))
        raw_relations = []

    plan = ImportPlan()
    seen_slugs: dict[str, int] = {}
    seen_labels: dict[str, int] = {}
    for i, raw in enumerate(raw_topics):
        topic, problems = parse_topic(raw, f"topics[{i}]")
        issues += problems
        if topic is None:
            continue
        if topic.slug in seen_slugs:
            first = f"topics[{seen_slugs[topic.slug]}]"
            issues.append(Issue(f"topics[{i}].id", f"duplicate of {first} ({topic.slug!r})", "kb.duplicate",
                                {"first": first}))
            continue
        folded = topic.label.casefold()
        if folded in seen_labels:
            first = f"topics[{seen_labels[folded]}]"
            issues.append(Issue(f"topics[{i}].label", f"duplicate of {first} ({topic.label!r})", "kb.duplicate",
                                {"first": first}))
            continue
        seen_slugs[topic.slug] = i
        seen_labels[folded] = i
        plan.topics.append(topic)

    known = set(existing_slugs) | set(seen_slugs)
    seen_rel: dict[tuple[str, str, str], int] = {}
    for i, raw in enumerate(raw_relations):
        rel, problems = parse_relation(raw, f"relations[{i}]")
        issues += problems
        if rel is None:
            continue
        endpoint_issues = check_relation_endpoints(rel, known, f"relations[{i}]")
        if endpoint_issues:
            issues += endpoint_issues
            continue
        if rel.key in seen_rel:
            first = f"relations[{seen_rel[rel.key]}]"
            issues.append(Issue(f"relations[{i}]", f"duplicate of {first}", "kb.duplicate", {"first": first}))
            continue
        seen_rel[rel.key] = i
        plan.relations.append(rel)

    if issues:
        return None, issues
    return plan, []


def export_document(topics: Iterable[Topic], relations: Iterable[Relation]) -> dict[str, Any]:
    """The inverse of `parse_import`: a document that imports back to the same knowledge base."""
    return {
        "topics": [
            {"id": t.slug, "label": t.label, "type": t.type, "description": t.description, "content": t.content}
            for t in sorted(topics, key=lambda t: t.slug)
        ],
        "relations": [
            {"source": r.source, "target": r.target, "type": r.type}
            for r in sorted(relations, key=lambda r: r.key)
        ],
    }


INVERSE_RELATION_LABELS = {
    "related_to": N_("hangt samen met"),
    "depends_on": N_("is nodig voor"),
    "part_of": N_("bestaat onder meer uit"),
    "executed_by": N_("voert uit"),
}


def filter_topics(topics: Iterable[Topic], query: str = "", topic_type: str = "") -> list[Topic]:
    """Topics whose label, slug or description contain every word of `query`, optionally of one type.

    Label matches come first, then the rest, each alphabetically.
    """
    words = fold(query).split()
    hits: list[tuple[int, str, Topic]] = []
    for topic in topics:
        if topic_type and topic.type != topic_type:
            continue
        label = fold(topic.label)
        haystack = f"{label} {topic.slug} {fold(topic.description)}"
        if all(word in haystack for word in words):
            rank = 0 if words and all(word in label for word in words) else 1
            hits.append((rank, label, topic))
    hits.sort(key=lambda item: (item[0], item[1]))
    return [topic for _, _, topic in hits]
