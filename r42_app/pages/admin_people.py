"""`/admin/people` ("Mensen"): the organisation's people, invitations one by one or from a CSV, roles,
deactivation, links to hand over, and removal (issue 46)."""

import reflex as rx

from r42_app.components.common import (
    card_cell,
    card_section,
    copy_box,
    empty_state,
    error_callout,
    form_label,
    label_file_input,
    named_rejections,
    skeleton_lines,
)
from r42_app.components.i18n import N_, t, tf, tv
from r42_app.components.shell import page_frame
from r42_app.components.theme import ACCENT
from r42_app.core.messages import LANGUAGE_NAMES
from r42_app.core.people import MAX_IMPORT_BYTES, MAX_IMPORT_ROWS
from r42_app.pages.admin_people_lti import lti_section
from r42_app.state.language import LanguageState
from r42_app.state.people import CSV_UPLOAD_ID, BadRowView, ChangeView, PersonRow
from r42_app.state.people import PeopleState as S
from r42_app.state.sso_settings import SsoSettingsState as O
from r42_app.state.tenant_language import TenantLanguageState as L

# 5,000 as the reader writes it (the value of a sentence, not a word of the catalogue)
IMPORT_ROWS = rx.cond(LanguageState.language == "nl", f"{MAX_IMPORT_ROWS:,}".replace(",", "."), f"{MAX_IMPORT_ROWS:,}")


def _invalid(field: str) -> dict:
    """An invitation field's attributes: invalid while the refusal is about it, described by that message."""
    wrong = S.invite_bad == field
    return {"aria-invalid": rx.cond(wrong, "true", "false"), "aria-describedby": rx.cond(wrong, "invite-error", None)}


def link_callout() -> rx.Component:
    """The link just made, when it was not mailed: to copy and hand over, once."""
    return rx.cond(
        S.link_url != "",
        rx.callout.root(
            rx.callout.icon(rx.icon("link", size=16)),
            rx.vstack(
                rx.text(S.link_note, " ", rx.text(S.link_for, weight="medium", as_="span"), size="2"),
                copy_box(S.link_url, "people-link", t("De link om door te geven")),
                rx.button(t("Sluiten"), variant="ghost", size="1", on_click=S.close_link, id="people-link-close"),
                spacing="2", width="100%",
            ),
            color_scheme="blue", high_contrast=True, width="100%", id="people-link-callout", role="status",
        ),
    )


def invite_dialog() -> rx.Component:
    return rx.dialog.root(
        rx.dialog.content(
            rx.dialog.title(t("Iemand uitnodigen")),
            rx.dialog.description(rx.cond(S.mail_on, t("Er gaat een mail met een link, 7 dagen geldig, één keer te "
                                                      "gebruiken."),
                                          t("R42 verstuurt geen mail: je krijgt de link om door te geven.")),
                                  size="2", color_scheme="gray"),
            rx.form(
                rx.vstack(
                    rx.cond(S.invite_error != "", rx.callout(S.invite_error, icon="circle_alert", color_scheme="red",
                                                             role="alert", width="100%", id="invite-error")),
                    form_label(t("E-mailadres"), "invite-email", size="2", weight="medium"),
                    rx.input(id="invite-email", name="email", type="email", required=True, auto_focus=True,
                             placeholder=t("naam@organisatie.nl"), width="100%", custom_attrs=_invalid("email")),
                    form_label(t("Naam"), "invite-name", size="2", weight="medium"),
                    rx.input(id="invite-name", name="name", placeholder=t("Voor- en achternaam"), width="100%",
                             max_length=100, custom_attrs=_invalid("name")),
                    form_label(t("Rol"), "invite-role", size="2", weight="medium"),
                    rx.el.select(rx.el.option(t("Deelnemer"), value="learner"),
                                 rx.el.option(t("Beheerder"), value="admin"),
                                 name="role", id="invite-role", default_value="learner", class_name="r42-select"),
                    rx.hstack(
                        rx.dialog.close(rx.button(t("Annuleren"), type="button", variant="soft", color_scheme="gray")),
                        rx.button(t("Uitnodigen"), type="submit", loading=S.working, id="invite-send"),
                        justify="end", spacing="3", width="100%",
                    ),
                    spacing="2", width="100%", margin_top="12px",
                ),
                on_submit=S.invite, reset_on_submit=False,
            ),
            max_width="460px",
        ),
        open=S.invite_open, on_open_change=S.open_invite,
    )


def bad_row(b: BadRowView) -> rx.Component:
    return rx.table.row(
        rx.table.cell(rx.text(b.line, size="1"), class_name="card-title"),
        card_cell(t("E-mailadres"), rx.text(b.email, size="1", class_name="clip-text")),
        card_cell(t("Waarom niet"), rx.text(b.reason, size="1")),
    )


def cancel_import() -> rx.Component:
    """Leaving the import before anything is stored (Escape does the same, but nothing on the screen said so)."""
    return rx.dialog.close(rx.button(t("Annuleren"), type="button", variant="soft", color_scheme="gray",
                                     class_name="import-cancel"))


def import_dialog() -> rx.Component:
    pick = rx.vstack(
        rx.text(t("Een CSV-bestand met per regel e-mailadres, naam en rol (deelnemer of beheerder), gescheiden door ; "
                  "of , (UTF-8; een kopregel mag). Eerst zie je wat er gebeurt; er wordt pas iets opgeslagen als je "
                  "bevestigt."), size="2", color_scheme="gray"),
        label_file_input(rx.upload.root(
            rx.vstack(rx.icon("file_spreadsheet", size=22, color="var(--accent-9)", aria_hidden="true"),
                      rx.text(t("Sleep het bestand hierheen of"), " ",
                              rx.text(t("kies een bestand"), as_="span", color="var(--accent-11)", weight="medium"),
                              size="2"),
                      rx.text(tf("Tot {rows} regels en {size} MB.", rows=IMPORT_ROWS,
                                 size=MAX_IMPORT_BYTES // (1 << 20)), size="1", color_scheme="gray"),
                      align="center", spacing="1"),
            id=CSV_UPLOAD_ID, multiple=False, accept={"text/csv": [".csv", ".txt"]}, max_files=1,
            max_size=MAX_IMPORT_BYTES,
            on_drop=[S.csv_starting, S.upload_csv(rx.upload_files(upload_id=CSV_UPLOAD_ID))],
            on_drop_rejected=lambda rejected: S.files_rejected(named_rejections(rejected)),
            border="2px dashed var(--gray-6)", border_radius="10px", padding="20px", width="100%", cursor="pointer",
            class_name="csv-drop",
            aria_label=t("Lijst met mensen kiezen: sleep een CSV-bestand hierheen of druk op Enter om er een te "
                         "kiezen"),
        ), t("Een CSV-bestand met mensen kiezen")),
        rx.cond(S.working, rx.hstack(rx.spinner(size="2"), rx.text(t("Bestand controleren…"), size="2"),
                                     align="center", role="status")),
        rx.hstack(cancel_import(), justify="end", width="100%"),
        spacing="3", width="100%",
    )
    preview = rx.vstack(
        rx.text(tf("Regels: {rows} · nieuw: {new} · al lid: {unchanged} · met een fout: {bad}", rows=S.import_rows,
                   new=S.import_new, unchanged=S.import_unchanged, bad=S.import_bad.length()),
                size="2", weight="medium", id="import-summary"),
        rx.cond(
            S.import_bad.length() > 0,
            rx.vstack(
                error_callout(t("Los deze regels op en kies het bestand opnieuw; er is niets opgeslagen.")),
                rx.box(rx.table.root(
                    rx.table.header(rx.table.row(rx.table.column_header_cell(t("Regel")),
                                                 rx.table.column_header_cell(t("E-mailadres")),
                                                 rx.table.column_header_cell(t("Waarom niet")))),
                    rx.table.body(rx.foreach(S.import_bad, bad_row)),
                    size="1", width="100%", id="import-bad", class_name="r42-cards",
                ), max_height="300px", overflow_y="auto", width="100%"),
                rx.hstack(cancel_import(),
                          rx.button(t("Ander bestand kiezen"), variant="soft", on_click=S.open_import(True),
                                    id="import-again"),
                          justify="end", spacing="3", width="100%"),
                spacing="2", width="100%",
            ),
            rx.hstack(
                cancel_import(),
                rx.button(t("Ander bestand"), variant="soft", color_scheme="gray", on_click=S.open_import(True)),
                rx.button(rx.cond(S.import_new > 0, tf("{count} mensen uitnodigen", count=S.import_new),
                                  t("Niets te doen")),
                          on_click=S.confirm_import, loading=S.working, disabled=S.import_new == 0,
                          id="import-confirm"),
                justify="end", spacing="3", width="100%",
            ),
        ),
        spacing="3", width="100%",
    )
    done = rx.vstack(
        rx.callout(S.import_done_text, icon="circle_check", color_scheme="green", role="status", width="100%",
                   id="import-done"),
        rx.cond(S.import_links != "", rx.vstack(
            copy_box(S.import_links, "import-links", t("De links om door te geven"), rows=8),
            rx.text(t("Kopieer ze voordat je dit sluit: R42 toont ze niet nog een keer. Een nieuwe link voor één "
                      "persoon maak je met ‘Nieuwe uitnodiging’ in het menu van die persoon."),
                    size="1", color_scheme="gray", id="import-links-note"),
            spacing="1", width="100%")),
        rx.hstack(rx.dialog.close(rx.button(t("Klaar"), id="import-close")), justify="end", width="100%"),
        spacing="3", width="100%",
    )
    return rx.dialog.root(
        rx.dialog.content(
            rx.dialog.title(t("Mensen importeren")),
            rx.cond(S.import_error != "", error_callout(S.import_error)),
            rx.match(S.import_stage, ("preview", preview), ("done", done), pick),
            max_width="640px",
        ),
        open=S.import_open, on_open_change=S.open_import,
    )


DEACTIVATE_TEXT = N_("Alle sessies van deze persoon eindigen meteen, op elk apparaat, en aanmelden kan niet meer. Er "
                     "wordt niets verwijderd; je kunt deze persoon later weer activeren.")


# Each confirmation on this page: its title, what it means and its button, by `PeopleState.confirm_kind`
CONFIRMS = {
    "deactivate": (N_("{name} deactiveren?"), DEACTIVATE_TEXT, N_("Deactiveren")),
    "withdraw": (N_("Uitnodiging van {name} intrekken?"), N_("De link in de uitnodiging werkt dan niet meer."),
                 N_("Intrekken")),
    "admin": (N_("{name} beheerder maken?"),
              N_("Een beheerder ziet en wijzigt alles van deze organisatie: onderwerpen, "
                 "documenten, mensen, de instellingen van R42 en de credits."),
              N_("Beheerder maken")),
    "learner": (N_("{name} deelnemer maken?"),
                N_("Die kan dan niets meer beheren; wat die als beheerder deed, blijft staan."),
                N_("Deelnemer maken")),
    "learner_me": (N_("Zelf deelnemer worden?"), N_("Je kunt daarna zelf niets meer beheren. Alleen een andere "
                                                    "beheerder kan je weer beheerder maken."), N_("Deelnemer worden")),
    "forget": (N_("{name} verwijderen?"),
               N_("Weg gaan: het account, de vragen in Kennishiaten en de beoordelingen. Zonder "
                  "naam blijven: voorstellen, kosten en het auditlog (als 'verwijderd-…'). Dit "
                  "kan niet ongedaan worden gemaakt."), N_("Verwijderen")),
}


def _confirm_part(part: int) -> rx.Component:
    """The title (0, with the person's address in it: "Deactivate daan@…?"), the text (1) or the button (2) of the
    open confirmation."""
    def say(words: tuple[str, str, str]) -> rx.Var[str]:
        return tf(words[0], name=S.confirm_name) if part == 0 else t(words[part])

    return rx.match(S.confirm_kind, *[(kind, say(words)) for kind, words in CONFIRMS.items() if kind != "forget"],
                    say(CONFIRMS["forget"]))


def confirm_dialog() -> rx.Component:
    role_change = (S.confirm_kind == "admin") | (S.confirm_kind == "learner")  # not destructive: not red
    return rx.alert_dialog.root(
        rx.alert_dialog.content(
            rx.alert_dialog.title(_confirm_part(0)),
            rx.alert_dialog.description(_confirm_part(1), size="2"),
            rx.hstack(
                rx.alert_dialog.cancel(rx.button(t("Annuleren"), variant="soft", color_scheme="gray")),
                rx.alert_dialog.action(rx.button(_confirm_part(2), color_scheme=rx.cond(role_change, ACCENT, "red"),
                                                 high_contrast=~role_change,  # white on red-9 is under 4.5:1
                                                 on_click=S.confirm, id="people-confirm")),
                justify="end", spacing="3", margin_top="16px",
            ),
            max_width="460px",
        ),
        open=S.confirm_kind != "", on_open_change=S.cancel_confirm,
    )


def actions(row: PersonRow) -> rx.Component:
    """What can be done to one person, in a menu (a person's own row offers nothing that would lock them out)."""
    return rx.menu.root(
        rx.menu.trigger(rx.button(rx.icon("ellipsis", size=16), variant="ghost", size="1",
                                  aria_label=tf("Acties voor {email}", email=row.email), class_name="person-actions")),
        rx.menu.content(
            rx.cond(row.state == "invited", rx.fragment(
                rx.menu.item(t("Nieuwe uitnodiging"), on_click=S.resend(row.id), class_name="person-resend"),
                rx.menu.item(t("Uitnodiging intrekken"), color="red", on_click=S.ask("withdraw", row.id, row.email),
                             class_name="person-withdraw"),
            )),
            rx.cond(row.state == "active", rx.fragment(
                rx.menu.item(t("Link voor nieuw wachtwoord"), on_click=S.reset_link(row.id), class_name="person-reset"),
                rx.cond(~row.is_me, rx.menu.item(t("Deactiveren"), color="red",
                                                 on_click=S.ask("deactivate", row.id, row.email),
                                                 class_name="person-deactivate")),
            )),
            rx.cond(row.state == "deactivated", rx.menu.item(t("Heractiveren"), on_click=S.activate(row.id),
                                                             class_name="person-activate")),
            rx.cond(~row.is_me & (row.state != "invited"), rx.fragment(
                rx.menu.separator(),
                rx.menu.item(t("Verwijderen…"), color="red", on_click=S.ask("forget", row.id, row.email),
                             class_name="person-forget"))),
        ),
    )


def role_select(row: PersonRow) -> rx.Component:
    return rx.select.root(
        rx.select.trigger(variant="ghost", aria_label=tf("Rol van {email}", email=row.email), class_name="person-role"),
        rx.select.content(rx.select.item(t("Deelnemer"), value="learner"),
                          rx.select.item(t("Beheerder"), value="admin")),
        value=row.role, on_change=lambda value: S.ask_role(row.id, value), size="1",
    )


def person_row(row: PersonRow) -> rx.Component:
    return rx.table.row(
        rx.table.cell(rx.vstack(rx.text(row.name, size="2", weight="medium"),
                                rx.text(row.email, size="1", color_scheme="gray", class_name="clip-text"),
                                spacing="0"), class_name="card-title"),
        card_cell(t("Rol"), role_select(row)),
        card_cell(t("Status"), rx.badge(tv(row.state_label), color_scheme=row.state_color, variant="soft",
                                     high_contrast=True)),
        card_cell(t("Laatst aangemeld (UTC)"), rx.vstack(
            rx.text(tv(row.last_sign_in), size="1"),
            rx.cond(row.via != "", rx.text(tv(row.via), size="1", color_scheme="gray", class_name="person-via")),
            spacing="0")),
        card_cell("", actions(row)),
        class_name="person-row", data_email=row.email, data_person=row.id,
    )


def filters() -> rx.Component:
    return rx.hstack(
        rx.input(rx.input.slot(rx.icon("search", size=14)), placeholder=t("Zoek op naam of e-mailadres"),
                 default_value=S.query, on_change=S.search.debounce(300), id="people-search", width="280px",
                 max_width="100%", custom_attrs={"aria-label": t("Zoek op naam of e-mailadres")}),
        rx.select.root(
            rx.select.trigger(aria_label=t("Filter op rol"), id="people-role-filter"),
            rx.select.content(rx.select.item(t("Alle rollen"), value="all"),
                              rx.select.item(t("Deelnemers"), value="learner"),
                              rx.select.item(t("Beheerders"), value="admin")),
            value=S.role_filter, on_change=S.filter_role, size="2",
        ),
        rx.select.root(
            rx.select.trigger(aria_label=t("Filter op status"), id="people-state-filter"),
            rx.select.content(rx.select.item(t("Iedereen"), value="all"),
                              rx.select.item(t("Uitgenodigd"), value="invited"),
                              rx.select.item(t("Actief"), value="active"),
                              rx.select.item(t("Gedeactiveerd"), value="deactivated")),
            value=S.state_filter, on_change=S.filter_state, size="2",
        ),
        rx.text(tf("{count} mensen", count=S.total), size="1", color_scheme="gray", id="people-total"),
        spacing="3", align="center", wrap="wrap",
    )


def pager() -> rx.Component:
    return rx.cond(S.pages > 1, rx.hstack(
        rx.button(rx.icon("chevron_left", size=14), t("Vorige"), variant="soft", size="1", disabled=S.page <= 1,
                  on_click=S.go_page(S.page - 1), id="people-prev"),
        rx.text(tf("Pagina {page} van {pages}", page=S.page, pages=S.pages), size="1", id="people-page"),
        rx.button(t("Volgende"), rx.icon("chevron_right", size=14), variant="soft", size="1",
                  disabled=S.page >= S.pages, on_click=S.go_page(S.page + 1), id="people-next"),
        spacing="3", align="center", justify="center", width="100%",
    ))


def people_table() -> rx.Component:
    return card_section(
        t("Mensen van je organisatie"),
        t("Een uitgenodigd persoon kiest zelf een wachtwoord via de link. Gedeactiveerd: alle sessies eindigen en "
          "aanmelden kan niet, maar er wordt niets verwijderd."),
        filters(),
        rx.cond(
            S.rows.length() > 0,
            rx.box(rx.table.root(
                rx.table.header(rx.table.row(*[rx.table.column_header_cell(t(h)) for h in (
                    N_("Persoon"), N_("Rol"), N_("Status"), N_("Laatst aangemeld (UTC)"))],
                    rx.table.column_header_cell(rx.el.span(t("Acties"), class_name="sr-only")))),
                rx.table.body(rx.foreach(S.rows, person_row)),
                size="1", width="100%", id="people-table", class_name="r42-cards",
            ), overflow_x="auto", width="100%"),
            rx.cond((S.query != "") | (S.role_filter != "all") | (S.state_filter != "all"),
                    rx.text(t("Niemand past bij deze zoekopdracht."), size="2", color_scheme="gray", id="people-none"),
                    empty_state("users", t("Nog niemand"),
                                t("Nodig mensen uit, één voor één of met een CSV-bestand.")))),
        pager(),
        id="people-section",
    )


def change_row(c: ChangeView) -> rx.Component:
    return rx.table.row(
        rx.table.cell(rx.text(c.when, size="1"), class_name="card-title"),
        card_cell(t("Door"), rx.text(c.actor, size="1")), card_cell(t("Wie"), rx.text(c.target, size="1")),
        card_cell(t("Wat"), rx.text(tv(c.what), size="1")),
        card_cell(t("Van → naar"), rx.text(rx.cond((c.before != "") | (c.after != ""),
                                                   rx.fragment(tv(c.before), " → ", tv(c.after))), size="1")),
    )


def recent_changes() -> rx.Component:
    return card_section(
        t("Laatste wijzigingen"),
        t("Wie wat veranderde, op deze pagina, via de API of met r42 user. Alles staat in het auditlog."),
        rx.cond(S.changes.length() > 0,
                rx.box(rx.table.root(
                    rx.table.header(rx.table.row(*[rx.table.column_header_cell(t(h)) for h in
                                                   (N_("Wanneer (UTC)"), N_("Door"), N_("Wie"), N_("Wat"),
                                                    N_("Van → naar"))])),
                    rx.table.body(rx.foreach(S.changes, change_row)),
                    size="1", width="100%", id="people-changes", class_name="r42-cards",
                ), overflow_x="auto", width="100%"),
                rx.text(t("Nog geen wijzigingen."), size="2", color_scheme="gray")),
    )


def sso_field(label, field_id: str, name: str, hint=None, **props) -> rx.Component:
    return rx.vstack(
        form_label(label, field_id, size="2", weight="medium"),
        rx.input(id=field_id, name=name, width="100%", **props),
        rx.text(hint, size="1", color_scheme="gray") if hint is not None else rx.fragment(),
        spacing="1", width="100%",
    )


def redirect_box() -> rx.Component:
    """What the admin registers at the provider first (outside the form: it is not sent)."""
    return rx.vstack(
        rx.text(t("Geef de inlogdienst dit adres als redirect-URI:"), size="2"),
        copy_box(O.redirect_uri, "sso-redirect", t("Redirect-URI voor de inlogdienst")),
        spacing="1", width="100%",
    )


def sso_form() -> rx.Component:
    return rx.form(
        rx.vstack(
            rx.cond(O.error != "", rx.callout(O.error, icon="circle_alert", color_scheme="red", role="alert",
                                              width="100%", id="sso-error")),
            rx.grid(
                sso_field(t("Adres van de inlogdienst (issuer)"), "sso-issuer", "issuer",
                          placeholder=t("https://login.voorbeeld.nl/realms/acme"), default_value=O.issuer,
                          type="url", required=True),
                sso_field(t("Client-ID"), "sso-client-id", "client_id", default_value=O.client_id, required=True),
                sso_field(t("Clientgeheim"), "sso-secret", "client_secret", type="password", auto_complete="off",
                          placeholder=rx.cond(O.connected, t("Opgeslagen; laat leeg om het te houden"), ""),
                          hint=t("Wordt nooit meer getoond.")),
                sso_field(t("E-maildomeinen"), "sso-domains", "domains", placeholder=t("voorbeeld.nl, voorbeeld.be"),
                          default_value=O.domains, required=True,
                          hint=t("Wie met een adres op deze domeinen aanmeldt, gaat naar de inlogdienst.")),
                sso_field(t("Beheerdersgroep (optioneel)"), "sso-group", "admin_group", default_value=O.admin_group,
                          hint=t("Leden van deze groep (claim groups) worden beheerder.")),
                columns=rx.breakpoints(initial="1", md="2"), spacing="4", width="100%",
            ),
            rx.hstack(
                rx.switch(checked=O.passwords, on_change=O.set_passwords, id="sso-passwords", name="passwords"),
                form_label(t("Wachtwoorden blijven werken voor deze domeinen"), "sso-passwords", size="2"),
                spacing="2", align="center",
            ),
            rx.hstack(
                rx.cond(O.connected, rx.button(t("Annuleren"), type="button", variant="soft", color_scheme="gray",
                                               on_click=O.edit(False), id="sso-cancel")),
                rx.button(t("Opslaan"), type="submit", loading=O.saving, id="sso-save"),
                justify="end", width="100%", spacing="2",
            ),
            spacing="4", width="100%",
        ),
        on_submit=O.save, reset_on_submit=False, width="100%",
    )


def sso_summary() -> rx.Component:
    return rx.vstack(
        rx.data_list.root(
            *[rx.data_list.item(rx.data_list.label(t(label), min_width="140px"), rx.data_list.value(value))
              for label, value in (
                  (N_("Inlogdienst"), rx.text(O.issuer, overflow_wrap="anywhere", id="sso-shown-issuer")),
                  (N_("Client-ID"), rx.text(O.client_id, overflow_wrap="anywhere")),
                  (N_("E-maildomeinen"), rx.text(O.domains, id="sso-shown-domains")),
                  (N_("Beheerdersgroep"), rx.text(rx.cond(O.admin_group != "", O.admin_group, t("Geen")))),
                  (N_("Wachtwoorden"), rx.text(rx.cond(O.passwords, t("Werken ook"), t("Uit voor deze domeinen")))),
                  (N_("Redirect-URI"), rx.text(O.redirect_uri, overflow_wrap="anywhere")))],
            orientation=rx.breakpoints(initial="vertical", sm="horizontal"), size="2", width="100%",
        ),
        rx.hstack(
            rx.button(rx.icon("pencil", size=14), t("Wijzigen"), variant="soft", on_click=O.edit(True), id="sso-edit"),
            rx.button(t("Uitzetten"), variant="soft", color_scheme="red", on_click=O.ask_off(True), id="sso-off"),
            spacing="2", justify="end", width="100%",
        ),
        spacing="3", width="100%",
    )


def sso_off_dialog() -> rx.Component:
    return rx.alert_dialog.root(
        rx.alert_dialog.content(
            rx.alert_dialog.title(t("Aanmelden via je organisatie uitzetten?")),
            rx.alert_dialog.description(t("Iedereen meldt zich daarna weer aan met een wachtwoord; wie er nog geen "
                                          "heeft, vraagt een nieuw wachtwoord aan."), size="2"),
            rx.flex(
                rx.alert_dialog.cancel(rx.button(t("Annuleren"), variant="soft", color_scheme="gray")),
                rx.alert_dialog.action(rx.button(t("Uitzetten"), color_scheme="red", high_contrast=True,
                                                 on_click=O.switch_off,
                                                 id="sso-off-confirm")),
                spacing="3", justify="end", margin_top="16px",
            ),
            max_width="440px",
        ),
        open=O.confirm_off, on_open_change=O.ask_off,
    )


def sso_section() -> rx.Component:
    """"Inloggen met je organisatie": the tenant's identity provider (OIDC)."""
    return card_section(
        t("Inloggen met je organisatie"),
        rx.cond(O.connected, t("Mensen van je organisatie melden zich aan via jullie eigen inlogdienst."),
                t("Laat mensen aanmelden via jullie eigen inlogdienst (OpenID Connect: Entra ID, Google, Okta, "
                  "Keycloak, SURFconext).")),
        rx.cond(O.loading, skeleton_lines(3, "32px"),
                rx.cond(O.connected & ~O.editing, sso_summary(), rx.vstack(redirect_box(), sso_form(), spacing="4",
                                                                           width="100%"))),
        sso_off_dialog(),
        id="sso-section",
    )


def language_section() -> rx.Component:
    """"Taal van je organisatie": what R42 speaks to people who chose no language of their own."""
    return card_section(
        t("Taal van je organisatie"),
        t("R42 spreekt deze taal met iedereen die zelf geen taal koos; ieder kan in het menu onder zijn naam een "
          "eigen taal kiezen."),
        rx.cond(L.loading, skeleton_lines(1, "32px"),
                rx.radio_group.root(
                    *[rx.radio_group.item(name, value=code, id=f"tenant-language-{code}", custom_attrs={"lang": code})
                      for code, name in LANGUAGE_NAMES.items()],  # each language's name in itself
                    value=L.language, on_change=L.choose, disabled=L.saving, direction="row", spacing="5",
                    aria_label=t("Taal van je organisatie"), id="tenant-language",
                )),
        id="language-section",
    )


def body() -> rx.Component:
    return rx.vstack(
        rx.hstack(
            rx.vstack(rx.heading(t("Mensen"), size="7"),
                      rx.text(t("Wie R42 gebruikt in je organisatie, en als wat."), color_scheme="gray", size="2"),
                      spacing="1"),
            rx.hstack(
                rx.button(rx.icon("upload", size=14), t("Importeren"), variant="soft", on_click=S.open_import(True),
                          id="people-import-open"),
                rx.button(rx.icon("user_plus", size=14), t("Uitnodigen"), on_click=S.open_invite(True),
                          id="people-invite-open"),
                spacing="2",
            ),
            justify="between", align="end", width="100%", wrap="wrap", gap="3",
        ),
        rx.cond(S.load_error != "", error_callout(S.load_error)),
        link_callout(),
        rx.cond(S.loading, skeleton_lines(8, "40px"),
                rx.vstack(people_table(), recent_changes(), language_section(), sso_section(), lti_section(),
                          spacing="4",
                          width="100%")),
        invite_dialog(), import_dialog(), confirm_dialog(),
        spacing="4", width="100%",
    )


def page() -> rx.Component:
    """`/admin/people` (admins only)."""
    return page_frame(rx.box(rx.box(body(), max_width="1100px", margin_x="auto"), padding="28px 24px"), admin=True)
