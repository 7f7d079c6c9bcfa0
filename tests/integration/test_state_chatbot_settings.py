"""`/admin/chatbot` and the launcher's access check, driven as Reflex runs their handlers, against the
real PocketBase: who may open the page, edits saved in one go with their audit rows, a conflict
refused, the legacy conversion, the tenant default and the master switch."""


import pytest

from r42_app.core.capabilities import DATA_WRITE, DENY, KB_SEARCH
from r42_app.services.store.access import AccessStore
from r42_app.services.store.kb_store import KBStore
from r42_app.state.chat import ChatState
from r42_app.state.chatbot_settings import ChatbotSettingsState
from tests.conftest import throwaway_user
from tests.integration.test_state_guards import call, signed_in_root, substate

pytestmark = pytest.mark.anyio


@pytest.fixture
def demo(admin_pb, seeded, app_env):
    tenant = KBStore(admin_pb).require_tenant("demo")
    before = admin_pb.get("tenants", tenant.id)
    # the default of a new tenant (the seeded demo also has external_tools)
    admin_pb.update("tenants", tenant.id, {"chatbot_default_capabilities": ["qa_help", "kb_search", "data_write"]})
    yield tenant
    admin_pb.update("tenants", tenant.id, {"chatbot_enabled": before["chatbot_enabled"],
                                           "chatbot_default_capabilities": before["chatbot_default_capabilities"]})


@pytest.fixture
def learner(admin_pb, demo):
    """A throw-away learner of demo: (email, id)."""
    with throwaway_user(admin_pb, name="Zz Instelling", prefix="set") as (email, row):
        yield email, row["id"]


async def settings_page(email="admin@example.com"):
    page = substate(await signed_in_root(email), ChatbotSettingsState)
    await call(page, ChatbotSettingsState.load)
    return page


def row_of(page, email):
    return next(r for r in page.rows if r.email == email)


async def test_learners_get_no_access_to_the_settings(demo):
    page = await settings_page("learner@example.com")
    assert page.forbidden and page.rows == []
    emitted = await call(page, ChatbotSettingsState.switch, True)
    assert "Alleen beheerders" in str(emitted)


async def test_the_page_shows_every_user_and_the_demo_states(demo):
    page = await settings_page()
    assert not page.loading and page.load_error == "" and page.enabled
    assert page.default == ["qa_help", "kb_search", "data_write"]
    sanne, daan = row_of(page, "sanne@example.com"), row_of(page, "daan@example.com")
    assert sanne.legacy and sanne.effective == ["Vragen beantwoorden", "Zoeken in de kennisbank"]
    assert not daan.legacy and daan.data_write == "deny" and "Aanvullingen voorstellen" not in daan.effective
    await call(page, ChatbotSettingsState.set_query, "SANNE")
    assert [r.email for r in page.rows] == ["sanne@example.com"] and page.matching == 1


async def test_edits_are_saved_in_one_go_with_an_audit_row_each(demo, learner, admin_pb):
    email, user_id = learner
    page = await settings_page()
    await call(page, ChatbotSettingsState.change, user_id, DATA_WRITE, DENY)
    await call(page, ChatbotSettingsState.change, user_id, "not-a-capability", DENY)  # ignored
    row = row_of(page, email)
    assert row.changed and page.pending == 1 and "Aanvullingen voorstellen" not in row.effective
    assert admin_pb.all("chatbot_access", filter=f'user = "{user_id}"') == []  # nothing written before Save
    await call(page, ChatbotSettingsState.save)
    stored = admin_pb.first("chatbot_access", f'user = "{user_id}"')
    assert stored["overrides"]["data_write"] == "deny" and stored["capability_scopes"] == ["qa_help", "kb_search"]
    assert page.pending == 0 and any(c.target == email and c.actor == "admin@example.com" for c in page.changes)
    [mine] = [c for c in page.changes if c.target == email]  # said in the page's words, not as stored keys
    assert mine.what == "Aanvullingen voorstellen: Standaard → Weigeren"
    assert mine.after == "Vragen beantwoorden, Zoeken in de kennisbank"


async def test_a_row_changed_meanwhile_is_not_overwritten(demo, learner, admin_pb):
    email, user_id = learner
    page = await settings_page()
    AccessStore(admin_pb).set_override(demo, user_id, KB_SEARCH, DENY, "", "cli")  # someone else, meanwhile
    await call(page, ChatbotSettingsState.change, user_id, DATA_WRITE, DENY)
    emitted = await call(page, ChatbotSettingsState.save)
    assert "intussen" in str(emitted)
    stored = admin_pb.first("chatbot_access", f'user = "{user_id}"')
    assert stored["overrides"]["kb_search"] == "deny" and stored["overrides"]["data_write"] == "inherit"


async def test_convert_keeps_the_effective_set(demo, learner, admin_pb):
    email, user_id = learner
    admin_pb.create("chatbot_access", {"tenant": demo.id, "user": user_id, "capability_scopes": ["qa_help"],
                                       "overrides": None})
    page = await settings_page()
    before = row_of(page, email)
    assert before.legacy and before.effective == ["Vragen beantwoorden"]
    await call(page, ChatbotSettingsState.convert, user_id)
    after = row_of(page, email)
    assert not after.legacy and after.effective == before.effective
    assert after.kb_search == "deny" and after.data_write == "deny" and after.qa_help == "inherit"


async def test_the_default_and_the_master_switch_reach_the_launcher(demo, learner, admin_pb):
    email, _user_id = learner
    page = await settings_page()
    launcher = substate(await signed_in_root(email), ChatState)
    await call(launcher, ChatState.check_access)
    assert launcher.availability == "" and "Aanvullingen voorstellen" in launcher.my_capabilities

    await call(page, ChatbotSettingsState.toggle_default, DATA_WRITE, False)
    assert page.default == ["qa_help", "kb_search"]
    await call(launcher, ChatState.check_access)
    assert "Aanvullingen voorstellen" not in launcher.my_capabilities

    await call(page, ChatbotSettingsState.switch, False)  # asks first
    assert page.confirm_off and page.enabled
    await call(page, ChatbotSettingsState.confirm_switch_off)
    assert not page.enabled and not admin_pb.get("tenants", demo.id)["chatbot_enabled"]
    await call(launcher, ChatState.check_access)
    assert launcher.availability == "disabled"
    whats = [c.what for c in page.changes[:2]]
    assert whats == ["R42 aan/uit", "standaard voor de organisatie"]
