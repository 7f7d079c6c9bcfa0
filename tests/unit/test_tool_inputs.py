"""The built-in tools' inputs (core/tools.py): one typed model per tool gives the schema the model sees and the
check of every call; a call of the wrong shape goes back to the model with what is wrong, and its handler never
runs."""

import asyncio
import json

import pytest

from r42_app.chat.tools import TurnContext, builtin_registry
from r42_app.core.identity import SignedInUser
from r42_app.core.tools import BUILTIN_TOOLS, KB_SEARCH_TOOL, LOOKUP_TOPIC, ToolInputError, input_schema, parse_input

USER = SignedInUser("u1", "leerling@example.com", "Leerling", "learner", "t1", "demo", "Demo")


class Untouchable:
    """Dependencies that fail the test when a handler reaches them."""

    def __getattr__(self, name):
        raise AssertionError(f"the handler ran and used deps.{name}")


def call(name: str, tool_input) -> tuple[str, bool]:
    tools = {t.name: t for t in builtin_registry().all()}
    ctx = TurnContext(USER, USER.tenant, frozenset(), Untouchable())
    result = asyncio.run(builtin_registry().dispatch(ctx, name, tool_input, tools))
    return result.content, result.is_error


@pytest.mark.parametrize("name, tool_input, said", [
    ("kb_search", {"query": "AOW", "mode": "magic"}, "mode must be one of fts, semantic, hybrid"),
    ("kb_search", {"mode": "fts"}, "query is required"),
    ("kb_search", {"query": ""}, "query is required"),
    ("kb_search", {"query": "x" * 2001}, "query is longer than 2000 characters"),
    ("kb_search", {"query": ["AOW"]}, "query must be text"),
    ("lookup_topic", {"id": 5}, "id must be text"),
    ("lookup_topic", {}, "id is required"),
])
def test_a_call_of_the_wrong_shape_is_answered_with_what_is_wrong_and_does_nothing(name, tool_input, said):
    content, is_error = call(name, tool_input)
    assert is_error and said in content and "nothing was done" in content


def test_the_schemas_the_model_sees_are_plain_json_schema_from_the_models():
    for spec in BUILTIN_TOOLS:
        text = json.dumps(spec.definition())
        assert "$ref" not in text and "$defs" not in text and '"title"' not in text, spec.name
        assert spec.input_model is not None and spec.input_schema == input_schema(spec.input_model)
    assert KB_SEARCH_TOOL.input_schema["required"] == ["query"]
    assert KB_SEARCH_TOOL.input_schema["properties"]["mode"]["enum"] == ["fts", "semantic", "hybrid"]
    assert LOOKUP_TOPIC.input_schema["properties"]["id"]["description"].startswith("The topic id")


def test_parse_input_squashes_text_and_names_every_problem():
    from r42_app.core.tools import ProposeGraphDeltaInput

    parsed = parse_input(ProposeGraphDeltaInput, {"reason": "  Twee   spaties  ", "topics": [], "relations": [],
                                                  "extra": "genegeerd"})
    assert parsed.reason == "Twee spaties"
    with pytest.raises(ToolInputError) as bad:
        parse_input(ProposeGraphDeltaInput, {"reason": " ", "topics": [{"id": "a", "label": "A", "type": "ding",
                                                                        "description": "d"}], "relations": "geen"})
    assert bad.value.reasons == ("reason is required", "topics[0].type must be one of concept, role, process",
                                 "relations must be a list")
