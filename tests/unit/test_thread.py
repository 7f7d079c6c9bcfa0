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


def test_two_tabs_threads_merge_into_the_union_and_never_step_back():
    from r42_app.core.thread import ThreadMessage, cleared_at, merge, serialise

    g = ThreadMessage("greeting", "assistant", "Hoi")
    q1, a1 = ThreadMessage("q1", "user", "Vraag een"), ThreadMessage("a1", "assistant", "Antwoord een")
    q2, a2 = ThreadMessage("q2", "user", "Vraag twee"), ThreadMessage("a2", "assistant", "Antwoord twee")
    placeholder = ThreadMessage("a1", "assistant", "", "incomplete")
    assert merge([g, q2, a2], [g, q1, a1]) == [g, q1, a1, q2, a2]  # the stored order, then this tab's new ones
    assert merge([g, q1, placeholder], [g, q1, a1]) == [g, q1, a1]  # the finished answer wins over its placeholder
    assert merge([g, q1, a1], [g, q1, placeholder]) == [g, q1, a1]  # and is never replaced by it
    assert merge([g], []) == [g]
    assert cleared_at(serialise([g], cleared=123.5)) == 123.5 and cleared_at(serialise([g])) == 0.0
    assert cleared_at("{not json") == 0.0 and cleared_at(None) == 0.0 and cleared_at('{"cleared": "x"}') == 0.0


def test_a_message_one_tab_took_out_stays_out_of_the_union():
    from r42_app.core.thread import ThreadMessage, merge, removed_ids, serialise

    g, q, old = (ThreadMessage("greeting", "assistant", "Hoi"), ThreadMessage("q", "user", "Vraag"),
                 ThreadMessage("old", "assistant", "Oud antwoord"))
    new = ThreadMessage("new", "assistant", "Nieuw antwoord")
    assert merge([g, q, new], [g, q, old], {"old"}) == [g, q, new]
    assert removed_ids(serialise([g], removed=["old", "old", "x"])) == ["old", "x"]
    assert removed_ids('{"removed": [1, "a"]}') == ["a"] and removed_ids("nope") == []


def test_a_bool_version_or_messages_that_are_no_list_are_replaced_not_an_error():
    """Found by the fuzz test: {"version": true, "messages": true} raised TypeError (true == 1 in Python)."""
    from r42_app.core.thread import parse

    assert parse('{"version": true, "messages": true}')[0] is None
    assert parse('{"version": 1, "messages": 5}') == (None, "corrupt")
