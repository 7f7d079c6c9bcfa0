"""What R42 may do for whom: capability ids, the resolver and the legacy-row migration (pure).

A tenant has a default set (`tenants.chatbot_default_capabilities`). A user may have a
`chatbot_access` row:

- no row: the tenant default;
- a **legacy** row (V1): a non-empty `capability_scopes` list and no overrides: exactly that list;
- a **V2** row: `overrides` {capability: inherit | grant | deny}: default ∪ grants − denies.

Saving a V2 row also writes its effective set into `capability_scopes` (the projection), so the
rollback switch (`R42_CAPABILITY_OVERRIDES_ENABLED=false`, read `capability_scopes` as the exact
list) keeps everyone's effective set as it was.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from r42_app.core.messages import N_

QA_HELP = "qa_help"
KB_SEARCH = "kb_search"
DATA_WRITE = "data_write"
EXTERNAL_TOOLS = "external_tools"
CAPABILITIES = (QA_HELP, KB_SEARCH, DATA_WRITE, EXTERNAL_TOOLS)
CHAT_GENERAL = "chat_general"  # cost accounting only: a model round without tool calls; never granted
QUESTION_REWRITE = "question_rewrite"  # cost accounting only: the model's standalone rewrite of a follow-up question
DEFAULT_CAPABILITIES = frozenset({QA_HELP, KB_SEARCH, DATA_WRITE})  # new tenants; external tools stay off

INHERIT, GRANT, DENY = "inherit", "grant", "deny"
OVERRIDE_VALUES = (INHERIT, GRANT, DENY)

# One line each, for the settings page and the account menu.
CAPABILITY_LABELS = {
    QA_HELP: N_("Vragen beantwoorden"),
    KB_SEARCH: N_("Zoeken in de kennisbank"),
    DATA_WRITE: N_("Aanvullingen voorstellen"),
    EXTERNAL_TOOLS: N_("Externe hulpmiddelen"),
}
CAPABILITY_HELP = {
    QA_HELP: N_("R42 beantwoordt vragen. Zonder dit is R42 uit voor deze gebruiker."),
    KB_SEARCH: N_("R42 mag zelf verder zoeken en een onderwerp helemaal lezen."),
    DATA_WRITE: N_("R42 mag nieuwe onderwerpen en relaties voorstellen; beheerders voegen ze direct toe."),
    EXTERNAL_TOOLS: N_("R42 mag gekoppelde externe hulpmiddelen (MCP) gebruiken."),
}
# The same, said to the person themselves ("What R42 may do for you" in the account menu): not an admin's words
CAPABILITY_HELP_FOR_YOU = {
    **CAPABILITY_HELP,
    QA_HELP: N_("R42 beantwoordt je vragen."),
    DATA_WRITE: N_("R42 mag nieuwe onderwerpen en relaties voorstellen; jij zegt of het doorgaat."),
}
OVERRIDE_LABELS = {INHERIT: N_("Standaard"), GRANT: N_("Toestaan"), DENY: N_("Weigeren")}

# Built-in tools and the capability that offers them; MCP tools are registered as `<server>__<tool>`.
TOOL_CAPABILITIES = {"kb_search": KB_SEARCH, "lookup_topic": KB_SEARCH, "propose_graph_delta": DATA_WRITE}
MCP_SEPARATOR = "__"


def chat_availability(enabled: bool, capabilities: Iterable[str]) -> str:
    """What the launcher should say: "" (R42 answers), "disabled" (off for the tenant) or "denied" (no
    `qa_help` for this user)."""
    if not enabled:
        return "disabled"
    return "" if QA_HELP in set(capabilities) else "denied"


def capability_from_tool_name(name: str) -> str | None:
    """The capability a tool belongs to: built-ins by name, `<server>__<tool>` is external; None for a
    name that is neither (a tool the model made up)."""
    if name in TOOL_CAPABILITIES:
        return TOOL_CAPABILITIES[name]
    server, sep, tool = name.partition(MCP_SEPARATOR)
    return EXTERNAL_TOOLS if sep and server and tool else None


def known(ids: Iterable[Any]) -> frozenset[str]:
    """The capability ids among `ids` (anything else is dropped)."""
    return frozenset(i for i in ids if isinstance(i, str) and i in CAPABILITIES)


def unknown(ids: Any) -> list[str]:
    """What in a stored list is not a capability id (for a warning)."""
    return [str(i) for i in ids if i not in CAPABILITIES] if isinstance(ids, list) else []


@dataclass(frozen=True)
class AccessRow:
    """A `chatbot_access` row as the resolver reads it (stored JSON is untrusted: see `from_record`)."""

    capability_scopes: tuple[str, ...] = ()
    overrides: Mapping[str, str] = field(default_factory=dict)
    id: str = ""
    updated: str = ""

    @classmethod
    def from_record(cls, row: Mapping[str, Any] | None) -> AccessRow | None:
        """A stored row, with malformed fields read as empty rather than failing the turn."""
        if row is None:
            return None
        scopes = row.get("capability_scopes")
        raw = row.get("overrides")
        overrides = ({k: v for k, v in raw.items() if k in CAPABILITIES and v in OVERRIDE_VALUES}
                     if isinstance(raw, dict) else {})
        return cls(tuple(s for s in scopes if isinstance(s, str)) if isinstance(scopes, list) else (), overrides,
                   str(row.get("id", "")), str(row.get("updated", "")))

    @property
    def is_legacy(self) -> bool:
        """A V1 exact list: scopes and no overrides."""
        return bool(self.capability_scopes) and not self.overrides

    def to_record(self) -> dict[str, Any]:
        return {"capability_scopes": list(self.capability_scopes), "overrides": dict(self.overrides)}


def as_row(access: AccessRow | Mapping[str, Any] | None) -> AccessRow | None:
    """An AccessRow from a stored record (dict) or an AccessRow."""
    return access if access is None or isinstance(access, AccessRow) else AccessRow.from_record(access)


@dataclass(frozen=True)
class Resolution:
    effective: frozenset[str]
    source: str  # "default" | "legacy" | "overrides" | "exact" (rollback switch)
    unknown: tuple[str, ...] = ()


def resolve(tenant_default: Iterable[str], access: AccessRow | Mapping[str, Any] | None,
            overrides_enabled: bool = True) -> Resolution:
    """The user's effective capabilities and where they come from."""
    default = known(tenant_default)
    access = as_row(access)
    if access is None or (not access.capability_scopes and not access.overrides):
        return Resolution(default, "default")
    stray = tuple(unknown(list(access.capability_scopes)))
    if not overrides_enabled:
        return Resolution(known(access.capability_scopes), "exact", stray)
    if access.is_legacy:
        return Resolution(known(access.capability_scopes), "legacy", stray)
    grants = {c for c, v in access.overrides.items() if v == GRANT}
    denies = {c for c, v in access.overrides.items() if v == DENY}
    return Resolution(frozenset((default | grants) - denies), "overrides")


def resolve_capabilities(tenant_default: Iterable[str], access: AccessRow | Mapping[str, Any] | None,
                         overrides_enabled: bool = True) -> frozenset[str]:
    """default when there is no row; a legacy row's exact list; else default ∪ grants − denies."""
    return resolve(tenant_default, access, overrides_enabled).effective


def with_override(access: AccessRow | Mapping[str, Any] | None, tenant_default: Iterable[str], capability: str,
                  value: str) -> AccessRow:
    """The row after setting one override, with its effective set projected onto `capability_scopes`.
    A legacy row is migrated first, so the other capabilities keep their effective value."""
    if capability not in CAPABILITIES:
        raise ValueError(f"unknown capability {capability!r}; one of {', '.join(CAPABILITIES)}")
    if value not in OVERRIDE_VALUES:
        raise ValueError(f"unknown override {value!r}; one of {', '.join(OVERRIDE_VALUES)}")
    access = as_row(access)
    base = migrate_legacy_scopes_to_overrides(access, tenant_default) if access and access.is_legacy else access
    overrides = dict.fromkeys(CAPABILITIES, INHERIT) | dict(base.overrides if base else {}) | {capability: value}
    return project(AccessRow((), overrides, base.id if base else "", base.updated if base else ""), tenant_default)


def project(access: AccessRow, tenant_default: Iterable[str]) -> AccessRow:
    """The row with `capability_scopes` set to its effective set (what the rollback switch reads)."""
    effective = resolve_capabilities(tenant_default, AccessRow((), access.overrides), True) \
        if access.overrides else known(access.capability_scopes)
    return AccessRow(tuple(c for c in CAPABILITIES if c in effective), dict(access.overrides), access.id,
                     access.updated)


def migrate_legacy_scopes_to_overrides(access: AccessRow | Mapping[str, Any] | None,
                                       tenant_default: Iterable[str]) -> AccessRow | None:
    """A legacy exact list as overrides that resolve to the same set under the current default: grant
    what the list adds, deny what it leaves out, inherit the rest. Other rows come back unchanged."""
    access = as_row(access)
    if access is None or not access.is_legacy:
        return access
    default = known(tenant_default)
    exact = known(access.capability_scopes)
    overrides = {c: GRANT if c in exact and c not in default else DENY if c in default and c not in exact else INHERIT
                 for c in CAPABILITIES}
    return project(AccessRow((), overrides, access.id, access.updated), default)
