"""Testen in a real browser: a quiz hides R42 in every tab of the user, the server refuses chat even
when the browser flag is edited by hand, and finishing or leaving the quiz gives R42 back."""


import httpx
import pytest
from playwright.sync_api import expect

from tests.conftest import DEMO_PASSWORD
from tests.e2e.conftest import end_active_quizzes, sign_in
from tests.e2e.test_chat import ask, open_chat


@pytest.fixture(autouse=True)
def no_quiz_left_behind(served_app):
    """A failing test must not leave a learner locked out of chat for the tests after it."""
    yield
    end_active_quizzes(served_app)


def user_id(page):
    return page.locator("#r42-chat").get_attribute("data-r42-user")


def start_quiz(page):
    page.click("#quiz-start")
    expect(page.locator("#quiz-question")).to_be_visible()
    expect(page.locator("#quiz-progress")).to_have_text("Vraag 1 van 8")


def go_on(page, key=""):
    """After the verdict: "Volgende vraag" once the learner has seen it (a click within half a second of
    it is the second click of a double click, and is ignored)."""
    expect(page.locator("#quiz-verdict")).to_be_visible()
    page.wait_for_timeout(600)
    page.keyboard.press(key) if key else page.click("#quiz-next")


def stop_quiz(page):
    """"Stoppen" asks first; "Stoppen" in the dialog ends the attempt and says so; "Opnieuw beginnen"."""
    page.click("#quiz-stop")
    expect(page.get_by_role("alertdialog")).to_contain_text("Toets stoppen?")
    page.click("#quiz-stop-confirm")
    expect(page.locator("#quiz-ended")).to_contain_text("Je hebt de toets gestopt")
    page.click("#quiz-restart")
    expect(page.locator("#quiz-start")).to_be_visible()


def answer_all(page, count=8):
    for number in range(1, count + 1):
        expect(page.locator("#quiz-progress")).to_have_text(f"Vraag {number} van {count}")
        expect(page.locator("#quiz-next")).to_be_disabled()  # nothing chosen yet
        page.locator("#quiz-options label").first.click()
        expect(page.locator("#quiz-next")).to_be_enabled()
        page.click("#quiz-next")  # Controleren
        expect(page.locator("#quiz-verdict")).to_be_visible()
        go_on(page)  # Volgende vraag / Bekijk je score
    expect(page.locator("#quiz-score")).to_be_visible()


def quiz_rows(served_app, uid):
    return served_app.superuser().all("quiz_sessions", filter=f'user = "{uid}" && active = true')


def test_a_quiz_hides_r42_in_every_tab_and_finishing_brings_it_back(served_app, context, claude):
    quiz = context.new_page()
    sign_in(quiz, served_app, "learner@example.com", path="/testen")
    other = context.new_page()  # a second tab of the same user, chat open
    other.goto(served_app.url + "/")
    open_chat(other)
    uid = user_id(quiz)
    quiz.bring_to_front()  # the tab the learner works in (Chromium delays clicks in a tab behind another by ~2 s)
    start_quiz(quiz)
    expect(quiz.locator("#r42-launcher")).to_be_hidden()
    expect(other.locator("#r42-launcher")).to_be_hidden()
    expect(other.locator("#r42-window")).to_be_hidden()  # an open window closes
    assert quiz.evaluate(f"localStorage.getItem('quiz:active:{uid}')") == "true"
    assert len(quiz_rows(served_app, uid)) == 1
    answer_all(quiz)
    expect(quiz.locator("#quiz-review .quiz-review")).to_have_count(8)
    expect(quiz.locator("#r42-launcher")).to_be_visible()
    expect(other.locator("#r42-launcher")).to_be_visible()
    assert quiz_rows(served_app, uid) == []
    claude.reply_text("Na de toets mag het weer.")
    other.bring_to_front()
    open_chat(other)
    ask(other, "Mag ik weer iets vragen?")
    expect(other.locator(".r42-assistant").last).to_contain_text("Na de toets mag het weer.")


def test_editing_the_flag_by_hand_does_not_unlock_chat(served_app, page, claude):
    sign_in(page, served_app, "learner@example.com", path="/testen")
    uid = user_id(page)
    start_quiz(page)
    # the app sets the flag just after the first question shows: overwrite it only once it is there
    page.wait_for_function(f"localStorage.getItem('quiz:active:{uid}') === 'true'")
    page.evaluate(f"localStorage.setItem('quiz:active:{uid}', 'false')")
    expect(page.locator("#r42-launcher")).to_be_visible()  # the browser believes the flag...
    claude.reply_text("Dit mag niet verschijnen.")
    open_chat(page)
    ask(page, "Wat is het goede antwoord?")
    expect(page.locator("#r42-error")).to_contain_text("Je bent bezig met een toets")  # ...the server does not
    assert claude.requests == []
    expect(page.locator("#r42-messages")).not_to_contain_text("Dit mag niet verschijnen.")


def test_leaving_the_quiz_page_ends_the_quiz(served_app, page, claude):
    sign_in(page, served_app, "learner@example.com", path="/testen")
    uid = user_id(page)
    page.click("#scope-role")
    start_quiz(page)
    expect(page.locator("#r42-launcher")).to_be_hidden()
    asked = []
    page.once("dialog", lambda d: (asked.append(d.message), d.dismiss()))
    page.get_by_role("link", name="Onderwerpen").click()  # "stay": the quiz goes on
    expect(page.locator("#quiz-question")).to_be_visible()
    assert asked and "toets stopt" in asked[0]
    page.once("dialog", lambda d: d.accept())
    page.get_by_role("link", name="Onderwerpen").click()  # in-app navigation unmounts the quiz
    expect(page.locator("#welcome")).to_be_visible()
    expect(page.locator("#r42-launcher")).to_be_visible()
    page.wait_for_function(f"localStorage.getItem('quiz:active:{uid}') === null")
    assert quiz_rows(served_app, uid) == []
    claude.reply_text("Welkom terug.")
    open_chat(page)
    ask(page, "Hallo?")
    expect(page.locator(".r42-assistant").last).to_contain_text("Welkom terug.")


def test_closing_the_tab_mid_quiz_ends_it_on_the_server(served_app, context):
    quiz = context.new_page()
    sign_in(quiz, served_app, "learner@example.com", path="/testen")
    uid = user_id(quiz)
    start_quiz(quiz)
    assert len(quiz_rows(served_app, uid)) == 1
    keep = context.new_page()
    keep.goto(served_app.url + "/")
    expect(keep.locator("#r42-launcher")).to_be_hidden()
    quiz.close(run_before_unload=True)  # pagehide -> sendBeacon('/api/quiz/end')
    expect(keep.locator("#r42-launcher")).to_be_visible()
    keep.wait_for_timeout(500)
    for _ in range(60):  # the beacon is asynchronous: give a loaded machine up to 15 s
        if not quiz_rows(served_app, uid):
            break
        keep.wait_for_timeout(250)
    assert quiz_rows(served_app, uid) == []


def test_the_api_answers_423_during_a_quiz_and_200_after(served_app, page, claude):
    sign_in(page, served_app, "learner@example.com", path="/testen")
    token = httpx.post(f"{served_app.pb_url}/api/collections/users/auth-with-password",
                       json={"identity": "learner@example.com", "password": DEMO_PASSWORD}).json()["token"]
    body = {"messages": [{"role": "user", "content": "Wat is de AOW?"}], "mode": "fts"}
    start_quiz(page)
    locked = httpx.post(f"{served_app.url}/api/chat", json=body, headers={"Authorization": f"Bearer {token}"})
    assert locked.status_code == 423 and locked.json()["type"] == "quiz_active"
    stop_quiz(page)
    claude.reply_text("De AOW is het basispensioen.")
    free = httpx.post(f"{served_app.url}/api/chat", json=body, headers={"Authorization": f"Bearer {token}"})
    assert free.status_code == 200 and "basispensioen" in free.text


def test_stopping_asks_first_and_then_says_the_attempt_ended(served_app, page):
    sign_in(page, served_app, "learner@example.com", path="/testen")
    uid = user_id(page)
    start_quiz(page)
    page.click("#quiz-stop")
    dialog = page.get_by_role("alertdialog")
    expect(dialog).to_contain_text("Toets stoppen?")
    page.click("#quiz-stop-cancel")  # "Annuleren": the quiz goes on
    expect(dialog).to_have_count(0)
    expect(page.locator("#quiz-progress")).to_have_text("Vraag 1 van 8")
    assert len(quiz_rows(served_app, uid)) == 1
    page.click("#quiz-stop")
    page.click("#quiz-stop-confirm")
    expect(page.locator("#quiz-ended")).to_contain_text("Toets beëindigd")
    expect(page.locator("#quiz-ended")).to_contain_text("Je hebt de toets gestopt")
    expect(page.locator("#r42-launcher")).to_be_visible()
    assert quiz_rows(served_app, uid) == []


def test_a_press_right_after_the_verdict_says_why_it_waits(served_app, page):
    sign_in(page, served_app, "learner@example.com", path="/testen")
    start_quiz(page)
    page.locator("#quiz-options label").first.click()
    before = page.locator("#quiz-next").bounding_box()
    page.dblclick("#quiz-next")  # checks the answer; the second click comes too soon to go on
    expect(page.locator("#quiz-verdict")).to_be_visible()
    # the verdict appears below the button, which stays under the pointer (when the verdict pushed it down,
    # the second click of a double click could land on the verdict instead)
    after = page.locator("#quiz-next").bounding_box()
    x, y = before["x"] + before["width"] / 2, before["y"] + before["height"] / 2
    assert after["x"] <= x <= after["x"] + after["width"] and after["y"] <= y <= after["y"] + after["height"]
    expect(page.locator("#quiz-hold")).to_contain_text("Lees eerst of je antwoord goed was")
    expect(page.locator("#quiz-progress")).to_have_text("Vraag 1 van 8")
    go_on(page)
    expect(page.locator("#quiz-progress")).to_have_text("Vraag 2 van 8")
    expect(page.locator("#quiz-hold")).to_have_text("")


def test_signing_out_mid_quiz_ends_it(served_app, page):
    sign_in(page, served_app, "learner@example.com", path="/testen", fresh=True)
    uid = user_id(page)
    start_quiz(page)
    page.click("#user-menu")
    page.click("#sign-out")
    expect(page.locator("#sign-in")).to_be_visible()
    # the sign-in card is drawn from the state delta, the flag is cleared by the script event that follows it
    page.wait_for_function(f"localStorage.getItem('quiz:active:{uid}') === null", timeout=5_000)
    assert quiz_rows(served_app, uid) == []


def test_another_tab_on_the_quiz_page_cannot_end_a_running_quiz(served_app, context):
    """Opening /testen in a second tab, leaving it or closing it must not unlock R42 while the
    first tab's quiz runs (that would be a way around the lock)."""
    quiz = context.new_page()
    sign_in(quiz, served_app, "learner@example.com", path="/testen")
    uid = user_id(quiz)
    start_quiz(quiz)
    second = context.new_page()
    second.goto(served_app.url + "/testen")
    expect(second.locator("#quiz-start")).to_be_visible()
    second.get_by_role("link", name="Onderwerpen").click()  # leave the quiz page in the second tab
    expect(second.locator("#welcome")).to_be_visible()
    third = context.new_page()
    third.goto(served_app.url + "/testen")
    expect(third.locator("#quiz-start")).to_be_visible()
    third.close(run_before_unload=True)  # close a tab that is not in a quiz
    second.wait_for_timeout(1000)
    expect(second.locator("#r42-launcher")).to_be_hidden()
    expect(quiz.locator("#r42-launcher")).to_be_hidden()
    assert quiz.evaluate(f"localStorage.getItem('quiz:active:{uid}')") == "true"
    assert len(quiz_rows(served_app, uid)) == 1
    quiz.bring_to_front()  # back to the quiz tab (a click in a tab behind another waits ~2 s in Chromium)
    answer_all(quiz)
    expect(second.locator("#r42-launcher")).to_be_visible()


def test_ending_the_quiz_session_by_the_api_ends_the_attempt(served_app, page, claude):
    """Issue 10, hole 3: lifting the lock through POST /api/quiz/end must not let the quiz go on to a
    score: the next answer shows "Toets beëindigd" and the result never appears."""
    sign_in(page, served_app, "learner@example.com", path="/testen")
    uid = user_id(page)
    token = httpx.post(f"{served_app.pb_url}/api/collections/users/auth-with-password",
                       json={"identity": "learner@example.com", "password": DEMO_PASSWORD}).json()["token"]
    start_quiz(page)
    page.locator("#quiz-options label").first.click()
    page.click("#quiz-next")
    go_on(page)
    expect(page.locator("#quiz-progress")).to_have_text("Vraag 2 van 8")
    ended = httpx.post(f"{served_app.url}/api/quiz/end", headers={"Authorization": f"Bearer {token}"})
    assert ended.status_code == 200 and ended.json()["ended"] == 1
    page.locator("#quiz-options label").first.click()
    page.click("#quiz-next")
    expect(page.locator("#quiz-ended")).to_be_visible()
    expect(page.locator("#quiz-ended")).to_contain_text("Toets beëindigd")
    expect(page.locator("#quiz-score")).to_have_count(0)
    expect(page.locator("#quiz-question")).to_have_count(0)
    assert quiz_rows(served_app, uid) == []
    expect(page.locator("#r42-launcher")).to_be_visible()  # the lock is gone, and so is the attempt
    page.click("#quiz-restart")
    expect(page.locator("#quiz-start")).to_be_visible()


def test_enter_goes_to_the_next_question_once_an_answer_is_chosen(served_app, page):
    sign_in(page, served_app, "learner@example.com", path="/testen")
    start_quiz(page)
    page.keyboard.press("Enter")  # nothing chosen: stays
    expect(page.locator("#quiz-progress")).to_have_text("Vraag 1 van 8")
    page.locator("#quiz-options label").first.click()
    expect(page.locator("#quiz-next")).to_be_enabled()
    page.keyboard.press("Enter")  # check the answer
    expect(page.locator("#quiz-verdict")).to_be_visible()
    go_on(page, key="Enter")  # and go on
    expect(page.locator("#quiz-progress")).to_have_text("Vraag 2 van 8")
    stop_quiz(page)


def test_each_answer_is_checked_before_the_next_question(served_app, page):
    """Right or wrong shows after "Controleren": the right option in green, a wrong choice in red with
    the right answer named, and the choice can no longer change."""
    sign_in(page, served_app, "learner@example.com", path="/testen")
    start_quiz(page)
    seen = set()
    for number in range(1, 9):
        options = page.locator("#quiz-options label")
        options.nth(number % 4).click()
        chosen = options.nth(number % 4).inner_text().strip()
        expect(page.locator("#quiz-next")).to_have_text("Controleren")
        if number == 1:  # an impatient double click checks the answer and stops at the verdict
            page.dblclick("#quiz-next")
            page.wait_for_timeout(800)
            expect(page.locator("#quiz-progress")).to_have_text("Vraag 1 van 8")
        else:
            page.click("#quiz-next")
        verdict = page.locator("#quiz-verdict")
        expect(verdict).to_be_visible()
        right = page.locator("#quiz-options .quiz-option-right")
        expect(right).to_have_count(1)
        if right.inner_text().strip() == chosen:
            expect(verdict).to_have_text("Goed!")
            seen.add("right")
        else:
            expect(verdict).to_contain_text("het goede antwoord is " + right.inner_text().strip())
            expect(page.locator("#quiz-options .quiz-option-wrong")).to_have_text(chosen)
            seen.add("wrong")
        options.nth((number + 1) % 4).click(force=True)  # too late to change: the options are disabled
        expect(page.locator("#quiz-options .quiz-option-right")).to_have_count(1)
        expect(page.locator("#quiz-next")).to_have_text("Bekijk je score" if number == 8 else "Volgende vraag")
        go_on(page)
    expect(page.locator("#quiz-score")).to_be_visible()
    assert seen  # (which verdicts show depends on the shuffled options; the state test covers both)


def test_reloading_mid_quiz_warns_first_and_then_says_the_attempt_ended(served_app, page):
    sign_in(page, served_app, "learner@example.com", path="/testen")
    uid = user_id(page)
    start_quiz(page)
    page.locator("#quiz-options label").first.click()  # the page has had a user gesture: the warning may show
    warned = []
    page.once("dialog", lambda d: (warned.append(d.type), d.accept()))
    page.reload()
    assert warned == ["beforeunload"]
    expect(page.locator("#quiz-ended")).to_contain_text("opnieuw werd geladen")
    expect(page.locator("#quiz-score")).to_have_count(0)
    expect(page.locator("#r42-launcher")).to_be_visible()
    assert quiz_rows(served_app, uid) == []
    page.click("#quiz-restart")
    expect(page.locator("#quiz-start")).to_be_visible()
