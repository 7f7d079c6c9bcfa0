"""Mail through SMTP (issue 46): invitations and password resets. Off without R42_SMTP_HOST, and then nothing is
lost: the admin hands the link over, the CLI prints it, `r42 doctor` says mail is off.

One connection for a batch of mails (a CSV import of 5,000 people queues 5,000 invitations); each mail's outcome is
returned, never swallowed: the people service stores a failure on the invitation for the admin to see.
"""

from __future__ import annotations

import smtplib
import ssl
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formataddr, make_msgid

from r42_app.settings import Settings

DEFAULT_PORTS = {"starttls": 587, "tls": 465, "none": 25}


@dataclass(frozen=True)
class Mail:
    to: str
    subject: str
    text: str  # the plain-text part, always
    html: str = ""  # an HTML alternative, optional


class Mailer:
    """SMTP with the settings' host, port, sign-in and TLS mode; `on` is False without a host."""

    def __init__(self, host: str = "", port: int = 0, user: str = "", password: str = "", tls: str = "starttls",
                 sender: str = "", timeout: float = 20.0):
        self.host, self.user, self.password, self.tls, self.timeout = host, user, password, tls, timeout
        self.port = port or DEFAULT_PORTS.get(tls, 25)
        self.sender = sender or formataddr(("R42", f"r42@{host or 'localhost'}"))

    @classmethod
    def from_settings(cls, cfg: Settings) -> Mailer:
        return cls(cfg.smtp_host, cfg.smtp_port, cfg.smtp_user, cfg.smtp_password, cfg.smtp_tls, cfg.mail_from)

    @property
    def on(self) -> bool:
        return bool(self.host)

    def describe(self) -> str:
        """Where mail goes, without secrets (for `r42 doctor` and the logs)."""
        if not self.on:
            return "off (R42_SMTP_HOST is not set): links are shown to the admin and printed by the CLI"
        who = f" as {self.user}" if self.user else ""
        return f"{self.host}:{self.port} ({self.tls}){who}, from {self.sender}"

    def probe(self) -> str:
        """Connect, say hello (and sign in), and leave: "" when the server answers so, else why not."""
        try:
            _close(self._connect())
        except (smtplib.SMTPException, OSError, ssl.SSLError) as exc:
            return f"{type(exc).__name__}: {_reason(exc)}"
        return ""

    def message(self, mail: Mail) -> EmailMessage:
        msg = EmailMessage()
        msg["From"] = self.sender
        msg["To"] = mail.to
        msg["Subject"] = mail.subject
        msg["Message-ID"] = make_msgid(domain=self.host or "localhost")
        msg["Auto-Submitted"] = "auto-generated"
        msg.set_content(mail.text, charset="utf-8")
        if mail.html:
            msg.add_alternative(mail.html, subtype="html", charset="utf-8")
        return msg

    def _connect(self) -> smtplib.SMTP:
        context = ssl.create_default_context()
        if self.tls == "tls":
            smtp: smtplib.SMTP = smtplib.SMTP_SSL(self.host, self.port, timeout=self.timeout, context=context)
        else:
            smtp = smtplib.SMTP(self.host, self.port, timeout=self.timeout)
            if self.tls == "starttls":
                smtp.starttls(context=context)
        if self.user:
            smtp.login(self.user, self.password)
        return smtp

    def send(self, mails: Sequence[Mail], progress: Callable[[int], None] | None = None) -> list[str]:
        """Send every mail over one connection (reconnecting once if the server drops it); returns, per mail, ""
        when the server took it or why not. Nothing is raised for a mail the server refuses."""
        if not self.on:
            return ["mail is off (R42_SMTP_HOST is not set)"] * len(mails)
        outcomes: list[str] = []
        smtp: smtplib.SMTP | None = None
        try:
            for n, mail in enumerate(mails, start=1):
                for attempt in (1, 2):
                    if smtp is None:
                        try:
                            smtp = self._connect()
                        except (smtplib.SMTPException, OSError, ssl.SSLError) as exc:  # (timeouts are OSErrors)
                            # a server that cannot be reached now fails every mail left, at once: not one
                            # connection timeout per mail (5,000 of them for a CSV import)
                            why = f"the SMTP server cannot be reached: {type(exc).__name__}: {_reason(exc)}"
                            outcomes += [why] * (len(mails) - len(outcomes))
                            return outcomes
                    try:
                        refused = smtp.send_message(self.message(mail))
                        outcomes.append(f"refused: {refused}" if refused else "")
                        break
                    except (smtplib.SMTPServerDisconnected, ConnectionError) as exc:
                        smtp = None
                        if attempt == 2:
                            outcomes.append(f"the SMTP server dropped the connection: {exc}")
                    except smtplib.SMTPRecipientsRefused as exc:
                        outcomes.append(f"the SMTP server refused {mail.to}: {_reason(exc)}")
                        break
                    except (smtplib.SMTPException, OSError, ssl.SSLError) as exc:  # (timeouts are OSErrors)
                        outcomes.append(f"{type(exc).__name__}: {_reason(exc)}")
                        _close(smtp)
                        smtp = None
                        break
                if progress:
                    progress(n)
        finally:
            _close(smtp)
        return outcomes


def _reason(exc: Exception) -> str:
    text = str(exc)
    return text[:300] if text else type(exc).__name__


def _close(smtp: smtplib.SMTP | None) -> None:
    if smtp is not None:
        try:
            smtp.quit()
        except (smtplib.SMTPException, OSError):
            smtp.close()
