"""/admin/gaps, "Kennishiaten" (issue 28): learners ask what the knowledge base cannot answer; the admin sees their
questions as one group, creates a topic from it in the prefilled editor; a new question like them is then
answered grounded, and the group shows "Opgelost". The page passes axe."""

import json
import time
import uuid
from contextlib import ExitStack

import httpx
import pytest
from playwright.sync_api import expect

from r42_app.services.store.kb_store import KBStore
from r42_app.services.store.seed import SEED_DIR
from tests.conftest import DEMO_PASSWORD, throwaway_user
from tests.e2e.conftest import settle, sign_in
from tests.e2e.test_a11y import violations

WORD = f"fietsenstalling{uuid.uuid4().hex[:4]}"  # a made-up word: this run's questions, none of another test's


def ask(served_app, claude, token, question):
    claude.reply_text("Daarover staat niets in de kennisbank.")
    resp = httpx.post(f"{served_app.url}/api/chat", headers={"Authorization": f"Bearer {token}"}, timeout=60,
                      json={"messages": [{"role": "user", "content": question}]})
    events = [json.loads(line[6:]) for line in resp.text.splitlines() if line.startswith("data: ")]
    assert resp.status_code == 200 and events[-1]["type"] == "done", resp.text
    return events[-1]


def logged(served_app, slug, count):
    """Wait until the tenant's question log holds `count` rows: turns queue theirs and the log writes them once a
    second, so a page opened right after the last answer may come before its row."""
    pb = served_app.superuser()
    tenant = pb.first("tenants", f'slug = "{slug}"')["id"]
    deadline = time.monotonic() + 30
    while len(pb.all("question_log", filter=f'tenant = "{tenant}"')) < count:
        assert time.monotonic() < deadline, f"the question log of {slug} never reached {count} rows"
        time.sleep(0.2)


def token_of(served_app, email):
    return httpx.post(f"{served_app.pb_url}/api/collections/users/auth-with-password",
                      json={"identity": email, "password": DEMO_PASSWORD}).json()["token"]


@pytest.fixture
def own_tenant(served_app):
    """A tenant of this test's own, with acme's knowledge base, an admin and two learners: (slug, admin e-mail,
    learner e-mails). The gaps page groups all of a tenant's unanswered questions, and the demo tenant holds every
    other test's (one about an association's logo once joined this test's group, on a worker that had run it)."""
    pb = served_app.superuser()
    slug = f"gaps-{uuid.uuid4().hex[:6]}"
    data = json.loads((SEED_DIR / "acme.json").read_text(encoding="utf-8"))
    KBStore(pb).import_document(slug, data, tenant_name="Gaten BV")
    settle(served_app)  # its knowledge base indexed: the closest topics come from the search
    with ExitStack() as users:
        admin, _ = users.enter_context(throwaway_user(pb, "admin", "Greet Gaten", "gaps-admin", slug))
        learners = [users.enter_context(throwaway_user(pb, "learner", f"Leerling {i}", "gaps", slug))[0]
                    for i in range(2)]
        yield slug, admin, learners


def test_unanswered_questions_become_a_topic_and_the_gap_is_resolved(served_app, browser, claude, own_tenant):
    slug_of_tenant, admin_email, learner_emails = own_tenant
    learners = [token_of(served_app, e) for e in learner_emails]
    questions = [f"Waar is de {WORD} voor medewerkers?", f"Hoe laat gaat de {WORD} dicht?",
                 f"Mag ik mijn fiets in de {WORD} zetten?"]
    for i, q in enumerate(questions):
        done = ask(served_app, claude, learners[i % 2], q)
        assert done["grounded"] is False  # nothing in its knowledge base about it
    logged(served_app, slug_of_tenant, 3)  # the page reads the log as it is when it opens

    ctx = browser.new_context(bypass_csp=True)  # axe is injected below
    admin = ctx.new_page()
    sign_in(admin, served_app, admin_email, path="/admin/gaps")
    admin.fill("#gaps-search", WORD)
    admin.click("#gaps-apply")
    card = admin.locator(".gap-row", has_text=WORD)
    expect(card).to_have_count(1, timeout=60_000)  # the three questions are one group
    expect(card.locator(".gap-examples li")).to_have_count(3)
    expect(card.locator(".gap-count")).to_contain_text("3")
    expect(card.locator(".gap-learners")).to_have_text("door minder dan 3 leerlingen")  # 2: no count (issue 44)
    expect(card.locator(".gap-status")).to_have_text("Open")
    closest = card.locator(".gap-closest")
    expect(closest.first).to_be_visible()
    tenant = served_app.superuser().first("tenants", f'slug = "{slug_of_tenant}"')
    names = {t["label"]: t["slug"] for t in served_app.superuser().all("topics", filter=f'tenant = "{tenant["id"]}"')}
    for chip in closest.all():  # the closest topics by name, each a link to its page
        assert chip.inner_text().strip() in names, chip.inner_text()
        assert chip.get_attribute("href").startswith(f"/topics/{names[chip.inner_text().strip()]}")
    found = violations(admin)
    assert found == [], "\n".join(found)

    claude.reply_tool("draft_topic", {"description": f"Waar de {WORD} is en wanneer hij sluit.",
                                      "content": f"## De {WORD}\n\nDe {WORD} is [aanvullen: waar en hoe laat]."})
    card.locator(".gap-create").click()
    expect(admin.locator("#topic-from-gap")).to_be_visible(timeout=30_000)
    label = admin.locator("#label").input_value()
    assert WORD in label.lower(), label  # the draft's name comes from the questions
    # with the model: its description and content, marked as a draft that names the topics it came from
    expect(admin.locator("#description")).to_have_value(f"Concept van R42: Waar de {WORD} is en wanneer hij sluit.",
                                                        timeout=30_000)
    content = admin.locator("#content").input_value()
    assert content.startswith("> **Concept van R42**") and content.endswith("[aanvullen: waar en hoe laat].")
    expect(admin.locator("#topic-from-gap")).to_contain_text("R42 schreef beschrijving en inhoud")
    expect(admin.locator("#gap-drafting")).to_have_count(0)
    drafted = [r["body"] for r in claude.requests if (r["body"].get("tools") or [{}])[0].get("name") == "draft_topic"]
    assert len(drafted) == 1 and all(q in drafted[0]["messages"][0]["content"] for q in questions)
    slug = f"{WORD}-info"
    admin.fill("#id", slug)
    admin.fill("#content", f"De {WORD} staat achter het kantoor. Medewerkers zetten hun fiets in de {WORD}; "
                           f"de {WORD} gaat om 19:00 uur dicht.")
    admin.click("#save-topic")
    admin.wait_for_url(f"**/admin/topics/{slug}", timeout=30_000)

    deadline = time.monotonic() + 120  # the app's indexer takes the new topic in
    while True:
        done = ask(served_app, claude, learners[0], f"Wanneer sluit de {WORD}?")
        if done["grounded"] or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert done["grounded"] is True

    card = admin.locator(".gap-row", has_text=WORD)
    for _ in range(10):  # the turn's row is written within a second of it (the log writes once a second)
        admin.goto(served_app.url + "/admin/gaps")
        admin.fill("#gaps-search", WORD)
        admin.click("#gaps-apply")
        expect(card.locator(".gap-status")).to_be_visible(timeout=30_000)
        if card.locator(".gap-status").inner_text().strip() == "Opgelost":
            break
        time.sleep(1)
    expect(card.locator(".gap-status")).to_have_text("Opgelost")
    expect(card).to_contain_text(slug)  # the gap links to the topic made for it
    expect(card.locator(".gap-create")).to_have_count(0)  # answered now: nothing left to make
    ctx.close()


def test_a_learner_gets_no_gaps_page(served_app, page):
    sign_in(page, served_app, "learner@example.com", path="/admin/gaps")
    expect(page.locator("#forbidden")).to_be_visible()
    expect(page.locator(".gap-row")).to_have_count(0)


def test_junk_is_no_gap_a_long_question_is_cut_with_its_whole_text_on_demand_and_the_chart_counts_the_list(
        served_app, browser, claude, own_tenant):
    """Issue 49: a 300-character "xxxx" question was a gap that ran past its card; an 8,000-character one named a
    group; the weekly chart counted every unanswered question while the list held its groups' questions."""
    slug, admin_email, learner_emails = own_tenant
    token = token_of(served_app, learner_emails[0])
    long = (f"Ik bouw in het weekend modelvliegtuigen van balsahout en vroeg me af of ik in de {WORD} een plekje "
            "mag gebruiken om de vleugels na het lakken te laten drogen, want thuis ruikt alles naar lak en mijn "
            "kat ligt steeds op het papier; of weet iemand een andere droge, stofvrije ruimte waar dat kan?")
    for question in ("x" * 300, long):
        assert ask(served_app, claude, token, question)["grounded"] is False
    logged(served_app, slug, 2)  # the page reads the log as it is when it opens

    page = browser.new_page()
    sign_in(page, served_app, admin_email, path="/admin/gaps")
    card = page.locator(".gap-row")
    expect(card).to_have_count(1, timeout=60_000)  # the long question's group; the x's are none
    expect(page.locator("#gaps-list")).not_to_contain_text("xxxxxxxx")
    shown = card.locator(".gap-question")
    expect(shown).to_have_count(1)
    assert shown.inner_text().endswith("…") and len(shown.inner_text()) <= 200
    assert len(card.locator(".gap-title").inner_text()) <= 90  # the group's name: a phrase, not the paragraph
    full = card.locator(".gap-full")
    expect(full).to_be_hidden()
    card.locator(".gap-full-toggle").focus()
    page.keyboard.press("Enter")  # "Hele vraag", by keyboard
    expect(full).to_have_text(long)
    box, inner = card.bounding_box(), full.bounding_box()
    assert inner["x"] + inner["width"] <= box["x"] + box["width"] + 1  # inside its card
    # the chart's bar of this week counts what the list counts: 1 question in a gap, of the 2 asked
    expect(page.locator("#gaps-weekly [role=listitem]").last).to_contain_text("1 vraag van 2 in een kennishiaat")
    page.close()
