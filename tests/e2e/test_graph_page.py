"""The `/graph` page in a real browser: the tenant's graph is drawn, search focuses a node, a click on
the canvas opens the side panel, "Vraag R42 hierover" prefills the chat, tenants stay apart."""

import re

from playwright.sync_api import expect

from tests.e2e.conftest import sign_in

COUNTS = re.compile(r"([\d.]+) onderwerpen · ([\d.]+) relaties")


def open_graph(page, served_app, email):
    sign_in(page, served_app, email, path="/graph")
    page.wait_for_function("() => window.__r42graph && window.__r42graph.ids().length > 0")


def graph_ids(page):
    return set(page.evaluate("window.__r42graph.ids()"))


def test_learner_sees_the_tenants_graph_with_legend_and_counts(served_app, page):
    open_graph(page, served_app, "learner@example.com")
    legend = page.locator("#graph-legend")
    for label in ("Concept", "Rol", "Proces"):
        expect(legend).to_contain_text(label)
    expect(legend).not_to_contain_text("Voorstel")  # learners do not see pending suggestions
    counts = COUNTS.search(page.locator("#graph-counts").inner_text())
    ids = graph_ids(page)
    assert counts and int(counts.group(1).replace('.', '')) == len(ids)
    assert {"pensioenregeling", "dekkingsgraad", "pensioenadministrateur"} <= ids
    links = page.evaluate("window.__r42graph.links()")
    assert ["indexatie", "depends_on", "dekkingsgraad", False] in links
    assert int(counts.group(2).replace('.', '')) == len(links)
    assert page.evaluate("window.__r42graph.pending()") == []


def test_search_focuses_a_node_and_opens_its_panel(served_app, page):
    open_graph(page, served_app, "learner@example.com")
    page.fill("#graph-search", "dekkings")
    expect(page.locator("#graph-hits")).to_contain_text("Dekkingsgraad")
    page.keyboard.press("Enter")
    panel = page.locator("#graph-panel")
    expect(panel.locator("#graph-panel-title")).to_have_text("Dekkingsgraad")
    expect(panel).to_contain_text("Concept")
    expect(panel.locator("#graph-panel-neighbours")).to_contain_text("Indexatie")
    expect(panel.locator("#graph-open-topic")).to_have_attribute("href", "/topics/dekkingsgraad")
    panel.get_by_role("button", name="Indexatie", exact=True).click()  # walk the graph from the panel
    expect(panel.locator("#graph-panel-title")).to_have_text("Indexatie")
    page.keyboard.press("Escape")  # keyboard users close the panel with Esc
    expect(panel).to_have_count(0)
    page.fill("#graph-search", "qqqq")
    expect(page.locator(".graph-hits")).to_contain_text("Geen onderwerp gevonden")


def test_clicking_a_node_on_the_canvas_opens_the_panel_and_ask_prefills_the_chat(served_app, page):
    open_graph(page, served_app, "learner@example.com")
    page.wait_for_function("() => window.__r42graph.settled()")
    page.evaluate("window.__r42graph.freeze()")
    page.wait_for_timeout(1200)  # let the first zoom-to-fit finish
    point = page.evaluate("window.__r42graph.screenOf('pensioenadministrateur')")
    page.mouse.move(point["x"], point["y"])  # as a person does: hover (the tooltip), then click
    expect(page.locator(".float-tooltip-kap")).to_contain_text("Pensioenadministrateur · Rol")
    page.mouse.click(point["x"], point["y"])
    panel = page.locator("#graph-panel")
    expect(panel.locator("#graph-panel-title")).to_have_text("Pensioenadministrateur")
    expect(panel).to_contain_text("deelnemersadministratie")  # the description
    expect(panel.locator(".graph-excerpt")).not_to_contain_text("**")  # markdown shown as text
    page.click("#graph-ask")
    expect(page.locator("#r42-window")).to_be_visible()
    expect(page.locator("#r42-input")).to_have_value(re.compile("Pensioenadministrateur"))


def test_tenants_see_only_their_own_graph(served_app, page):
    open_graph(page, served_app, "learner@acme.example")
    ids = graph_ids(page)
    assert {"magazijnveiligheid", "pensioenregeling"} <= ids
    assert not ids & {"dekkingsgraad", "aow", "pensioenadministrateur"}
    page.fill("#graph-search", "dekkingsgraad")
    expect(page.locator(".graph-hits")).to_contain_text("Geen onderwerp gevonden")
