"""`/admin/suggestions`: the admins' review queue of learner suggestions."""

import reflex as rx

from r42_app.components.common import empty_state, skeleton_lines
from r42_app.components.i18n import t, tf
from r42_app.components.shell import page_frame
from r42_app.state.suggestions import SuggestionRow
from r42_app.state.suggestions import SuggestionsState as S


def suggestion_card(row: SuggestionRow) -> rx.Component:
    """One suggestion: who, when, why, what is new, and the decision (or its history)."""
    return rx.card(
        rx.vstack(
            rx.hstack(
                rx.text(tf("{name} stelde voor · {when}", name=row.proposer, when=row.created), size="2",
                        color_scheme="gray"),
                rx.match(row.status,
                         ("pending", rx.badge(t("Open"), color_scheme="amber")),
                         ("approved", rx.badge(t("Goedgekeurd"), color_scheme="green")),
                         rx.badge(t("Afgewezen"), color_scheme="gray")),
                justify="between", width="100%",
            ),
            rx.text(row.reason, size="3"),
            rx.cond(
                row.invalid,
                rx.callout(
                    rx.text(rx.text.strong(t("Ongeldig voorstel.")), " ",
                            tf("De inhoud heeft niet de vorm die R42 schrijft ({problem}), dus goedkeuren kan niet. "
                               "Wijs het af om de wachtrij op te ruimen.", problem=row.problem)),
                    icon="triangle_alert", color_scheme="red", size="1", class_name="invalid-suggestion",
                ),
                rx.vstack(rx.foreach(row.lines, lambda line: rx.code(line, size="1", variant="ghost")), spacing="1"),
            ),
            rx.cond(
                row.status == "pending",
                rx.hstack(
                    rx.cond(
                        row.invalid,
                        rx.fragment(),
                        rx.button(rx.icon("check", size=14), t("Goedkeuren"), size="2", on_click=S.approve(row.id),
                                  class_name="approve-suggestion"),
                    ),
                    rx.button(rx.icon("x", size=14), t("Afwijzen"), size="2", variant="soft", color_scheme="gray",
                              on_click=S.reject(row.id), class_name="reject-suggestion"),
                    spacing="2",
                ),
                rx.text(rx.cond(row.status == "approved",
                                tf("Goedgekeurd door {name} · {when}", name=row.reviewer, when=row.reviewed_at),
                                tf("Afgewezen door {name} · {when}", name=row.reviewer, when=row.reviewed_at)),
                        size="1", color_scheme="gray"),
            ),
            spacing="2", width="100%",
        ),
        width="100%",
        class_name="suggestion",
    )


def body() -> rx.Component:
    """Header, status filter and the list."""
    return rx.vstack(
        rx.vstack(
            rx.heading(t("Voorstellen"), size="7"),
            rx.text(t("Wijzigingen die R42 aan leerlingen voorstelde. Goedkeuren controleert het voorstel opnieuw "
                      "tegen de kennisbank van nu en voegt het toe."), color_scheme="gray", size="2"),
            spacing="1",
        ),
        rx.segmented_control.root(
            rx.segmented_control.item(rx.hstack(rx.text(t("Open")), rx.badge(S.pending_count, size="1"), spacing="1"),
                                      value="pending"),
            rx.segmented_control.item(t("Goedgekeurd"), value="approved"),
            rx.segmented_control.item(t("Afgewezen"), value="rejected"),
            rx.segmented_control.item(t("Alles"), value="all"),
            value=S.status_filter, on_change=S.set_filter, id="suggestion-filter",
        ),
        rx.cond(
            S.load_error != "",
            rx.callout(rx.hstack(rx.text(S.load_error), rx.button(t("Opnieuw"), size="1", variant="soft",
                                                                  on_click=S.load),
                                 align="center", spacing="3"),
                       icon="triangle_alert", color_scheme="red", id="suggestions-error"),
        ),
        rx.cond(
            S.loading,
            skeleton_lines(6, "40px"),
            rx.cond(
                S.rows.length() > 0,
                rx.vstack(rx.foreach(S.rows, suggestion_card), spacing="3", width="100%", id="suggestions"),
                empty_state("inbox", t("Geen voorstellen"), t("Er zijn hier geen voorstellen. Als R42 een leerling "
                                                             "een aanvulling voorstelt en die ja zegt, verschijnt het "
                                                             "voorstel hier.")),
            ),
        ),
        rx.moment(interval=3000, on_change=S.poll, display="none"),  # live: new suggestions appear by themselves
        spacing="4", width="100%",
    )


def page() -> rx.Component:
    """`/admin/suggestions` (admins only)."""
    return page_frame(rx.box(rx.box(body(), max_width="860px", margin_x="auto"), padding="28px 24px"), admin=True)
