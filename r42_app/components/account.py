"""The parts of a person's own account that every page has: the "Wachtwoord wijzigen" dialog of the account menu,
and the password field and hint the link pages share (pages/account.py)."""

import reflex as rx

from r42_app.components.common import form_label
from r42_app.components.i18n import t, tf
from r42_app.core.people import PASSWORD_MIN
from r42_app.state.account import AccountState as S


def password_hint() -> rx.Var[str]:
    """The rule for a new password, in the reader's language."""
    return tf("Minstens {count} tekens. Een zin van een paar woorden is sterk en goed te onthouden; je naam of "
              "e-mailadres erin kan niet.", count=PASSWORD_MIN)


def password_field(label, name: str, field_id: str, autocomplete: str = "new-password",
                   described: bool = False) -> rx.Component:
    extra = {"aria-describedby": "password-hint"} if described else {}
    return rx.vstack(
        form_label(label, field_id, size="2", weight="medium"),
        rx.input(id=field_id, name=name, type="password", auto_complete=autocomplete, required=True, size="3",
                 width="100%", custom_attrs=extra),
        spacing="1", width="100%",
    )



def change_password_dialog() -> rx.Component:
    """"Wachtwoord wijzigen" from the account menu: the current password, then the new one twice."""
    return rx.dialog.root(
        rx.dialog.content(
            rx.dialog.title(t("Wachtwoord wijzigen")),
            rx.dialog.description(t("Op je andere apparaten word je daarna afgemeld."), size="2", color_scheme="gray"),
            rx.form(
                rx.vstack(
                    rx.cond(S.change_error != "", rx.callout(S.change_error, icon="circle_alert", color_scheme="red",
                                                             role="alert", width="100%", id="change-error")),
                    password_field(t("Huidig wachtwoord"), "old_password", "old-password", "current-password"),
                    password_field(t("Nieuw wachtwoord"), "new_password", "change-new-password", described=True),
                    rx.text(password_hint(), size="1", color_scheme="gray", id="password-hint"),
                    password_field(t("Nieuw wachtwoord, nog een keer"), "new_password_again", "change-new-again"),
                    rx.hstack(
                        rx.dialog.close(rx.button(t("Annuleren"), type="button", variant="soft", color_scheme="gray")),
                        rx.button(t("Wijzigen"), type="submit", loading=S.saving, id="change-save"),
                        justify="end", spacing="3", width="100%",
                    ),
                    spacing="3", width="100%", margin_top="12px",
                ),
                on_submit=S.change_password, reset_on_submit=False,  # (the dialog's fields go when it closes)
            ),
            max_width="440px",
        ),
        open=S.change_open,
        on_open_change=S.open_change,
    )
