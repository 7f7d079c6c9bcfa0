"""Pure chat rules: input limits, history trimming, citations and the offline answer."""

import pytest

from r42_app.core.chat import (
    ChatInputError,
    ChatMessage,
    offline_answer,
    resolve_citations,
    system_blocks,
    trim_history,
    validate_messages,
)
from r42_app.core.kb import Topic
from r42_app.core.retrieval import make_snippet


def msgs(*pairs):
    return [ChatMessage(role, content) for role, content in pairs]


def test_trim_keeps_the_last_turns_and_counts_the_rest():
    history = []
    for i in range(14):
        history += [("user", f"q{i}"), ("assistant", f"a{i}")]
    kept, dropped = trim_history(msgs(*history, ("user", "nu")), max_turns=12)
    assert kept[0] == ChatMessage("user", "q3") and kept[-1].content == "nu" and dropped == 6


def test_trim_starts_with_a_user_message_and_merges_neighbours():
    kept, dropped = trim_history(msgs(("assistant", "Hallo! Ik ben R42."), ("user", "a"), ("user", "b"), ("assistant", "")))
    assert kept == [ChatMessage("user", "a\n\nb")] and dropped == 1


def test_validate_accepts_a_normal_thread():
    out = validate_messages([{"role": "assistant", "content": "Hoi"}, {"role": "user", "content": "Wat is AOW?"}])
    assert out[-1] == ChatMessage("user", "Wat is AOW?")


def test_validate_replaces_lone_surrogates_and_keeps_pairs():
    out = validate_messages([{"role": "user", "content": "a\ud800b \ud83d\ude00"}])
    assert out[-1].content == "a\ufffdb \U0001F600"
    assert out[-1].content.encode("utf-8")


def test_validate_refuses_a_trailing_assistant_message():
    with pytest.raises(ChatInputError):
        validate_messages([{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}])


def snippets():
    aow = Topic("aow", "AOW", "concept", "Basispensioen.", "")
    dg = Topic("dekkingsgraad", "Dekkingsgraad", "concept", "Verhouding.", "")
    return [
        make_snippet(1, aow, "De AOW is het basispensioen van de overheid voor iedereen die in Nederland woont.", 1.0),
        make_snippet(2, dg, "De dekkingsgraad geeft aan of een pensioenfonds genoeg geld heeft. Een lage dekkingsgraad "
                            "betekent dat indexatie niet mogelijk is.", 0.5),
    ]


def test_citations_resolve_in_order_and_stale_refs_are_listed():
    cites, stale = resolve_citations("Zie [ref:2] en [ref:1], ook [ref:2] en [ref:7].", snippets())
    assert [(c.ref, c.slug) for c in cites] == [(2, "dekkingsgraad"), (1, "aow")] and stale == [7]


def test_offline_answer_picks_matching_sentences_with_refs():
    answer = offline_answer("Wanneer is indexatie mogelijk bij de dekkingsgraad?", snippets())
    assert answer.startswith("Een lage dekkingsgraad betekent dat indexatie niet mogelijk is. [ref:2]")


def test_offline_answer_without_matches_says_so():
    assert "niets in de kennisbank" in offline_answer("kwartelkoning", [])
    assert "[ref:1]" in offline_answer("kwartelkoning", snippets())


def test_system_blocks_cache_the_stable_parts():
    blocks = system_blocks("CTX", "SNIPS", "Lotte", True)
    assert [("cache_control" in b) for b in blocks] == [True, True, False]
    assert "SNIPPET START" in blocks[0]["text"] and "CTX" in blocks[1]["text"] and "an admin" in blocks[2]["text"]


def test_the_tail_names_the_learners_language_and_the_preamble_stays_cacheable():
    """Issue 52: the per-turn tail says which language to answer in; the cached preamble is the same for everyone."""
    dutch, english = system_blocks("CTX", "S", "Ann", False), system_blocks("CTX", "S", "Ann", False, language="en")
    assert "answer in Dutch" in dutch[2]["text"] and "answer in English" in english[2]["text"]
    assert dutch[0] == english[0] and dutch[1] == english[1]
    assert "the last system block names" in english[0]["text"]
    assert "answer in Dutch" in system_blocks("C", "S", "Ann", False, language="xx")[2]["text"]  # unknown: Dutch


def test_offline_sentences_lose_their_markdown_markers():
    topic = Topic("partnerpensioen", "Partnerpensioen", "concept", "x", "")
    snippet = make_snippet(1, topic, "**Partnerpensioen** zorgt voor inkomen voor de partner na overlijden.", 1.0)
    assert offline_answer("partner overlijden", [snippet]) == (
        "Partnerpensioen zorgt voor inkomen voor de partner na overlijden. [ref:1]")
