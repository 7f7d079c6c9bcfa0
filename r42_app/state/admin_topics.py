"""The admin's topics: AdminTopicListState (the list, deleting) and AdminTopicEditorState (creating and editing a
topic and its relations), for their own tenant only.

Every handler starts with `_admin_tenant()` (writes with `fresh=True`): a learner who sends these events
directly is refused.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
import uuid
from collections import Counter

import reflex as rx

from r42_app.chat.gap_draft import model_draft
from r42_app.container import services
from r42_app.core.costs import QuotaExceeded
from r42_app.core.gaps import DraftRefused
from r42_app.core.identity import Tenant
from r42_app.core.kb import RELATION_LABELS, RELATION_TYPES, TOPIC_TYPES, TYPE_LABELS, Relation, filter_topics, slugify
from r42_app.core.messages import msg
from r42_app.core.text import fold
from r42_app.services.adapters.llm import LLMError
from r42_app.services.store.kb_store import KBError
from r42_app.services.store.pb import PBError
from r42_app.services.uploads import keep_permit
from r42_app.state.admin_page import AdminPageMixin
from r42_app.state.auth import AuthState

log = logging.getLogger(__name__)


@dataclasses.dataclass
class AdminTopicRow:
    slug: str = ""
    label: str = ""
    type: str = ""
    type_label: str = ""
    relation_count: int = 0
    original: str = ""  # the file a document's topic was made from
    sections: int = 0  # the section topics deleted with it


@dataclasses.dataclass
class AdminRelationRow:
    source: str = ""
    target: str = ""
    type: str = ""
    phrase: str = ""
    other_label: str = ""
    outgoing: bool = True


@dataclasses.dataclass
class Option:
    value: str = ""
    label: str = ""


def _named_option(options: list[Option], typed: str) -> str:
    """The slug of the one option that `typed` names: its list text, its label or its id ("" for none or several)."""
    want = fold(typed.strip())
    found = {o.value for o in options
             if want and (fold(o.label) == want or o.value == want or fold(o.label.rsplit(" (", 1)[0]) == want)}
    return found.pop() if len(found) == 1 else ""


class AdminTopicsPage(AdminPageMixin, mixin=True):
    """What the topic list and the topic editor share beyond every admin page's check: the admin's tenant, which
    every handler asks for first."""

    async def _admin_tenant(self, fresh: bool = False) -> Tenant | None:
        """The admin's tenant, or None (the page says "geen toegang" to a signed-in learner). Writes pass
        `fresh=True`: the role is checked with PocketBase right before the write."""
        user = await self._admin(fresh)
        return None if user is None else user.tenant


class AdminTopicListState(AdminTopicsPage, rx.State):
    """/admin/topics: the tenant's topics, searched, and deleting one."""

    query: str = ""
    rows: list[AdminTopicRow] = []
    total: int = 0
    _topics_cache: list = []
    _counts: dict[str, int] = {}
    _roots: dict[str, tuple[str, int]] = {}

    async def _refresh_rows(self, tenant: Tenant) -> None:
        store = services().kb
        topics, relations, roots = await asyncio.gather(asyncio.to_thread(store.topic_summaries, tenant),
                                                        asyncio.to_thread(store.relations, tenant),
                                                        asyncio.to_thread(services().documents.roots, tenant))
        counts: Counter[str] = Counter()
        for rel in relations:
            counts[rel.source] += 1
            counts[rel.target] += 1
        self._topics_cache = topics
        self._counts = dict(counts)
        self._roots = roots
        self.total = len(topics)
        await self._apply_rows()

    async def _apply_rows(self) -> None:
        found = await asyncio.to_thread(filter_topics, self._topics_cache, self.query)  # folds every topic: CPU
        self.rows = [
            AdminTopicRow(t.slug, t.label, t.type, TYPE_LABELS[t.type], self._counts.get(t.slug, 0),
                          *self._roots.get(t.slug, ("", 0)))
            for t in found[:500]
        ]

    @rx.event
    async def load_list(self):
        tenant = await self._admin_tenant()
        auth = await self.get_state(AuthState)  # "Documenten toevoegen" may send from this tab (an admin's only)
        await keep_permit(services().shared, self.router.session.client_token,
                          await auth.admin() if tenant is not None else None, services().settings.session_hours * 3600)
        if tenant is None:
            return
        self.loading = True
        self.load_error = ""
        try:
            await self._refresh_rows(tenant)
        except PBError as exc:
            log.error("loading the topics for the editor failed: %s", exc)
            self.load_error = msg("topics.load_failed")
        self.loading = False

    @rx.event
    async def set_query(self, value: str):
        self.query = value[:200]
        await self._apply_rows()

    @rx.event
    async def delete_topic(self, slug: str):
        tenant = await self._admin_tenant(fresh=True)
        if tenant is None:
            return rx.toast.error(msg("kb.refused"))
        row = next((r for r in self.rows if r.slug == slug), None)
        label = row.label if row else slug
        try:
            removed = await asyncio.to_thread(services().kb.delete_topic, tenant, slug)
        except KBError as exc:
            log.warning("deleting topic %s failed: %s", slug, exc)
            return rx.toast.error(exc.user_message)
        await self._refresh_rows(tenant)
        if row is not None and row.original:
            return rx.toast.success(msg("kb.document_deleted", label=label, count=row.sections,
                                        filename=row.original))
        if removed > 1:
            return rx.toast.success(msg("kb.topic_deleted_relations", label=label, count=removed))
        return rx.toast.success(msg("kb.topic_deleted_one_relation" if removed else "kb.topic_deleted", label=label))


class AdminTopicEditorState(AdminTopicsPage, rx.State):
    """/admin/topics/new and /admin/topics/[slug]: a topic's fields and relations, saved; a new topic may be drafted
    from a knowledge gap's questions (by the model, when there is one)."""

    is_new: bool = True
    from_gap: str = ""  # the knowledge gap this new topic is drafted from (/admin/topics/new?gap=...)
    drafting: bool = False  # the model is writing the gap's description and content
    model_drafted: bool = False  # they are the model's draft
    draft_note: str = ""  # why the draft is from the questions alone (no credits, the model failed)
    _gap_prefill: list[str] = ["", ""]  # the description and content as prefilled from the questions
    _draft_run: str = ""  # the model's draft that may still fill the form (a newer one or another page wins)
    found: bool = True
    saving: bool = False
    f_slug: str = ""  # a new topic's id as typed ("": the one its name gives, `auto_slug`); an existing topic's id
    f_label: str = ""
    f_type: str = "concept"
    f_description: str = ""
    f_content: str = ""
    _saved: list[str] = ["", "", "concept", "", ""]  # the form as last loaded or saved: what "unsaved" means
    field_errors: dict[str, str] = {}
    relation_rows: list[AdminRelationRow] = []
    topic_options: list[Option] = []
    r_type: str = "related_to"
    r_target: str = ""  # the slug the typed text names ("" while it names none)
    r_query: str = ""  # what is typed in the target field (its list offers "Label (slug)")
    relation_error: str = ""

    @rx.var
    def dirty(self) -> bool:
        """The form has changes that are not saved (the page warns before they are lost)."""
        return [self.f_slug, self.f_label, self.f_type, self.f_description, self.f_content] != self._saved

    def _mark_saved(self) -> None:
        self._saved = [self.f_slug, self.f_label, self.f_type, self.f_description, self.f_content]

    def _reset_form(self) -> None:
        self.f_slug = self.f_label = self.f_description = self.f_content = ""
        self.f_type = "concept"
        self._mark_saved()
        self.field_errors = {}
        self.relation_rows = []
        self.relation_error = ""
        self.saving = False
        self.from_gap, self.draft_note = "", ""
        self.drafting = self.model_drafted = False
        self._draft_run = ""

    async def _load_relations(self, tenant: Tenant, slug: str) -> None:
        store = services().kb
        topics, relations = await asyncio.gather(asyncio.to_thread(store.topic_summaries, tenant),
                                                 asyncio.to_thread(store.relations_of, tenant, slug))
        labels = {t.slug: t.label for t in topics}
        self.topic_options = [Option(t.slug, f"{t.label} ({t.slug})") for t in topics if t.slug != slug]
        rows = []
        for rel in relations:
            outgoing = rel.source == slug
            other = rel.target if outgoing else rel.source
            rows.append(
                AdminRelationRow(rel.source, rel.target, rel.type, RELATION_LABELS[rel.type], labels.get(other, other),
                                 outgoing)
            )
        self.relation_rows = rows

    @rx.event
    async def load_new(self):
        gap = str(self.router.page.params.get("gap", ""))
        if gap and gap == self.from_gap and self.drafting:  # the page's load again, while its draft is written
            return
        tenant = await self._admin_tenant()
        self._reset_form()
        self.is_new = True
        self.found = True
        self.loading = False
        if tenant is None:
            return
        if re.fullmatch(r"[0-9a-f]{12}", gap):  # "Onderwerp aanmaken" on /admin/gaps: prefilled from the group
            try:
                draft = await asyncio.to_thread(lambda: services().gaps.draft(tenant.id, gap))
            except PBError as exc:
                log.error("drafting a topic from gap %s failed: %s", gap, exc)
                draft = None
            if not draft:
                return rx.toast.info(msg("gaps.draft_missing"))
            self.f_label, self.f_slug, self.f_type = draft["label"], "", draft["type"]
            self.f_description, self.f_content = draft["description"], draft["content"]
            self.from_gap = gap
            self._gap_prefill = [draft["description"], draft["content"]]
            if services().llm is not None:  # with the model: its draft from the closest topics, in the background
                return self._start_draft()

    def _start_draft(self):
        self.drafting, self.draft_note = True, ""
        self._draft_run = uuid.uuid4().hex
        return AdminTopicEditorState.draft_with_model

    @rx.event(background=True)
    async def draft_with_model(self):
        """The model's description and content for the gap (chat/gap_draft.py), from its questions and closest
        topics. A field the admin changed while it wrote is kept; offline, out of credits or on a failure the
        draft from the questions stays, and the editor says why."""
        async with self:
            gap, run, prefill = self.from_gap, self._draft_run, list(self._gap_prefill)
            auth = await self.get_state(AuthState)
            user = await auth.admin(True)
        draft: dict[str, str] | None = None
        note, kept = "", False
        try:
            deps = await asyncio.to_thread(lambda: services().gap_draft)
            if user is not None and gap and deps is not None:
                draft = await model_draft(deps, user.tenant, user.id, gap)
        except QuotaExceeded:
            note = msg("gaps.draft_no_credits")
        except LLMError as exc:
            log.warning("the model's draft of gap %s failed: %s", gap, exc)
            note = msg("gaps.draft_failed", reason=exc.user_message)
        except (DraftRefused, LookupError, PBError) as exc:
            log.warning("the model's draft of gap %s is not usable: %s", gap, exc)
            note = msg("gaps.draft_failed", reason=msg("gaps.draft_unusable"))
        async with self:
            if self._draft_run != run:  # the admin went on to another page, or asked again
                return
            self.drafting = False
            self.draft_note = note
            if draft is None:
                return
            if self.f_description == prefill[0]:
                self.f_description = draft["description"]
            else:
                kept = True
            if self.f_content == prefill[1]:
                self.f_content = draft["content"]
            else:
                kept = True
            self.model_drafted = not kept
            if kept:
                self.draft_note = msg("gaps.draft_kept")
        if not kept:
            yield rx.toast.success(msg("gaps.drafted"))

    @rx.event
    async def retry_draft(self):
        """"Opnieuw proberen" after the model's draft failed."""
        if await self._admin_tenant(fresh=True) is None or not self.from_gap or self.drafting:
            return
        self._gap_prefill = [self.f_description, self.f_content]
        return self._start_draft()

    @rx.event
    async def load_edit(self):
        tenant = await self._admin_tenant()
        self._reset_form()
        self.is_new = False
        if tenant is None:
            return
        slug = str(self.router.page.params.get("slug", ""))
        self.loading = True
        topic = await asyncio.to_thread(services().kb.topic, tenant, slug)
        self.found = topic is not None
        if topic is not None:
            self.f_slug, self.f_label, self.f_type = topic.slug, topic.label, topic.type
            self.f_description, self.f_content = topic.description, topic.content
            self._mark_saved()
            await self._load_relations(tenant, slug)
        self.loading = False

    @rx.var
    def auto_slug(self) -> str:
        """The id a new topic gets from its name while none is typed: shown in the empty id field, never written
        into it (a value arriving from the server after the admin tabbed into the field was typed after)."""
        return slugify(self.f_label) if self.is_new else ""

    @rx.event
    def set_label(self, value: str):
        self.f_label = value

    @rx.event
    def set_slug(self, value: str):
        if self.is_new:
            self.f_slug = value.strip().lower()

    @rx.event
    def set_type(self, value: str):
        if value in TOPIC_TYPES:
            self.f_type = value

    @rx.event
    def set_description(self, value: str):
        self.f_description = value

    @rx.event
    def set_content(self, value: str):
        self.f_content = value

    @rx.event
    async def save(self):
        if self.saving or (not self.is_new and not self.dirty):  # a double-click saves once, with one outcome
            return
        tenant = await self._admin_tenant(fresh=True)
        if tenant is None:
            yield rx.toast.error(msg("kb.refused"))
            return
        self.saving = True
        self.field_errors = {}
        yield
        raw = {
            "id": self.f_slug or self.auto_slug,
            "label": self.f_label,
            "type": self.f_type,
            "description": self.f_description,
            "content": self.f_content,
        }
        store = services().kb
        try:
            if self.is_new:
                topic = await asyncio.to_thread(store.create_topic, tenant, raw)
            else:
                topic = await asyncio.to_thread(store.update_topic, tenant, self.f_slug, raw)
        except KBError as exc:
            self.saving = False
            self.field_errors = {issue.where.split(".")[-1]: issue.user_message for issue in exc.issues}
            yield rx.toast.error(exc.user_message)
            # the keyboard goes on at the first field to mend (it stayed on "Aanmaken")
            yield rx.call_script("setTimeout(() => document.querySelector('#topic-form [aria-invalid=\"true\"]')"
                                 "?.focus(), 50)")
            return
        self.saving = False
        self.f_slug = topic.slug
        self._mark_saved()
        if self.is_new:
            self.is_new = False  # a second click on "Aanmaken" must not create (and fail) again
            if self.from_gap:  # the gap links to the topic made for it
                auth = await self.get_state(AuthState)
                try:
                    gap_id, email = self.from_gap, auth.user_email
                    await asyncio.to_thread(lambda: services().gaps.decide(tenant.id, gap_id, "topic", topic.slug,
                                                                           email))
                except (PBError, ValueError) as exc:
                    log.error("linking gap %s to topic %s failed: %s", self.from_gap, topic.slug, exc)
                self.from_gap, self._draft_run, self.drafting = "", "", False  # a draft still on its way is dropped
            yield rx.redirect(f"/admin/topics/{topic.slug}")
            yield rx.toast.success(msg("kb.topic_created", label=topic.label))
        else:
            yield rx.toast.success(msg("kb.topic_saved", label=topic.label))

    @rx.event
    def set_r_type(self, value: str):
        if value in RELATION_TYPES:
            self.r_type = value

    @rx.event
    def set_r_target(self, value: str):
        self.r_target = value

    @rx.event
    async def set_r_query(self, text: str):
        """The target field: an option of its list ("Label (slug)"), or a topic's exact name or id as typed (matched
        in a thread: a tenant may have thousands of topics)."""
        self.r_query = str(text or "")[:300]
        self.r_target = await asyncio.to_thread(_named_option, self.topic_options, self.r_query)
        if self.r_target:
            self.relation_error = ""

    @rx.event
    async def add_relation(self):
        tenant = await self._admin_tenant(fresh=True)
        if tenant is None:
            return rx.toast.error(msg("kb.refused"))
        self.relation_error = ""
        if not self.r_target:
            self.relation_error = msg("kb.pick_target")
            return rx.set_focus("relation-target")
        try:
            await asyncio.to_thread(services().kb.add_relation, tenant,
                                    {"source": self.f_slug, "target": self.r_target, "type": self.r_type})
        except KBError as exc:
            self.relation_error = "; ".join(issue.user_message for issue in exc.issues) or exc.user_message
            return
        self.r_target = self.r_query = ""
        await self._load_relations(tenant, self.f_slug)
        return rx.toast.success(msg("kb.relation_added"))

    @rx.event
    async def remove_relation(self, source: str, target: str, rtype: str):
        tenant = await self._admin_tenant(fresh=True)
        if tenant is None:
            return rx.toast.error(msg("kb.refused"))
        try:
            await asyncio.to_thread(services().kb.delete_relation, tenant, Relation(source, target, rtype))
        except KBError as exc:
            log.warning("removing a relation of %s failed: %s", source, exc)
            return rx.toast.error(exc.user_message)
        await self._load_relations(tenant, self.f_slug)
        return rx.toast.success(msg("kb.relation_removed"))
