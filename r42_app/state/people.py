"""PeopleState: `/admin/people` ("Mensen"), where an organisation's admins invite people (one by one or a CSV),
change roles, deactivate and reactivate, hand out links, and remove someone (the privacy forget). Thin: the rules
are in core/people.py, the work in services/store/people.py, PocketBase in a thread; the same service runs
`/api/people` and `r42 user`."""

from __future__ import annotations

import asyncio
import dataclasses
import logging

import reflex as rx
from reflex.event import EventSpec

from r42_app.container import services
from r42_app.core.documents import rejection
from r42_app.core.messages import N_, msg, word
from r42_app.core.people import EMAIL_CODES, MAX_IMPORT_BYTES, ROLE_NAMES, STATE_NAMES
from r42_app.services.store.forget import ForgetError, pseudonym_key
from r42_app.services.store.pb import PBError
from r42_app.services.store.people import Actor, ImportReport, Link, PeopleError, Person
from r42_app.services.uploads import keep_permit
from r42_app.state.admin_page import AdminPageMixin
from r42_app.state.auth import AuthState
from r42_app.state.focus import focus_if_lost

log = logging.getLogger(__name__)

PAGE_SIZE = 25
CSV_UPLOAD_ID = "people-csv"
STATE_COLORS = {"invited": "amber", "active": "green", "deactivated": "gray"}
VIA = {"sso": N_("via je organisatie"), "lti": N_("via de leeromgeving")}
STATE_LABELS = {"invited": N_("Uitgenodigd"), "active": N_("Actief"), "deactivated": N_("Gedeactiveerd")}
NEVER = N_("Nooit")  # the last sign-in of someone who never signed in


@dataclasses.dataclass
class PersonRow:
    id: str = ""
    name: str = ""
    email: str = ""
    role: str = ""
    role_label: str = ""
    state: str = ""
    state_label: str = ""
    state_color: str = "gray"
    last_sign_in: str = ""
    is_me: bool = False
    via: str = ""  # how they sign in, when not with a password


@dataclasses.dataclass
class BadRowView:
    line: int = 0
    email: str = ""
    reason: str = ""


@dataclasses.dataclass
class ChangeView:
    when: str = ""
    actor: str = ""
    target: str = ""
    what: str = ""
    before: str = ""  # a role or state by its Dutch name (core/people.py), or as stored
    after: str = ""


WHAT_LABELS = {"invite": N_("uitgenodigd"), "withdraw": N_("uitnodiging ingetrokken"), "role": N_("rol"),
               "state": N_("status"), "import": N_("lijst geïmporteerd"), "accepted": N_("uitnodiging aangenomen"),
               "reset link": N_("wachtwoordlink"), "password reset": N_("nieuw wachtwoord gekozen")}


def _label(value: str) -> str:
    return ROLE_NAMES.get(value) or STATE_NAMES.get(value) or value


REMOVED = N_("verwijderd")  # a forgotten person, as the change list names them


def _who(name: str) -> str:
    """A name in the change list, a forgotten person's pseudonym in the reader's language ("removed-3fa2b1c9")."""
    key = pseudonym_key(name)
    return f"{word(REMOVED)}-{key}" if key else name


def _row(p: Person, me: str) -> PersonRow:
    return PersonRow(p.id, p.name, p.email, p.role, ROLE_NAMES[p.role].capitalize(), p.state,
                     STATE_LABELS[p.state], STATE_COLORS[p.state],
                     p.last_sign_in[:16].replace("T", " ") if p.last_sign_in else NEVER, p.id == me,
                     VIA.get(p.signs_in_with, ""))


# the invitation form's field a refusal is about (by its code)
_FIELD_OF = {**dict.fromkeys((*EMAIL_CODES, "people.other_tenant"), "email"),
             "people.bad_name": "name", "people.formula": "name"}


def _focus_back(kind: str, person_id: str, cancelled: bool = False) -> EventSpec:
    """A confirmation opened from a person's row leaves the focus nowhere when it closes (the list is drawn again):
    back to what opened it, the role or the "…" menu (assets/r42.js), or the search when the row is gone (a
    withdrawal or removal that was confirmed; `cancelled`, the row stays)."""
    person = "".join(c for c in person_id if c.isalnum())  # a PocketBase id; nothing else reaches the selector
    where = {"admin": ".person-role", "learner": ".person-role", "learner_me": ".person-role",
             "deactivate": ".person-actions"}.get(kind, ".person-actions" if cancelled else None)
    first = [f'[data-person="{person}"] {where}'] if where and person else []
    return focus_if_lost(*first, "#people-search")


class PeopleState(AdminPageMixin, rx.State):
    rows: list[PersonRow] = []
    total: int = 0
    page: int = 1
    query: str = ""
    role_filter: str = "all"
    state_filter: str = "all"
    mail_on: bool = False
    changes: list[ChangeView] = []
    working: bool = False
    # invite dialog
    invite_open: bool = False
    invite_error: str = ""
    invite_bad: str = ""  # the invitation's field the error is about ("email", "name"), marked and focused
    # the link just handed out (mail off, or a mail that failed): shown once with a copy button
    link_url: str = ""
    link_for: str = ""
    link_note: str = ""
    # import dialog: pick -> preview -> done
    import_open: bool = False
    import_stage: str = "pick"
    import_error: str = ""
    import_rows: int = 0
    import_new: int = 0
    import_unchanged: int = 0
    import_bad: list[BadRowView] = []
    import_links: str = ""  # mail off: "e-mail<TAB>link" per line, to copy
    import_done_text: str = ""
    _csv: bytes = b""
    # confirmations
    confirm_kind: str = ""  # deactivate | forget | withdraw | admin | learner | learner_me (a role change)
    confirm_id: str = ""
    confirm_name: str = ""

    # -- reading -------------------------------------------------------------------------------

    @rx.var
    def pages(self) -> int:
        return max(1, -(-self.total // PAGE_SIZE))

    async def _refresh(self, user) -> None:
        people = services().people
        role = "" if self.role_filter == "all" else self.role_filter
        state = "" if self.state_filter == "all" else self.state_filter
        (found, total), changes = await asyncio.gather(
            asyncio.to_thread(people.list, user.tenant, self.query, role, state, self.page, PAGE_SIZE),
            asyncio.to_thread(people.recent, user.tenant, 15))
        if not found and self.page > 1 and total:  # the last page emptied (a withdrawal, a filter)
            self.page = max(1, -(-total // PAGE_SIZE))
            found, total = await asyncio.to_thread(people.list, user.tenant, self.query, role, state, self.page,
                                                   PAGE_SIZE)
        self.rows, self.total = [_row(p, user.id) for p in found], total
        self.mail_on = services().settings.mail_on
        self.changes = [ChangeView(c["at"][:16].replace("T", " "), _who(c["actor"]), _who(c["target"]),
                                   WHAT_LABELS.get(c["what"], c["what"]), _label(c["before"]), _label(c["after"]))
                        for c in changes]

    @rx.event
    async def load(self):
        """on_load of `/admin/people`; an admin's tab may send a CSV from here (the upload permit)."""
        user = await self._admin()
        await keep_permit(services().shared, self.router.session.client_token, user,
                          services().settings.session_hours * 3600)
        if user is None:
            return
        await self._reload(user, "people.load_failed")
        yield  # the table first
        from r42_app.state.lti_settings import LtiSettingsState  # the page's "Leeromgevingen" card
        from r42_app.state.sso_settings import SsoSettingsState  # the page's "Inloggen met je organisatie" card
        from r42_app.state.tenant_language import TenantLanguageState  # the page's "Taal van je organisatie" card

        # the cards in this event, not as events it returns: those queue behind a click made meanwhile (the cards
        # show what the tab last had), and the sign-in card's load closed the form "Wijzigen" had just opened
        cards = [await self.get_state(card) for card in (TenantLanguageState, SsoSettingsState, LtiSettingsState)]
        done = await asyncio.gather(*(card._reload(user, "people.load_failed") for card in cards),
                                    return_exceptions=True)
        for card, outcome in zip(cards, done, strict=True):  # (_reload says PocketBase's errors itself)
            if isinstance(outcome, Exception):  # one card's failure is that card's: the others show; the page says it
                log.error("%s could not load: %r", type(card).__name__, outcome)
                card.loading = False
                self.load_error = msg("people.load_failed")

    async def _again(self) -> None:
        user = await self._admin()
        if user is not None:
            await self._reload(user, "people.load_failed", show_loading=False)

    @rx.event
    async def search(self, value: str):
        self.query, self.page = value[:100], 1
        await self._again()

    @rx.event
    async def filter_role(self, value: str):
        self.role_filter, self.page = value if value in ("all", "learner", "admin") else "all", 1
        await self._again()

    @rx.event
    async def filter_state(self, value: str):
        self.state_filter, self.page = value if value in ("all", "invited", "active", "deactivated") else "all", 1
        await self._again()

    @rx.event
    async def go_page(self, page: int):
        self.page = max(1, min(int(page), self.pages))
        await self._again()

    # -- a change, the same way each time ------------------------------------------------------

    async def _change(self, call, success: str = ""):
        """Run `call(people, tenant, actor)` in a thread as the admin (checked now); a refusal is a toast. `success`:
        the code of the message said after it (built here, once the admin's language is known: built by the caller,
        it came in Dutch to an English admin)."""
        user = await self._admin(fresh=True)
        if user is None:
            return
        self.working = True
        yield
        try:
            result = await asyncio.to_thread(call, services().people, user.tenant, Actor.of(user))
        except PeopleError as exc:
            self.working = False
            yield rx.toast.error(exc.user_message)
            return
        except PBError as exc:
            log.error("a change on /admin/people failed: %s", exc)
            self.working = False
            yield rx.toast.error(msg("people.save_failed"))
            return
        self.working = False
        if isinstance(result, Link):
            self._show_link(result)
        if isinstance(result, Person) and result.state == "deactivated":
            await services().auth.sessions_ended(result.id)  # every worker's tab caches, at once
        await self._reload(user, "people.load_failed", show_loading=False)
        if success:
            yield rx.toast.success(msg(success))

    def _show_link(self, link: Link) -> None:
        if link.mailed:
            self.link_url = ""
            return
        self.link_url, self.link_for = link.url, link.person.email
        self.link_note = msg("people.mail_failed", error=link.mail_error[:200]) if link.mail_error \
            else msg("people.hand_over")

    @rx.event
    def close_link(self):
        self.link_url = self.link_for = self.link_note = ""

    # -- invite ---------------------------------------------------------------------------------

    @rx.event
    def open_invite(self, open_: bool = True):
        self.invite_open, self.invite_error, self.invite_bad = open_, "", ""

    @rx.event
    async def invite(self, form: dict):
        if not self.invite_open:  # a second press of "Uitnodigen", queued behind the first that closed the dialog
            return
        email, name, role = (str(form.get(k, ""))[:300] for k in ("email", "name", "role"))
        user = await self._admin(fresh=True)
        if user is None:
            return
        self.working, self.invite_error, self.invite_bad = True, "", ""
        yield
        try:
            link = await asyncio.to_thread(services().people.invite, user.tenant, Actor.of(user), email, name,
                                           role or "learner")
        except PeopleError as exc:
            self.working, self.invite_error = False, exc.user_message
            self.invite_bad = _FIELD_OF.get(exc.code, "")
            if self.invite_bad:  # the keyboard on the field to mend (it stayed on "Uitnodigen")
                yield rx.set_focus(f"invite-{self.invite_bad}")
            return
        except PBError as exc:
            log.error("an invitation failed: %s", exc)
            self.working, self.invite_error = False, msg("people.save_failed")
            return
        self.working, self.invite_open = False, False
        self._show_link(link)
        await self._reload(user, "people.load_failed", show_loading=False)
        email = link.person.email
        if link.again:  # invited before: a new link, the role as it was (the form's role is not applied unasked)
            role = word(ROLE_NAMES[link.person.role])
            yield rx.toast.info(msg("people.invited_again_mailed" if link.mailed else "people.invited_again",
                                    email=email, role=role))
        else:
            yield rx.toast.success(msg("people.invited_mailed", email=email) if link.mailed else
                                   msg("people.invited", email=email))
        # the keyboard goes on where the answer is: the link to hand over (it selects itself), else the button that
        # invites the next person (the dialog closed under the focus, which fell to the page's body)
        yield rx.set_focus("people-link" if not link.mailed else "people-invite-open")

    # -- per person -----------------------------------------------------------------------------

    @rx.event
    def ask_role(self, person_id: str, role: str):
        """The role list was changed: ask first (an admin sees and changes everything of the organisation; a person
        made a learner can manage nothing, and an admin who makes themselves one cannot undo it). The person as this
        page listed them, not as the event says."""
        row = next((r for r in self.rows if r.id == person_id), None)
        if row is None or role == row.role or role not in ROLE_NAMES:
            return
        kind = "learner_me" if role == "learner" and row.is_me else role
        self.confirm_kind, self.confirm_id, self.confirm_name = kind, row.id, row.email

    @rx.event
    async def activate(self, person_id: str):
        async for event in self._change(lambda p, t, a: p.set_state(t, a, person_id, "active"), "people.activated"):
            yield event

    @rx.event
    async def resend(self, person_id: str):
        async for event in self._change(lambda p, t, a: p.resend(t, a, person_id), "people.resent"):
            yield event

    @rx.event
    async def reset_link(self, person_id: str):
        async for event in self._change(lambda p, t, a: p.reset_link(t, a, person_id), "people.reset_made"):
            yield event

    @rx.event
    def ask(self, kind: str, person_id: str, name: str):
        """Open the confirmation of a change that is hard to undo (deactivate, withdraw, remove)."""
        self.confirm_kind, self.confirm_id, self.confirm_name = kind, person_id, name

    @rx.event
    def cancel_confirm(self, open_: bool = False):
        if not open_:
            # closed by "Annuleren", Escape or a click outside; after the confirm button, `confirm` says where to
            back = _focus_back(self.confirm_kind, self.confirm_id, cancelled=True) if self.confirm_kind else None
            self.confirm_kind = self.confirm_id = self.confirm_name = ""
            return back

    @rx.event
    async def confirm(self):
        kind, person_id = self.confirm_kind, self.confirm_id
        self.confirm_kind = ""
        yield _focus_back(kind, person_id)
        if kind == "deactivate":
            call, done = (lambda p, t, a: p.set_state(t, a, person_id, "deactivated")), "people.deactivated"
        elif kind == "withdraw":
            call, done = (lambda p, t, a: p.withdraw(t, a, person_id)), "people.withdrawn"
        elif kind == "forget":
            call, done = (lambda p, t, a: _forget(p, t, a, person_id)), "people.forgotten"
        elif kind in ("admin", "learner", "learner_me"):
            role = "admin" if kind == "admin" else "learner"
            call, done = (lambda p, t, a: p.set_role(t, a, person_id, role)), "people.role_changed"
        else:
            return
        async for event in self._change(call, done):
            yield event
        if kind == "learner_me":  # (refused, as the last active admin, they are one still and stay)
            me = await (await self.get_state(AuthState)).user(fresh=True)
            if me is None or not me.is_admin:  # no admin pages any more: to the learner's start page
                yield rx.redirect("/")

    # -- import ---------------------------------------------------------------------------------

    @rx.event
    def open_import(self, open_: bool = True):
        self.import_open = open_
        if open_ or self.import_stage == "done":
            self.import_stage, self.import_error, self.import_bad, self.import_links = "pick", "", [], ""
            self._csv = b""

    @rx.event
    async def csv_starting(self):
        """Before the CSV is sent: this tab's upload permit, as the page's load granted it (a file dropped before that
        load finished would otherwise be refused by the upload route without a word)."""
        user = await self._admin()
        if user is not None:
            await keep_permit(services().shared, self.router.session.client_token, user,
                              services().settings.session_hours * 3600)

    @rx.event
    async def upload_csv(self, files: list[rx.UploadFile]):
        """The CSV arrived: read it (1 MB at most) and show what an import would do; nothing is written yet."""
        user = await self._admin(fresh=True)
        if user is None or not files:
            return
        self.import_error = ""
        data = await asyncio.to_thread(files[0].file.read, MAX_IMPORT_BYTES + 1)
        self.working = True
        yield
        try:
            report = await asyncio.to_thread(services().people.import_csv, user.tenant, Actor.of(user), data, True)
        except PeopleError as exc:
            self.working, self.import_error = False, exc.user_message
            return
        except PBError as exc:
            log.error("a people CSV could not be checked: %s", exc)
            self.working, self.import_error = False, msg("people.save_failed")
            return
        self.working = False
        self._csv = data
        self._show_report(report)
        self.import_stage = "preview"

    def _show_report(self, report: ImportReport) -> None:
        self.import_rows, self.import_new, self.import_unchanged = report.rows, report.to_invite, report.unchanged
        self.import_bad = [BadRowView(b.line, b.email, b.to_json()["reason"]) for b in report.bad[:500]]

    @rx.event
    async def files_rejected(self, rejections: list):
        """The drop zone turned the file away (as the page sends it: name and react-dropzone's codes): say why (in
        the admin's language: the event's own, set by the check)."""
        if await self._admin() is None:
            return
        name, codes = rejection(rejections[0] if isinstance(rejections, list) and rejections else None)
        if "too-many-files" in codes or (isinstance(rejections, list) and len(rejections) > 1):
            self.import_error = msg("people.csv_one_file")
        elif "file-too-large" in codes and "file-invalid-type" not in codes:  # a large photo is no CSV first
            self.import_error = msg("people.csv_too_big", size="> 1", maximum="1")
        else:
            self.import_error = msg("people.csv_wrong_kind", filename=name or msg("doc.a_file"))

    @rx.event
    async def confirm_import(self):
        """"Uitnodigen": the checked file again, now written (still nothing when a row became bad meanwhile)."""
        user = await self._admin(fresh=True)
        if user is None or not self._csv:
            return
        self.working = True
        yield
        try:
            report = await asyncio.to_thread(services().people.import_csv, user.tenant, Actor.of(user), self._csv,
                                             False)
        except (PeopleError, PBError) as exc:
            log.warning("a people import failed: %s", exc)
            self.working = False
            self.import_error = exc.user_message if isinstance(exc, PeopleError) else msg("people.save_failed")
            return
        self.working = False
        self._show_report(report)
        if report.bad:
            self.import_stage = "preview"
            return
        self.import_stage, self._csv = "done", b""
        unmailed = [link for link in report.links if not link.mailed]
        self.import_links = "\n".join(f"{link.person.email}\t{link.url}" for link in unmailed)
        self.import_done_text = msg("people.imported", invited=report.invited, unchanged=report.unchanged) + (
            " " + msg("people.imported_mail_failed", failed=report.mail_failures) if report.mail_failures else "") + (
            " " + msg("people.imported_hand_over") if unmailed and not report.mail_failures else "")
        await self._reload(user, "people.load_failed", show_loading=False)


def _forget(people, tenant, actor: Actor, person_id: str) -> Person:
    """"Verwijderen": the privacy forget (`r42 user forget`'s code path), never of oneself."""
    person = people.get(tenant, person_id)
    if person.id == actor.id:
        raise PeopleError("people.not_yourself", "conflict", "an admin cannot remove themselves")
    svc = services()
    svc.cost_persister.drain(wait_for_leases=True)  # no cost event arrives naming them later
    try:
        svc.forgetter.forget(tenant, person.email)
    except ForgetError as exc:
        log.warning("removing %s from /admin/people failed: %s", person.id, exc)
        raise PeopleError("people.forget_failed", "conflict", "the forget failed (see the log)") from exc
    return person
