"""`/admin/chatbot`: the master switch, the tenant default and per-user capabilities of R42."""

import reflex as rx

from r42_app.components.common import card_cell, error_callout, form_label, skeleton_lines
from r42_app.components.i18n import t, tf, tv
from r42_app.components.shell import page_frame
from r42_app.core.capabilities import CAPABILITIES, CAPABILITY_HELP, CAPABILITY_LABELS, OVERRIDE_LABELS, OVERRIDE_VALUES
from r42_app.state.chatbot_settings import SWITCH_ID, AccessUserRow, ChangeRow
from r42_app.state.chatbot_settings import ChatbotSettingsState as S


def section(title: rx.Var[str], subtitle: rx.Var[str], *children: rx.Component, **props) -> rx.Component:
    """A titled card."""
    return rx.card(
        rx.vstack(
            rx.vstack(rx.heading(title, size="4", as_="h2"), rx.text(subtitle, size="2", color_scheme="gray"),
                      spacing="1"),
            *children,
            spacing="4", width="100%",
        ),
        width="100%", **props,
    )


def question_log_switch() -> rx.Component:
    """The anonymous question log (the knowledge-gaps report's ground) on or off for the tenant."""
    return section(
        t("Vragen bewaren voor Kennishiaten"),
        t("R42 bewaart de vragen van leerlingen zonder hun naam (je ziet hoe vaak en door hoeveel leerlingen, niet "
          "wie), zodat Kennishiaten laat zien wat de kennisbank nog niet beantwoordt. Deelnemers krijgen dat één keer "
          "te zien in het chatvenster. Uit: er worden geen nieuwe vragen bewaard."),
        rx.text(tf("Een vraag wordt na {days} dagen verwijderd.", days=S.question_log_days), size="1",
                color_scheme="gray", id="chatbot-question-log-days"),
        rx.hstack(
            rx.switch(checked=S.question_log, on_change=S.switch_question_log, id="chatbot-question-log", size="3",
                      custom_attrs={"aria-labelledby": "chatbot-question-log-label"}),
            form_label(rx.cond(S.question_log, t("Vragen worden bewaard"), t("Vragen worden niet bewaard")),
                       "chatbot-question-log", weight="medium", id="chatbot-question-log-label"),
            align="center", spacing="3",
        ),
        id="chatbot-question-log-section",
    )


def master_switch() -> rx.Component:
    """R42 on or off for the whole tenant; switching off asks first."""
    return section(
        t("R42 voor je organisatie"),
        t("Staat R42 uit, dan kan niemand in je organisatie met R42 chatten; de knop rechtsonder zegt dat dan."),
        rx.hstack(
            rx.switch(checked=S.enabled, on_change=S.switch, id=SWITCH_ID, size="3",
                      custom_attrs={"aria-labelledby": "chatbot-enabled-label"}),
            form_label(rx.cond(S.enabled, t("R42 staat aan"), t("R42 staat uit")), "chatbot-enabled", weight="medium",
                       id="chatbot-enabled-label"),
            align="center", spacing="3",
        ),
        rx.alert_dialog.root(
            rx.alert_dialog.content(
                rx.alert_dialog.title(t("R42 uitzetten?")),
                rx.alert_dialog.description(t("Niemand in je organisatie kan dan nog met R42 chatten, ook niet in "
                                              "een gesprek dat al openstaat. Je kunt R42 hier weer aanzetten.")),
                rx.hstack(
                    rx.alert_dialog.cancel(rx.button(t("Annuleren"), variant="soft", color_scheme="gray",
                                                     id="chatbot-disable-cancel")),
                    rx.alert_dialog.action(rx.button(t("Uitzetten"), color_scheme="red", high_contrast=True,
                                                     on_click=S.confirm_switch_off,
                                                     id="chatbot-disable-confirm")),
                    justify="end", spacing="3", margin_top="16px",
                ),
                max_width="420px",
            ),
            open=S.confirm_off,
            on_open_change=S.dialog_open,
        ),
        id="chatbot-switch",
    )


def default_box(capability: str) -> rx.Component:
    """One capability of the tenant default, with what it means."""
    return rx.el.label(
        rx.hstack(
            rx.checkbox(checked=S.default.contains(capability), on_change=lambda on: S.toggle_default(capability, on),
                        id=f"default-{capability}", size="2",
                        custom_attrs={"aria-labelledby": f"default-{capability}-label",
                                      "aria-describedby": f"default-{capability}-help"}),
            rx.vstack(rx.text(t(CAPABILITY_LABELS[capability]), size="2", weight="medium",
                              id=f"default-{capability}-label"),
                      rx.text(t(CAPABILITY_HELP[capability]), size="1", color_scheme="gray",
                              id=f"default-{capability}-help"), spacing="0"),
            align="start", spacing="3",
        ),
        class_name="capability-choice",
    )


def defaults() -> rx.Component:
    return section(
        t("Standaard voor iedereen"),
        t("Wat R42 mag doen voor gebruikers die op Standaard staan. Een wijziging geldt vanaf hun volgende vraag."),
        rx.grid(*[default_box(c) for c in CAPABILITIES], columns=rx.breakpoints(initial="1", sm="2"), spacing="4",
                width="100%"),
        id="chatbot-defaults",
    )


def override_select(row: AccessUserRow, capability: str) -> rx.Component:
    """Standaard / Toestaan / Weigeren for one user and one capability."""
    return rx.select.root(
        rx.select.trigger(variant="ghost", class_name="override-trigger",
                          aria_label=tf("{capability} voor {email}", capability=t(CAPABILITY_LABELS[capability]),
                                        email=row.email)),
        rx.select.content(*[rx.select.item(t(OVERRIDE_LABELS[v]), value=v) for v in OVERRIDE_VALUES]),
        value=getattr(row, capability),
        on_change=lambda value: S.change(row.id, capability, value),
        size="1",
    )


def user_row(row: AccessUserRow) -> rx.Component:
    return rx.table.row(
        rx.table.cell(rx.vstack(rx.text(row.name, size="2", weight="medium"),
                                rx.text(row.email, size="1", color_scheme="gray"), spacing="0"),
                      class_name="card-title"),
        card_cell(t("Rol"), rx.text(tv(row.role), size="2")),
        *[card_cell(t(CAPABILITY_LABELS[c]), rx.cond(row.legacy, rx.text("—", color_scheme="gray"),
                                                  override_select(row, c)))
          for c in CAPABILITIES],
        card_cell(
            rx.cond(S.enabled, t("Geldt nu"), t("Geldt zodra R42 aanstaat")),
            rx.vstack(
                rx.cond(row.legacy,
                        rx.hstack(rx.badge(t("Vaste lijst (oud)"), color_scheme="amber", variant="soft",
                                           high_contrast=True),
                                  rx.button(t("Omzetten"), size="1", variant="soft", on_click=S.convert(row.id),
                                            class_name="convert-legacy"),
                                  spacing="2", align="center")),
                rx.cond(row.effective.length() > 0,
                        rx.flex(rx.foreach(row.effective,
                                           lambda label: rx.badge(tv(label), variant="surface", size="1")),
                                wrap="wrap", gap="1"),
                        rx.text(t("R42 uit"), size="1", color_scheme="red")),
                spacing="1",
            ),
        ),
        class_name=["access-row", rx.cond(row.changed, "access-row-changed", "")],  # a class, not words (the scan)
        data_email=row.email,
    )


def users_table() -> rx.Component:
    return section(
        t("Per gebruiker"),
        t("Standaard volgt de instelling hierboven; Toestaan en Weigeren gelden alleen voor deze gebruiker. "
          "Een oude vaste lijst geldt precies zoals hij is; Omzetten maakt er Standaard/Toestaan/Weigeren van, "
          "met dezelfde rechten."),
        rx.hstack(
            rx.input(rx.input.slot(rx.icon("search", size=14)), placeholder=t("Zoek op naam of e-mailadres"),
                     value=S.query, on_change=S.set_query, id="access-search", width="320px", max_width="100%"),
            rx.text(tf("{matching} van {total} gebruikers", matching=S.matching, total=S.total), size="1",
                    color_scheme="gray"),
            align="center", spacing="3", wrap="wrap",
        ),
        rx.cond(~S.enabled,
                rx.callout(t("R42 staat uit: niemand kan nu met R42 chatten. De tabel laat zien wat ieder mag "
                             "zodra R42 weer aanstaat."), icon="power_off", color_scheme="amber", size="1",
                           width="100%", id="chatbot-users-off")),
        rx.box(
            rx.table.root(
                rx.table.header(rx.table.row(
                    rx.table.column_header_cell(t("Gebruiker")), rx.table.column_header_cell(t("Rol")),
                    *[rx.table.column_header_cell(t(CAPABILITY_LABELS[c])) for c in CAPABILITIES],
                    rx.table.column_header_cell(rx.cond(S.enabled, t("Geldt nu"), t("Geldt zodra R42 aanstaat"))),
                )),
                rx.table.body(rx.foreach(S.rows, user_row)),
                size="1", width="100%", id="access-table", class_name="r42-cards",
            ),
            overflow_x="auto", width="100%",
        ),
        rx.cond(S.rows.length() < S.matching,
                rx.button(t("Meer tonen"), variant="soft", size="1", on_click=S.show_more, id="access-more")),
        rx.cond(
            S.pending > 0,
            rx.hstack(
                rx.text(rx.cond(S.pending == 1,
                                tf("{count} gebruiker gewijzigd, nog niet opgeslagen", count=S.pending),
                                tf("{count} gebruikers gewijzigd, nog niet opgeslagen", count=S.pending)),
                        size="2", weight="medium", id="access-pending"),
                rx.hstack(
                    rx.button(t("Ongedaan maken"), variant="soft", color_scheme="gray", on_click=S.discard),
                    rx.button(rx.icon("save", size=14), t("Opslaan"), on_click=S.save, loading=S.saving,
                              id="access-save"),
                    spacing="2",
                ),
                justify="between", align="center", width="100%", class_name="save-bar",
            ),
        ),
        id="chatbot-users",
        custom_attrs={"data-r42-dirty": rx.cond(S.pending > 0, "true", "false"),
                      "data-r42-dirty-message": t("Je wijzigingen aan de rechten per gebruiker zijn nog niet "
                                                  "opgeslagen. Toch weggaan?")},
    )


def change_row(c: ChangeRow) -> rx.Component:
    return rx.table.row(
        rx.table.cell(rx.text(c.when, size="1"), class_name="card-title"),
        card_cell(t("Door"), rx.text(c.actor, size="1")), card_cell(t("Gebruiker"), rx.text(c.target, size="1")),
        card_cell(t("Wat"), rx.text(c.what, size="1")),
        card_cell(t("Voor → na"), rx.text(c.before, " → ", c.after, size="1")),
    )


def recent_changes() -> rx.Component:
    return section(
        t("Laatste wijzigingen"),
        t("Wie wat veranderde, op deze pagina of met de opdracht r42 chatbot. Elke wijziging staat in het auditlog."),
        rx.cond(
            S.changes.length() > 0,
            rx.box(rx.table.root(
                rx.table.header(rx.table.row(*[rx.table.column_header_cell(h) for h in
                                               (t("Wanneer (UTC)"), t("Door"), t("Gebruiker"), t("Wat"),
                                                t("Voor → na"))])),
                rx.table.body(rx.foreach(S.changes, change_row)),
                size="1", width="100%", id="access-changes", class_name="r42-cards",
            ), overflow_x="auto", width="100%"),
            rx.text(t("Nog geen wijzigingen."), size="2", color_scheme="gray"),
        ),
    )


def body() -> rx.Component:
    return rx.vstack(
        rx.vstack(
            rx.heading(t("R42-instellingen"), size="7"),
            rx.text(t("Bepaal wat R42 mag doen, voor je hele organisatie en per gebruiker."),
                    color_scheme="gray", size="2"),
            spacing="1",
        ),
        rx.cond(S.load_error != "", error_callout(S.load_error)),
        rx.cond(S.loading, skeleton_lines(8, "40px"),
                rx.vstack(master_switch(), question_log_switch(), defaults(), users_table(), recent_changes(),
                          spacing="4", width="100%")),
        spacing="4", width="100%",
    )


def page() -> rx.Component:
    """`/admin/chatbot` (admins only)."""
    return page_frame(rx.box(rx.box(body(), max_width="1100px", margin_x="auto"), padding="28px 24px"), admin=True)
