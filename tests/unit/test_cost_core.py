"""Cost per capability: apportioning with exact numbers, prices, credits and deterministic event ids."""

from hypothesis import given
from hypothesis import strategies as st

from r42_app.core.costs import (
    CHAT_STREAM,
    TOOL_CALL,
    Price,
    Round,
    Usage,
    apportion,
    cost_events,
    credits_for,
    event_id,
)

HAIKU = Price(input=1.0, output=5.0)  # USD per million tokens; cache write 1.25x, cache read 0.1x input


def test_the_issue_example_gives_exactly_two_events():
    rounds = [Round(Usage(1200, 40, 1000, 0), ("kb_search",)),  # round 1 calls kb_search
              Round(Usage(1500, 200, 0, 1000))]  # round 2 answers
    events = cost_events("turn-1", "t1", "u1", "claude-haiku-4-5", rounds, HAIKU)
    by_source = {e.source: e for e in events}
    assert set(by_source) == {"chatbot:chat_general", "chatbot:kb_search"}
    search, chat = by_source["chatbot:kb_search"], by_source["chatbot:chat_general"]
    assert search.usage == Usage(1200, 40, 1000, 0) and search.capability == TOOL_CALL
    assert chat.usage == Usage(1500, 200, 0, 1000) and chat.capability == CHAT_STREAM
    assert search.cost_usd == 0.00265 and search.credits == 2.65  # 1200 + 40*5 + 1000*1.25, per million
    assert chat.cost_usd == 0.0026 and chat.credits == 2.6  # 1500 + 200*5 + 1000*0.1, per million
    assert sum((e.usage for e in events), Usage()) == Usage(2700, 240, 1000, 1000)


def test_two_capabilities_in_one_round_split_by_number_of_calls():
    split = apportion([Round(Usage(900, 90, 30, 0), ("kb_search", "lookup_topic", "propose_graph_delta"))])
    assert split == {"kb_search": Usage(600, 60, 20, 0), "data_write": Usage(300, 30, 10, 0)}


def test_an_odd_token_goes_to_one_side_deterministically():
    split = apportion([Round(Usage(1001, 41), ("kb_search", "propose_graph_delta"))])
    assert split == {"data_write": Usage(501, 21), "kb_search": Usage(500, 20)}  # ties by name
    assert split == apportion([Round(Usage(1001, 41), ("propose_graph_delta", "kb_search"))])


def test_a_made_up_tool_counts_as_general_chat_and_mcp_tools_as_external():
    split = apportion([Round(Usage(10, 2), ("teleport", "time__get_current_time"))])
    assert split == {"chat_general": Usage(5, 1), "external_tools": Usage(5, 1)}


def test_cache_rates_follow_the_input_rate_unless_the_table_says_otherwise():
    usage = Usage(0, 0, 1_000_000, 1_000_000)
    assert Price(3.0, 15.0).cost(usage) == 3.75 + 0.3
    assert Price(3.0, 15.0, cache_write=6.0, cache_read=0.5).cost(usage) == 6.5


def test_event_ids_are_stable_and_look_like_pocketbase_ids():
    assert event_id("turn-1", "kb_search") == event_id("turn-1", "kb_search") != event_id("turn-1", "chat_general")
    assert len(event_id("x", "y")) == 15 and event_id("x", "y").isalnum() and event_id("x", "y").islower()


def test_a_turn_that_used_nothing_emits_nothing():
    assert cost_events("t", "t1", "u1", "m", [Round(Usage())], HAIKU) == []
    assert credits_for(0.0015) == 1.5


tokens = st.integers(0, 200_000)
names = st.sampled_from(["kb_search", "lookup_topic", "propose_graph_delta", "x__y", "nope"])


@given(st.lists(st.tuples(tokens, tokens, tokens, tokens, st.lists(names, max_size=4)), max_size=5))
def test_events_always_add_up_to_what_the_model_reported(raw):
    rounds = [Round(Usage(a, b, c, d), tuple(calls)) for a, b, c, d, calls in raw]
    reported = sum((r.usage for r in rounds), Usage())
    events = cost_events("turn", "t1", "u1", "m", rounds, HAIKU)
    assert sum((e.usage for e in events), Usage()) == reported
    assert len({e.id for e in events}) == len(events)
    assert abs(sum(e.cost_usd for e in events) - HAIKU.cost(reported)) < 1e-6


def test_credit_access_needs_the_minimum_or_an_unlimited_plan():
    import pytest

    from r42_app.core.costs import QuotaExceeded, TenantCredits, assert_tenant_ai_credit_access

    assert_tenant_ai_credit_access(TenantCredits(1.0))
    assert_tenant_ai_credit_access(TenantCredits(-50.0, unlimited=True))
    with pytest.raises(QuotaExceeded) as refused:
        assert_tenant_ai_credit_access(TenantCredits(0.4, plan="starter"), minimum_credits=1, upgrade_url="/admin/costs")
    assert refused.value.reason == "no_credits"
    assert refused.value.metadata == {"credits_remaining": 0.4, "minimum_credits": 1, "plan": "starter",
                                      "upgrade_url": "/admin/costs"}
    with pytest.raises(QuotaExceeded) as overdrawn:
        assert_tenant_ai_credit_access(TenantCredits(-3.0))
    assert overdrawn.value.metadata["credits_remaining"] == 0.0


def test_a_call_made_for_one_purpose_is_accounted_to_it():
    from r42_app.core.costs import CHAT_STREAM, Price, cost_events
    rounds = [Round(Usage(180, 14), accounted="question_rewrite")]
    assert apportion(rounds) == {"question_rewrite": Usage(180, 14)}
    [event] = cost_events("turn-1", "t1", "u1", "fast", rounds, Price(1.0, 5.0))
    assert (event.source, event.capability, event.usage) == ("chatbot:question_rewrite", CHAT_STREAM, Usage(180, 14))
    assert event.id == event_id("turn-1", "question_rewrite")  # beside the turn's own events, never instead of one
