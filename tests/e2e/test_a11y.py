"""WCAG 2.1 AA (issue 25): axe-core finds nothing on the pages, at desktop and phone size, for learners and admins;
and a keyboard alone signs in, skips to the content and creates a topic."""

from __future__ import annotations

import secrets

import pytest
from playwright.sync_api import expect

from tests.conftest import DEMO_PASSWORD
from tests.e2e.conftest import ROOT, end_active_quizzes, sign_in, wait_for_mcp_servers

# axe-core from the npm registry, pinned in the Makefile (`make test-deps`).
AXE = ROOT / "tools" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
# Nothing is left out: the chat window's and the quiz's states are scanned by their own tests below.
EXCLUDED: list[str] = []

VIEWPORTS = {"desktop": {"width": 1400, "height": 900}, "phone": {"width": 390, "height": 844}}
LEARNER_PAGES = ["/", "/topics/aow", "/graph", "/testen"]
ADMIN_PAGES = ["/admin/topics", "/admin/topics/new", "/admin/topics/aow", "/admin/suggestions", "/admin/feedback",
               "/admin/chatbot", "/admin/costs", "/admin/tools", "/admin/gaps", "/admin/people"]


@pytest.fixture(params=list(VIEWPORTS))
def scan_page(request, browser):
    """A page whose context may inject axe (the app's CSP allows no inline script)."""
    if not AXE.exists():
        pytest.fail(f"{AXE} is missing: `make test-deps` installs axe-core from the npm registry")
    ctx = browser.new_context(viewport=VIEWPORTS[request.param], locale="nl-NL", bypass_csp=True,
                              is_mobile=request.param == "phone", has_touch=request.param == "phone")
    ctx.set_default_timeout(20_000)
    yield ctx.new_page()
    ctx.close()


def settle(page, *, still: bool = True) -> None:
    """Wait until the page has loaded its data (no skeletons, no spinner checking the session; `still=False`
    while R42 answers, whose spinner turns on purpose)."""
    page.wait_for_load_state("networkidle")
    if still:
        page.wait_for_function("!document.querySelector('[aria-busy=\"true\"]:not(#r42-window *)')")
    # and until nothing fades in any more (a dialog measured mid-fade has the contrast of half its colour); a
    # spinner turns for ever
    page.wait_for_function("document.getAnimations().every((a) => a.playState !== 'running'"
                           " || a.effect.getTiming().iterations === Infinity)")


def violations(page, *, still: bool = True) -> list[str]:
    """axe-core's WCAG 2.0/2.1 A and AA violations on the page, one line per element. `still=False` scans
    mid-stream or while a tool waits for a yes, R42's spinner turning."""
    settle(page, still=still)
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    found = page.evaluate(
        """async ([exclude, tags]) => {
             const present = exclude.filter((s) => document.querySelector(s));
             const r = await axe.run({exclude: present.map((s) => [s])}, {runOnly: {type: 'tag', values: tags}});
             return r.violations.flatMap((v) => v.nodes.map(
               (n) => `${v.id}: ${n.target.join(' ')} ${n.html.slice(0, 160)}`));
           }""",
        [EXCLUDED, WCAG_AA],
    )
    # and one main heading: a screen reader's list of headings starts at the page's, its sections under it (a
    # section titled as a second <h1> read as a page of its own); the chat window and an open dialog (a modal
    # context, named by its own title) have their own
    ones = page.evaluate("[...document.querySelectorAll('h1')].filter((h) => !h.closest('#r42-window,"
                         " [role=dialog], [role=alertdialog]') && h.getClientRects().length)"
                         ".map((h) => h.textContent.slice(0, 40))")
    if len(ones) != 1:
        found.append(f"one-h1: {len(ones)} <h1> on the page {ones}")
    # and an open modal holds the focus (an on_click on a Radix dialog's cancel button once broke its autofocus,
    # and Tab walked the page behind it)
    outside = page.evaluate("(() => { const d = document.querySelector('[role=alertdialog], "
                            "[role=dialog]:not(#r42-window)'); return d && !d.contains(document.activeElement)"
                            " ? d.textContent.slice(0, 40) : ''; })()")
    if outside:
        found.append(f"modal-focus: the focus is outside the open dialog '{outside}'")
    return [f"{page.url}: {line}" for line in found]


def test_the_sign_in_page_passes_axe(served_app, scan_page):
    scan_page.goto(served_app.url + "/")
    expect(scan_page.locator("#sign-in-card")).to_be_visible()
    found = violations(scan_page)
    # and the pages a signed-out person reaches from it or from a link (issue 46)
    scan_page.goto(served_app.url + "/wachtwoord-vergeten")
    expect(scan_page.locator("#forgot-card")).to_be_visible()
    found += violations(scan_page)
    scan_page.goto(served_app.url + "/welkom?token=" + "x" * 43)
    expect(scan_page.locator("#link-card")).to_contain_text("Deze link werkt niet")
    found += violations(scan_page)
    # the card for an address whose organisation signs in through its own provider (issue 48; the card asks no
    # provider anything, so one that is not running will do)
    from r42_app.services.store.sso import SsoStore
    from r42_app.services.store.tenants import Tenants

    tag = f"{scan_page.viewport_size['width']}-{secrets.token_hex(2)}"
    tenant = Tenants(served_app.superuser()).create(f"axe-sso-{tag}", "Axe Academie")
    SsoStore(served_app.superuser(), loopback_ok=True).set(tenant, "", "cli", "http://127.0.0.1:9", "r42", "geheim",
                                         [f"axe-{tag}.nl"])
    scan_page.goto(served_app.url + "/")
    scan_page.fill("#email", f"iemand@axe-{tag}.nl")
    scan_page.keyboard.press("Tab")
    expect(scan_page.locator("#sso-hint")).to_be_visible()
    found += violations(scan_page)
    assert found == [], "\n".join(found)


def test_the_invitation_page_and_the_people_dialogs_pass_axe(served_app, scan_page):
    """The password form of an invitation link, /admin/people's invite and import dialogs and its question before a
    role changes, /admin/chatbot's before R42 is switched off and /admin/topics' before a topic is deleted."""
    from r42_app.services.adapters.mailer import Mailer
    from r42_app.services.store.people import Actor, People
    from r42_app.services.store.tenants import Tenants

    pb = served_app.superuser()
    demo = Tenants(pb).get("demo")
    link = People(pb, Mailer(), served_app.url).invite(demo, Actor.cli(), f"axe-{demo.id[:6]}-"
                                                       f"{scan_page.viewport_size['width']}@example.com", "Axe Test")
    try:
        scan_page.goto(link.url)
        expect(scan_page.locator("#new-password")).to_be_visible()
        found = violations(scan_page)
        sign_in(scan_page, served_app, "admin@example.com", path="/admin/people")
        expect(scan_page.locator("#people-table")).to_be_visible()
        scan_page.click("#people-invite-open")
        expect(scan_page.locator("#invite-email")).to_be_visible()
        found += violations(scan_page)
        scan_page.keyboard.press("Escape")
        expect(scan_page.get_by_role("dialog")).to_have_count(0)  # (its server closes it: it holds the focus till then)
        scan_page.click("#people-import-open")
        expect(scan_page.locator(".csv-drop")).to_be_visible()
        found += violations(scan_page)
        scan_page.keyboard.press("Escape")
        expect(scan_page.get_by_role("dialog")).to_have_count(0)  # text typed before then went nowhere (f64)
        # the question before a role changes (the learner made an admin), and before R42 is switched off
        scan_page.fill("#people-search", link.person.email)  # the invited person of this test: one row
        expect(scan_page.locator(".person-row")).to_have_count(1)
        settle(scan_page)  # the search has answered: a list drawn again under an open list of roles closes it
        scan_page.locator(f'.person-row[data-email="{link.person.email}"] .person-role').click()
        scan_page.get_by_role("option", name="Beheerder").click()
        expect(scan_page.get_by_role("alertdialog")).to_contain_text("beheerder maken?")
        found += violations(scan_page)
        scan_page.keyboard.press("Escape")
        scan_page.goto(served_app.url + "/admin/chatbot")
        scan_page.click("#chatbot-enabled")
        expect(scan_page.get_by_role("alertdialog")).to_contain_text("R42 uitzetten?")
        found += violations(scan_page)
        scan_page.keyboard.press("Escape")
        expect(scan_page.locator("#chatbot-enabled")).to_have_attribute("aria-checked", "true")
        # and the question before a topic is deleted
        scan_page.goto(served_app.url + "/admin/topics")
        scan_page.get_by_role("button", name="Verwijder AOW").first.click()
        expect(scan_page.get_by_role("alertdialog")).to_contain_text("Onderwerp verwijderen?")
        found += violations(scan_page)
        scan_page.keyboard.press("Escape")
        expect(scan_page.get_by_role("alertdialog")).to_have_count(0)
    finally:
        pb.delete("users", link.person.id)
    assert found == [], "\n".join(found)


@pytest.mark.parametrize("email, paths", [("learner@example.com", LEARNER_PAGES),
                                          ("admin@example.com", LEARNER_PAGES + ADMIN_PAGES)])
def test_every_page_passes_axe(served_app, scan_page, email, paths):
    sign_in(scan_page, served_app, email)
    found: list[str] = []
    for path in paths:
        scan_page.goto(served_app.url + path)
        expect(scan_page.locator("#main")).to_be_visible()
        found += violations(scan_page)
    assert found == [], "\n".join(found)


def tab_to(page, selector: str, limit: int = 60) -> None:
    """Press Tab until the element `selector` has the focus.

    Like a keyboard user, it waits for the page to show the element first: Tabs pressed while a slow page still
    loads its data cycle through the header and would use up the limit (a CI run on a busy machine did)."""
    page.locator(selector).first.wait_for(state="attached")
    for _ in range(limit):
        if page.evaluate("(s) => document.activeElement?.matches(s) ?? false", selector):
            return
        page.keyboard.press("Tab")
    at = page.evaluate("() => { const a = document.activeElement; return a ? a.tagName + '#' + a.id : 'none'; }")
    pytest.fail(f"{selector} not reached in {limit} Tabs (the focus is on {at})")


def test_a_keyboard_signs_in_and_skips_to_the_content(served_app, page):
    page.goto(served_app.url + "/topics/aow")
    expect(page.locator("#email")).to_be_focused()
    page.keyboard.type("learner@example.com")
    page.keyboard.press("Tab")
    expect(page.locator("#password")).to_be_focused()
    page.keyboard.type(DEMO_PASSWORD)
    page.keyboard.press("Enter")
    expect(page.locator("#topic-title")).to_be_visible()
    page.reload()
    expect(page.locator("#topic-title")).to_be_visible()
    page.keyboard.press("Tab")
    skip = page.locator("#skip-link")
    expect(skip).to_be_focused()
    expect(skip).to_have_text("Naar de inhoud")
    expect(skip).to_be_in_viewport()  # visible once focused
    page.keyboard.press("Enter")
    # the reading column: past the bar and past the topic list's filter and 50 links beside it
    expect(page.locator("#inhoud")).to_be_focused()
    page.keyboard.press("Tab")  # the next stop is in the content, not the bar or the list
    assert page.evaluate("document.getElementById('inhoud').contains(document.activeElement)")
    assert not page.evaluate("document.getElementById('learn-sidebar').contains(document.activeElement)")


def test_a_keyboard_creates_a_topic(served_app, page):
    from tests.e2e.test_learn import delete_topic

    sign_in(page, served_app, "admin@example.com", path="/admin/topics/new")
    expect(page.locator("#label")).to_be_visible()
    page.keyboard.press("Tab")
    expect(page.locator("#skip-link")).to_be_focused()
    page.keyboard.press("Enter")
    tab_to(page, "#label")
    page.keyboard.type("Toetsenbordonderwerp")
    tab_to(page, "#type")
    page.keyboard.press("Enter")  # the type list opens on the current type; the arrow keys pick "Rol"
    expect(page.get_by_role("option", name="Concept")).to_be_focused()
    page.keyboard.press("ArrowDown")
    expect(page.get_by_role("option", name="Rol")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#type")).to_have_text("Rol")
    tab_to(page, "#description")
    page.keyboard.type("Een onderwerp, alleen met het toetsenbord gemaakt.")
    tab_to(page, "#content")
    page.keyboard.type("Inhoud van het toetsenbord.")
    tab_to(page, "#save-topic")
    page.keyboard.press("Enter")
    expect(page.get_by_text("aangemaakt")).to_have_count(1)
    delete_topic(page, served_app, "Toetsenbordonderwerp")


def test_the_graph_holds_still_for_reduced_motion(served_app, browser):
    """prefers-reduced-motion: the layout is computed before it is drawn, so no node drifts on screen."""
    ctx = browser.new_context(viewport=VIEWPORTS["desktop"], reduced_motion="reduce")
    page = ctx.new_page()
    sign_in(page, served_app, "learner@example.com", path="/graph")
    page.wait_for_function("() => window.__r42graph && window.__r42graph.settled() && "
                           "window.__r42graph.screenOf('aow') !== null")
    page.wait_for_timeout(1200)  # past the first automatic fit of the view
    before = page.evaluate("window.__r42graph.screenOf('aow')")
    page.wait_for_timeout(1000)  # without the media query the layout still moves for 5 s
    assert page.evaluate("window.__r42graph.screenOf('aow')") == before
    ctx.close()


def test_on_a_phone_each_topic_row_is_a_card_with_its_actions(served_app, browser):
    """390 px: the admin topic table shows every row as a card, its type and its buttons on screen."""
    ctx = browser.new_context(viewport=VIEWPORTS["phone"], is_mobile=True, has_touch=True)
    page = ctx.new_page()
    sign_in(page, served_app, "admin@example.com", path="/admin/topics")
    row = page.locator("#admin-topics tbody tr", has_text="AOW").first
    for part in (row.get_by_role("link", name="AOW", exact=True), row.locator("td[data-label='Type'] .rt-Badge"),
                 row.get_by_role("button", name="Bewerk AOW"), row.get_by_role("button", name="Verwijder AOW")):
        part.scroll_into_view_if_needed()
        expect(part).to_be_in_viewport()
        box = part.bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    new = page.locator("#new-topic").bounding_box()
    assert new and new["height"] < 48, new  # "Nieuw onderwerp" on one line
    ctx.close()


OVERFLOW = """() => {
  const width = document.documentElement.clientWidth;
  const wide = [...document.querySelectorAll('body *')].filter((el) => {
    const r = el.getBoundingClientRect();
    if (!r.width || !r.height || r.right <= width + 1 || el.closest('[data-r42-scrolls]')) return false;
    for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {  // inside a box that scrolls or clips: that box counts
      const o = getComputedStyle(a).overflowX;
      if (o === 'auto' || o === 'scroll' || o === 'hidden' || o === 'clip') return false;
    }
    return true;
  });
  return {scroll: document.documentElement.scrollWidth, width,
          wide: wide.slice(0, 5).map((el) => `${el.tagName.toLowerCase()}#${el.id}.${el.className}`.slice(0, 120))};
}"""


@pytest.mark.parametrize("email, paths", [("learner@example.com", LEARNER_PAGES),
                                          ("admin@example.com", ADMIN_PAGES)])
def test_every_page_reflows_at_320_css_pixels_without_scrolling_sideways(served_app, browser, email, paths):
    """WCAG 1.4.10 Reflow: at 320 CSS px (a 1280 px screen at 400% zoom; 200% zoom is 640 px) nothing needs a
    sideways scroll, except what scrolls inside its own box by design (the graph's canvas)."""
    from tests.e2e.test_chat import open_chat

    ctx = browser.new_context(viewport={"width": 320, "height": 640}, is_mobile=True, has_touch=True)
    page = ctx.new_page()
    sign_in(page, served_app, email)
    wide = []
    for path in paths:
        page.goto(served_app.url + path)
        expect(page.locator("#main")).to_be_visible()
        settle(page)
        found = page.evaluate(OVERFLOW)
        if found["scroll"] > found["width"] + 1 or found["wide"]:
            wide.append(f"{path}: {found}")
    open_chat(page)  # the chat window, full screen
    found = page.evaluate(OVERFLOW)
    if found["scroll"] > found["width"] + 1 or found["wide"]:
        wide.append(f"chat: {found}")
    ctx.close()
    assert wide == [], "\n".join(wide)


def test_the_chat_window_passes_axe_empty_answered_and_failed(served_app, scan_page, claude):
    from tests.e2e.test_chat import ask, open_chat

    sign_in(scan_page, served_app, "learner@example.com")
    open_chat(scan_page)
    found = violations(scan_page)
    claude.reply_text("Bij waardeoverdracht neem je je pensioen mee [ref:1]. Zie ook [ref:1].")
    ask(scan_page, "Kan ik mijn pensioen meenemen?")
    expect(scan_page.locator(".r42-assistant").last.locator("a.r42-cite")).to_have_count(1, timeout=30_000)
    expect(scan_page.locator("#r42-send")).to_be_visible(timeout=30_000)
    found += violations(scan_page)
    claude.fail(500).fail(500)  # one retry by the SDK, then the error reaches the user
    ask(scan_page, "Nog een vraag?")
    expect(scan_page.locator("#r42-error")).to_be_visible(timeout=30_000)
    found += violations(scan_page)
    assert found == [], "\n".join(found)


def test_the_quiz_passes_axe_question_verdict_stop_dialog_and_result(served_app, scan_page):
    sign_in(scan_page, served_app, "learner@example.com", path="/testen")
    found = []
    try:
        scan_page.click("#quiz-start")
        expect(scan_page.locator("#quiz-question")).to_be_visible()
        found += violations(scan_page)  # a question
        scan_page.locator("#quiz-options [role=radio]").first.click()
        scan_page.click("#quiz-next")
        expect(scan_page.locator("#quiz-verdict")).to_be_visible()
        found += violations(scan_page)  # its verdict
        scan_page.click("#quiz-stop")
        expect(scan_page.get_by_role("alertdialog")).to_be_visible()
        found += violations(scan_page)  # "Toets stoppen?"
        scan_page.click("#quiz-stop-confirm")
        expect(scan_page.locator("#quiz-ended")).to_be_visible()
        found += violations(scan_page)  # the attempt ended
    finally:
        end_active_quizzes(served_app)
    assert found == [], "\n".join(found)


@pytest.mark.parametrize("email", ["learner@example.com", "admin@example.com"])
def test_the_chat_window_passes_axe_streaming_with_a_proposal_a_tool_confirmation_and_the_credit_hint(
        served_app, scan_page, claude, email):
    from tests.e2e.test_chat import ask, open_chat
    from tests.e2e.test_graph_chips import proposal

    wait_for_mcp_servers(served_app)
    sign_in(scan_page, served_app, email)
    open_chat(scan_page)
    log = scan_page.locator("#r42-messages")
    claude.reply_text(*[f"Woord{i} " for i in range(40)], "[ref:1]", held=True)  # held after its first word
    ask(scan_page, "Wat is de AOW?")
    expect(log).to_have_attribute("aria-busy", "true", timeout=30_000)
    expect(scan_page.locator(".r42-assistant").last).to_contain_text("Woord0")
    found = violations(scan_page, still=False)  # streaming
    expect(log).to_have_attribute("aria-busy", "true")  # the scan saw the answer mid-stream
    claude.release()
    expect(scan_page.locator(".r42-assistant").last).to_contain_text("Woord39")
    expect(log).to_have_attribute("aria-busy", "false", timeout=60_000)

    claude.reply_tool("propose_graph_delta", proposal(f"a11y-{email.split('@')[0]}"))  # shown, not answered
    claude.reply_text("Ik stel een aanvulling voor.")
    ask(scan_page, "Mist er iets over wezen?")
    expect(scan_page.locator(".r42-delta").last).to_contain_text("Nieuw onderwerp")
    expect(log).to_have_attribute("aria-busy", "false", timeout=30_000)
    found += violations(scan_page)  # a proposal card

    claude.reply_tool("r42demo__send_message", {"subject": "Toegankelijkheid", "text": "Alleen een test."})
    claude.reply_text("Goed, ik heb niets verstuurd.")
    ask(scan_page, "Laat de beheerder iets weten")
    card = scan_page.locator(".r42-confirm").last
    expect(card).to_have_attribute("data-state", "pending", timeout=30_000)
    found += violations(scan_page, still=False)  # an external tool asks first (the answer waits for it)
    card.locator(".r42-confirm-deny").click()
    expect(card).to_contain_text("Geweigerd")
    expect(log).to_have_attribute("aria-busy", "false", timeout=30_000)

    pb = served_app.superuser()
    demo = pb.first("tenants", 'slug = "demo"')
    pb.update("tenants", demo["id"], {"credits": 0})
    try:
        ask(scan_page, "Wat is de AOW?")
        expect(scan_page.locator(".r42-quota").last).to_be_visible(timeout=30_000)
        found += violations(scan_page)  # no credit left: the hint
    finally:
        pb.update("tenants", demo["id"], {"credits": demo["credits"]})
    assert found == [], "\n".join(found)


def test_the_chat_window_passes_axe_with_the_reason_form_and_an_offline_answer(served_app, scan_page, claude):
    """A thumbs-down's reason form; and an answer of the offline answerer, with its badge (the served app has
    a model, so the stored thread is given such an answer, as a new tab then shows it)."""
    import json

    from tests.e2e.test_chat import answered_and_rated_down, open_chat, thread_keys

    answered_and_rated_down(scan_page, served_app, claude, "Wat is het partnerpensioen?",
                            "Het partnerpensioen is voor je partner [ref:1].")
    found = violations(scan_page)  # "Wat klopte er niet?"
    scan_page.click("#r42-reason-skip")

    key = thread_keys(scan_page)[0]
    scan_page.wait_for_function(f"(localStorage.getItem('{key}') || '').includes('voor je partner')")
    thread = json.loads(scan_page.evaluate(f"localStorage.getItem('{key}')"))
    answer = next(m for m in reversed(thread["messages"]) if m.get("role") == "assistant")
    answer["status"] = "offline"
    scan_page.evaluate("([k, v]) => localStorage.setItem(k, v)", [key, json.dumps(thread)])
    fresh = scan_page.context.new_page()  # a new tab reads the thread from localStorage
    fresh.goto(served_app.url + "/")
    open_chat(fresh)
    expect(fresh.locator(".r42-offline-badge").last).to_be_visible()
    found += violations(fresh)
    assert found == [], "\n".join(found)


RING = """() => {
  const el = document.activeElement, s = getComputedStyle(el);
  let bg = 'rgba(0, 0, 0, 0)';
  for (let a = el.parentElement; a; a = a.parentElement) {  // what the ring is drawn on (it sits outside the element)
    bg = getComputedStyle(a).backgroundColor;
    if (!bg.startsWith('rgba(0, 0, 0, 0)') && !bg.endsWith(', 0)')) break;
  }
  if (bg === 'rgba(0, 0, 0, 0)') bg = 'rgb(255, 255, 255)';
  return {id: el.id, tag: el.tagName, style: s.outlineStyle, width: parseFloat(s.outlineWidth),
          color: s.outlineColor, bg};
}"""


def rgb(css: str) -> tuple[float, ...]:
    parts = css[css.index("(") + 1:css.index(")")].replace(",", " ").split()
    assert css.startswith("rgb") and len(parts) >= 3, css
    return tuple(float(p) for p in parts[:3])


def contrast(a: str, b: str) -> float:
    def lum(c):
        lin = [(v / 255) / 12.92 if v / 255 <= 0.03928 else ((v / 255 + 0.055) / 1.055) ** 2.4 for v in rgb(c)]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_the_focus_ring_stands_out_and_a_link_that_looks_like_a_button_is_one_stop(served_app, page):
    """WCAG 2.4.11/1.4.11: the focus ring has 3:1 against the page, on grey buttons too (Radix's ring was 2.3:1,
    1.8:1 on grey); "Annuleren" is a link styled as a button, one Tab stop (it was a button inside a link: two)."""
    sign_in(page, served_app, "admin@example.com", path="/admin/topics/new")
    expect(page.locator("#label")).to_be_visible()
    tab_to(page, "#cancel-topic")
    rings = [page.evaluate(RING)]
    assert rings[0]["tag"] == "A" and page.locator("#cancel-topic").get_attribute("href") == "/admin/topics"
    page.keyboard.press("Tab")
    expect(page.locator("#save-topic")).to_be_focused()  # the next stop: no second one inside "Annuleren"
    rings.append(page.evaluate(RING))
    for ring in rings:
        assert ring["style"] != "none" and ring["width"] >= 2, ring
        assert contrast(ring["color"], ring["bg"]) >= 3, ring
    cancel = page.locator("#cancel-topic")
    assert cancel.get_attribute("data-accent-color") == "gray"  # it keeps the grey of a secondary action
    colour = "(el) => getComputedStyle(el).color"
    before = cancel.evaluate(colour)
    cancel.hover()
    assert cancel.evaluate(colour) == before  # no link colour on hover (Radix's Link made it indigo-8, ~2:1)
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Enter")  # "Annuleren" leads back to the list
    expect(page).to_have_url(served_app.url + "/admin/topics")
    new = page.locator("#new-topic")
    before = new.evaluate(colour)
    new.hover()
    assert new.evaluate(colour) == before == "rgb(255, 255, 255)"  # white on indigo, on hover too


def test_a_short_topic_page_does_not_scroll(served_app, browser):
    """The room kept for R42's launcher at the bottom is in the reading column: a topic that fits the window
    does not scroll, so the topic list beside it never slides under the bar."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 2400})
    page = ctx.new_page()
    sign_in(page, served_app, "learner@example.com", path="/topics/aow")
    expect(page.locator("#topic-title")).to_be_visible()
    settle(page)
    sizes = page.evaluate("[document.documentElement.scrollHeight, window.innerHeight]")
    assert sizes[0] <= sizes[1], sizes
    ctx.close()
