"""`/admin/tools`: external tools over MCP: servers and their status, tools and risk, every call (audited),
and the demo server's messages for the admins."""

import reflex as rx

from r42_app.components.common import card_cell, empty_state, error_callout, skeleton_lines
from r42_app.components.i18n import t, tf, tv
from r42_app.components.shell import page_frame
from r42_app.state.tools import STATUS_LABELS, CallRow, MessageRow, ServerRow, ToolRow
from r42_app.state.tools import ToolsState as S


def card(title: rx.Var[str], subtitle, *children: rx.Component, **props) -> rx.Component:
    return rx.card(rx.vstack(rx.vstack(rx.heading(title, size="4", as_="h2"),
                                       rx.text(subtitle, size="2", color_scheme="gray"), spacing="1"),
                             *children, spacing="3", width="100%"), width="100%", **props)


def server_row(s: ServerRow) -> rx.Component:
    return rx.table.row(
        rx.table.cell(rx.text(s.name, weight="medium"), class_name="card-title"),
        card_cell(t("Verbinding"), s.transport),
        card_cell(t("Status"), rx.badge(tv(s.state_label), color_scheme=rx.match(s.state, ("connected", "green"),
                                                                            ("failed", "red"), "gray"))),
        card_cell(t("Hulpmiddelen"), s.tools), card_cell(t("Sinds"), rx.text(s.since, size="1", color_scheme="gray")),
        card_cell(t("Laatste fout"), rx.text(s.error, size="1", color_scheme="red")),
        data_server=s.name,
    )


def tool_row(tool: ToolRow) -> rx.Component:
    return rx.table.row(
        rx.table.cell(rx.code(tool.name, size="1"), class_name="card-title"), card_cell(t("Server"), tool.server),
        card_cell(t("Risico"), rx.cond(tool.risk == "high", rx.badge(t("Hoog: vraagt eerst"), color_scheme="amber"),
                                       rx.badge(t("Laag"), color_scheme="gray"))),
        card_cell(t("Beschikbaar"), rx.cond(tool.available, rx.text(t("ja"), size="2"),
                                            rx.text(t("nee"), size="2", color_scheme="red"))),
        card_cell(t("Wat het doet"), rx.text(tool.description, size="1", color_scheme="gray")),
    )


def call_row(c: CallRow) -> rx.Component:
    return rx.table.row(
        rx.table.cell(rx.text(c.when, size="1"), class_name="card-title"),
        card_cell(t("Gebruiker"), rx.text(c.user, size="1")), card_cell(t("Hulpmiddel"), rx.code(c.tool, size="1")),
        card_cell(t("Uitkomst"), rx.badge(tv(c.status_label), color_scheme=rx.match(c.status, ("ok", "green"),
                                                                            ("declined", "gray"), ("expired", "gray"),
                                                                            "red"))),
        card_cell(t("Duur"), rx.text(c.duration, size="1")),
        card_cell(t("Bevestigd door"), rx.text(c.confirmed_by, size="1")),
        card_cell(t("Gegevens"), rx.text(c.arguments, size="1", color_scheme="gray")),
        class_name="tool-call", data_status=c.status,
    )


def message_row(m: MessageRow) -> rx.Component:
    return rx.box(
        rx.text(rx.text.strong(m.subject), " · ", m.user, " · ", m.when, size="2"),
        rx.text(m.text, size="2", white_space="pre-wrap"),
        class_name="demo-message", padding="8px 0", border_bottom="1px solid var(--gray-4)", width="100%",
    )


def table(header: list[rx.Var[str]], body: rx.Component, id: str) -> rx.Component:
    """A table whose rows are cards on a phone (the cells name their column, see card_cell)."""
    return rx.box(rx.table.root(rx.table.header(rx.table.row(*[rx.table.column_header_cell(h) for h in header])),
                                body, size="1", width="100%", id=id, class_name="r42-cards"),
                  overflow_x="auto", width="100%")


def body() -> rx.Component:
    return rx.vstack(
        rx.vstack(
            rx.heading(t("Externe hulpmiddelen"), size="7"),
            rx.text(t("Hulpmiddelen van MCP-servers die R42 mag gebruiken voor wie het onderdeel "
                      "'Externe hulpmiddelen' heeft (zie R42-instellingen). Elke aanroep staat hieronder."),
                    color_scheme="gray", size="2"),
            spacing="1",
        ),
        rx.cond(S.load_error != "", error_callout(S.load_error)),
        rx.cond(S.config_error != "", error_callout(tf("Het MCP-configuratiebestand is niet bruikbaar: {error}",
                                                          error=S.config_error))),
        rx.cond(
            S.loading,
            skeleton_lines(8, "40px"),
            rx.vstack(
                card(t("Servers"), rx.text(tf("Uit {file}.", file=S.config_file), " ",
                                           t("Een server die wegvalt, wordt vanzelf opnieuw verbonden.")),
                     rx.cond(S.servers.length() > 0,
                             table([t("Server"), t("Verbinding"), t("Status"), t("Hulpmiddelen"), t("Sinds"),
                                    t("Laatste fout")],
                                   rx.table.body(rx.foreach(S.servers, server_row)), "mcp-servers"),
                             rx.text(t("Er zijn geen MCP-servers ingesteld."), size="2", color_scheme="gray"))),
                card(t("Hulpmiddelen"), t("Bij een hoog risico vraagt R42 de gebruiker eerst om toestemming in de "
                                          "chat."),
                     table([t("Naam"), t("Server"), t("Risico"), t("Beschikbaar"), t("Wat het doet")],
                           rx.table.body(rx.foreach(S.tools, tool_row)), "mcp-tools")),
                card(t("Aanroepen"), t("De laatste 100 aanroepen van je organisatie, met geheime waarden verborgen."),
                     rx.hstack(
                         # the filters' names, for screen readers (the triggers show the chosen value)
                         rx.el.span(t("Filter op hulpmiddel"), id="call-tool-filter-label", class_name="sr-only"),
                         rx.el.span(t("Filter op uitkomst"), id="call-status-filter-label", class_name="sr-only"),
                         rx.select.root(
                             rx.select.trigger(placeholder=t("Hulpmiddel"), id="call-tool-filter",
                                               custom_attrs={"aria-labelledby":
                                                             "call-tool-filter-label call-tool-filter"}),
                             rx.select.content(rx.select.item(t("Alle hulpmiddelen"), value="all"),
                                               rx.foreach(S.tool_names[1:], lambda n: rx.select.item(n, value=n))),
                             value=S.tool_filter, on_change=S.set_tool_filter, size="1",
                         ),
                         rx.select.root(
                             rx.select.trigger(placeholder=t("Uitkomst"), id="call-status-filter",
                                               custom_attrs={"aria-labelledby":
                                                             "call-status-filter-label call-status-filter"}),
                             rx.select.content(rx.select.item(t("Alle uitkomsten"), value="all"),
                                               *[rx.select.item(t(label), value=key)
                                                 for key, label in STATUS_LABELS.items()]),
                             value=S.status_filter, on_change=S.set_status_filter, size="1",
                         ),
                         spacing="2", wrap="wrap",
                     ),
                     rx.cond(S.calls.length() > 0,
                             table([t("Wanneer (UTC)"), t("Gebruiker"), t("Hulpmiddel"), t("Uitkomst"), t("Duur"),
                                    t("Bevestigd door"), t("Gegevens")],
                                   rx.table.body(rx.foreach(S.calls, call_row)), "mcp-calls"),
                             empty_state("wrench", t("Nog geen aanroepen"),
                                         t("Als R42 een extern hulpmiddel gebruikt, staat het hier, met wie het vroeg "
                                           "en hoe het afliep.")))),
                card(t("Berichten voor de beheerders"), t("Wat gebruikers via R42 met het demo-hulpmiddel "
                                                          "send_message voor jullie achterlieten."),
                     rx.cond(S.messages.length() > 0,
                             rx.vstack(rx.foreach(S.messages, message_row), spacing="0", width="100%",
                                       id="demo-messages"),
                             rx.text(t("Nog geen berichten."), size="2", color_scheme="gray"))),
                spacing="4", width="100%",
            ),
        ),
        rx.moment(interval=5000, on_change=S.poll, display="none"),
        spacing="4", width="100%",
    )


def page() -> rx.Component:
    """`/admin/tools` (admins only)."""
    return page_frame(rx.box(rx.box(body(), max_width="1100px", margin_x="auto"), padding="28px 24px"), admin=True)
