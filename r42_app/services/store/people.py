"""People of an organisation (issue 46): one service behind /admin/people, the API (`/api/people`) and the CLI
(`r42 user ...`). It invites (one person, or a CSV of up to 5,000), changes roles and states, hands out and redeems
single-use links (an invitation, a password reset), and writes every change to the audit log.

It writes through the app's superuser connection, after its own checks (core/people.py); PocketBase's rules and
hooks hold the same lines for anyone else who writes (pb_migrations/1764401900_r42_people.js, pb_hooks/r42_people.js):
own tenant only, roles learner and admin only, the last active admin stays one, a deactivation ends every session.

A link's token is shown once (to the admin, the CLI or in a mail) and only its SHA-256 is stored. Redeeming deletes
the row before the password is set, so two redemptions of one link cannot both succeed.
"""

from __future__ import annotations

import builtins
import hashlib
import logging
import secrets
import string
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from r42_app.core.errors import UserError
from r42_app.core.identity import SignedInUser, Tenant
from r42_app.core.mails import invitation as invitation_mail
from r42_app.core.mails import password_reset as reset_mail
from r42_app.core.messages import language_of
from r42_app.core.people import (
    INVITE_DAYS,
    RESET_HOURS,
    ROLES,
    BadRow,
    ImportRow,
    PeopleInputError,
    clean_email,
    clean_name,
    clean_role,
    parse_people_csv,
    password_problem,
)
from r42_app.services.adapters.mailer import Mail, Mailer
from r42_app.services.store.audit import audit_request
from r42_app.services.store.pb import BatchRequest, PBError, PocketBase, pb_time, quote

log = logging.getLogger(__name__)

TOOL = "people"  # audit_log.tool of a change to people
INVITE_PATH = "/welkom"  # the page that redeems an invitation (pages/welcome.py)
RESET_PATH = "/nieuw-wachtwoord"  # the page that redeems a password reset
ID_ALPHABET = string.ascii_lowercase + string.digits
BATCH = 500  # people per transaction of an import (pb_hooks/r42_people.js takes up to 1,000)
LOOKUP = 80  # addresses per lookup request (the filter's length stays well under PocketBase's limits)


class PeopleError(UserError):
    """A change to people that cannot be made. `kind` maps to an HTTP status: bad_input 400, not_found 404,
    conflict 409; `str()` is English for the CLI and the logs, `user_message` Dutch."""

    def __init__(self, code: str, kind: str, detail: str = "", **fields: object):
        super().__init__(code, detail or code, **fields)
        self.kind = kind


def _input_error(exc: PeopleInputError) -> PeopleError:
    return PeopleError(exc.code, "bad_input", str(exc), **exc.fields)


@dataclass(frozen=True)
class Person:
    id: str
    email: str
    name: str
    role: str
    state: str  # invited | active | deactivated
    last_sign_in: str  # PocketBase's "2026-12-05 10:00:00.000Z", or ""
    created: str = ""
    signs_in_with: str = "password"  # password | sso (the organisation's identity provider) | lti (from an LMS)
    language: str = ""  # their own choice (issue 52), "" until they choose: mails then speak the inviter's

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "email": self.email, "name": self.name, "role": self.role, "state": self.state,
                "last_sign_in": self.last_sign_in or None, "signs_in_with": self.signs_in_with}


def person_of(row: dict[str, Any]) -> Person:
    """A users row as a Person; a malformed row reads as a learner, active (what PocketBase's defaults mean)."""
    state = str(row["state"]) if row.get("state") in ("invited", "active", "deactivated") else "active"
    return Person(id=str(row.get("id", "")), email=str(row.get("email", "")), name=str(row.get("name") or ""),
                  role=row["role"] if row.get("role") in ROLES else "learner", state=state,
                  last_sign_in=str(row.get("last_sign_in") or ""), created=str(row.get("created") or ""),
                  signs_in_with=str(row["signs_in_with"]) if row.get("signs_in_with") in ("sso", "lti") else "password",
                  language=language_of(row.get("language")) or "")


@dataclass(frozen=True)
class Actor:
    """Who makes a change, for the audit log and the mail: an admin, or the operator's command line."""

    id: str
    label: str  # an e-mail address, or "cli"
    name: str

    @classmethod
    def cli(cls) -> Actor:
        return cls("", "cli", "")

    @classmethod
    def of(cls, user: SignedInUser) -> Actor:
        return cls(user.id, user.email, user.name)


@dataclass(frozen=True)
class Link:
    """A single-use link handed out: to whom, the URL (shown once), and whether it was mailed."""

    person: Person
    url: str
    mailed: bool
    mail_error: str = ""
    again: bool = False  # an invitation of a person who was invited already: a new link, nothing else changed

    def to_json(self) -> dict[str, Any]:
        return {"id": self.person.id, "state": self.person.state, "invite_url": self.url, "mailed": self.mailed,
                "mail_error": self.mail_error or None, "again": self.again}


@dataclass
class ImportReport:
    rows: int  # rows read (good and bad)
    bad: list[BadRow]
    to_invite: int  # good rows that are new people
    unchanged: int  # good rows that are people of this tenant already
    invited: int = 0  # written (0 for a dry run, or when any row is bad)
    links: list[Link] = field(default_factory=list)
    mail_failures: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"rows": self.rows, "bad": [b.to_json() for b in self.bad], "invited": self.invited,
                "new": self.to_invite, "unchanged": self.unchanged, "mail_failures": self.mail_failures}


@dataclass(frozen=True)
class Redeemable:
    """What a valid link is for (shown on the page before the password is chosen)."""

    kind: str  # invite | reset
    email: str
    name: str
    tenant_name: str


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _new_id() -> str:
    return "".join(secrets.choice(ID_ALPHABET) for _ in range(15))


def create_vouched(pb: PocketBase, tenant: Tenant, fields: dict[str, Any], via: str, same: str) -> str | None:
    """A person whom another party vouched for (the organisation's identity provider, an LMS), created active in
    `tenant` with `fields` (email, name, role, ... and the identity at that party), a password nobody knows
    (PocketBase wants one; a reset link can set one) and an audit row by `via`. Two sign-ins of one new person at
    once: the second finds the first's by the filter `same`; None when neither made them."""
    person_id = _new_id()
    unusable = secrets.token_urlsafe(32)
    body = {"id": person_id, "tenant": tenant.id, "state": "active", "emailVisibility": False,
            "password": unusable, "passwordConfirm": unusable, **fields}
    try:
        pb.batch([BatchRequest.create("users", body),
                  audit_request(tenant, "", via, TOOL, str(fields["email"]), "created", "", str(fields["role"]))])
    except PBError as exc:
        again = pb.first("users", same)
        if again is None:
            log.warning("could not create %s: %s", fields["email"], exc)
            return None
        return str(again["id"])
    return person_id


class People:
    """The people of every tenant, through the superuser connection. A deactivation ends the person's sessions in
    PocketBase (pb_hooks/r42_people.js); the app also tells its workers (AuthService.sessions_ended)."""

    def __init__(self, pb: PocketBase, mailer: Mailer, link_base: str, clock: Callable[[], float] = time.time):
        self.pb = pb
        self.mailer = mailer
        self.link_base = link_base.rstrip("/")
        self.clock = clock

    # -- reads -------------------------------------------------------------------------------------------------------

    def list(self, tenant: Tenant, query: str = "", role: str = "", state: str = "", page: int = 1,
             per_page: int = 50) -> tuple[builtins.list[Person], int]:
        """One page of the tenant's people by name, filtered by a search (name or e-mail), role and state."""
        flt = [f"tenant = {quote(tenant.id)}"]
        if query.strip():
            q = quote(query.strip()[:100])
            flt.append(f"(email ~ {q} || name ~ {q})")
        if role:
            try:
                flt.append(f"role = {quote(clean_role(role))}")
            except PeopleInputError as exc:
                raise _input_error(exc) from exc
        if state:
            if state not in ("invited", "active", "deactivated"):
                raise PeopleError("people.bad_state", "bad_input", f"unknown state {state!r}")
            flt.append('(state = "active" || state = "")' if state == "active" else f"state = {quote(state)}")
        found = self.pb.list("users", filter=" && ".join(flt), sort="name,email", page=max(1, page),
                             per_page=max(1, min(per_page, 500)), total=True)
        return [person_of(r) for r in found.get("items", [])], int(found.get("totalItems", 0))

    def get(self, tenant: Tenant, person_id: str) -> Person:
        return person_of(self._row(tenant, person_id))

    def _row(self, tenant: Tenant, person_id: str) -> dict[str, Any]:
        row = None
        if isinstance(person_id, str) and 0 < len(person_id) <= 32 and person_id.isalnum():
            row = self.pb.first("users", f"id = {quote(person_id)} && tenant = {quote(tenant.id)}")
        if row is None:  # another tenant's person is nobody here
            raise PeopleError("people.not_found", "not_found", f"no person {person_id!r} in tenant {tenant.slug}")
        return row

    def by_email(self, tenant: Tenant, email: str) -> Person:
        try:
            address = clean_email(email)
        except PeopleInputError as exc:
            raise _input_error(exc) from exc
        row = self.pb.first("users", f"email = {quote(address)} && tenant = {quote(tenant.id)}")
        if row is None:
            raise PeopleError("people.not_found", "not_found", f"no person {address} in tenant {tenant.slug}")
        return person_of(row)

    # -- invitations -------------------------------------------------------------------------------------------------

    def invite(self, tenant: Tenant, actor: Actor, email: str, name: str = "", role: str = "learner") -> Link:
        """Invite one person: a new, invited user of the tenant and a link (mailed when mail is on). An address of
        an invited person of this tenant gets a new link (`Link.again`; their name and role stay as they were: a
        role is changed in the list, on purpose); a member, or a person of another tenant, is refused."""
        try:
            address = clean_email(email)
            clean = clean_name(name, address)
            chosen = clean_role(role)
        except PeopleInputError as exc:
            raise _input_error(exc) from exc
        existing = self.pb.first("users", f"email = {quote(address)}")
        if existing is not None:
            if existing.get("tenant") != tenant.id:
                raise PeopleError("people.other_tenant", "conflict", f"{address} belongs to another tenant",
                                  email=address)
            person = person_of(existing)
            if person.state != "invited":
                raise PeopleError("people.already_member", "conflict", f"{address} is a member already",
                                  email=address)
            return replace(self._issue(tenant, actor, person, "invite"), again=True)
        person_id = _new_id()
        try:
            self._create_invited(tenant, [{"id": person_id, "email": address, "name": clean, "role": chosen}], [],
                                 audit_request(tenant, actor.id, actor.label, TOOL, address, "invite", "", chosen))
        except PBError as exc:
            if exc.status == 400 and "email" in str(exc.data):  # invited a moment ago by another admin
                raise PeopleError("people.already_member", "conflict", f"{address} exists already",
                                  email=address) from exc
            raise
        return self._issue(tenant, actor, person_of(self.pb.get("users", person_id)), "invite")

    def _create_invited(self, tenant: Tenant, people: builtins.list[dict[str, Any]],
                        links: builtins.list[dict[str, Any]], audit: BatchRequest | None) -> None:
        """Invited people (no password of their own until they choose one; users.authRule refuses them until then),
        their links and the audit row, in one PocketBase transaction (pb_hooks/r42_people.js invitePeople)."""
        self.pb.send("POST", "/api/r42/people/invite", body={
            "people": [{**p, "tenant": tenant.id} for p in people],
            "invitations": [{**link, "tenant": tenant.id} for link in links],
            "audit": audit.body if audit is not None else None})

    def resend(self, tenant: Tenant, actor: Actor, person_id: str) -> Link:
        """A new invitation link for an invited person (the old one stops working)."""
        person = self.get(tenant, person_id)
        if person.state != "invited":
            raise PeopleError("people.not_invited", "conflict", f"{person.email} accepted already",
                              email=person.email)
        return self._issue(tenant, actor, person, "invite")

    def reset_link(self, tenant: Tenant, actor: Actor, person_id: str) -> Link:
        """A password-reset link for an active person, for the admin to hand over (or mailed)."""
        person = self.get(tenant, person_id)
        if person.state != "active":
            raise PeopleError("people.not_active", "conflict", f"{person.email} is {person.state}", email=person.email)
        self.pb.batch([audit_request(tenant, actor.id, actor.label, TOOL, person.email, "reset link", "", "")])
        return self._issue(tenant, actor, person, "reset")

    def withdraw(self, tenant: Tenant, actor: Actor, person_id: str) -> Person:
        """Withdraw an open invitation: the invited person and their link go (a member is not removed here)."""
        person = self.get(tenant, person_id)
        if person.state != "invited":
            raise PeopleError("people.not_invited", "conflict", f"{person.email} accepted already",
                              email=person.email)
        self.pb.batch([BatchRequest.delete("users", person.id),
                       audit_request(tenant, actor.id, actor.label, TOOL, person.email, "withdraw", "invited", "")])
        return person

    def _new_link(self, person_id: str, kind: str, actor: Actor) -> tuple[str, dict[str, Any]]:
        """A fresh token of `kind` for the person, and the invitations row that keeps only its hash."""
        token = secrets.token_urlsafe(32)
        now = datetime.fromtimestamp(self.clock(), UTC)
        expires = now + (timedelta(days=INVITE_DAYS) if kind == "invite" else timedelta(hours=RESET_HOURS))
        return token, {"user": person_id, "kind": kind, "hash": token_hash(token), "expires": pb_time(expires),
                       "by": actor.id or None}

    def _url(self, kind: str, token: str) -> str:
        return f"{self.link_base}{INVITE_PATH if kind == 'invite' else RESET_PATH}?token={token}"

    def _issue(self, tenant: Tenant, actor: Actor, person: Person, kind: str) -> Link:
        """A new single-use link of `kind` for the person (their earlier one of that kind stops working), mailed
        when mail is on; the URL is returned either way (the admin may hand it over)."""
        token, row = self._new_link(person.id, kind, actor)
        old = self.pb.all("invitations", filter=f"user = {quote(person.id)} && kind = {quote(kind)}", fields="id")
        self.pb.batch([*(BatchRequest.delete("invitations", r["id"]) for r in old),
                       BatchRequest.create("invitations", {"tenant": tenant.id, **row})])
        url = self._url(kind, token)
        if not self.mailer.on:
            return Link(person, url, mailed=False)
        error = self.mailer.send([self._mail(tenant.name, actor, person, kind, url)])[0]
        if error:
            log.warning("the %s mail to %s failed: %s", kind, person.email, error)
        return Link(person, url, mailed=not error, mail_error=error)

    @staticmethod
    def _mail(tenant_name: str, actor: Actor, person: Person, kind: str, url: str) -> Mail:
        if kind == "invite":
            subject, text, html = invitation_mail(person.name, tenant_name, actor.name, person.role, url,
                                                  person.language)
        else:
            subject, text, html = reset_mail(person.name, tenant_name, url, person.language)
        return Mail(person.email, subject, text, html)

    # -- changes -----------------------------------------------------------------------------------------------------

    def set_role(self, tenant: Tenant, actor: Actor, person_id: str, role: str) -> Person:
        try:
            chosen = clean_role(role)
        except PeopleInputError as exc:
            raise _input_error(exc) from exc
        person = self.get(tenant, person_id)
        if person.role == chosen:
            return person
        self._write(tenant, person, {"role": chosen},
                    audit_request(tenant, actor.id, actor.label, TOOL, person.email, "role", person.role, chosen))
        return self.get(tenant, person_id)

    def set_state(self, tenant: Tenant, actor: Actor, person_id: str, state: str) -> Person:
        """Deactivate (every session of theirs ends at once) or reactivate a member; an invited person is withdrawn,
        not deactivated."""
        if state not in ("active", "deactivated"):
            raise PeopleError("people.bad_state", "bad_input", f"state must be active or deactivated, not {state!r}")
        person = self.get(tenant, person_id)
        if person.state == "invited":
            raise PeopleError("people.still_invited", "conflict", f"{person.email} has not accepted yet",
                              email=person.email)
        if person.state == state:
            return person
        self._write(tenant, person, {"state": state},
                    audit_request(tenant, actor.id, actor.label, TOOL, person.email, "state", person.state, state))
        return self.get(tenant, person_id)

    def _write(self, tenant: Tenant, person: Person, body: dict[str, Any], audit: BatchRequest) -> None:
        try:
            self.pb.batch([BatchRequest.update("users", person.id, body), audit])
        except PBError as exc:
            if "last_admin" in str(exc.data) or "last_admin" in exc.field_errors().get("state", ""):
                raise PeopleError("people.last_admin", "conflict", f"{person.email} is the tenant's last active "
                                  "admin") from exc
            raise

    # -- import ------------------------------------------------------------------------------------------------------

    def import_csv(self, tenant: Tenant, actor: Actor, data: bytes, dry_run: bool = True,
                   progress: Callable[[str, int, int], None] | None = None) -> ImportReport:
        """Read a CSV of people and say, row by row, what an import would do; unless `dry_run`, and only when no row
        is bad, invite every new person (links mailed when mail is on, else returned). Rows of people who are in
        the tenant already change nothing, so the same file twice invites nobody twice."""
        try:
            good, bad = parse_people_csv(data)
        except PeopleInputError as exc:
            raise _input_error(exc) from exc
        rows = len(good) + len(bad)
        known = self._existing([r.email for r in good])
        new: builtins.list[ImportRow] = []
        unchanged = 0
        for row in good:
            other = known.get(row.email)
            if other is None:
                new.append(row)
            elif other.get("tenant") != tenant.id:
                bad.append(BadRow(row.line, row.email, "people.other_tenant", f"{row.email} belongs to another tenant",
                                  (("email", row.email),)))
            else:
                unchanged += 1
        bad.sort(key=lambda b: b.line)
        report = ImportReport(rows=rows, bad=bad, to_invite=len(new), unchanged=unchanged)
        if dry_run or bad or not new:
            return report
        # every new person and their link, BATCH people a transaction; one audit row for the whole import
        tokens: dict[str, str] = {}
        people_rows: builtins.list[dict[str, Any]] = []
        link_rows: builtins.list[dict[str, Any]] = []
        for row in new:
            person_id = _new_id()
            tokens[person_id], link = self._new_link(person_id, "invite", actor)
            people_rows.append({"id": person_id, "email": row.email, "name": row.name, "role": row.role})
            link_rows.append(link)
        audit = audit_request(tenant, actor.id, actor.label, TOOL, f"{len(new)} people", "import", "",
                              f"{len(new)} invited, {unchanged} unchanged")
        for start in range(0, len(people_rows), BATCH):
            last = start + BATCH >= len(people_rows)
            self._create_invited(tenant, people_rows[start:start + BATCH], link_rows[start:start + BATCH],
                                 audit if last else None)
            if progress:
                progress("writing", min(start + BATCH, len(people_rows)), len(people_rows))
        people = [Person(pid, row.email, row.name, row.role, "invited", "")
                  for pid, row in zip(tokens, new, strict=True)]
        urls = [self._url("invite", tokens[p.id]) for p in people]
        report.invited = len(people)
        if not self.mailer.on:
            report.links = [Link(p, u, mailed=False) for p, u in zip(people, urls, strict=True)]
            return report
        mails = [self._mail(tenant.name, actor, p, "invite", u) for p, u in zip(people, urls, strict=True)]
        outcomes = self.mailer.send(mails, (lambda n: progress("mailing", n, len(mails))) if progress else None)
        report.links = [Link(p, u, mailed=not e, mail_error=e) for p, u, e in zip(people, urls, outcomes, strict=True)]
        report.mail_failures = sum(1 for e in outcomes if e)
        return report

    def _existing(self, emails: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The users rows of these addresses, in any tenant (e-mail -> row)."""
        found: dict[str, dict[str, Any]] = {}
        for start in range(0, len(emails), LOOKUP):
            chunk = emails[start:start + LOOKUP]
            flt = " || ".join(f"email = {quote(e)}" for e in chunk)
            for row in self.pb.all("users", filter=flt, fields="id,email,tenant"):
                found[str(row["email"]).lower()] = row
        return found

    # -- links -------------------------------------------------------------------------------------------------------

    def _link_row(self, token: str) -> dict[str, Any]:
        if not isinstance(token, str) or not 20 <= len(token) <= 100:
            raise PeopleError("people.link_unknown", "not_found", "no such link")
        row = self.pb.first("invitations", f"hash = {quote(token_hash(token))}", expand="user,tenant")
        if row is None:
            raise PeopleError("people.link_unknown", "not_found", "no such link (used, withdrawn or replaced)")
        if row.get("expires", "") <= pb_time(datetime.fromtimestamp(self.clock(), UTC)):
            raise PeopleError("people.link_expired", "conflict", "the link has expired")
        return row

    def peek(self, token: str) -> Redeemable:
        """What a link is for, without using it; PeopleError when it is unknown, used, withdrawn or expired."""
        row = self._link_row(token)
        user = (row.get("expand") or {}).get("user") or {}
        tenant = (row.get("expand") or {}).get("tenant") or {}
        self._check_redeemable(row, user, tenant)
        return Redeemable(row["kind"], str(user.get("email", "")), str(user.get("name", "")),
                          str(tenant.get("name", "")))

    @staticmethod
    def _check_redeemable(row: dict[str, Any], user: dict[str, Any], tenant: dict[str, Any]) -> None:
        state = user.get("state") or "active"
        if tenant.get("state") == "disabled":
            raise PeopleError("auth.tenant_disabled", "conflict", "the tenant is disabled")
        if row.get("kind") == "invite" and state != "invited":
            raise PeopleError("people.link_unknown", "not_found", "the invitation was accepted already")
        if row.get("kind") == "reset" and state != "active":
            raise PeopleError("people.not_active", "conflict", "the person is not active", email=user.get("email"))

    def redeem(self, token: str, password: str) -> str:
        """Use a link once: the person's password is set (and an invited person becomes active); returns their
        e-mail address, for the caller to sign them in with the new password."""
        row = self._link_row(token)
        user = (row.get("expand") or {}).get("user") or {}
        tenant = (row.get("expand") or {}).get("tenant") or {}
        self._check_redeemable(row, user, tenant)
        if problem := password_problem(password, str(user.get("email", "")), str(user.get("name", ""))):
            raise _input_error(problem)
        try:
            self.pb.delete("invitations", row["id"])  # first: of two redemptions at once, one gets here
        except PBError as exc:
            if exc.status == 404:
                raise PeopleError("people.link_unknown", "not_found", "the link was used a moment ago") from exc
            raise
        body: dict[str, Any] = {"password": password, "passwordConfirm": password, "verified": True}
        if row["kind"] == "invite":
            body["state"] = "active"
        self.pb.update("users", user["id"], body)  # a new password: PocketBase ends every earlier session
        tenant_ref = Tenant(str(tenant.get("id", "")), str(tenant.get("slug", "")), str(tenant.get("name", "")))
        self.pb.batch([audit_request(tenant_ref, user["id"], str(user.get("email", "")), TOOL,
                                     str(user.get("email", "")),
                                     "accepted" if row["kind"] == "invite" else "password reset", "", "")])
        return str(user.get("email", ""))

    def set_password(self, user_id: str, email: str, name: str, password: str) -> None:
        """"Wachtwoord wijzigen", once the caller has checked the old password: the one rule, then the new password;
        PocketBase gives the person a new token key, so every earlier session of theirs ends."""
        if problem := password_problem(password, email, name):
            raise _input_error(problem)
        self.pb.update("users", user_id, {"password": password, "passwordConfirm": password})

    def request_reset(self, email: str) -> Link | None:
        """"Wachtwoord vergeten?": a reset link mailed to an active person of an enabled tenant (None otherwise, and
        always without mail off: the caller says the same thing whatever happens here)."""
        try:
            address = clean_email(email)
        except PeopleInputError:
            return None
        row = self.pb.first("users", f"email = {quote(address)}", expand="tenant")
        if row is None or not self.mailer.on:
            return None
        tenant = (row.get("expand") or {}).get("tenant") or {}
        person = person_of(row)
        if person.state != "active" or tenant.get("state") == "disabled":
            return None
        ref = Tenant(str(tenant.get("id", "")), str(tenant.get("slug", "")), str(tenant.get("name", "")))
        return self._issue(ref, Actor(person.id, person.email, person.name), person, "reset")

    def recent(self, tenant: Tenant, limit: int = 20) -> builtins.list[dict[str, str]]:
        """The tenant's latest changes to people (the audit log), newest first: when, who, whom, what, before, after.
        A malformed row reads as blanks."""
        rows = self.pb.list("audit_log", filter=f"tenant = {quote(tenant.id)} && tool = {quote(TOOL)}",
                            sort="-created,-id", per_page=max(1, min(limit, 200))).get("items", [])
        out = []
        for row in rows:
            args = row.get("arguments") if isinstance(row.get("arguments"), dict) else {}
            out.append({k: str(args.get(k) or "") for k in ("at", "actor", "target", "what", "before", "after")})
        return out
