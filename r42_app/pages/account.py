"""A person's own account (issue 46): the pages a link opens (`/welkom`: accept an invitation; `/nieuw-wachtwoord`:
a password reset), "Wachtwoord vergeten?" (`/wachtwoord-vergeten`) and the "Wachtwoord wijzigen" dialog of the
account menu (components/account.py). The link pages work signed out: that is who opens them."""

import reflex as rx

from r42_app.components.account import password_field, password_hint
from r42_app.components.common import error_callout, form_label, link_button
from r42_app.components.i18n import language_marker, t, tf, tm
from r42_app.state.account import AccountState as S


def _logo() -> rx.Component:
    return rx.center(rx.text("R42", weight="bold", size="5", color="white"), background="var(--accent-9)",
                     border_radius="12px", width="56px", height="56px")


def _card(*children: rx.Component, card_id: str, **events) -> rx.Component:
    """A card in the middle of the page, as the sign-in card (`events`: the card's on_mount/on_unmount), in a page
    whose <html lang> follows the reader's language."""
    return rx.fragment(language_marker(), rx.el.main(rx.center(
        rx.card(rx.vstack(_logo(), *children, spacing="4", align="center", width="100%"),
                size="4", width="100%", max_width="420px", id=card_id, **events),
        min_height="100vh", padding="16px"), id="main"))


def link_form() -> rx.Component:
    return rx.form(
        rx.vstack(
            rx.cond(S.form_error != "", rx.callout(S.form_error, icon="circle_alert", color_scheme="red",
                                                   role="alert", width="100%", id="link-form-error")),
            rx.vstack(rx.text(t("E-mailadres"), size="2", weight="medium"),
                      rx.text(S.link_email, size="2", id="link-email"), spacing="1", width="100%"),
            password_field(t("Kies een wachtwoord"), "password", "new-password", described=True),
            rx.text(password_hint(), size="1", color_scheme="gray", id="password-hint"),
            password_field(t("Nog een keer"), "password_again", "new-password-again"),
            rx.button(rx.cond(S.link_kind == "invite", t("Opslaan en beginnen"), t("Wachtwoord opslaan")),
                      type="submit", size="3", width="100%", loading=S.saving, id="link-save"),
            spacing="3", width="100%",
        ),
        on_submit=S.redeem, reset_on_submit=False, width="100%",
    )


def link_page() -> rx.Component:
    """`/welkom` and `/nieuw-wachtwoord`: what the link is for, then the password form; or why it no longer works."""
    return _card(
        rx.cond(
            S.link_checking,
            rx.vstack(rx.spinner(size="3"), rx.text(t("Link controleren…"), size="2", color_scheme="gray"),
                      align="center", spacing="2", aria_busy="true"),
            rx.cond(
                S.link_error != "",
                rx.vstack(
                    rx.heading(t("Deze link werkt niet"), size="6"),
                    error_callout(S.link_error),
                    link_button(t("Naar aanmelden"), href="/", variant="soft", id="link-to-sign-in"),
                    spacing="3", align="center", width="100%",
                ),
                rx.vstack(
                    rx.heading(rx.cond(S.link_kind == "invite", t("Welkom bij R42"), t("Nieuw wachtwoord")), size="6"),
                    rx.text(rx.cond(S.link_kind == "invite",
                                    tf("Hallo {name}, je bent uitgenodigd voor de leeromgeving van {organisation}. "
                                       "Kies een wachtwoord om te beginnen.", name=S.link_name,
                                       organisation=S.link_tenant),
                                    tf("Kies een nieuw wachtwoord voor je account bij {organisation}.",
                                       organisation=S.link_tenant)),
                            size="2", color_scheme="gray", text_align="center"),
                    # an organisation that signs its people in itself, with passwords off: no password to choose
                    rx.cond(S.link_sso_href != "",
                            rx.vstack(
                                rx.callout(tm("auth.sso_only"), icon="info", color_scheme="blue", width="100%",
                                           id="link-sso"),
                                # a full page load (the sign-in starts on the server), not the app's own routing
                                rx.button(tf("Inloggen met {name}", name=S.link_tenant), on_click=S.start_sso, size="3",
                                          id="link-sso-start"),
                                spacing="3", align="center", width="100%"),
                            link_form()),
                    spacing="3", align="center", width="100%",
                ),
            ),
        ),
        card_id="link-card",
    )


def forgot_page() -> rx.Component:
    """`/wachtwoord-vergeten`: an e-mail address in, the same answer out whether it is known or not."""
    return _card(
        rx.heading(t("Wachtwoord vergeten"), size="6"),
        rx.cond(
            S.forgot_sent,
            rx.vstack(
                rx.callout(tm("people.reset_sent"), icon="mail", color_scheme="green", role="status",
                           width="100%", id="forgot-sent"),
                link_button(t("Terug naar aanmelden"), href="/", variant="soft"),
                spacing="3", align="center", width="100%",
            ),
            # the form once the page has loaded: an answer that came before the load's reset would be wiped
            rx.cond(~S.forgot_ready,
                    rx.center(rx.spinner(size="3"), padding="24px", role="status", aria_label=t("Laden")), rx.form(
                rx.vstack(
                    # without mail the page says so before an address is typed (an organisation's own sign-in
                    # is still found by the address: the form stays); once an answer is there it says it alone
                    # (the same words twice, blue above red, before)
                    rx.cond(S.forgot_mail_on,
                            rx.text(t("Vul je e-mailadres in. Je krijgt een mail met een link om een nieuw "
                                      "wachtwoord te kiezen."), size="2", color_scheme="gray"),
                            rx.cond(~S.forgot_no_mail_said,
                                    rx.callout(tm("people.reset_needs_mail"), icon="info", color_scheme="blue",
                                               width="100%", id="forgot-no-mail"))),
                    rx.cond(S.forgot_error != "", rx.callout(S.forgot_error, icon="circle_alert", color_scheme="red",
                                                             role="alert", width="100%", id="forgot-error")),
                    form_label(t("E-mailadres"), "forgot-email", size="2", weight="medium"),
                    rx.input(id="forgot-email", name="email", type="email", auto_complete="username", required=True,
                             auto_focus=True, size="3", width="100%", placeholder=t("naam@organisatie.nl")),
                    rx.button(t("Stuur de link"), type="submit", size="3", width="100%", id="forgot-send"),
                    rx.link(t("Terug naar aanmelden"), href="/", size="2"),
                    spacing="3", width="100%",
                ),
                on_submit=S.request_reset, reset_on_submit=False, width="100%",
            )),
        ),
        card_id="forgot-card",
        on_unmount=S.leave_forgot,
    )
