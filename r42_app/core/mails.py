"""The Dutch mails R42 sends (issue 46): an invitation and a password reset, each as plain text with an HTML
alternative. Pure: the people service fills them in, services/adapters/mailer.py sends them."""

from __future__ import annotations

from html import escape

from r42_app.core.people import INVITE_DAYS, RESET_HOURS, ROLE_NAMES


def _html(paragraphs: list[str], link: str, button: str, after: list[str]) -> str:
    body = "".join(f"<p>{escape(p)}</p>" for p in paragraphs)
    tail = "".join(f"<p style=\"color:#555;font-size:13px\">{escape(p)}</p>" for p in after)
    return ("<!doctype html><html lang=\"nl\"><body style=\"font-family:system-ui,sans-serif;line-height:1.5;"
            "max-width:560px\">" + body +
            f"<p><a href=\"{escape(link, quote=True)}\" style=\"display:inline-block;background:#3e63dd;color:#fff;"
            f"padding:10px 18px;border-radius:6px;text-decoration:none\">{escape(button)}</a></p>"
            f"<p style=\"color:#555;font-size:13px\">Werkt de knop niet? Open dan deze link:<br>{escape(link)}</p>"
            + tail + "</body></html>")


def invitation(name: str, tenant: str, inviter: str, role: str, link: str) -> tuple[str, str, str]:
    """(subject, text, html) of an invitation to `tenant` for `name`, as `role`, from `inviter` ("" for an
    operator)."""
    who = f"{inviter} nodigt je uit" if inviter else "Je bent uitgenodigd"
    subject = f"Uitnodiging voor R42 van {tenant}"
    lines = [f"Hallo {name},",
             (f"{who} voor R42, de leeromgeving van {tenant}, als {ROLE_NAMES.get(role, role)}. Met R42 lees je "
              "de leerstof van je organisatie en stel je er vragen over."),
             f"Kies je wachtwoord via de link hieronder. De link werkt {INVITE_DAYS} dagen en één keer."]
    after = ["Verwachtte je deze uitnodiging niet? Dan kun je deze mail negeren; er gebeurt niets."]
    text = "\n\n".join([*lines, link, *after]) + "\n"
    return subject, text, _html(lines, link, "Wachtwoord kiezen", after)


def password_reset(name: str, tenant: str, link: str) -> tuple[str, str, str]:
    """(subject, text, html) of a password-reset link."""
    subject = "Nieuw wachtwoord voor R42"
    lines = [f"Hallo {name},",
             (f"Er is gevraagd om een nieuw wachtwoord voor je account bij R42 van {tenant}. Kies het via de link "
              f"hieronder. De link werkt {RESET_HOURS} uur en één keer.")]
    after = ["Heb je dit niet zelf gevraagd? Dan kun je deze mail negeren: je wachtwoord blijft zoals het is."]
    text = "\n\n".join([*lines, link, *after]) + "\n"
    return subject, text, _html(lines, link, "Nieuw wachtwoord kiezen", after)
