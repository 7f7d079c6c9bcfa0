"""`/admin/costs`: what R42's AI cost the organisation, per day, capability and user, and its credits."""

import reflex as rx

from r42_app.components.common import card_cell, day_field, empty_state, error_callout, skeleton_lines
from r42_app.components.shell import page_frame
from r42_app.state.costs import CHART_KEYS, CHART_LABELS, CostRow
from r42_app.state.costs import CostsState as S

CHART_COLORS = {"chat_general": "#3e63dd", "kb_search": "#0090ff", "data_write": "#46a758", "external_tools": "#f76b15"}


def stat(label: str, value, note: rx.Component, id: str) -> rx.Component:
    """One total: a big number, its label and a line of context."""
    return rx.card(rx.vstack(rx.text(label, size="1", color_scheme="gray"), rx.heading(value, size="6", id=id), note,
                             spacing="1"), width="100%")


def note(*parts) -> rx.Component:
    return rx.text(*parts, size="1", color_scheme="gray")


def totals() -> rx.Component:
    return rx.grid(
        stat("Kosten (USD)", S.total_usd, note(S.events, " kostenregels (per vraag en onderdeel)"), "cost-usd"),
        # the two do not add up to a round number, and should not: one is this range's use, the other today's
        # balance after every use and top-up so far; each card says which
        stat("Credits verbruikt", S.credits_used, note("in deze periode (1 credit = USD 0,001)"), "cost-credits-used"),
        stat("Credits over", S.credits_left,
             note(rx.cond(S.unlimited, "onbeperkt abonnement",
                          "vandaag, voor de hele organisatie: na al het verbruik en alle aanvullingen tot nu")),
             "cost-credits-left"),
        stat("Tokens", S.tokens, note("waarvan ", S.cache_share, " uit de cache gelezen"), "cost-tokens"),
        columns=rx.breakpoints(initial="1", sm="2", md="4"), spacing="3", width="100%", id="cost-totals",
    )


def range_form() -> rx.Component:
    return rx.form(
        rx.hstack(
            day_field("Van", "since", S.since_text, "cost-since"),
            day_field("Tot en met", "until", S.until_text, "cost-until"),
            rx.button("Toon", type="submit", size="2", id="cost-apply"),
            rx.button(rx.icon("download", size=14), "CSV", type="button", variant="soft", size="2",
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
        *[rx.recharts.bar(data_key=k, stack_id="cost", name=CHART_LABELS[k], fill=CHART_COLORS[k]) for k in CHART_KEYS],
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


def cost_table(rows, first: str, id: str) -> rx.Component:
    def row(r: CostRow) -> rx.Component:
        return rx.table.row(rx.table.cell(r.label, class_name="card-title"), card_cell("Aanroepen", r.events),
                            card_cell("Tokens", r.tokens), card_cell("USD", r.usd), card_cell("Credits", r.credits))

    return rx.box(rx.table.root(
        rx.table.header(rx.table.row(*[rx.table.column_header_cell(h)
                                       for h in (first, "Aanroepen", "Tokens", "USD", "Credits")])),
        rx.table.body(rx.foreach(rows, row)),
        size="1", width="100%", id=id, class_name="r42-cards",
    ), overflow_x="auto", width="100%")


def card(title: str, *children: rx.Component) -> rx.Component:
    return rx.card(rx.vstack(rx.heading(title, size="4"), *children, spacing="3", width="100%"), width="100%")


def credits_card() -> rx.Component:
    """Credits left and a top-up (audited)."""
    return card(
        "Tegoed",
        rx.cond(S.out_of_credit,
                rx.callout("Het tegoed is op: R42 beantwoordt geen vragen meer tot je het aanvult.",
                           icon="triangle_alert", color_scheme="amber", size="1", id="cost-out-of-credit")),
        rx.text("Over: ", rx.text.strong(S.credits_left), " credits. Een vraag aan R42 kost meestal een paar credits.",
                size="2"),
        rx.cond(~S.unlimited, rx.hstack(
            rx.input(placeholder="Aantal credits, bijv. 5000", value=S.add_amount, on_change=S.set_add_amount,
                     id="credits-amount", width="220px"),
            rx.button(rx.icon("plus", size=14), "Toevoegen", on_click=S.add_credits, id="credits-add"),
            spacing="2", align="center", wrap="wrap",
        )),
        rx.text("Elke wijziging komt in het auditlog.", size="1", color_scheme="gray"),
    )


def report() -> rx.Component:
    return rx.cond(
        S.events > 0,
        rx.vstack(
            card("Kosten per dag", rx.box(per_day_chart(), width="100%", id="cost-per-day")),
            rx.grid(
                card("Per onderdeel", horizontal_bars(S.per_capability, "cost-per-capability")),
                card("Gebruikers met de hoogste kosten", horizontal_bars(S.top_users, "cost-top-users")),
                columns=rx.breakpoints(initial="1", md="2"), spacing="3", width="100%",
            ),
            card("Per onderdeel", cost_table(S.capability_rows, "Onderdeel", "cost-capability-table")),
            card("Per gebruiker", cost_table(S.user_rows, "Gebruiker", "cost-user-table")),
            spacing="3", width="100%",
        ),
        card("Kosten", empty_state("bar_chart_3", "Nog geen kosten in deze periode",
                                   "Zodra iemand R42 een vraag stelt, verschijnen de kosten hier (binnen een paar "
                                   "seconden). Kies een andere periode om eerdere kosten te zien.")),
    )


def body() -> rx.Component:
    return rx.vstack(
        rx.vstack(
            rx.heading("Kosten en tegoed", size="7"),
            rx.text("Wat de AI van R42 je organisatie kost, per dag, onderdeel en gebruiker (UTC-dagen).",
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
