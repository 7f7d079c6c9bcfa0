"""`/graph`: the tenant's knowledge graph, live. Search, legend, and a side panel for the clicked topic."""

import reflex as rx

from r42_app.components.common import empty_state, error_callout, link_button, type_badge
from r42_app.components.force_graph import r42_graph
from r42_app.components.i18n import t, tf, tv
from r42_app.components.shell import page_frame
from r42_app.core.graph import PENDING_HEX, TYPE_HEX
from r42_app.core.kb import TYPE_LABELS
from r42_app.state.auth import AuthState
from r42_app.state.graph import GraphState as G
from r42_app.state.graph import NeighbourRow, NodeHit


def legend_dot(color: str, label: rx.Var, dashed: bool = False) -> rx.Component:
    dot = rx.box(width="11px", height="11px", border_radius="50%", flex_shrink="0",
                 background="white" if dashed else color,
                 border=f"1.5px dashed {color}" if dashed else "none")
    return rx.hstack(dot, rx.text(label, size="1"), align="center", spacing="1")


def legend() -> rx.Component:
    """Colour per type, what the size means and, for admins, what dashed means."""
    return rx.hstack(
        *[legend_dot(TYPE_HEX[kind], t(TYPE_LABELS[kind])) for kind in ("concept", "role", "process")],
        rx.cond(G.show_pending, legend_dot(PENDING_HEX, t("Voorstel"), dashed=True), rx.fragment()),
        spacing="3", align="center", wrap="wrap", id="graph-legend",
    )


def hit_row(hit: NodeHit) -> rx.Component:
    return rx.el.button(
        rx.hstack(rx.text(hit.label, size="2", weight="medium", trim="both"),
                  type_badge(hit.type, hit.type_label), justify="between", align="center", width="100%"),
        on_click=G.focus(hit.id), type="button", class_name="graph-hit",
    )


def search_box() -> rx.Component:
    """Type to find a topic; Enter or a click centres the graph on it and opens its panel."""
    return rx.box(
        rx.form(
            rx.input(
                rx.input.slot(rx.icon("search", size=16)),
                placeholder=t("Zoek een onderwerp in de graaf…"),
                value=G.query,
                on_change=G.set_query.debounce(120),
                aria_label=t("Zoek een onderwerp in de graaf"),
                id="graph-search",
                name="q",
                size="2",
                width="100%",
                auto_complete="off",
            ),
            on_submit=G.submit_search,
            reset_on_submit=False,
        ),
        rx.cond(
            G.hits.length() > 0,
            rx.vstack(rx.foreach(G.hits, hit_row), spacing="0", class_name="graph-hits", id="graph-hits"),
            rx.cond(
                G.query.strip() != "",
                rx.box(rx.text(t("Geen onderwerp gevonden."), size="2", color_scheme="gray"), class_name="graph-hits",
                       padding="8px 12px"),
            ),
        ),
        position="relative",
        width="100%",
    )


def overlay() -> rx.Component:
    """Top left over the canvas: search, counts and legend."""
    return rx.vstack(
        search_box(),
        rx.text(G.counts,
                rx.cond(G.show_pending & (G.pending_count > 0),
                        rx.text.span(" · ", tf("{count} voorgesteld", count=G.pending_count)), rx.fragment()),
                size="1", color_scheme="gray", id="graph-counts"),
        legend(),
        rx.text(t("Grootte = aantal relaties. Klik een onderwerp voor details; scroll om te zoomen, sleep om te "
                  "verschuiven."), size="1", color_scheme="gray", class_name="hide-narrow"),
        spacing="2",
        class_name="graph-overlay",
        custom_attrs={"data-covers-graph": "true"},  # the canvas keeps names and the selected topic out from under it
    )


def neighbour_row(row: NeighbourRow) -> rx.Component:
    return rx.hstack(
        rx.text(tv(row.phrase), size="1", color_scheme="gray", width="118px", flex_shrink="0", padding_top="2px"),
        rx.flex(
            rx.el.button(row.label, on_click=G.focus(row.slug), type="button", class_name="graph-neighbour",
                         font_style=rx.cond(row.pending, "italic", "normal")),
            rx.cond(row.pending, rx.badge(t("voorstel"), size="1", variant="outline", color_scheme="gray")),
            wrap="wrap", gap="6px", align="center", min_width="0",
        ),
        spacing="2", align="start", width="100%",
    )


def side_panel() -> rx.Component:
    """The clicked topic: description, an excerpt, its neighbours, and where to go next."""
    p = G.panel
    return rx.box(
        rx.vstack(
            rx.hstack(
                type_badge(p.type, p.type_label),
                rx.icon_button(rx.icon("x", size=16), variant="ghost", color_scheme="gray", on_click=G.close_panel,
                               aria_label=t("Sluit het paneel"), id="graph-panel-close"),
                justify="between", align="center", width="100%",
            ),
            rx.heading(p.label, size="5", id="graph-panel-title", as_="h2"),
            rx.cond(p.pending,
                    rx.callout(t("Voorgesteld door R42, nog niet goedgekeurd."), icon="hourglass", color_scheme="gray",
                               size="1", width="100%")),
            rx.cond(p.description != "", rx.text(p.description, size="2", weight="medium")),
            rx.cond(p.excerpt != "", rx.text(p.excerpt, size="2", color_scheme="gray", class_name="graph-excerpt")),
            rx.divider(),
            rx.text(t("Verbonden onderwerpen"), size="1", weight="bold", color_scheme="gray"),
            rx.cond(
                p.neighbours.length() > 0,
                rx.vstack(rx.foreach(p.neighbours, neighbour_row), spacing="2", width="100%",
                          id="graph-panel-neighbours"),
                rx.text(t("Nog geen relaties."), size="2", color_scheme="gray"),
            ),
            rx.divider(),
            rx.hstack(
                rx.button(rx.icon("sparkles", size=14), t("Vraag R42 hierover"), on_click=G.ask, size="2",
                          id="graph-ask"),
                rx.cond(p.pending,
                        rx.cond(AuthState.is_admin,
                                link_button(t("Naar de voorstellen"), variant="soft", size="2",
                                            href="/admin/suggestions")),
                        link_button(rx.icon("book_open", size=14), t("Open onderwerp"), variant="soft", size="2",
                                    href="/topics/" + p.slug, id="graph-open-topic")),
                spacing="2", wrap="wrap",
            ),
            spacing="3", width="100%",
        ),
        class_name="graph-panel",
        id="graph-panel",
        custom_attrs={"data-covers-graph": "true"},
        role="complementary",
        aria_label=t("Onderwerp in de graaf"),
    )


def canvas_area() -> rx.Component:
    return rx.box(
        r42_graph(nodes=G.nodes, links=G.links, focus_id=G.focus_id, focus_seq=G.focus_seq, selected_id=G.selected,
                  on_select=G.select),
        overlay(),
        rx.cond(G.selected != "", side_panel()),
        class_name="graph-stage",
        id="graph-stage",
    )


def body() -> rx.Component:
    return rx.box(
        rx.heading(t("Kennisgraaf"), class_name="sr-only"),  # the page's heading, for a screen reader
        rx.cond(
            G.loading,
            rx.center(rx.vstack(rx.spinner(size="3"), rx.text(t("Kennisgraaf laden…"), size="2", color_scheme="gray"),
                                align="center"), height="100%", id="graph-loading"),
            rx.cond(
                G.load_error != "",
                rx.box(error_callout(G.load_error), rx.button(t("Opnieuw"), on_click=G.load, margin_top="12px"),
                       padding="28px 24px", max_width="860px", margin_x="auto"),
                rx.cond(
                    G.topic_count + G.pending_count > 0,
                    canvas_area(),
                    empty_state("network", t("Nog geen onderwerpen"),
                                t("De kennisgraaf van je organisatie is nog leeg. Zodra er onderwerpen zijn, zie je "
                                  "hier hoe ze samenhangen."),
                                rx.cond(AuthState.is_admin,
                                        link_button(t("Onderwerp toevoegen"), href="/admin/topics/new"))),
                ),
            ),
        ),
        rx.moment(interval=3000, on_change=G.poll, display="none"),  # live: writes anywhere redraw the graph
        class_name="graph-page",
    )


def page() -> rx.Component:
    """`/graph` (every signed-in user)."""
    return page_frame(body())
