"""Forgetting a person (issue 44, core/forget.py), the demo server's messages file (services/adapters/mcp.py), and the
gaps report's threshold for counts of learners (core/gaps.py): pure, or one temporary file."""

import json

from r42_app.core.forget import ERASED, Needles, erased, replaced
from r42_app.core.gaps import MIN_ASKERS_SHOWN, shown_askers
from r42_app.services.adapters.mcp import demo_message_files, forget_in_demo_messages

VERA = Needles("abc123def456ghi", "Vera@Example.com", "Jan de Vries")


def test_the_name_is_replaced_as_a_whole_word_in_any_case_and_the_address_anywhere():
    pattern = VERA.pattern()
    text = "JAN DE VRIES (vera@example.com, abc123def456ghi) schreef in januari; Jan de Vriesland niet."
    assert pattern.sub("P", text) == "P (P, P) schreef in januari; Jan de Vriesland niet."
    nested = {"to": ["jan de vries <VERA@EXAMPLE.COM>"], "n": 3, "ok": True}
    assert replaced(nested, pattern, "P") == {"to": ["P <P>"], "n": 3, "ok": True}


def test_a_short_name_is_not_searched_for_and_what_is_searched_covers_its_spellings():
    short = Needles("abc123def456ghi", "al@example.com", "Al")
    assert short.pattern().sub("P", "Al zei al iets: al@example.com") == "Al zei al iets: P"
    assert short.searched() == ["abc123def456ghi", "al@example.com"]
    assert {"Jan de Vries", "jan de vries", "JAN DE VRIES"} <= set(VERA.searched())


def test_what_a_user_wrote_is_erased_and_its_shape_kept():
    assert erased({"subject": "Bel me", "text": "06-12345678", "n": 2, "to": ["a", ""]}) == \
        {"subject": ERASED, "text": ERASED, "n": 2, "to": [ERASED, ""]}


def test_counts_of_learners_below_the_threshold_are_not_shown():
    assert MIN_ASKERS_SHOWN == 3
    assert [shown_askers(n) for n in (0, 1, 2, 3, 40)] == [None, None, None, 3, 40]


def test_the_demo_messages_lose_the_users_own_messages_and_mentions_of_them(tmp_path):
    path = tmp_path / "messages.jsonl"
    lines = [{"tenant": "demo", "user": "vera@example.com", "subject": "Bel me", "text": "06-12345678"},
             {"tenant": "demo", "user": "sanne@example.com", "subject": "Over Jan de Vries", "text": "Hoi"},
             {"tenant": "acme", "user": "piet@acme.example", "subject": "Niets", "text": "Niemand"}]
    path.write_text("".join(json.dumps(m) + "\n" for m in lines) + "geen json, wel jan de vries\n")
    assert forget_in_demo_messages(path, VERA, "P") == (1, 2)
    kept = path.read_text().splitlines()
    assert [json.loads(x)["subject"] for x in kept[:2]] == ["Over P", "Niets"] and kept[2] == "geen json, wel P"
    assert forget_in_demo_messages(path, VERA, "P") == (0, 0)  # nothing left of them: nothing rewritten
    assert forget_in_demo_messages(tmp_path / "none.jsonl", VERA, "P") == (0, 0)


def test_the_demo_message_files_are_the_data_dirs_and_those_the_mcp_config_names(tmp_path):
    config = tmp_path / "mcp.json"
    default = tmp_path / "mcp-demo-messages.jsonl"
    assert demo_message_files(config, default) == [default]  # no config
    config.write_text(json.dumps({"mcpServers": {
        "r42demo": {"command": "r42", "args": ["mcp", "demo-server"],
                    "env": {"R42_MCP_DEMO_MESSAGES": str(tmp_path / "elders.jsonl")}},
        "time": {"command": "python", "args": ["-m", "mcp_server_time"]}}}))
    assert demo_message_files(config, default) == [default, tmp_path / "elders.jsonl"]
    config.write_text("{kapot")
    assert demo_message_files(config, default) == [default]
