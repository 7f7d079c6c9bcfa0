"""The `/graph` page in a real browser: the tenant's graph is drawn, search focuses a node, a click on
the canvas opens the side panel, "Vraag R42 hierover" prefills the chat, tenants stay apart."""

import re
from collections import Counter

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


LABELS_APART = """() => {
  const boxes = window.__r42graph.labels();
  const over = [];
  boxes.forEach((a, i) => boxes.slice(i + 1).forEach((b) => {
    // the boxes include 3 px of room on each side: overlapping by less is only that room touching
    if (a.left + 3 < b.right - 3 && b.left + 3 < a.right - 3 && a.top + 3 < b.bottom - 3 && b.top + 3 < a.bottom - 3)
      over.push([a.id, b.id]);
  }));
  const canvas = document.querySelector('.r42-graph-canvas canvas').getBoundingClientRect();
  const cut = boxes.filter((b) => b.left + 3 < canvas.left - 1 || b.right - 3 > canvas.right + 1
                                  || b.bottom - 3 > canvas.bottom + 1).map((b) => b.id);
  const relations = boxes.filter((b) => b.kind === 'relation').map((b) => b.id);
  return {ids: boxes.filter((b) => b.kind === 'topic').map((b) => b.id), relations, over, cut};
}"""


def test_topic_names_are_drawn_without_one_over_another_also_on_a_phone(served_app, browser):
    """The canvas names topics at any zoom, the best-connected first, and only where a name covers no other
    (at 1400 px names overlapped; at 390 px none were drawn until one zoomed in). A selected topic and its
    neighbours are named first, then its relations, whose names cover no topic's (they were drawn over them)."""
    for viewport in ({"width": 1400, "height": 900}, {"width": 390, "height": 844}):
        ctx = browser.new_context(viewport=viewport)
        page = ctx.new_page()
        open_graph(page, served_app, "learner@example.com")
        page.wait_for_function("() => window.__r42graph.settled()")
        page.wait_for_timeout(1500)  # past the first automatic fit
        page.wait_for_function("() => window.__r42graph.labels().length > 0")
        drawn = page.evaluate(LABELS_APART)
        assert drawn["over"] == [] and drawn["cut"] == [], drawn  # none over another, none cut off at an edge
        assert len(drawn["ids"]) >= (12 if viewport["width"] > 1000 else 4), drawn
        degree = Counter(end for s, _, t, _ in page.evaluate("window.__r42graph.links()") for end in (s, t))
        assert degree.most_common(1)[0][0] in drawn["ids"]  # the best-connected topic is named
        page.fill("#graph-search", "dekkings")
        expect(page.locator("#graph-hits")).to_contain_text("Dekkingsgraad")
        page.keyboard.press("Enter")  # selects Dekkingsgraad: its name and its neighbours' come first
        expect(page.locator("#graph-panel-title")).to_have_text("Dekkingsgraad")
        page.wait_for_timeout(1000)  # past the move to the topic (0.5 s)
        page.wait_for_function("() => (window.__r42graph.labels()[0] || {}).id === 'dekkingsgraad'")
        drawn = page.evaluate(LABELS_APART)
        assert drawn["over"] == [] and drawn["cut"] == [], drawn  # the names of its relations among them
        assert any("dekkingsgraad" in r.split(">") for r in drawn["relations"]), drawn
        ctx.close()


COUNT_FRAMES = """(() => {
  window.__frames = 0;
  const request = window.requestAnimationFrame.bind(window);
  window.requestAnimationFrame = (callback) => { window.__frames += 1; return request(callback); };
})()"""


def test_an_idle_graph_stops_drawing_and_wakes_for_the_reader_and_live_updates(served_app, browser):
    """An admin keeps the live graph open all day: once the layout has settled and nobody touches it, the canvas
    asks for no frames (it drew 60 a second, about 8% of a core, for as long as the tab was open). A hover, the
    wheel and a topic written elsewhere still show at once."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 900}, locale="nl-NL")
    ctx.add_init_script(COUNT_FRAMES)
    page = ctx.new_page()
    pb = served_app.superuser()
    demo = pb.first("tenants", 'slug = "demo"')
    made = None
    try:
        open_graph(page, served_app, "admin@example.com")
        page.wait_for_function("() => window.__r42graph.settled() && !window.__r42graph.drawing()", timeout=30_000)
        before = page.evaluate("window.__frames")
        page.wait_for_timeout(2000)
        assert page.evaluate("window.__frames") - before <= 2  # at 60 frames a second this was 120

        # a hover wakes it: the tooltip, and the hovered topic's name is drawn first
        point = page.evaluate("window.__r42graph.screenOf('pensioenadministrateur')")
        page.mouse.move(point["x"], point["y"])
        expect(page.locator(".float-tooltip-kap")).to_contain_text("Pensioenadministrateur · Rol")
        page.wait_for_function("() => (window.__r42graph.labels()[0] || {}).id === 'pensioenadministrateur'")
        page.mouse.move(5, 5)
        page.wait_for_function("() => !window.__r42graph.drawing()", timeout=15_000)

        # the wheel, with the pointer resting on the canvas, zooms the picture itself, not only the numbers
        canvas = page.locator(".r42-graph-canvas canvas")
        box = canvas.bounding_box()
        page.mouse.move(box["x"] + box["width"] * 0.45, box["y"] + box["height"] * 0.55)
        page.wait_for_function("() => !window.__r42graph.drawing()", timeout=15_000)
        shot = canvas.screenshot()
        page.mouse.wheel(0, -400)
        page.wait_for_timeout(500)
        changed = canvas.screenshot() != shot
        assert changed, "the wheel zoomed, but the canvas was not redrawn"
        page.wait_for_function("() => !window.__r42graph.drawing()", timeout=15_000)

        # a topic written elsewhere appears while the page sat idle: the canvas wakes and lays it out
        frames = page.evaluate("window.__frames")
        made = pb.create("topics", {"tenant": demo["id"], "slug": "stil-nieuw", "label": "Stil nieuw onderwerp",
                                    "type": "concept", "description": "Verschijnt terwijl de pagina stil staat.",
                                    "content": "Gewone uitleg."})
        page.wait_for_function("() => window.__r42graph.ids().includes('stil-nieuw')", timeout=30_000)
        page.wait_for_function(f"() => window.__frames > {frames} + 10")
        page.wait_for_function("() => !window.__r42graph.drawing()", timeout=30_000)  # and then rests again
    finally:
        if made:
            pb.delete("topics", made["id"])
        ctx.close()


UNDER_COVERS = """(id) => {
  const covers = Array.from(document.querySelectorAll('[data-covers-graph]')).map((el) => el.getBoundingClientRect());
  const inside = (x, y) => covers.some((r) => x > r.left && x < r.right && y > r.top && y < r.bottom);
  const point = window.__r42graph.screenOf(id);
  const names = window.__r42graph.labels().filter((b) => covers.some((r) =>
    b.left + 3 < r.right && r.left < b.right - 3 && b.top + 3 < r.bottom && r.top < b.bottom - 3)).map((b) => b.id);
  return {covered: point === null || inside(point.x, point.y), names};
}"""


def test_on_a_phone_a_tapped_topic_glides_out_from_under_its_panel_and_no_name_hides_under_a_panel(
        served_app, browser):
    """390 px: the side panel covers the lower half of the graph. A topic tapped there used to vanish under its own
    panel with its neighbours; it now moves into the part of the view left free, named, and no name is drawn
    under the search card or the panel (one that could not be read took the place of one that could)."""
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True, locale="nl-NL")
    page = ctx.new_page()
    try:
        open_graph(page, served_app, "learner@example.com")
        page.wait_for_function("() => window.__r42graph.settled() && !window.__r42graph.drawing()", timeout=30_000)
        assert page.evaluate(UNDER_COVERS, "aow")["names"] == []
        points = page.evaluate("() => Object.fromEntries(window.__r42graph.ids().map((id) => "
                               "[id, window.__r42graph.screenOf(id)]))")
        # the lowest topic on screen, well inside the canvas: where the panel opens
        topic, point = max(((i, p) for i, p in points.items() if p and 30 < p["x"] < 360 and p["y"] < 740),
                           key=lambda item: item[1]["y"])
        page.touchscreen.tap(point["x"], point["y"])
        expect(page.locator("#graph-panel-title")).to_be_visible()
        panel = page.locator("#graph-panel").bounding_box()
        assert panel["y"] < point["y"] < panel["y"] + panel["height"], "the tapped topic was not under the panel"
        page.wait_for_function(f"() => !({UNDER_COVERS})('{topic}').covered", timeout=10_000)
        page.wait_for_function(f"() => window.__r42graph.labels().some((b) => b.id === '{topic}')")
        page.wait_for_function("() => !window.__r42graph.drawing()", timeout=15_000)
        assert page.evaluate(UNDER_COVERS, topic) == {"covered": False, "names": []}
    finally:
        ctx.close()
