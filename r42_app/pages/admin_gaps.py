"""`/admin/gaps` ("Kennishiaten"): groups of similar questions learners asked that the knowledge base could not
answer, most asked first, with the topics that came closest; "Onderwerp aanmaken" opens the topic editor
prefilled from the group, "Negeren" takes it off the list. A chart of the weekly unanswered questions shows the
knowledge base catching up."""

import reflex as rx

from r42_app.components.common import day_field, empty_state, error_callout, form_label, skeleton_lines
from r42_app.components.i18n import t, tf, tm
from r42_app.components.shell import page_frame
from r42_app.core.gaps import MIN_ASKERS_SHOWN
from r42_app.state.gaps import GapExample, GapRow, GapTopic, WeekBar
from r42_app.state.gaps import GapsState as S


def status_badge(status) -> rx.Component:
    return rx.cond(status == "resolved",
                   rx.badge(rx.icon("circle_check", size=12), t("Opgelost"), color_scheme="green",
                            class_name="gap-status"),
                   rx.badge(rx.icon("circle_help", size=12), t("Open"), color_scheme="orange", class_name="gap-status"))


def closest_chip(topic: GapTopic) -> rx.Component:
    return rx.link(rx.badge(rx.icon("book_open", size=12), topic.label, variant="surface", color_scheme="gray"),
                   href=topic.url, class_name="gap-closest")


def example_item(q: GapExample) -> rx.Component:
    """One question as asked: a long one cut at a word, its whole text behind "Hele vraag" (a details element:
    keyboard and screen readers open it as they open any disclosure)."""
    return rx.el.li(
        rx.text(q.short, size="2", class_name="gap-question"),
        rx.cond(q.full != "",
                rx.el.details(rx.el.summary(t("Hele vraag"), class_name="gap-full-toggle"),
                              rx.text(q.full, size="2", class_name="gap-full", white_space="pre-wrap"))),
    )


def gap_card(r: GapRow) -> rx.Component:
    return rx.card(
        rx.vstack(
            rx.hstack(
                status_badge(r.status),
                rx.text(tf("{count}× gevraagd", count=r.count), size="1", weight="medium", class_name="gap-count"),
                rx.text(r.askers, size="1", color_scheme="gray", class_name="gap-learners"),
                rx.text(tf("laatst {when}", when=r.last), size="1", color_scheme="gray"),
                spacing="2", align="center", wrap="wrap",
            ),
            rx.heading(r.title, size="3", as_="h2", class_name="gap-title"),
            rx.el.ul(rx.foreach(r.examples, example_item), class_name="gap-examples", aria_label=t("Gestelde vragen")),
            rx.cond(r.more > 0, rx.text(rx.cond(r.more == 1,
                                                tf("en nog {count} andere formulering", count=r.more),
                                                tf("en nog {count} andere formuleringen", count=r.more)),
                                        size="1", color_scheme="gray")),
            rx.cond(r.closest.length() > 0,
                    rx.hstack(rx.text(t("Kwam het dichtst in de buurt:"), size="1", color_scheme="gray"),
                              rx.foreach(r.closest, closest_chip), spacing="2", wrap="wrap", align="center"),
                    rx.text(t("Geen onderwerp kwam in de buurt."), size="1", color_scheme="gray")),
            rx.cond(r.topic != "",
                    rx.text(t("Onderwerp aangemaakt: "), rx.link(r.topic, href=r.topic_url), size="1")),
            # a resolved gap is answered now: nothing left to make or ignore (its topic, if one was made, is above)
            rx.cond(r.status != "resolved", rx.hstack(
                rx.button(rx.icon("file_plus", size=14), t("Onderwerp aanmaken"), size="2",
                          on_click=S.create_topic(r.id), class_name="gap-create",
                          aria_label=tf("Onderwerp aanmaken voor: {title}", title=r.title)),
                rx.button(rx.icon("eye_off", size=14), t("Negeren"), size="2", variant="soft", color_scheme="gray",
                          on_click=S.ignore(r.id), loading=S.busy_gap == r.id, class_name="gap-ignore",
                          aria_label=tf("Negeren: {title}", title=r.title)),
                spacing="2", wrap="wrap",
            )),
            spacing="2", align="start", width="100%",
        ),
        width="100%", class_name="gap-row", data_gap=r.id, data_status=r.status,
    )


def week_label(w: WeekBar) -> rx.Var[str]:
    """"Week 12: 3 vragen van 40 in een kennishiaat": the bar's title, and what a screen reader reads."""
    return rx.cond(w.ungrounded == 1,
                   tf("Week {week}: {count} vraag van {total} in een kennishiaat", week=w.week, count=w.ungrounded,
                      total=w.total),
                   tf("Week {week}: {count} vragen van {total} in een kennishiaat", week=w.week, count=w.ungrounded,
                      total=w.total))


def week_bar(w: WeekBar) -> rx.Component:
    label = week_label(w)
    return rx.vstack(
        rx.box(rx.box(height=w.height, width="100%", background="var(--orange-9)", border_radius="3px 3px 0 0",
                      title=label),
               height="90px", width="100%", display="flex", align_items="flex-end"),
        rx.text(w.ungrounded, size="1", weight="medium"),
        rx.text(w.week, size="1", color_scheme="gray", white_space="nowrap"),
        rx.el.span(label, class_name="sr-only"),
        spacing="1", align="center", flex="1", min_width="0", role="listitem",
    )


def weekly_chart() -> rx.Component:
    return rx.card(
        rx.vstack(
            rx.heading(t("Vragen in een kennishiaat per week"), size="3", as_="h2", id="gaps-weekly-title"),
            rx.text(t("Hoeveel gestelde vragen per week in een van de kennishiaten hieronder vallen, de laatste 12 "
                      "weken (onder elke staaf het weeknummer; genegeerde hiaten tellen niet mee). Worden de staven "
                      "lager, dan haalt de kennisbank in."), size="1", color_scheme="gray"),
            rx.hstack(rx.foreach(S.weeks, week_bar), spacing="1", width="100%", align="end", role="list",
                      aria_labelledby="gaps-weekly-title", id="gaps-weekly"),
            spacing="2", width="100%",
        ),
        width="100%",
    )


def filters() -> rx.Component:
    return rx.form(
        rx.hstack(
            day_field(t("Van"), "since", S.since_text, "gaps-since"),
            day_field(t("Tot en met"), "until", S.until_text, "gaps-until"),
            rx.vstack(form_label(t("Zoeken"), "gaps-search", size="1"),
                      rx.input(name="search", default_value=S.search, id="gaps-search", size="2",
                               placeholder=t("woord uit een vraag of onderwerp"), type="search",
                               width="17rem", max_width="100%"), spacing="1", max_width="100%"),
            rx.button(rx.icon("search", size=14), t("Toon"), type="submit", size="2", id="gaps-apply"),
            align="end", spacing="3", wrap="wrap",
        ),
        rx.cond(S.range_error != "", rx.text(S.range_error, size="1", color_scheme="red", role="alert")),
        on_submit=S.apply, reset_on_submit=False,
    )


def pager() -> rx.Component:
    return rx.cond(S.pages > 1, rx.hstack(
        rx.button(rx.icon("chevron_left", size=14), t("Vorige"), size="1", variant="soft", disabled=S.page <= 1,
                  on_click=S.go_to(S.page - 1), id="gaps-prev"),
        rx.text(tf("Pagina {page} van {pages}", page=S.page, pages=S.pages), size="1", aria_live="polite"),
        rx.button(t("Volgende"), rx.icon("chevron_right", size=14), size="1", variant="soft",
                  disabled=S.page >= S.pages, on_click=S.go_to(S.page + 1), id="gaps-next"),
        spacing="3", align="center", justify="center", width="100%",
    ))


def body() -> rx.Component:
    return rx.vstack(
        rx.vstack(
            rx.heading(t("Kennishiaten"), size="6"),
            rx.text(tm("gaps.intro", minimum=MIN_ASKERS_SHOWN), color_scheme="gray", size="2"),
            spacing="1",
        ),
        filters(),
        rx.cond(S.load_error != "", error_callout(S.load_error)),
        rx.cond(
            S.loading,
            skeleton_lines(6, "60px"),
            rx.vstack(
                weekly_chart(),
                rx.cond(
                    S.rows.length() > 0,
                    rx.vstack(rx.foreach(S.visible, gap_card), pager(), spacing="3", width="100%", id="gaps-list"),
                    empty_state("circle_check", t("Geen kennishiaten in deze periode"),
                                t("Elke vraag die de kennisbank niet kon beantwoorden verschijnt hier, gegroepeerd. "
                                  "Kies een langere periode of een andere zoekterm.")),
                ),
                spacing="4", width="100%",
            ),
        ),
        spacing="4", width="100%", max_width="880px", margin_x="auto", padding="32px 24px",
    )


def page() -> rx.Component:
    return page_frame(body(), admin=True)
