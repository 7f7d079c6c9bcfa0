"""Tool specs: what the model is told about each tool, the capability that offers it and its risk.

Pure data; `r42_app.chat.tools` pairs each spec with a handler in the tool registry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from r42_app.core.capabilities import CAPABILITIES, DATA_WRITE, KB_SEARCH
from r42_app.core.visible import visible_text

RISKS = ("low", "high")
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # what the Messages API accepts


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    capability: str = KB_SEARCH
    risk: str = "low"

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


LOOKUP_TOPIC = ToolSpec(
    "lookup_topic",
    "Read one topic of the knowledge base in full: label, type, description, learning content and relations.",
    {"type": "object",
     "properties": {"id": {"type": "string", "description": "The topic id (slug), e.g. partnerpensioen"}},
     "required": ["id"]},
    KB_SEARCH,
)

KB_SEARCH_TOOL = ToolSpec(
    "kb_search",
    "Search the knowledge base; returns the best matching topics as snippets with new [ref:N] numbers.",
    {"type": "object", "properties": {"query": {"type": "string"},
                                      "mode": {"type": "string", "enum": ["fts", "semantic", "hybrid"]}},
     "required": ["query"]},
    KB_SEARCH,
)

PROPOSE_GRAPH_DELTA = ToolSpec(
    "propose_graph_delta",
    "Propose additions to the knowledge graph (new topics and relations) when the learner's question shows "
    "something missing. The user confirms before anything is written.",
    {
        "type": "object",
        "properties": {
            "reason": {"type": "string", "description": "One sentence: why this edit helps."},
            "topics": {"type": "array", "maxItems": 3, "items": {"type": "object", "properties": {
                "id": {"type": "string", "description": "kebab-case id, e.g. wezenpensioen"},
                "label": {"type": "string"},
                "type": {"type": "string", "enum": ["concept", "role", "process"]},
                "description": {"type": "string"}}, "required": ["id", "label", "type", "description"]}},
            "relations": {"type": "array", "maxItems": 5, "items": {"type": "object", "properties": {
                "source": {"type": "string"}, "target": {"type": "string"},
                "type": {"type": "string", "enum": ["related_to", "depends_on", "part_of", "executed_by"]}},
                "required": ["source", "target", "type"]}},
        },
        "required": ["reason", "topics", "relations"],
    },
    DATA_WRITE,
)

BUILTIN_TOOLS = (LOOKUP_TOPIC, KB_SEARCH_TOOL, PROPOSE_GRAPH_DELTA)
