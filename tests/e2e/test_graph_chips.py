"""Proposed graph edits in the chat window: learner Yes queues a suggestion, admin Yes applies at
once, an invalid proposal shows no chip. The server decides by role."""


from playwright.sync_api import expect

from r42_app.core.messages import msg
from tests.e2e.conftest import sign_in
from tests.e2e.test_chat import ask, open_chat


def proposal(tid):
    return {"reason": "Dit onderwerp ontbreekt nog.",
            "topics": [{"id": tid, "label": tid.replace("-", " ").title(), "type": "concept",
                        "description": "Voorgesteld door R42 in een test."}],
            "relations": [{"source": tid, "target": "nabestaandenpensioen", "type": "part_of"}]}


def open_graph_tab(ctx, served_app):
    """A second tab of a signed-in context on /graph, marked so a reload would be noticed."""
    tab = ctx.new_page()
    tab.goto(served_app.url + "/graph")
    tab.wait_for_function("() => window.__r42graph && window.__r42graph.ids().length > 0")
    tab.evaluate("window.__notReloaded = true")
    return tab


def test_learner_yes_queues_suggestion_not_write(served_app, page, claude):
    claude.reply_tool("propose_graph_delta", proposal("chip-learner"))
    claude.reply_text("Ik stel een aanvulling voor.")
    sign_in(page, served_app, "learner@example.com")
    open_chat(page)
    ask(page, "Mist er iets over wezen?")
    chip = page.locator(".r42-delta").last
    expect(chip).to_contain_text("Nieuw onderwerp: Chip Learner (Concept)")
    expect(chip).to_contain_text("Chip Learner → is onderdeel van → Nabestaandenpensioen")  # the label, not the id
    chip.locator(".r42-delta-yes").click()
    expect(chip).to_contain_text("Voorgelegd aan de beheerders")
    expect(chip.locator(".r42-delta-yes")).to_have_count(0)  # answered once
    pb = served_app.superuser()
    rows = pb.all("suggestions", filter='status = "pending"')
    assert [r["delta"]["topics"][0]["id"] for r in rows] == ["chip-learner"]
    assert pb.first("topics", 'slug = "chip-learner"') is None  # nothing written to the KB
    page.reload()
    open_chat(page)
    expect(page.locator(".r42-delta").last).to_contain_text("Voorgelegd aan de beheerders")


def test_admin_yes_applies_at_once(served_app, page, claude):
    claude.reply_tool("propose_graph_delta", proposal("chip-admin"))
    claude.reply_text("Voorstel gedaan.")
    sign_in(page, served_app, "admin@example.com")
    open_chat(page)
    ask(page, "Voeg iets toe")
    chip = page.locator(".r42-delta").last
    chip.locator(".r42-delta-yes").click()
    expect(chip).to_contain_text("Toegevoegd")
    page.goto(served_app.url + "/topics/chip-admin")
    expect(page.locator("#topic-title")).to_have_text("Chip Admin")
    expect(page.locator("#relations")).to_contain_text("Nabestaandenpensioen")


def test_invalid_proposal_shows_no_chip(served_app, page, claude):
    claude.reply_tool("propose_graph_delta", {"reason": "x", "topics": [], "relations": [
        {"source": "aow", "target": "aow", "type": "related_to"}]})
    claude.reply_text("Dat lukte niet.")
    sign_in(page, served_app, "learner@example.com")
    open_chat(page)
    ask(page, "Voeg een relatie toe")
    expect(page.locator(".r42-notice").last).to_have_text(msg("delta.unusable"))
    expect(page.locator(".r42-assistant").last).to_contain_text("Dat lukte niet.")
    expect(page.locator(".r42-delta")).to_have_count(0)


def test_learner_suggestion_reaches_the_admin_queue_and_approval_applies(served_app, browser, claude):
    learner_ctx, admin_ctx = browser.new_context(), browser.new_context()
    learner, admin = learner_ctx.new_page(), admin_ctx.new_page()
    sign_in(admin, served_app, "admin@example.com", path="/admin/suggestions")  # open before the suggestion exists
    expect(admin.locator("#suggestion-filter")).to_be_visible()
    admin_graph, learner_graph = open_graph_tab(admin_ctx, served_app), None
    claude.reply_tool("propose_graph_delta", proposal("chip-queue"))
    claude.reply_text("Voorstel gedaan.")
    sign_in(learner, served_app, "learner@example.com")
    open_chat(learner)
    ask(learner, "Kan dit erbij?")
    learner_graph = open_graph_tab(learner_ctx, served_app)
    learner.locator(".r42-delta").last.locator(".r42-delta-yes").click()
    expect(learner.locator(".r42-delta").last).to_contain_text("Voorgelegd aan de beheerders")
    # the admin's open graph shows the suggestion as a dashed node, the learner's graph does not
    admin_graph.wait_for_function("() => window.__r42graph.pending().includes('chip-queue')")
    assert "chip-queue" not in learner_graph.evaluate("window.__r42graph.ids()")

    card = admin.locator(".suggestion", has_text="Chip Queue")
    expect(card).to_contain_text("Lotte de Leerling")  # appeared without a reload
    expect(card).to_contain_text("Nieuw onderwerp: Chip Queue (Concept)")
    card.locator(".approve-suggestion").click()
    expect(admin.locator(".suggestion", has_text="Chip Queue")).to_have_count(0)  # left the open list
    # the new node appears on the open graph pages, without a reload
    learner_graph.wait_for_function("() => window.__r42graph.ids().includes('chip-queue')")
    assert learner_graph.evaluate("window.__notReloaded") is True
    learner_graph.fill("#graph-search", "chip queue")
    expect(learner_graph.locator("#graph-hits")).to_contain_text("Chip Queue")
    admin_graph.wait_for_function("() => !window.__r42graph.pending().includes('chip-queue')")
    assert "chip-queue" in admin_graph.evaluate("window.__r42graph.ids()")
    assert admin_graph.evaluate("window.__notReloaded") is True
    admin.locator("#suggestion-filter").get_by_role("radio", name="Goedgekeurd").click()
    expect(admin.locator(".suggestion", has_text="Chip Queue")).to_contain_text("Goedgekeurd door Anton Admin")
    admin.goto(served_app.url + "/topics/chip-queue")
    expect(admin.locator("#topic-title")).to_have_text("Chip Queue")
    learner.goto(served_app.url + "/admin/suggestions")
    expect(learner.locator("#forbidden")).to_be_visible()
    learner_ctx.close()
    admin_ctx.close()
