"""Issue 21, hole 1: stored and generated markup never runs script, never calls out, never covers the page.

Every payload of tests/data/xss_payloads.json (the reported `srcdoc` hole, OWASP's classics, mutation XSS,
SVG, `javascript:` and `data:` links, style overlays, remote images, clobbered ids) is put where an
attacker can put it: in topic content (a learner reads it, an admin previews it), in a model answer, in an
MCP tool's output that the model repeats, in a suggestion's reason and a user's name, and in a rating's
stored answer. For each, in a real browser: no script ran (`window.__pwned`, no dialog), the attacker's
server on loopback heard nothing, nothing dangerous is left in the page, nothing covers it, and the
Content-Security-Policy never even had to step in (no violation: the sanitiser removed it all first). A
last test shows the policy is a wall of its own: a handler slipped into the page past the sanitiser is
refused by the browser.
"""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.conftest import throwaway_user
from tests.e2e.conftest import sign_in
from tests.e2e.test_chat import ask, open_chat

PAYLOADS = json.loads((Path(__file__).resolve().parents[1] / "data" / "xss_payloads.json").read_text())
WATCH = """
window.__violations = [];
document.addEventListener('securitypolicyviolation',
  (e) => window.__violations.push(e.violatedDirective + ' ' + e.blockedURI));
"""
# What must not be in the rendered markup, checked on the element that shows the untrusted text.
INSPECT = """(root) => {
  const bad = [];
  const banned = /^(script|style|iframe|frame|frameset|object|embed|applet|form|base|meta|link|svg|math|template|textarea|button|select|video|audio|source|noscript)$/i;
  for (const el of root.querySelectorAll('*')) {
    if (el.closest('svg.lucide')) continue;  // the app's own icons (a citation chip's book)
    if (banned.test(el.tagName)) bad.push('<' + el.tagName.toLowerCase() + '>');
    for (const a of el.attributes) {
      const n = a.name.toLowerCase(), v = a.value.trim();
      if (n.startsWith('on')) bad.push(n);
      if (['srcset', 'background', 'formaction', 'srcdoc'].includes(n)) bad.push(n);
      if (['href', 'src', 'action', 'xlink:href'].includes(n) && /^(javascript|data|vbscript):/i.test(v)) bad.push(n + '=' + v);
      // content never takes an app id; the page's own passage wrappers (a class content cannot carry) have theirs
      const passage = el.classList.contains('r42-passage') && !el.parentElement.closest('.r42-passage')
        && /^p-[0-9a-f]{10}$/.test(v);
      if (n === 'id' && !v.startsWith('user-content-') && !passage) bad.push('id=' + v);
    }
    if (el.tagName === 'IMG' && !/^\\/(?![\\/\\\\])/.test(el.getAttribute('src') || '')) bad.push('img ' + el.getAttribute('src'));
    if (el.tagName === 'INPUT' && el.type !== 'checkbox') bad.push('input ' + el.type);
    const style = getComputedStyle(el), box = el.getBoundingClientRect();
    if (['fixed', 'absolute', 'sticky'].includes(style.position) && box.width * box.height > 0.1 * innerWidth * innerHeight) {
      bad.push('covering ' + el.tagName);
    }
  }
  return bad;
}"""


def watch(page) -> list[str]:
    """Record dialogs (alert and friends) and CSP violations on this page."""
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.add_init_script(WATCH)
    return dialogs


def payload_text(markdown: str, attacker) -> str:
    return markdown.replace("{A}", attacker.url).replace("{H}", attacker.host)


def all_payloads(attacker) -> str:
    return "\n\n".join(payload_text(p["markdown"], attacker) for p in PAYLOADS)


def assert_harmless(page, root: str | None, attacker, dialogs: list[str]) -> None:
    """Nothing the untrusted text tried got through (see the module docstring). `root` is the element that
    renders the untrusted markup; None where the page shows it as plain text (React escapes it)."""
    url = page.url
    for text in ("Lees verder", "Open de bijlage", "Bijlage", "Lees meer", "Verstuur", "klik"):
        link = page.locator(root or "main, body").get_by_text(text, exact=True)
        if link.count() and link.first.is_visible():
            link.first.click(timeout=5_000)  # a link without its javascript: or data: target goes nowhere
    page.wait_for_timeout(1_500)  # let anything that would load or run do so
    assert page.evaluate("window.__pwned") is None, "a payload ran script"
    assert dialogs == []
    assert attacker.hits == [], f"the page called the attacker: {attacker.hits}"
    assert page.evaluate("window.__violations") == [], "the CSP had to block something the sanitiser let through"
    assert page.url.split("#")[0] == url.split("#")[0], "the page navigated away"
    assert page.evaluate("document.querySelector('base')") is None
    assert page.evaluate("getComputedStyle(document.body).display") != "none"
    if root is not None:
        bad = page.locator(root).first.evaluate(INSPECT)
        assert bad == [], bad
    launcher = page.locator("#r42-launcher")
    if launcher.count() and launcher.is_visible():  # the launcher is still there and on top: nothing covers it
        assert launcher.evaluate("el => { const r = el.getBoundingClientRect(); "
                                 "return el.contains(document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2)); }")


@pytest.fixture
def attacker_clean(attacker):
    attacker.hits.clear()
    yield attacker
    attacker.hits.clear()


@pytest.fixture
def hostile_topic(served_app):
    """A topic of tenant demo with the given content, deleted afterwards."""
    pb = served_app.superuser()
    demo = pb.first("tenants", 'slug = "demo"')
    made = []

    def make(content: str) -> str:
        slug = f"xss-{uuid.uuid4().hex[:8]}"
        made.append(pb.create("topics", {"tenant": demo["id"], "slug": slug, "label": f"Veiligheid {slug[-4:]}",
                                         "type": "concept", "description": "Een onderwerp met vijandige opmaak.",
                                         "content": f"Gewone uitleg vooraf.\n\n{content}\n\nGewone uitleg achteraf."}))
        return slug

    yield make
    for row in made:
        pb.delete("topics", row["id"])


@pytest.fixture(scope="module")
def learner_tab(served_app, browser):
    """One signed-in learner's tab for the payloads in topic content (a sign-in per payload would double the time)."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 860})
    page = ctx.new_page()
    dialogs = watch(page)
    sign_in(page, served_app, "learner@example.com")
    yield page, dialogs
    ctx.close()


@pytest.mark.parametrize("payload", PAYLOADS, ids=[p["name"] for p in PAYLOADS])
def test_a_payload_in_topic_content_is_harmless_for_the_learner(served_app, learner_tab, attacker_clean,
                                                                 hostile_topic, payload):
    page, dialogs = learner_tab
    dialogs.clear()
    slug = hostile_topic(payload_text(payload["markdown"], attacker_clean))
    page.goto(f"{served_app.url}/topics/{slug}")
    # this payload's topic, not the one before it: the tab's state shows the last topic until the new one arrives
    expect(page.locator("#topic-title")).to_have_text(f"Veiligheid {slug[-4:]}")
    expect(page.locator("#topic-content")).to_contain_text("Gewone uitleg achteraf.")
    assert_harmless(page, "#topic-content", attacker_clean, dialogs)


def test_every_payload_is_harmless_in_the_editors_preview(served_app, page, attacker_clean, hostile_topic):
    slug = hostile_topic(all_payloads(attacker_clean))
    dialogs = watch(page)
    sign_in(page, served_app, "admin@example.com", path=f"/admin/topics/{slug}")
    page.get_by_role("tab", name="Voorbeeld").click()
    expect(page.locator("#topic-preview")).to_contain_text("Gewone uitleg achteraf.")
    assert_harmless(page, "#topic-preview", attacker_clean, dialogs)


def test_every_payload_is_harmless_in_a_model_answer(served_app, page, claude, attacker_clean):
    claude.reply_text("Hier is het antwoord, zie [de regeling](https://voorbeeld.nl/regeling). "
                      + all_payloads(attacker_clean) + " Einde van het antwoord.")
    dialogs = watch(page)
    sign_in(page, served_app, "learner@example.com")
    open_chat(page)
    ask(page, "Wat is een pensioenregeling?")
    answer = page.locator(".r42-assistant").last
    expect(answer).to_contain_text("Einde van het antwoord.")
    # a link that leaves the app is no source chip, and says where it goes (issue 44: "(externe link)")
    outside = answer.get_by_role("link", name="de regeling (externe link)", exact=True)
    expect(outside).to_have_attribute("data-r42-external", "true")
    expect(outside).to_have_attribute("target", "_blank")
    expect(outside).to_have_attribute("rel", "noopener noreferrer nofollow")
    assert outside.evaluate("el => getComputedStyle(el).textDecorationLine") == "underline"
    assert_harmless(page, ".r42-assistant >> nth=-1 >> .r42-md", attacker_clean, dialogs)


def test_only_r42s_own_citations_look_like_sources(served_app, page, claude):
    """A link the model (or text it repeats) writes to a page of the app is a plain link, not a source chip, even
    with the mark R42 gives its own chips."""
    claude.reply_text('Het basispensioen [ref:1]. Zie ook [de officiële bron](/topics/aow) en '
                      '[nog een bron](/topics/aow "r42:bron").')
    sign_in(page, served_app, "learner@example.com")
    open_chat(page)
    ask(page, "Wat is de AOW?")
    answer = page.locator(".r42-assistant").last
    expect(answer).to_contain_text("nog een bron")
    # the answer has ended (its last render done: a link read while the window still redraws it is detached)
    expect(page.locator("#r42-messages")).to_have_attribute("aria-busy", "false")
    expect(answer.locator("[data-r42-cite]")).to_have_count(1)  # the [ref:1] chip
    for text in ("de officiële bron", "nog een bron"):
        link = answer.get_by_text(text, exact=True)
        expect(link).not_to_have_attribute("data-r42-cite", "true")
        expect(link).to_have_css("text-decoration-line", "underline")


def assert_marked_off_site(link) -> None:
    """A link that leaves the app (issue 44, finding 6): no source chip; it opens in a new tab without a referrer,
    with an arrow the eye sees and "(externe link)" a screen reader says."""
    expect(link).not_to_have_attribute("data-r42-cite", re.compile(".*"))
    expect(link).to_have_attribute("target", "_blank")
    expect(link).to_have_attribute("rel", "noopener noreferrer nofollow")
    expect(link.locator(".r42-external")).to_be_visible()
    expect(link).to_have_accessible_name(re.compile(r"\(externe link\)$"))


def test_an_admins_markup_in_a_topic_makes_no_source_chip_and_off_site_links_are_marked(
        served_app, learner_tab, attacker_clean, hostile_topic):
    """Issue 44, finding 6: R42's old chip mark written by hand, in HTML or in a markdown title (also as an
    entity), makes no chip on a topic page; every link that leaves the app says so, and one inside it does not."""
    page, dialogs = learner_tab
    dialogs.clear()
    slug = hostile_topic('<a title="r42:bron" href="https://evil.example/">Officiële bron</a>, '
                         '[Log opnieuw in](https://evil.example/login "r42:bron"), '
                         '[Inloggen](https://evil.example/2 "r42&#58;bron") en [De AOW](/topics/aow "r42:bron").')
    page.goto(f"{served_app.url}/topics/{slug}")
    content = page.locator("#topic-content")
    expect(content).to_contain_text("Gewone uitleg achteraf.")
    expect(content.locator("[data-r42-cite]")).to_have_count(0)
    for text in ("Officiële bron", "Log opnieuw in", "Inloggen"):
        assert_marked_off_site(content.get_by_role("link", name=re.compile("^" + text)))
    inside = content.get_by_role("link", name="De AOW", exact=True)
    expect(inside).to_have_attribute("href", "/topics/aow")
    expect(inside).not_to_have_attribute("target", "_blank")
    expect(inside.locator(".r42-external")).to_have_count(0)
    assert_harmless(page, "#topic-content", attacker_clean, dialogs)


def test_an_answer_cannot_dress_a_link_as_a_source(served_app, page, claude):
    """Issue 44, finding 6: the chip mark spelled as an entity (which the old filter on the text missed) in a
    markdown title or an HTML attribute makes no chip; only R42's own [ref:1] is one, and the off-site links
    are marked."""
    claude.reply_text('Het basispensioen [ref:1]. [Officiële bron: log opnieuw in](https://evil.example/login '
                      '"r42&#58;bron") of <a title="r42&#x3a;bron" href="https://evil.example/2">Bron</a>. Einde.')
    sign_in(page, served_app, "learner@example.com")
    open_chat(page)
    ask(page, "Wat is de AOW?")
    answer = page.locator(".r42-assistant").last
    expect(answer).to_contain_text("Einde.")
    expect(page.locator("#r42-send")).to_be_visible(timeout=30_000)  # the answer has ended
    chip = answer.locator("[data-r42-cite]")
    expect(chip).to_have_count(1)  # the [ref:1] chip
    expect(chip).to_have_attribute("href", re.compile(r"^/topics/[a-z0-9-]+(#p-[0-9a-f]{10})?$"))
    for name in ("Officiële bron: log opnieuw in", "Bron"):
        link = answer.get_by_role("link", name=re.compile("^" + name + " "))
        assert_marked_off_site(link)
        assert link.evaluate("el => getComputedStyle(el).textDecorationLine") == "underline"  # a link, not a chip


def test_the_reported_payload_is_harmless_in_a_model_answer_on_its_own(served_app, page, claude, attacker_clean):
    claude.reply_text(payload_text(PAYLOADS[0]["markdown"], attacker_clean) + "\n\nEinde.")
    dialogs = watch(page)
    sign_in(page, served_app, "learner@example.com")
    open_chat(page)
    ask(page, "Vertel me iets")
    expect(page.locator(".r42-assistant").last).to_contain_text("Einde.")
    assert_harmless(page, ".r42-assistant >> nth=-1 >> .r42-md", attacker_clean, dialogs)


def test_an_mcp_tools_hostile_output_repeated_by_the_model_is_harmless(served_app, browser, page, claude,
                                                                        attacker_clean):
    claude.reply_tool("hostile__news", {})
    claude.reply_echo("Het nieuws van vandaag: ")
    dialogs = watch(page)
    sign_in(page, served_app, "learner@example.com")
    open_chat(page)
    ask(page, "Wat is het nieuws?")
    answer = page.locator(".r42-assistant").last
    expect(answer).to_contain_text("Het nieuws van vandaag:")
    expect(answer).to_contain_text("Open de bijlage")  # the tool's own text made it into the answer
    assert "iframe" in claude.requests[1]["body"]["messages"][-1]["content"][0]["content"]
    assert_harmless(page, ".r42-assistant >> nth=-1 >> .r42-md", attacker_clean, dialogs)

    admin = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
    admin_dialogs = watch(admin)
    sign_in(admin, served_app, "admin@example.com", path="/admin/tools")
    expect(admin.locator("#mcp-calls")).to_contain_text("hostile__news")
    assert_harmless(admin, None, attacker_clean, admin_dialogs)


def test_a_hostile_suggestion_reason_user_name_and_rating_are_harmless_for_the_admin(served_app, browser,
                                                                                       attacker_clean):
    pb = served_app.superuser()
    demo = pb.first("tenants", 'slug = "demo"')
    hostile = payload_text(PAYLOADS[0]["markdown"], attacker_clean)  # the reported one: 240 characters
    name = payload_text('<img src=x onerror="window.__pwned=1;fetch(\'{A}/name\')">', attacker_clean)
    with throwaway_user(pb, name=name, prefix="xss") as (_email, user):
        pb.create("suggestions", {"tenant": demo["id"], "user": user["id"], "status": "pending", "reason": hostile,
                                  "delta": {"reason": hostile, "topics": [{"id": "xss-voorstel", "label": name[:100],
                                                                           "type": "concept"}], "relations": []}})
        pb.create("chat_feedback", {"tenant": demo["id"], "user": user["id"], "rating": "down",
                                    "signer": user["id"],  # signed: the admin page shows the name (issue 44)
                                    "message_id": uuid.uuid4().hex, "question": hostile[:2000],
                                    "answer": all_payloads(attacker_clean)[:8000], "citations": []})
        for path, marker in (("/admin/suggestions", "srcdoc"), ("/admin/feedback", "iframe"),
                             ("/admin/chatbot", "onerror")):
            page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
            dialogs = watch(page)
            sign_in(page, served_app, "admin@example.com", path=path)
            expect(page.locator("body")).to_contain_text(marker)  # shown, as text
            assert_harmless(page, None, attacker_clean, dialogs)
            page.context.close()


def test_the_content_security_policy_refuses_a_handler_that_got_past_the_sanitiser(served_app, page, attacker_clean):
    dialogs = watch(page)
    sign_in(page, served_app, "learner@example.com")
    page.evaluate(f"""document.body.insertAdjacentHTML('beforeend',
        '<img id="slipped" src="x" onerror="window.__pwned=1">'
        + '<img src="{attacker_clean.url}/past-the-sanitiser.gif">')""")
    # both refusals come once the browser has tried the two sources (the first after the app's server answered)
    page.wait_for_function("(w => w.some(v => v.startsWith('script-src')) && w.some(v => v.startsWith('img-src')))"
                           "(window.__violations || [])")
    assert page.evaluate("window.__pwned") is None and dialogs == []
    assert attacker_clean.hits == []
    violations = page.evaluate("window.__violations")
    assert any(v.startswith("script-src") for v in violations), violations
    assert any(v.startswith("img-src") for v in violations), violations
