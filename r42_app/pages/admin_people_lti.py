"""The "Leeromgevingen (LTI)" card of `/admin/people` (issue 48, part 2): the learning environments that open R42
for this organisation, a one-time registration URL for Moodle and Brightspace, and the by-hand form for Canvas."""

import reflex as rx

from r42_app.components.common import card_cell, card_section, copy_box, form_label, skeleton_lines
from r42_app.components.i18n import N_, t, tf, tv
from r42_app.state.lti_settings import LtiSettingsState as L
from r42_app.state.lti_settings import PlatformRow


def platform_row(p: PlatformRow) -> rx.Component:
    return rx.table.row(
        rx.table.cell(rx.text(p.issuer, size="2", weight="medium", overflow_wrap="anywhere"), class_name="card-title"),
        card_cell(t("Client-ID"), rx.text(p.client_id, size="2", overflow_wrap="anywhere")),
        card_cell(t("Deployments"), rx.text(p.deployments, size="2", overflow_wrap="anywhere")),
        card_cell(t("Docenten worden"), rx.text(tv(p.instructors), size="2")),
        card_cell("", rx.button(rx.icon("unlink", size=14), t("Ontkoppelen"), variant="soft", color_scheme="red",
                                size="1", on_click=L.ask_remove(p.key),
                                custom_attrs={"aria-label": tf("Ontkoppel {issuer}", issuer=p.issuer)})),
    )


def platforms() -> rx.Component:
    return rx.cond(
        L.platforms.length() > 0,
        rx.box(rx.table.root(
            rx.table.header(rx.table.row(*[rx.table.column_header_cell(t(h)) for h in
                                           (N_("Leeromgeving (issuer)"), N_("Client-ID"), N_("Deployments"),
                                            N_("Docenten worden"))], rx.table.column_header_cell(""))),
            rx.table.body(rx.foreach(L.platforms, platform_row)),
            size="1", width="100%", id="lti-platforms", class_name="r42-cards",
        ), overflow_x="auto", width="100%"),
        rx.text(t("Nog geen leeromgeving gekoppeld."), size="2", color_scheme="gray", id="lti-none"),
    )


def registration() -> rx.Component:
    """Moodle and Brightspace: one URL, pasted into the LMS."""
    return rx.vstack(
        rx.heading(t("Koppelen met een registratie-URL"), size="3", as_="h3"),
        rx.text(t("Voor Moodle (Sitebeheer › Plugins › Externe tool › Tools beheren › Tool-URL) en Brightspace. "
                  "De leeromgeving en R42 koppelen zich dan zelf."), size="2"),
        rx.cond(
            L.registration_url != "",
            rx.vstack(
                copy_box(L.registration_url, "lti-registration-url", t("Registratie-URL voor de leeromgeving")),
                rx.text(tf("Werkt één keer, tot {until}. Docenten worden beheerder in R42.",
                           until=L.registration_until), size="1", color_scheme="gray"),
                spacing="1", width="100%", role="status",
            ),
            rx.button(rx.icon("link", size=14), t("Registratie-URL maken"), variant="soft", loading=L.making,
                      on_click=L.make_registration_url, id="lti-make-url"),
        ),
        spacing="2", width="100%", align="start",
    )


def lti_field(label, field_id: str, name: str, hint=None, **props) -> rx.Component:
    return rx.vstack(
        form_label(label, field_id, size="2", weight="medium"),
        rx.input(id=field_id, name=name, width="100%", **props),
        rx.text(hint, size="1", color_scheme="gray") if hint is not None else rx.fragment(),
        spacing="1", width="100%",
    )


def by_hand() -> rx.Component:
    """Canvas (and any LMS without dynamic registration): the tool's addresses, then what the LMS shows."""
    return rx.vstack(
        rx.heading(t("Met de hand koppelen"), size="3", as_="h3"),
        rx.text(t("Voor Canvas (Developer Keys › LTI Key): geef de leeromgeving deze adressen, en vul daarna hier in "
                  "wat zij toont."), size="2"),
        rx.foreach(L.tool_urls, lambda pair: rx.vstack(
            rx.text(tv(pair[0]), size="1", weight="medium"),
            rx.code(pair[1], size="2", variant="ghost", overflow_wrap="anywhere"),
            spacing="0", width="100%")),
        rx.cond(
            L.adding,
            rx.form(
                rx.vstack(
                    rx.cond(L.error != "", rx.callout(L.error, icon="circle_alert", color_scheme="red", role="alert",
                                                      width="100%", id="lti-error")),
                    rx.grid(
                        lti_field(t("Issuer"), "lti-issuer", "issuer", type="url", required=True, auto_focus=True,
                                  placeholder="https://canvas.instructure.com"),
                        lti_field(t("Client-ID"), "lti-client-id", "client_id", required=True),
                        lti_field(t("Deployment-ID's"), "lti-deployments", "deployment_ids", required=True,
                                  hint=t("Meer dan één: scheid ze met komma's.")),
                        lti_field(t("Sleutels (JWKS-URL)"), "lti-jwks-url", "jwks_url", type="url", required=True),
                        lti_field(t("Aanmeld-URL (OIDC auth)"), "lti-auth-url", "auth_url", type="url", required=True),
                        lti_field(t("Token-URL (optioneel)"), "lti-token-url", "token_url", type="url"),
                        columns=rx.breakpoints(initial="1", md="2"), spacing="4", width="100%",
                    ),
                    rx.vstack(
                        form_label(t("Docenten en beheerders van de leeromgeving worden"), "lti-role", size="2",
                                   weight="medium"),
                        rx.select.root(
                            rx.select.trigger(id="lti-role"),
                            rx.select.content(rx.select.item(t("beheerder"), value="admin"),
                                              rx.select.item(t("deelnemer"), value="learner")),
                            value=L.instructor_role, on_change=L.set_instructor_role,
                        ),
                        spacing="1",
                    ),
                    rx.hstack(
                        rx.button(t("Annuleren"), type="button", variant="soft", color_scheme="gray",
                                  on_click=L.open_add(False), id="lti-cancel"),
                        rx.button(t("Koppelen"), type="submit", loading=L.saving, id="lti-save"),
                        justify="end", width="100%", spacing="2",
                    ),
                    spacing="4", width="100%",
                ),
                on_submit=L.add, reset_on_submit=False, width="100%",
            ),
            rx.button(rx.icon("plus", size=14), t("Leeromgeving met de hand koppelen"), variant="soft",
                      on_click=L.open_add(True), id="lti-add-open"),
        ),
        spacing="2", width="100%", align="start",
    )


def remove_dialog() -> rx.Component:
    return rx.alert_dialog.root(
        rx.alert_dialog.content(
            rx.alert_dialog.title(t("Leeromgeving ontkoppelen?")),
            rx.alert_dialog.description(t("R42 opent daarna niet meer vanuit deze leeromgeving. Wie er via binnenkwam, "
                                          "houdt zijn account en kan een wachtwoord aanvragen."), size="2"),
            rx.flex(
                rx.alert_dialog.cancel(rx.button(t("Annuleren"), variant="soft", color_scheme="gray")),
                rx.alert_dialog.action(rx.button(t("Ontkoppelen"), color_scheme="red", high_contrast=True,
                                                 on_click=L.remove,
                                                 id="lti-remove-confirm")),
                spacing="3", justify="end", margin_top="16px",
            ),
            max_width="440px",
        ),
        open=L.confirm_remove != "", on_open_change=L.keep,
    )


def lti_section() -> rx.Component:
    """"Leeromgevingen (LTI)": Moodle, Canvas and Brightspace open R42 with their learners signed in."""
    return card_section(
        t("Leeromgevingen (LTI)"),
        t("Open R42 vanuit Moodle, Canvas of Brightspace: deelnemers zijn meteen ingelogd, in de cursus of op "
          "een onderwerp."),
        rx.cond(L.loading, skeleton_lines(3, "32px"),
                rx.vstack(platforms(), rx.separator(size="4"), registration(), rx.separator(size="4"), by_hand(),
                          spacing="4", width="100%")),
        remove_dialog(),
        id="lti-section",
    )
