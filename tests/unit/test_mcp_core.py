"""MCP core: the config file, tool names, risk rules, redaction and confirmations (bound, expiring,
single use)."""

import pytest

from r42_app.core.mcp import (
    ConfirmationBook,
    ConfirmationError,
    McpConfig,
    McpConfigError,
    mcp_tool_name,
    not_invocable,
    parse_mcp_config,
    redact,
    tool_risk,
)


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_a_config_in_the_mcpservers_shape():
    config = parse_mcp_config({"mcpServers": {"time": {"command": "python", "args": ["-m", "mcp_server_time"]},
                                              "remote": {"url": "http://127.0.0.1:9000/mcp"}},
                               "high_risk": ["r42demo__send_message"], "timeout_seconds": 5})
    assert [(s.name, s.transport) for s in config.servers] == [("time", "stdio"), ("remote", "http")]
    assert config.timeout_s == 5.0 and config.calls_per_minute == 10
    assert parse_mcp_config({}).servers == ()


@pytest.mark.parametrize("data,problem", [
    ([], "JSON object"),
    ({"mcpServers": {"a_b": {"command": "x"}}}, "server name"),
    ({"mcpServers": {"x": {"command": "a", "url": "http://b"}}}, "either command"),
    ({"mcpServers": {"x": {"url": "ftp://b"}}}, "http://"),
    ({"mcpServers": {"x": {"command": "a", "args": "-m x"}}}, "args must be a list"),
    ({"mcpServers": {"x": {"command": "a", "env": {"K": 1}}}}, "env must map"),
    ({"high_risk": ["t"], "low_risk": ["t"]}, "both high_risk and low_risk"),
    ({"timeout_seconds": 0}, "timeout_seconds"),
])
def test_a_bad_config_names_the_problem(data, problem):
    with pytest.raises(McpConfigError, match=problem):
        parse_mcp_config(data)


def test_tool_names_are_server_double_underscore_tool_and_api_safe():
    assert mcp_tool_name("time", "get_current_time") == "time__get_current_time"
    with pytest.raises(ValueError):
        mcp_tool_name("time", "get current time")
    with pytest.raises(ValueError):
        mcp_tool_name("s", "x" * 70)


def test_risk_from_config_then_annotations_then_high():
    config = McpConfig(high_risk=frozenset({"a__read"}), low_risk=frozenset({"a__write"}))
    assert tool_risk("a__read", {"readOnlyHint": True}, config) == "high"  # the config wins
    assert tool_risk("a__write", {"destructiveHint": True}, config) == "low"
    assert tool_risk("b__x", {"readOnlyHint": True, "destructiveHint": False}, McpConfig()) == "low"
    assert tool_risk("b__x", {"destructiveHint": True, "readOnlyHint": True}, McpConfig()) == "high"
    assert tool_risk("b__x", {"readOnlyHint": False}, McpConfig()) == "high"
    assert tool_risk("b__x", None, McpConfig()) == "high"  # unknown: careful


def test_secrets_are_redacted_in_the_audit_copy():
    args = {"query": "x", "api_key": "sk-1", "nested": {"Password": "p", "items": [{"token": "t", "n": 1}]}}
    assert redact(args) == {"query": "x", "api_key": "[verborgen]",
                            "nested": {"Password": "[verborgen]", "items": [{"token": "[verborgen]", "n": 1}]}}
    assert args["api_key"] == "sk-1"  # the call itself still gets them
    assert not_invocable("x__y", "server down") == {"status": "not-invocable", "tool": "x__y", "reason": "server down"}


def test_a_confirmation_is_bound_to_user_tool_and_exact_arguments():
    book = ConfirmationBook(Clock())
    c = book.issue("u1", "demo__send", {"text": "hoi", "n": 1})
    with pytest.raises(ConfirmationError) as other:
        book.redeem(c.id, "u2")
    assert other.value.kind == "other_user"
    with pytest.raises(ConfirmationError):
        book.redeem(c.id, "u1", "demo__send", {"text": "iets anders", "n": 1})
    assert book.redeem(c.id, "u1", "demo__send", {"n": 1, "text": "hoi"}).tool == "demo__send"  # key order is free


def test_a_confirmation_is_used_once_and_expires():
    clock = Clock()
    book = ConfirmationBook(clock)
    c = book.issue("u1", "t", {})
    book.redeem(c.id, "u1")
    with pytest.raises(ConfirmationError) as again:
        book.redeem(c.id, "u1")
    assert again.value.kind == "used"
    late = book.issue("u1", "t", {})
    clock.now += 301
    with pytest.raises(ConfirmationError) as expired:
        book.redeem(late.id, "u1")
    assert expired.value.kind == "expired"
    with pytest.raises(ConfirmationError) as unknown:
        book.redeem("made-up", "u1")
    assert unknown.value.kind == "unknown"
