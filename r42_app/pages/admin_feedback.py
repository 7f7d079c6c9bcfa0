"""`/admin/feedback`: what learners thought of R42's answers (thumbs up/down), newest first."""

import reflex as rx

from r42_app.components.common import empty_state, error_callout, skeleton_lines
from r42_app.components.i18n import t, tm
from r42_app.components.markdown import safe_markdown
from r42_app.components.shell import page_frame
from r42_app.state.feedback import FeedbackRow, FeedbackSource
from r42_app.state.feedback import FeedbackState as S


def source_chip(text, **props) -> rx.Component:
    """A [ref:N] of the answer as the chip of its source, as in the chat window."""
    return rx.link(rx.icon("book_open", size=12), text, class_name="r42-cite", **props)


def source_link(s: FeedbackSource) -> rx.Component:
    """One source of the answer in the list under it."""
    return rx.el.li(rx.link(s.label, href=s.href, size="1"))


def feedback_card(r: FeedbackRow) -> rx.Component:
    return rx.card(
        rx.vstack(
            rx.hstack(
                rx.cond(r.rating == "up", rx.badge(rx.icon("thumbs_up", size=12), t("Goed"), color_scheme="green"),
                        rx.badge(rx.icon("thumbs_down", size=12), t("Slecht"), color_scheme="red")),
                rx.text(r.user, size="1", weight=rx.cond(r.signed, "medium", "regular"), color_scheme="gray",
                        high_contrast=r.signed, class_name="feedback-user", data_signed=r.signed.to_string()),
                rx.text(r.when, size="1", color_scheme="gray"),
                spacing="2", align="center", wrap="wrap",
            ),
            rx.text(t("Vraag:"), " ", rx.el.span(r.question, font_weight="500"), size="2"),
            rx.cond(r.reason != "",
                    rx.callout(rx.text(rx.el.strong(t("Toelichting:")), " ",
                                       rx.el.span(r.reason, class_name="feedback-reason")),
                               icon="message_square_warning", color_scheme="red", variant="surface", size="1",
                               width="100%")),
            rx.box(safe_markdown(r.display, component_map={"a": source_chip}, chips=r.source_links,
                                 class_name="r42-md"),
                   class_name="feedback-answer", font_size="14px", width="100%"),
            rx.cond(r.source_links.length() > 0,
                    rx.box(rx.text(t("Bronnen"), size="1", weight="medium"),
                           rx.el.ul(rx.foreach(r.source_links, source_link), class_name="feedback-sources"),
                           width="100%")),
            spacing="2", align="start", width="100%",
        ),
        width="100%", class_name="feedback-row", data_rating=r.rating,
    )


def body() -> rx.Component:
    return rx.vstack(
        rx.vstack(
            rx.heading(t("Beoordelingen van R42"), size="6"),
            rx.text(tm("feedback.intro"), color_scheme="gray", size="2"),
            spacing="1",
        ),
        rx.hstack(
            rx.segmented_control.root(
                rx.segmented_control.item(t("Alle"), value="all"),
                rx.segmented_control.item(rx.hstack(rx.icon("thumbs_up", size=12), S.ups, spacing="1"), value="up"),
                rx.segmented_control.item(rx.hstack(rx.icon("thumbs_down", size=12), S.downs, spacing="1"),
                                          value="down"),
                value=S.show, on_change=S.set_show, id="feedback-filter",
            ),
            spacing="3",
        ),
        rx.cond(S.load_error != "", error_callout(S.load_error)),
        rx.cond(
            S.loading,
            skeleton_lines(6, "60px"),
            rx.cond(
                S.visible.length() > 0,
                rx.vstack(rx.foreach(S.visible, feedback_card), spacing="3", width="100%", id="feedback-list"),
                empty_state("message_square_heart", t("Nog geen beoordelingen"),
                            t("Deelnemers kunnen elk antwoord van R42 een duim omhoog of omlaag geven; "
                              "dat verschijnt hier.")),
            ),
        ),
        spacing="4", width="100%", max_width="880px", margin_x="auto", padding="32px 24px",
    )


def page() -> rx.Component:
    return page_frame(body(), admin=True)
