"""Phones (390×844, issue 16): the topic list is a drawer, the home page is short, no admin page scrolls
sideways, and the chat input does not make iOS zoom."""

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import sign_in

ADMIN_PAGES = ["/admin/topics", "/admin/topics/new", "/admin/suggestions", "/admin/chatbot", "/admin/costs",
               "/admin/tools"]


@pytest.fixture
def phone(browser):
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    yield ctx.new_page()
    ctx.close()


def test_the_home_page_is_short_and_the_topic_list_is_a_drawer(served_app, phone):
    sign_in(phone, served_app, "learner@example.com")
    expect(phone.locator("#topic-grid")).to_be_visible()
    height = phone.evaluate("document.documentElement.scrollHeight")
    assert height < 2.5 * 844, height  # before: 8,906 px, every topic listed twice
    expect(phone.locator("#learn-sidebar")).to_be_hidden()
    # the drawer covers the button that opened it: it closes with its own button, and with Escape, the focus back
    # on the button that opens it (before, only picking a topic got out of it)
    phone.click("#topics-toggle")
    expect(phone.locator("#topic-list")).to_be_visible()
    expect(phone.locator("#topic-filter")).to_be_focused()
    phone.click("#topics-close")
    expect(phone.locator("#learn-sidebar")).to_be_hidden()
    expect(phone.locator("#topics-toggle")).to_be_focused()
    phone.keyboard.press("Enter")
    expect(phone.locator("#topic-list")).to_be_visible()
    phone.keyboard.press("Escape")
    expect(phone.locator("#learn-sidebar")).to_be_hidden()
    expect(phone.locator("#topics-toggle")).to_be_focused()
    phone.click("#topics-toggle")
    expect(phone.locator("#topic-list")).to_be_visible()
    phone.locator("#topic-list a").first.click()
    expect(phone.locator("#topic-title")).to_be_visible()
    expect(phone.locator("#learn-sidebar")).to_be_hidden()  # picking a topic closes the drawer


LINE_BREAKS = """() => [...document.querySelectorAll('#topic-grid .topic-card-label')].map(el => {
  const node = [...el.childNodes].find(n => n.nodeType === Node.TEXT_NODE) || el.firstChild.firstChild;
  const text = node.textContent, range = document.createRange(), breaks = [];
  let top = null;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '\u00ad' || text[i] === ' ') continue;
    range.setStart(node, i); range.setEnd(node, i + 1);
    const rects = range.getClientRects(), rect = rects[rects.length - 1];  // after a break: [line end, new line]
    if (!rect) continue;
    if (top !== null && rect.top > top + 2) breaks.push(text[i - 1] === '\u00ad' ? 'hyphen' : text[i - 1] === ' ' ? 'space' : 'mid-word:' + text.slice(0, i));
    top = rect.top;
  }
  return breaks;
})"""


def test_a_card_title_breaks_at_a_word_or_a_syllable_with_a_hyphen(served_app, phone):
    """Issue 49: on a phone's two-column grid "Beleggingsrendement" broke as "Beleggingsrendemen|t". Every line break
    in a card's title is now at a space or at a soft hyphen (shown as a hyphen), and long words do break so."""
    sign_in(phone, served_app, "learner@example.com")
    expect(phone.locator("#topic-grid .topic-card-label").first).to_be_visible()
    breaks = [b for label in phone.evaluate(LINE_BREAKS) for b in label]
    assert [b for b in breaks if b.startswith("mid-word")] == []
    assert "hyphen" in breaks  # some long compound did wrap, at a syllable


def test_no_admin_page_scrolls_sideways(served_app, phone):
    sign_in(phone, served_app, "admin@example.com")
    for path in ADMIN_PAGES:
        phone.goto(served_app.url + path)
        phone.wait_for_load_state("networkidle")
        width = phone.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, (path, width)


def test_a_topic_with_a_long_related_name_does_not_scroll_sideways(served_app, phone):
    """"Arbeidsongeschiktheidspensioen" under Samenhang ran 50 px past the card and the screen, cut off."""
    sign_in(phone, served_app, "learner@example.com", path="/topics/pensioenregeling")
    expect(phone.locator("#relations")).to_contain_text("Arbeidsongeschiktheidspensioen")
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    link = phone.locator("#relations a", has_text="Arbeidsongeschiktheidspensioen").bounding_box()
    card = phone.locator("#relations").bounding_box()
    assert link and card and link["x"] + link["width"] <= card["x"] + card["width"] + 1


def test_the_chat_input_is_16px_and_speaks_no_shift_enter(served_app, phone):
    sign_in(phone, served_app, "learner@example.com")
    phone.click("#r42-launcher")
    box = phone.locator("#r42-input")
    expect(box).to_be_visible()
    assert phone.evaluate("getComputedStyle(document.getElementById('r42-input')).fontSize") == "16px"
    assert "Shift" not in (box.get_attribute("placeholder") or "")
    expect(phone.locator(".r42-hint")).to_be_hidden()


def test_a_toast_covers_neither_the_bar_nor_the_form(served_app, phone):
    from tests.e2e.test_learn import delete_topic, toast_covers_nothing

    sign_in(phone, served_app, "admin@example.com", path="/admin/topics/new")
    phone.fill("#label", "Toast op de telefoon")
    phone.fill("#description", "Een onderwerp uit de browsertest.")
    phone.click("#save-topic")
    expect(phone.get_by_text("aangemaakt")).to_have_count(1)
    toast_covers_nothing(phone)
    delete_topic(phone, served_app, "Toast op de telefoon")


COVERED = """(el) => {
  const r = el.getBoundingClientRect();
  const l = document.getElementById('r42-launcher').getBoundingClientRect();
  const apart = r.right <= l.left || l.right <= r.left || r.bottom <= l.top || l.bottom <= r.top;
  const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  return {apart, hit: !!hit && el.contains(hit), box: [r.left, r.top, r.right, r.bottom]};
}"""


def test_the_r42_launcher_never_covers_the_last_controls_of_a_page(served_app, phone):
    """R42's launcher floats at the bottom right: scrolled to the end, a page's last buttons are clear of it
    ("Aanmaken" under the new-topic form was under it, as were the last topic's edit and delete buttons)."""
    sign_in(phone, served_app, "admin@example.com", path="/admin/topics/new")
    expect(phone.locator("#save-topic")).to_be_visible()
    phone.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    for control in ("#save-topic", "#cancel-topic"):
        found = phone.locator(control).evaluate(COVERED)
        assert found["apart"] and found["hit"], (control, found)
    phone.goto(served_app.url + "/admin/topics")
    last = phone.locator("#admin-topics tbody tr").last
    expect(last).to_be_visible()
    phone.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    buttons = last.locator("button")
    assert buttons.count() >= 2
    for i in range(buttons.count()):
        found = buttons.nth(i).evaluate(COVERED)
        assert found["apart"] and found["hit"], (i, found)
