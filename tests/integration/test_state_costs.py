"""`/admin/costs` driven as Reflex runs its handlers, against the real PocketBase: learners are refused,
a range is checked, and an admin's top-up is written and audited."""

import pytest

from r42_app.core.messages import amount
from r42_app.state.costs import CostsState, usd
from tests.integration.test_state_guards import call, signed_in_root, substate

pytestmark = pytest.mark.anyio


@pytest.fixture
def demo(admin_pb, seeded, app_env):
    row = admin_pb.first("tenants", 'slug = "demo"')
    yield row
    admin_pb.update("tenants", row["id"], {"credits": row["credits"]})


async def costs_page(email="admin@example.com"):
    page = substate(await signed_in_root(email), CostsState)
    await call(page, CostsState.load)
    return page


async def test_learners_are_refused(demo):
    page = await costs_page("learner@example.com")
    assert page.forbidden and page.total_usd == ""
    page.add_amount = "1000000"
    emitted = await call(page, CostsState.add_credits)
    assert "Alleen beheerders" in str(emitted)


async def test_an_admin_tops_up_and_it_is_audited(demo, admin_pb):
    page = await costs_page()
    assert not page.loading and page.load_error == "" and page.since.endswith("-01")
    await call(page, CostsState.set_add_amount, "twaalf")
    await call(page, CostsState.add_credits)
    assert "Vul een aantal credits in" in page.amount_error  # under the field (a toast was gone before it was read)
    await call(page, CostsState.set_add_amount, "2500,5")
    assert page.amount_error == "" and not page.taking_off
    await call(page, CostsState.add_credits)
    assert admin_pb.get("tenants", demo["id"])["credits"] == pytest.approx(demo["credits"] + 2500.5)
    assert page.credits_left == amount(demo["credits"] + 2500.5)
    audit = admin_pb.all("audit_log", filter='tool = "credits.change"', sort="-created")[0]
    assert audit["arguments"]["actor"] == "admin@example.com" and audit["arguments"]["what"] == "add 2500.5"
    # nothing to add is refused, not "0 credits toegevoegd"; taking off says so, not "added … can answer again"
    await call(page, CostsState.set_add_amount, "0")
    await call(page, CostsState.add_credits)
    assert "Vul een aantal credits in" in page.amount_error
    assert admin_pb.get("tenants", demo["id"])["credits"] == pytest.approx(demo["credits"] + 2500.5)
    await call(page, CostsState.set_add_amount, "-500")
    assert page.taking_off  # the button reads "Afschrijven" before it is pressed
    said = str(await call(page, CostsState.add_credits))
    assert f"{amount(500)} credits afgeschreven" in said and "toegevoegd" not in said
    assert admin_pb.get("tenants", demo["id"])["credits"] == pytest.approx(demo["credits"] + 2000.5)


async def test_a_backwards_range_is_refused_with_a_message(demo):
    page = await costs_page()
    shown = page.total_usd
    await call(page, CostsState.set_range, {"since": "2026-11-30", "until": "2026-11-01"})
    assert "begindatum" in page.range_error and page.total_usd == shown
    await call(page, CostsState.set_range, {"since": "2020-01-01", "until": "2020-01-31"})
    assert page.range_error == "" and page.events == 0 and page.total_usd == usd(0.0) and len(page.per_day) == 31
