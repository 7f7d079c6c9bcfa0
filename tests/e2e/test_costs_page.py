"""`/admin/costs` in a real browser (issue 12): after a few chats the totals shown equal the stored cost
events, the charts are drawn, and the CSV export holds those events."""

import re
from datetime import UTC, datetime

import pytest
from playwright.sync_api import expect

from r42_app.core.messages import amount
from tests.e2e.conftest import sign_in
from tests.e2e.test_chat import ask, open_chat

USAGE = {"input_tokens": 2000, "output_tokens": 150, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 500}


def shown_number(page, selector) -> float:
    """A Dutch-formatted amount on the page ("$ 1.234,5678") as a number."""
    text = page.locator(selector).inner_text().replace("$", "").replace("\u00a0", "").strip()
    return float(text.replace(".", "").replace(",", "."))


def demo_events_this_month(pb):
    demo = pb.first("tenants", 'slug = "demo"')
    first = datetime.now(UTC).date().replace(day=1).isoformat() + " 00:00:00.000Z"
    return pb.all("ai_cost_events", filter=f'tenant = "{demo["id"]}" && created >= "{first}"')


def test_the_cost_page_shows_what_the_chats_cost(served_app, page, claude):
    pb = served_app.superuser()
    before = len(demo_events_this_month(pb))
    sign_in(page, served_app, "learner@example.com")
    open_chat(page)
    for i in range(3):
        claude.reply_text(f"Antwoord {i} [ref:1].", usage=USAGE)
        ask(page, f"Vraag {i} over de AOW?")
        expect(page.locator(".r42-assistant").last).to_contain_text(f"Antwoord {i}")
        expect(page.locator("#r42-send")).to_be_visible()
    for _ in range(80):  # the app backend persists the outbox within a second or two
        if len(demo_events_this_month(pb)) >= before + 3:
            break
        page.wait_for_timeout(250)
    events = demo_events_this_month(pb)
    assert len(events) >= before + 3

    admin = page.context.browser.new_context(viewport={"width": 1400, "height": 900}, accept_downloads=True).new_page()
    sign_in(admin, served_app, "admin@example.com", path="/admin/costs")
    expect(admin.locator("#cost-totals")).to_contain_text(f"{len(events)} kostenregels")
    # the page sums the daily rollup, the test the events: equal up to the rounding of the last digit shown
    spent = sum(e["cost_usd"] for e in events)
    assert shown_number(admin, "#cost-usd") == pytest.approx(spent, abs=1e-4 if spent < 1 else 5e-3)
    assert shown_number(admin, "#cost-credits-used") == pytest.approx(sum(e["credits"] for e in events), abs=0.01)
    tokens = sum(e[k] for e in events for k in ("input_tokens", "output_tokens", "cache_write_tokens",
                                                  "cache_read_tokens"))
    expect(admin.locator("#cost-tokens")).to_have_text(amount(tokens, 0))
    expect(admin.locator("#cost-per-day .recharts-bar-rectangle").first).to_be_visible()
    expect(admin.locator("#cost-capability-table")).to_contain_text("Antwoorden")
    expect(admin.locator("#cost-user-table")).to_contain_text("Lotte de Leerling")
    with admin.expect_download() as download:
        admin.click("#cost-export")
    lines = open(download.value.path(), encoding="utf-8").read().strip().splitlines()
    assert lines[0].startswith("created,turn_id,user") and len(lines) == len(events) + 1

    # issue 49: in a Dutch app, days the Dutch way in an English browser (Playwright's is en-US): the fields say
    # dd-mm-jjjj, the chart's axis "1 dec"; the two credit cards say what each counts (they do not add up)
    today = datetime.now(UTC).date()
    expect(admin.locator("#cost-since")).to_have_value(f"01-{today.month:02d}-{today.year}")
    expect(admin.locator("#cost-until")).to_have_value(f"{today.day:02d}-{today.month:02d}-{today.year}")
    ticks = admin.locator("#cost-per-day .recharts-xAxis-tick-labels text").all_text_contents()
    month = "jan feb mrt apr mei jun jul aug sep okt nov dec".split()[today.month - 1]
    assert ticks and all(re.fullmatch(rf"\d{{1,2}} {month}", t.strip()) for t in ticks), ticks
    amounts = admin.locator("#cost-per-day .recharts-yAxis-tick-labels text").all_text_contents()
    assert any("," in a for a in amounts) and not any(re.search(r"\d\.\d", a) for a in amounts), amounts  # 0,0015
    expect(admin.locator("#cost-totals")).to_contain_text("in deze periode")
    expect(admin.locator("#cost-totals")).to_contain_text("na al het verbruik en alle aanvullingen")
    admin.fill("#cost-since", f"1-{today.month}-{today.year}")  # day first, without leading zeros: understood
    admin.click("#cost-apply")
    expect(admin.locator("#cost-totals")).to_contain_text(f"{len(events)} kostenregels")
    expect(admin.get_by_role("alert")).to_have_count(0)
    admin.fill("#cost-since", f"12/31/{today.year}")  # the American way is no day: said so, nothing changes
    admin.click("#cost-apply")
    expect(admin.get_by_role("alert")).to_be_visible()
    expect(admin.locator("#cost-totals")).to_contain_text(f"{len(events)} kostenregels")


def test_the_rewrite_of_follow_up_questions_has_its_own_line(served_app, page):
    """R42_QUESTION_REWRITE's calls are paid as `chatbot:question_rewrite`: the costs page names them (its table,
    the chart's legend) instead of showing the raw key."""
    import uuid

    from r42_app.core.costs import Round, Usage
    from r42_app.services.store.costs import CostRecorder, PriceTable

    pb = served_app.superuser()
    demo = pb.first("tenants", 'slug = "demo"')
    learner = pb.first("users", 'email = "learner@example.com"')
    recorder = CostRecorder(pb, PriceTable.load())
    sign_in(page, served_app, "admin@example.com", path="/admin/costs")
    if not pb.all("ai_cost_events", filter=f'tenant = "{demo["id"]}" && source = "chatbot:question_rewrite"'):
        # no rewrite paid for (they are off by default, R42_QUESTION_REWRITE): the chart has no stack for them
        answer = recorder.events(f"answer-{uuid.uuid4().hex}", demo["id"], learner["id"], "claude-haiku-4-5",
                                 [Round(Usage(300, 20))])
        recorder.write_events([e.as_dict() for e in answer])
        page.reload()
        legend = page.locator("#cost-per-day .recharts-legend-wrapper")
        expect(legend).to_contain_text("Antwoorden")
        expect(legend).not_to_contain_text("Vervolgvragen begrijpen")
    events = recorder.events(f"rewrite-{uuid.uuid4().hex}", demo["id"], learner["id"], "claude-haiku-4-5",
                             [Round(Usage(300, 20), accounted="question_rewrite")])
    assert recorder.write_events([e.as_dict() for e in events])["written"] == 1
    page.reload()
    table = page.locator("#cost-capability-table")
    expect(table).to_contain_text("Vervolgvragen begrijpen")
    expect(table).not_to_contain_text("question_rewrite")
    expect(page.locator("#cost-per-day .recharts-legend-wrapper")).to_contain_text("Vervolgvragen begrijpen")
