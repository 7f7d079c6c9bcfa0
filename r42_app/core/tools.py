"""Tool specs: what the model is told about each tool, the capability that offers it and its risk.

Each built-in tool's input is one typed model (pydantic) below, and everything else comes from it: the JSON schema
the model sees (`ToolSpec.definition`), the validation of a call with reasons the model can read (`parse_input`),
and the limits PocketBase enforces on what a tool's call may store (pb_hooks/r42_tool_shapes.js, generated from these
models by `python -m r42_app.docsgen`; tests/unit/test_tool_definitions.py checks that it is current). Adding a tool
is one model and one spec here, plus its handler in `r42_app.chat.tools`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints, ValidationError

from r42_app.core.capabilities import CAPABILITIES, DATA_WRITE, KB_SEARCH
from r42_app.core.kb import MAX_DESCRIPTION, MAX_LABEL, MAX_SLUG, RelationType, TopicType
from r42_app.core.visible import visible_text

RISKS = ("low", "high")
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # what the Messages API accepts


# -- the shape of a tool's input ---------------------------------------------------------------------------------


class ToolInput(BaseModel):
    """A tool's arguments. Keys the model adds beyond the schema are ignored; a value of the wrong kind is not."""

    model_config = ConfigDict(extra="ignore", frozen=True)


def _squashed(value: Any) -> Any:
    """Text as it is stored: runs of whitespace as one space, no space at either end (other values unchanged)."""
    return " ".join(value.split()) if isinstance(value, str) else value


def Text(max_length: int) -> Any:  # noqa: N802 - used as a type
    """Required text of at most `max_length` characters once its whitespace is squashed."""
    return Annotated[str, BeforeValidator(_squashed), StringConstraints(min_length=1, max_length=max_length)]


MAX_QUERY = 2000  # characters of a kb_search query
MAX_REASON = 300
MAX_ID = 60  # a proposed topic's id (a slug is at most MAX_SLUG anywhere)
MAX_TOPICS = 3
MAX_RELATIONS = 5
Slug = Annotated[str, StringConstraints(min_length=1, max_length=MAX_SLUG)]


class LookupTopicInput(ToolInput):
    id: Annotated[Slug, Field(description="The topic id (slug), e.g. partnerpensioen")]


class KbSearchInput(ToolInput):
    query: Annotated[str, StringConstraints(min_length=1, max_length=MAX_QUERY)]
    mode: Literal["fts", "semantic", "hybrid"] = "hybrid"


class DeltaTopicInput(ToolInput):
    id: Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID),
                  Field(description="kebab-case id, e.g. wezenpensioen")]
    label: Text(MAX_LABEL)  # type: ignore[valid-type]
    type: TopicType
    description: Text(MAX_DESCRIPTION)  # type: ignore[valid-type]


class DeltaRelationInput(ToolInput):
    source: Slug
    target: Slug
    type: RelationType


class ProposeGraphDeltaInput(ToolInput):
    reason: Annotated[Text(MAX_REASON), Field(description="One sentence: why this edit helps.")]  # type: ignore[valid-type]
    topics: Annotated[list[DeltaTopicInput], Field(max_length=MAX_TOPICS)]
    relations: Annotated[list[DeltaRelationInput], Field(max_length=MAX_RELATIONS)]


Input = TypeVar("Input", bound=ToolInput)


class ToolInputError(ValueError):
    """A tool call whose input does not have its tool's shape; `reasons` are for the model ("topics[0].label is
    longer than 120 characters")."""

    def __init__(self, reasons: tuple[str, ...]):
        super().__init__("; ".join(reasons))
        self.reasons = reasons


def parse_input(model: type[Input], raw: Any) -> Input:
    """`raw` (a tool call's input) as `model`, or ToolInputError saying what is wrong, in the model's terms."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise ToolInputError(tuple(_reason(e) for e in exc.errors(include_url=False))) from None


def _where(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "the input"


def _reason(error: Any) -> str:
    """One pydantic error as a sentence: where, and what is wrong."""
    where, kind, ctx = _where(tuple(error["loc"])), error["type"], error.get("ctx") or {}
    if kind in ("missing", "string_too_short", "too_short"):
        return f"{where} is required"
    if kind == "string_too_long" or (kind == "too_long" and isinstance(error.get("input"), str)):
        return f"{where} is longer than {ctx.get('max_length')} characters"
    if kind == "too_long":
        return f"at most {ctx.get('max_length')} {where} per call, got {ctx.get('actual_length')}"
    if kind == "literal_error":
        return f"{where} must be one of {ctx.get('expected', '').replace(' or ', ', ').replace(chr(39), '')}"
    if kind == "string_type":
        return f"{where} must be text"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"{where} must be an object"
    if kind == "list_type":
        return f"{where} must be a list"
    return f"{where}: {error.get('msg', 'not valid')}"


def input_schema(model: type[ToolInput]) -> dict[str, Any]:
    """The JSON schema of a tool's input as the Messages API takes it: nested models inlined (no $ref), without
    pydantic's titles."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return inline(defs[node["$ref"].rsplit("/", 1)[-1]])
            return {k: inline(v) for k, v in node.items() if k != "title"}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    return inline(schema)


# -- a tool ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    capability: str = KB_SEARCH
    risk: str = "low"
    input_model: type[ToolInput] | None = None  # a built-in tool's input (its schema comes from it)

    @classmethod
    def typed(cls, name: str, description: str, model: type[ToolInput], capability: str = KB_SEARCH,
              risk: str = "low") -> ToolSpec:
        """A built-in tool: its schema is its input model's."""
        return cls(name, description, input_schema(model), capability, risk, model)

    def __post_init__(self) -> None:
        if not TOOL_NAME.match(self.name):
            raise ValueError(f"tool name {self.name!r} must match {TOOL_NAME.pattern}")
        if self.capability not in CAPABILITIES:
            raise ValueError(f"tool {self.name!r}: capability must be one of {', '.join(CAPABILITIES)}")
        if self.risk not in RISKS:
            raise ValueError(f"tool {self.name!r}: risk must be low or high")

    def definition(self) -> dict[str, Any]:
        """The tool as the Messages API wants it; an MCP server's texts without characters nobody sees
        (core/visible.py), so a description cannot hide instructions from whoever reads it."""
        return {"name": self.name, "description": visible_text(self.description),
                "input_schema": _visible(self.input_schema)}


def _visible(value: Any) -> Any:
    """`value` (JSON) with every string as a reader sees it."""
    if isinstance(value, str):
        return visible_text(value)
    if isinstance(value, dict):
        return {_visible(k): _visible(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_visible(v) for v in value]
    return value


LOOKUP_TOPIC = ToolSpec.typed(
    "lookup_topic",
    "Read one topic of the knowledge base in full: label, type, description, learning content and relations.",
    LookupTopicInput, KB_SEARCH)

KB_SEARCH_TOOL = ToolSpec.typed(
    "kb_search",
    "Search the knowledge base; returns the best matching topics as snippets with new [ref:N] numbers.",
    KbSearchInput, KB_SEARCH)

PROPOSE_GRAPH_DELTA = ToolSpec.typed(
    "propose_graph_delta",
    "Propose additions to the knowledge graph (new topics and relations) when the learner's question shows "
    "something missing. The user confirms before anything is written.",
    ProposeGraphDeltaInput, DATA_WRITE)

BUILTIN_TOOLS = (LOOKUP_TOPIC, KB_SEARCH_TOOL, PROPOSE_GRAPH_DELTA)


def pocketbase_shapes(tools: tuple[ToolSpec, ...] = BUILTIN_TOOLS) -> str:
    """pb_hooks/r42_tool_shapes.js: the input schemas of the tools whose calls PocketBase stores (a suggestion's
    delta is a propose_graph_delta call), for pb_hooks/r42_rules.js to check every writer against."""
    shapes = {t.name: t.input_schema for t in tools if t.capability == DATA_WRITE and t.input_model is not None}
    return ("// Generated from r42_app/core/tools.py by `python -m r42_app.docsgen`; do not edit (a test compares).\n"
            "// The input schemas of the tools whose calls PocketBase stores: r42_rules.js checks every writer.\n"
            f"module.exports = {json.dumps(shapes, indent=2, sort_keys=True)};\n")
