"""The browser-side thread: versioned JSON, capped at 50, corrupt values replaced, never a crash."""

import json

from r42_app.core.thread import MAX_THREAD_MESSAGES, ThreadCitation, ThreadMessage, parse, serialise, storage_key


def test_key_is_per_user():
    assert storage_key("abc123") == "chat:thread:abc123"


def test_round_trip_keeps_messages_and_citations():
    msgs = [ThreadMessage("1", "user", "Wat is AOW?"),
            ThreadMessage("2", "assistant", "Basispensioen [ref:1].", "ok", [ThreadCitation(1, "aow", "AOW")])]
    parsed, problem = parse(serialise(msgs))
    assert problem == "" and parsed == msgs
    assert json.loads(serialise(msgs))["version"] == 1


def test_cap_drops_the_oldest():
    msgs = [ThreadMessage(str(i), "user", f"m{i}") for i in range(60)]
    parsed, _ = parse(serialise(msgs))
    assert len(parsed) == MAX_THREAD_MESSAGES and parsed[0].content == "m10"


def test_bad_values_are_replaced_not_crashed():
    assert parse(None) == ([], "")
    assert parse("{oops")[0] is None
    assert parse(json.dumps({"version": 99, "messages": []})) == (None, "another version")
    assert parse(json.dumps({"version": 1, "messages": [{"role": "system", "content": "x"}]}))[0] is None
    bad_cite = {"role": "assistant", "content": "x", "citations": [{"ref": 1, "slug": "javascript:alert(1)"}]}
    assert parse(json.dumps({"version": 1, "messages": [bad_cite]}))[0] is None
    assert parse("x" * 500_000) == (None, "too large")
    assert parse(json.dumps([1, 2]))[0] is None
