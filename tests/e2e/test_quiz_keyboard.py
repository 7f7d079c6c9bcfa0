"""The quiz by keyboard and screen reader: a learner finishes a quiz with keys only; focus goes to each new
question's heading (so it is read), never to <body>; each verdict is said in a polite live region; the progress
bar has a name; "Stoppen" asks in a dialog and focus ends on what the page says next."""

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import end_active_quizzes, sign_in
from tests.e2e.test_a11y import tab_to as a11y_tab_to


@pytest.fixture(autouse=True)
def no_quiz_left_behind(served_app):
    yield
    end_active_quizzes(served_app)


def focused(page) -> dict:
    """What has focus: tag, id, role and text (document.activeElement)."""
    return page.evaluate("""() => { const a = document.activeElement;
        return {tag: a ? a.tagName : '', id: a ? a.id : '', role: a ? a.getAttribute('role') || '' : '',
                text: a ? a.textContent.trim() : ''}; }""")


def expect_focus(page, element_id: str):
    try:
        expect(page.locator(f"#{element_id}")).to_be_focused()
    except AssertionError as exc:
        raise AssertionError(f"focus is on {focused(page)}, not #{element_id}") from exc
    assert focused(page)["tag"] != "BODY"


def tab_to(page, element_id: str, limit: int = 150):
    a11y_tab_to(page, f"#{element_id}", limit)


def test_a_quiz_is_finished_by_keyboard_alone_with_focus_and_announcements(served_app, page):
    sign_in(page, served_app, "learner@example.com", path="/testen")
    expect(page.locator("#quiz-start")).to_be_visible()
    tab_to(page, "quiz-start")
    page.keyboard.press("Enter")
    live = page.locator("#quiz-live")
    for number in range(1, 9):
        expect(page.locator("#quiz-progress")).to_have_text(f"Vraag {number} van 8")
        expect(page.locator("#quiz-bar")).to_have_attribute("aria-label", f"Vraag {number} van 8")
        expect_focus(page, "quiz-question")  # the new question is focused, and so read
        expect(live).to_have_text("")  # nothing to announce before the answer is checked
        page.keyboard.press("Tab")  # one Tab to the options
        assert focused(page)["role"] == "radio"
        page.keyboard.press("Space")  # choose the focused option
        expect(page.locator("#quiz-next")).to_be_enabled()
        page.keyboard.press("Enter")  # Controleren: the options are disabled, focus moves to the button
        expect(page.locator("#quiz-verdict")).to_be_visible()
        expect_focus(page, "quiz-next")
        expect(page.locator("#quiz-next")).to_have_text("Bekijk je score" if number == 8 else "Volgende vraag")
        right = page.locator("#quiz-options .quiz-option-right").inner_text().strip()
        expect(live).to_have_text(re.compile(r"^(Goed!|Helaas, het goede antwoord is " + re.escape(right) + r"\.)$"))
        page.wait_for_timeout(600)  # the verdict has been seen: the next press goes on
        page.keyboard.press("Enter")
    expect(page.locator("#quiz-score")).to_be_visible()
    expect_focus(page, "quiz-result")  # the score's heading, not <body>
    tab_to(page, "quiz-again")
    page.keyboard.press("Enter")  # Nieuwe toets: back to the intro, focus on its heading
    expect(page.locator("#quiz-start")).to_be_visible()
    expect_focus(page, "quiz-intro")


def test_stopping_by_keyboard_asks_and_focus_follows(served_app, page):
    sign_in(page, served_app, "learner@example.com", path="/testen")
    tab_to(page, "quiz-start")
    page.keyboard.press("Enter")
    expect_focus(page, "quiz-question")
    page.keyboard.press("Tab")
    page.keyboard.press("Space")  # an answer is chosen: Enter on "Stoppen" must still mean Stoppen
    tab_to(page, "quiz-stop", limit=20)
    page.keyboard.press("Enter")
    dialog = page.get_by_role("alertdialog")
    expect(dialog).to_contain_text("Toets stoppen?")
    expect(page.locator("#quiz-stop-cancel")).to_be_focused()  # the safe choice first
    page.keyboard.press("Escape")  # = Annuleren: the quiz goes on, focus back on "Stoppen"
    expect(dialog).to_have_count(0)
    expect_focus(page, "quiz-stop")
    expect(page.locator("#quiz-progress")).to_have_text("Vraag 1 van 8")
    page.keyboard.press("Enter")
    expect(dialog).to_be_visible()
    tab_to(page, "quiz-stop-confirm", limit=5)
    page.keyboard.press("Enter")
    expect(page.locator("#quiz-ended")).to_contain_text("Je hebt de toets gestopt")
    expect(page.locator("#quiz-ended h1, #quiz-ended [data-r42-focus]").first).to_be_focused()
    assert focused(page)["tag"] != "BODY"


def test_tab_past_the_last_control_leaves_the_page_not_back_into_the_quiz(served_app, page):
    """Tab after the page's last control takes focus out of the page (to the browser's bar): the quiz's script took
    that for focus falling to <body> and pulled it back, so Tab went round the quiz for ever."""
    sign_in(page, served_app, "learner@example.com", path="/testen")
    tab_to(page, "quiz-start")
    for _ in range(10):  # on past the page's last control
        page.keyboard.press("Tab")
        if focused(page)["tag"] == "BODY":
            break
    assert focused(page)["tag"] == "BODY", focused(page)
    page.wait_for_timeout(500)  # the script looks every 0.1 s
    assert focused(page)["tag"] == "BODY", f"pulled back to {focused(page)}"
