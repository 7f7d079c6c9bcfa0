"""The capability resolver and the legacy migration: rules, and properties for any default and list."""

from hypothesis import given
from hypothesis import strategies as st

from r42_app.core.capabilities import (
    CAPABILITIES,
    CHAT_GENERAL,
    DATA_WRITE,
    DEFAULT_CAPABILITIES,
    DENY,
    EXTERNAL_TOOLS,
    GRANT,
    INHERIT,
    KB_SEARCH,
    QA_HELP,
    AccessRow,
    capability_from_tool_name,
    migrate_legacy_scopes_to_overrides,
    resolve,
    resolve_capabilities,
    with_override,
)

DEFAULT = frozenset({QA_HELP, KB_SEARCH, DATA_WRITE})
caps = st.sampled_from(CAPABILITIES)
ids = st.one_of(caps, st.sampled_from(["chat_general", "admin", "", "KB_SEARCH"]), st.text(max_size=8))
sets = st.frozensets(caps)
overrides = st.dictionaries(caps, st.sampled_from([INHERIT, GRANT, DENY]))


def test_new_tenants_get_qa_search_and_write_but_not_external_tools():
    assert DEFAULT_CAPABILITIES == DEFAULT and EXTERNAL_TOOLS not in DEFAULT_CAPABILITIES


def test_no_row_means_the_tenant_default():
    assert resolve_capabilities(DEFAULT, None) == DEFAULT
    assert resolve_capabilities(DEFAULT, {"capability_scopes": [], "overrides": {}}) == DEFAULT


def test_a_legacy_row_is_an_exact_list():
    row = {"capability_scopes": [QA_HELP, EXTERNAL_TOOLS], "overrides": None}
    assert resolve_capabilities(DEFAULT, row) == {QA_HELP, EXTERNAL_TOOLS}
    assert resolve(DEFAULT, row).source == "legacy"


def test_unknown_ids_in_a_legacy_list_are_ignored_and_reported():
    result = resolve(DEFAULT, {"capability_scopes": [QA_HELP, "teleport", 7], "overrides": {}})
    assert result.effective == {QA_HELP} and result.unknown == ("teleport",)


def test_overrides_grant_and_deny_on_top_of_the_default():
    row = {"capability_scopes": [], "overrides": {EXTERNAL_TOOLS: GRANT, DATA_WRITE: DENY, KB_SEARCH: INHERIT}}
    assert resolve_capabilities(DEFAULT, row) == {QA_HELP, KB_SEARCH, EXTERNAL_TOOLS}


def test_a_change_of_default_reaches_inheriting_users():
    row = {"capability_scopes": [], "overrides": {DATA_WRITE: DENY}}
    assert resolve_capabilities(DEFAULT - {KB_SEARCH}, row) == {QA_HELP}


def test_the_rollback_switch_reads_the_projected_list():
    row = with_override(None, DEFAULT, DATA_WRITE, DENY)
    assert row.capability_scopes == (QA_HELP, KB_SEARCH)  # the projection
    assert resolve_capabilities(DEFAULT, row, overrides_enabled=False) == {QA_HELP, KB_SEARCH}
    # under the switch a later default change no longer reaches the row: it is an exact list again
    assert resolve_capabilities(frozenset(), row, overrides_enabled=False) == {QA_HELP, KB_SEARCH}


def test_malformed_stored_rows_never_crash():
    for row in ({"capability_scopes": "qa_help", "overrides": [1]}, {"overrides": {"x": "grant", QA_HELP: "maybe"}},
                {"capability_scopes": [None, {}], "overrides": "deny"}):
        assert resolve_capabilities(DEFAULT, row) <= set(CAPABILITIES)


def test_tools_map_to_their_capability():
    assert capability_from_tool_name("kb_search") == capability_from_tool_name("lookup_topic") == KB_SEARCH
    assert capability_from_tool_name("propose_graph_delta") == DATA_WRITE
    assert capability_from_tool_name("time__get_current_time") == EXTERNAL_TOOLS
    assert capability_from_tool_name("made_up") is None and capability_from_tool_name("__x") is None
    assert CHAT_GENERAL not in CAPABILITIES  # cost only, never granted


@given(sets, st.lists(ids, min_size=1, max_size=6))
def test_migration_preserves_the_effective_set(default, scopes):
    legacy = AccessRow(tuple(s for s in scopes if isinstance(s, str)))
    if not legacy.capability_scopes:
        return
    migrated = migrate_legacy_scopes_to_overrides(legacy, default)
    assert not migrated.is_legacy
    assert resolve_capabilities(default, migrated) == resolve_capabilities(default, legacy)
    assert resolve_capabilities(default, migrated, overrides_enabled=False) == resolve_capabilities(default, legacy)


@given(sets, overrides, caps, st.sampled_from([GRANT, DENY]), st.integers(1, 3))
def test_repeating_a_grant_or_deny_changes_nothing(default, start, capability, value, times):
    row = AccessRow((), start) if start else None
    once = with_override(row, default, capability, value)
    again = once
    for _ in range(times):
        again = with_override(again, default, capability, value)
    assert resolve_capabilities(default, again) == resolve_capabilities(default, once)
    assert again.overrides == once.overrides


@given(sets, overrides, caps)
def test_a_deny_always_removes_and_a_grant_always_adds(default, start, capability):
    row = AccessRow((), start) if start else None
    assert capability not in resolve_capabilities(default, with_override(row, default, capability, DENY))
    assert capability in resolve_capabilities(default, with_override(row, default, capability, GRANT))


@given(st.lists(ids, max_size=6), st.dictionaries(ids, ids, max_size=4), st.lists(ids, max_size=6))
def test_unknown_ids_anywhere_never_crash(scopes, raw_overrides, default):
    row = {"capability_scopes": scopes, "overrides": raw_overrides}
    assert resolve_capabilities(default, row) <= set(CAPABILITIES)
    migrated = migrate_legacy_scopes_to_overrides(row, default)
    assert migrated is None or resolve_capabilities(default, migrated) <= set(CAPABILITIES)


@given(sets, overrides, caps, st.sampled_from([INHERIT, GRANT, DENY]))
def test_the_projection_is_what_the_rollback_switch_would_read(default, start, capability, value):
    row = with_override(AccessRow((), start) if start else None, default, capability, value)
    assert resolve_capabilities(default, row, overrides_enabled=False) == resolve_capabilities(default, row)
