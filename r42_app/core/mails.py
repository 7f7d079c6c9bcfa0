"""The mails R42 sends (issue 46): an invitation and a password reset, each as plain text with an HTML alternative,
in the recipient's language (issue 52: their own choice, else the language of the moment: their organisation's
admin who invites them). Pure: the people service fills them in, services/adapters/mailer.py sends them."""

from __future__ import annotations

from html import escape

from r42_app.core.messages import current_language, language_of, translate
from r42_app.core.people import INVITE_DAYS, RESET_HOURS


def _html(language: str, paragraphs: list[str], link: str, button: str, after: list[str]) -> str:
    body = "".join(f"<p>{escape(p)}</p>" for p in paragraphs)
    tail = "".join(f"<p style=\"color:#555;font-size:13px\">{escape(p)}</p>" for p in after)
    return (f"<!doctype html><html lang=\"{language}\"><body style=\"font-family:system-ui,sans-serif;"
            "line-height:1.5;max-width:560px\">" + body +
            f"<p><a href=\"{escape(link, quote=True)}\" style=\"display:inline-block;background:#3e63dd;color:#fff;"
            f"padding:10px 18px;border-radius:6px;text-decoration:none\">{escape(button)}</a></p>"
            f"<p style=\"color:#555;font-size:13px\">{escape(translate(language, 'mail.no_button'))}<br>"
            f"{escape(link)}</p>" + tail + "</body></html>")


def invitation(name: str, tenant: str, inviter: str, role: str, link: str,
               language: str | None = None) -> tuple[str, str, str]:
    """(subject, text, html) of an invitation to `tenant` for `name`, as `role`, from `inviter` ("" for an
    operator), in `language` (else the language of the moment)."""
    lang = language_of(language) or current_language()
    role_name = translate(lang, "people.role_admin" if role == "admin" else "people.role_learner")
    who = translate(lang, "mail.invite_from", inviter=inviter) if inviter else translate(lang, "mail.invited")
    lines = [translate(lang, "mail.hello", name=name),
             translate(lang, "mail.invite_body", who=who, tenant=tenant, role=role_name),
             translate(lang, "mail.invite_link", days=INVITE_DAYS)]
    after = [translate(lang, "mail.invite_unexpected")]
    text = "\n\n".join([*lines, link, *after]) + "\n"
    return (translate(lang, "mail.invite_subject", tenant=tenant), text,
            _html(lang, lines, link, translate(lang, "mail.invite_button"), after))


def password_reset(name: str, tenant: str, link: str, language: str | None = None) -> tuple[str, str, str]:
    """(subject, text, html) of a password-reset link, in `language` (else the language of the moment)."""
    lang = language_of(language) or current_language()
    lines = [translate(lang, "mail.hello", name=name), translate(lang, "mail.reset_body", tenant=tenant,
                                                                  hours=RESET_HOURS)]
    after = [translate(lang, "mail.reset_unexpected")]
    text = "\n\n".join([*lines, link, *after]) + "\n"
    return (translate(lang, "mail.reset_subject"), text,
            _html(lang, lines, link, translate(lang, "mail.reset_button"), after))
