"""`/admin/costs`: what R42's AI cost the organisation, per day, capability and user, and its credits."""

import reflex as rx

from r42_app.components.common import card_cell, day_field, empty_state, error_callout, skeleton_lines
from r42_app.components.i18n import t, tf, tv
from r42_app.components.shell import page_frame
from r42_app.state.costs import CHART_KEYS, CHART_LABELS, QUESTION_REWRITE, CostRow
from r42_app.state.costs import CostsState as S

CHART_COLORS = {"chat_general": "#3e63dd", "kb_search": "#0090ff", "data_write": "#46a758", "external_tools": "#f76b15",
                "question_rewrite": "#8e4ec6"}


def stat(label: rx.Var[str], value, note: rx.Component, id: str) -> rx.Component:
    """One total: a big number, its label and a line of context."""
    return rx.card(rx.vstack(rx.text(label, size="1", color_scheme="gray"),
                             rx.text(value, size="6", weight="bold", id=id, as_="p"), note, spacing="1"), width="100%")


def note(*parts) -> rx.Component:
    return rx.text(*parts, size="1", color_scheme="gray")


def totals() -> rx.Component:
    return rx.grid(
        stat(t("Kosten (USD)"), S.total_usd, note(tf("{count} kostenregels (per vraag en onderdeel)", count=S.events)),
             "cost-usd"),
        # the two do not add up to a round number, and should not: one is this range's use, the other today's
        # balance after every use and top-up so far; each card says which
        stat(t("Credits verbruikt"), S.credits_used, note(t("in deze periode (1 credit = USD 0,001)")),
             "cost-credits-used"),
        stat(t("Credits over"), S.credits_left,
             note(rx.cond(S.unlimited, t("onbeperkt abonnement"),
                          t("vandaag, voor de hele organisatie: na al het verbruik en alle aanvullingen tot nu"))),
             "cost-credits-left"),
        stat(t("Tokens"), S.tokens, note(tf("waarvan {share} uit de cache gelezen", share=S.cache_share)),
             "cost-tokens"),
        columns=rx.breakpoints(initial="1", sm="2", md="4"), spacing="3", width="100%", id="cost-totals",
    )


def range_form() -> rx.Component:
    return rx.form(
        rx.hstack(
            day_field(t("Van"), "since", S.since_text, "cost-since"),
            day_field(t("Tot en met"), "until", S.until_text, "cost-until"),
            rx.button(t("Toon"), type="submit", size="2", id="cost-apply"),
            rx.button(rx.icon("download", size=14), t("CSV"), type="button", variant="soft", size="2",
                      on_click=S.export_csv, id="cost-export"),
            align="end", spacing="3", wrap="wrap",
        ),
        rx.cond(S.range_error != "", rx.text(S.range_error, size="1", color_scheme="red", role="alert")),
        on_submit=S.set_range, reset_on_submit=False,
    )


# the axes' numbers as the cards write them (0,0015; 1.000), whatever the browser's own locale
NL_NUMBER = "(v) => Number(v).toLocaleString('nl-NL', {maximumFractionDigits: 4})"


def per_day_chart() -> rx.Component:
    """Cost per day, stacked by capability."""
    return rx.recharts.bar_chart(
        *[rx.recharts.bar(data_key=k, stack_id="cost", name=t(CHART_LABELS[k]), fill=CHART_COLORS[k])
          for k in CHART_KEYS if k != QUESTION_REWRITE],
        rx.cond(S.shows_rewrite,  # only when follow-ups are rewritten by the model (off by default) or were
                rx.recharts.bar(data_key=QUESTION_REWRITE, stack_id="cost", name=t(CHART_LABELS[QUESTION_REWRITE]),
                                fill=CHART_COLORS[QUESTION_REWRITE])),
        rx.recharts.x_axis(data_key="day", tick_line=False, font_size=11),
        rx.recharts.y_axis(width=60, font_size=11, tick_formatter=NL_NUMBER),
        rx.recharts.graphing_tooltip(),
        rx.recharts.legend(),
        rx.recharts.cartesian_grid(stroke_dasharray="3 3", vertical=False),
        data=S.per_day, width="100%", height=280,
    )


def horizontal_bars(data, id: str) -> rx.Component:
    return rx.recharts.bar_chart(
        rx.recharts.bar(data_key="usd", name="USD", fill="#3e63dd", radius=4),
        rx.recharts.x_axis(type_="number", font_size=11, tick_formatter=NL_NUMBER),
        rx.recharts.y_axis(data_key="name", type_="category", width=120, font_size=11),
        rx.recharts.graphing_tooltip(),
        data=data, layout="vertical", width="100%", height=220, id=id,
    )


def cost_table(rows, first: rx.Var[str], id: str, words: bool = False) -> rx.Component:
    """`words`: the rows' names are page words (the capabilities' labels), not people's."""
    def row(r: CostRow) -> rx.Component:
        return rx.table.row(rx.table.cell(tv(r.label) if words else r.label, class_name="card-title"),
                            card_cell(t("Aanroepen"), r.events), card_cell(t("Tokens"), r.tokens),
                            card_cell("USD", r.usd), card_cell(t("Credits"), r.credits))

    return rx.box(rx.table.root(
        rx.table.header(rx.table.row(*[rx.table.column_header_cell(h)
                                       for h in (first, t("Aanroepen"), t("Tokens"), "USD", t("Credits"))])),
        rx.table.body(rx.foreach(rows, row)),
        size="1", width="100%", id=id, class_name="r42-cards",
    ), overflow_x="auto", width="100%")


def card(title: rx.Var[str], *children: rx.Component) -> rx.Component:
    return rx.card(rx.vstack(rx.heading(title, size="4", as_="h2"), *children, spacing="3", width="100%"), width="100%")


def credits_card() -> rx.Component:
    """Credits left and a top-up (audited)."""
    return card(
        t("Tegoed"),
        rx.cond(S.out_of_credit,
                rx.callout(t("Het tegoed is op: R42 beantwoordt geen vragen meer tot je het aanvult."),
                           icon="triangle_alert", color_scheme="amber", size="1", id="cost-out-of-credit")),
        rx.text(tf("Over: {count} credits.", count=S.credits_left), " ",
                t("Een vraag aan R42 kost meestal een paar credits."), size="2"),
        rx.cond(~S.unlimited, rx.vstack(
            rx.hstack(
                rx.input(placeholder=t("Aantal credits, bijv. 5000"), value=S.add_amount, on_change=S.set_add_amount,
                         id="credits-amount", width="220px",
                         custom_attrs={"aria-invalid": rx.cond(S.amount_error != "", "true", "false"),
                                       "aria-describedby": "credits-error",
                                       "aria-label": t("Aantal credits")}),
                # a negative amount takes credits off: the button says so before it is pressed
                rx.cond(S.taking_off,
                        rx.button(rx.icon("minus", size=14), t("Afschrijven"), on_click=S.add_credits,
                                  color_scheme="red", high_contrast=True, id="credits-add"),  # white on red-9: < 4.5:1
                        rx.button(rx.icon("plus", size=14), t("Toevoegen"), on_click=S.add_credits, id="credits-add")),
                spacing="2", align="center", wrap="wrap",
            ),
            rx.cond(S.amount_error != "",
                    rx.text(S.amount_error, size="1", color_scheme="red", role="alert", id="credits-error")),
            spacing="1",
        )),
        rx.text(t("Elke wijziging komt in het auditlog."), size="1", color_scheme="gray"),
    )


def report() -> rx.Component:
    return rx.cond(
        S.events > 0,
        rx.vstack(
            card(t("Kosten per dag"), rx.box(per_day_chart(), width="100%", id="cost-per-day")),
            rx.grid(
                card(t("Per onderdeel"), horizontal_bars(S.per_capability, "cost-per-capability")),
                card(t("Gebruikers met de hoogste kosten"), horizontal_bars(S.top_users, "cost-top-users")),
                columns=rx.breakpoints(initial="1", md="2"), spacing="3", width="100%",
            ),
            card(t("Per onderdeel"),
                 cost_table(S.capability_rows, t("Onderdeel"), "cost-capability-table", words=True)),
            card(t("Per gebruiker"), cost_table(S.user_rows, t("Gebruiker"), "cost-user-table")),
            spacing="3", width="100%",
        ),
        card(t("Kosten"), empty_state("bar_chart_3", t("Nog geen kosten in deze periode"),
                                      t("Zodra iemand R42 een vraag stelt, verschijnen de kosten hier (binnen een "
                                        "paar seconden). Kies een andere periode om eerdere kosten te zien."))),
    )


def body() -> rx.Component:
    return rx.vstack(
        rx.vstack(
            rx.heading(t("Kosten en tegoed"), size="7"),
            rx.text(t("Wat de AI van R42 je organisatie kost, per dag, onderdeel en gebruiker (UTC-dagen)."),
                    color_scheme="gray", size="2"),
            spacing="1",
        ),
        rx.cond(S.load_error != "", error_callout(S.load_error)),
        rx.cond(
            S.loading,
            skeleton_lines(8, "40px"),
            rx.vstack(range_form(), totals(), credits_card(), report(), spacing="4", width="100%"),
        ),
        spacing="4", width="100%",
    )


def page() -> rx.Component:
    """`/admin/costs` (admins only)."""
    return page_frame(rx.box(rx.box(body(), max_width="1100px", margin_x="auto"), padding="28px 24px"), admin=True)
