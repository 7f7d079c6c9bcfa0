"""R42 in the browser: launcher everywhere, streamed answers, citations, the stored thread, errors."""

import json
import re

from playwright.sync_api import expect

from tests.e2e.conftest import sign_in

THREAD = re.compile(r"^chat:thread:[a-z0-9]+$")


def open_chat(page):
    """Open the window (a new page starts with it closed, unless a citation chip led there)."""
    expect(page.locator("#r42-launcher")).to_be_visible()
    if not page.locator("#r42-input").is_visible():
        page.click("#r42-launcher")
    expect(page.locator("#r42-input")).to_be_visible()


def ask(page, text):
    page.fill("#r42-input", text)
    page.keyboard.press("Enter")


def thread_keys(page):
    return [k for k in page.evaluate("Object.keys(localStorage)") if THREAD.match(k)]


def test_launcher_on_learn_topic_and_admin_pages(served_app, page):
    sign_in(page, served_app, "admin@example.com")
    for path in ("/", "/topics/aow", "/admin/topics", "/admin/topics/new"):
        page.goto(served_app.url + path)
        expect(page.locator("#r42-launcher")).to_be_visible()


def test_the_window_header_buttons_do_not_overlap(served_app, page):
    """"Gesprek wissen" and "Sluit R42" are two separate targets (Radix's ghost buttons reach past their box; at
    4 px apart the two overlapped by 8 px, so a tap on the edge of one could hit the other)."""
    sign_in(page, served_app, "learner@example.com")
    open_chat(page)
    clear, close = page.locator("#r42-clear").bounding_box(), page.locator("#r42-close").bounding_box()
    assert clear and close and clear["x"] + clear["width"] <= close["x"], (clear, close)


def test_streamed_answer_with_citation_chip_that_opens_the_topic(served_app, page, claude):
    claude.reply_text("Bij waardeoverdracht neem je je opgebouwde pensioen mee naar de nieuwe uitvoerder [ref:1]. "
                      "Zie ook [ref:9].", chunk_delay=0.25, held=True)
    sign_in(page, served_app, "learner@example.com")
    open_chat(page)
    expect(page.locator(".r42-assistant").first).to_contain_text("Hoi Lotte")  # the greeting
    ask(page, "Kan ik mijn pensioen meenemen?")
    expect(page.locator("#r42-mark")).to_have_attribute("data-state", "typing")
    expect(page.locator("#r42-stop")).to_be_visible()
    last = page.locator(".r42-assistant").last
    expect(last).to_contain_text("Bij")
    assert "Zie ook" not in last.inner_text()  # the start is visible while the rest still streams (held till now)
    claude.release()
    expect(page.locator("#r42-send")).to_be_visible(timeout=30_000)
    expect(page.locator("#r42-mark")).to_have_attribute("data-state", "idle")
    chip = last.locator("a.r42-cite")
    expect(chip).to_have_count(1)
    expect(last).to_contain_text("[ref:9]")  # a stale reference stays plain text
    href, label = chip.get_attribute("href"), chip.inner_text().strip()
    assert re.fullmatch(r"/topics/[a-z0-9-]+#p-[0-9a-f]{10}", href), href  # the topic, at the cited passage
    chip.click()
    expect(page).to_have_url(re.compile(re.escape(href) + "$"))
    expect(page.locator("#topic-title")).to_have_text(label)  # the chip opens the topic it names
    passage = page.locator(f"[id='{href.split('#', 1)[1]}']")  # scrolled to the passage, marked for a moment
    expect(passage).to_have_class(re.compile(r"\br42-passage-hit\b"))
    expect(passage).to_be_in_viewport()


def test_thread_survives_reload_is_per_user_and_clears_with_confirmation(served_app, browser, claude):
    ctx = browser.new_context()
    page = ctx.new_page()
    claude.reply_text("Het antwoord voor Lotte.")
    sign_in(page, served_app, "learner@example.com", fresh=True)  # it signs out
    open_chat(page)
    ask(page, "Vraag van Lotte")
    expect(page.locator(".r42-assistant").last).to_contain_text("Het antwoord voor Lotte.")
    keys = thread_keys(page)
    assert len(keys) == 1
    # the thread is saved when the answer is complete
    page.wait_for_function(f"(localStorage.getItem('{keys[0]}') || '').includes('Het antwoord voor Lotte.')")
    stored = json.loads(page.evaluate(f"localStorage.getItem('{keys[0]}')"))
    assert stored["version"] == 1 and stored["messages"][-1]["content"] == "Het antwoord voor Lotte."
    page.reload()
    open_chat(page)
    expect(page.locator("#r42-messages")).to_contain_text("Vraag van Lotte")

    page.click("#user-menu")
    expect(page.locator("#sign-out-hint")).to_contain_text("Wist ook je gesprek met R42")  # said before it happens
    page.click("#sign-out")
    expect(page.locator("#sign-in")).to_be_visible()  # signed out for real before the next sign-in
    page.wait_for_function(f"localStorage.getItem('{keys[0]}') === null")  # a shared computer keeps nothing of Lotte
    sign_in(page, served_app, "admin@example.com")
    open_chat(page)
    expect(page.locator("#r42-messages")).not_to_contain_text("Vraag van Lotte")
    expect(page.locator(".r42-assistant").first).to_contain_text("Hoi Anton")
    assert keys[0] not in thread_keys(page)

    page.click("#r42-clear")
    page.click("#r42-clear-confirm")
    expect(page.locator(".r42-bubble")).to_have_count(1)
    expect(page.locator(".r42-bubble")).to_contain_text("Hoi Anton")
    ctx.close()


def test_corrupt_stored_thread_is_replaced_with_a_notice(served_app, browser, claude):
    claude.reply_text("Eerste antwoord.")
    ctx = browser.new_context()
    page = ctx.new_page()
    sign_in(page, served_app, "learner@acme.example")
    open_chat(page)
    ask(page, "Eerste vraag")
    expect(page.locator(".r42-assistant").last).to_contain_text("Eerste antwoord.")
    key = thread_keys(page)[0]
    # wait for the final save of the answer, so it cannot overwrite the corruption below
    page.wait_for_function(f"(localStorage.getItem('{key}') || '').includes('Eerste antwoord.')")
    page.evaluate(f"localStorage.setItem('{key}', '{{not json')")
    fresh = ctx.new_page()  # a new tab reads the thread from localStorage again
    fresh.goto(served_app.url + "/")
    open_chat(fresh)
    expect(fresh.locator("#r42-restore-notice")).to_be_visible()
    expect(fresh.locator(".r42-assistant").first).to_contain_text("Hoi Bram")
    # until the tab has stored its replacement ("{not json" starts with "{" too: f35 read it before the save)
    fresh.wait_for_function(f"(() => {{ try {{ return JSON.parse(localStorage.getItem('{key}')).version === 1; }}"
                            " catch (e) { return false; } })()")
    assert json.loads(fresh.evaluate(f"localStorage.getItem('{key}')"))["version"] == 1
    ctx.close()


def test_error_state_and_retry(served_app, page, claude):
    claude.fail(500).fail(500)  # one retry by the SDK, then the error reaches the user
    claude.reply_text("Tweede poging gelukt.")
    sign_in(page, served_app, "learner@example.com")
    open_chat(page)
    ask(page, "Wat is de AOW?")
    expect(page.locator("#r42-error")).to_be_visible(timeout=30_000)
    expect(page.locator("#r42-mark")).to_have_attribute("data-state", "error")
    page.click("#r42-retry")
    expect(page.locator(".r42-assistant").last).to_contain_text("Tweede poging gelukt.")
    expect(page.locator("#r42-mark")).to_have_attribute("data-state", "idle")
    expect(page.locator("#r42-messages")).to_contain_text("Wat is de AOW?")


def test_timeout_shows_the_error_state_and_retry_works(served_app, page, claude):
    claude.reply_text("Te laat.", delay=25)  # R42_MODEL_TIMEOUT=10: the window says so after 10 s, not asked again
    claude.reply_text("Nu wel op tijd.")
    sign_in(page, served_app, "learner@example.com")
    open_chat(page)
    ask(page, "Hoe werkt indexatie?")
    expect(page.locator("#r42-error")).to_contain_text("te lang", timeout=60_000)
    assert len(claude.requests) == 1  # the SDK did not try again behind the learner's back
    page.click("#r42-retry")
    expect(page.locator(".r42-assistant").last).to_contain_text("Nu wel op tijd.", timeout=30_000)


def test_older_turns_are_not_sent_and_the_thread_says_so(served_app, browser, claude):
    ctx = browser.new_context()
    page = ctx.new_page()
    claude.reply_text("Eerste.")
    sign_in(page, served_app, "admin@example.com")
    open_chat(page)
    ask(page, "start")
    expect(page.locator(".r42-assistant").last).to_contain_text("Eerste.")
    key = thread_keys(page)[0]
    page.wait_for_function(f"(localStorage.getItem('{key}') || '').includes('Eerste.')")
    long = [{"id": f"m{i}", "role": role, "content": f"{role} {i}", "status": "ok", "citations": []}
            for i in range(15) for role in ("user", "assistant")]
    page.evaluate(f"localStorage.setItem('{key}', {json.dumps(json.dumps({'version': 1, 'messages': long}))})")
    fresh = ctx.new_page()
    fresh.goto(served_app.url + "/")
    open_chat(fresh)
    expect(fresh.locator("#r42-messages")).to_contain_text("user 14")
    claude.reply_text("Antwoord op de nieuwe vraag.")
    ask(fresh, "Nieuwe vraag")
    expect(fresh.locator(".r42-notice")).to_contain_text("Oudere berichten zijn niet meegestuurd")
    sent = claude.requests[-1]["body"]["messages"]
    assert len(sent) <= 24 and sent[-1]["content"] == "Nieuwe vraag"
    ctx.close()


def test_api_on_the_served_app(served_app, claude):
    import httpx

    from r42_app.services.store.pb import PocketBase
    from tests.conftest import DEMO_PASSWORD

    pb = PocketBase(served_app.pb_url)
    token = pb.auth_with_password("users", "learner@example.com", DEMO_PASSWORD)["token"]
    claude.reply_text("Via de API [ref:1].")
    resp = httpx.post(f"{served_app.url}/api/chat", json={"messages": [{"role": "user", "content": "Wat is AOW?"}]},
                      headers={"Authorization": f"Bearer {token}"}, timeout=60)
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/event-stream")
    events = [json.loads(line[6:]) for line in resp.text.splitlines() if line.startswith("data: ")]
    assert events[0]["type"] == "sources" and events[0]["sources"][0]["slug"] == "aow"
    assert events[1] == {"type": "text", "text": "Via"} and events[-1]["type"] == "done"
    assert httpx.post(f"{served_app.url}/api/chat", json={}, timeout=10).status_code == 401


def test_stop_keeps_the_partial_answer_marked_incomplete_and_keyboard_use(served_app, page, claude):
    claude.reply_text("Een heel lang antwoord dat woord voor woord binnenkomt en nog lang niet klaar is", held=True)
    sign_in(page, served_app, "learner@example.com")
    page.focus("#r42-launcher")
    page.keyboard.press("Enter")  # the launcher is a button: Enter opens the window
    expect(page.locator("#r42-input")).to_be_focused()
    page.keyboard.type("Vertel iets")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("over pensioen")
    expect(page.locator("#r42-input")).to_have_value("Vertel iets\nover pensioen")
    page.keyboard.press("Enter")
    last = page.locator(".r42-assistant").last
    expect(last).to_contain_text("Een")  # the rest is held: the stop comes mid-answer however slow the machine
    page.click("#r42-stop")
    expect(page.locator("#r42-send")).to_be_visible(timeout=15_000)
    expect(last).to_contain_text("Onvolledig antwoord")
    assert "klaar is" not in last.inner_text()
    page.keyboard.press("Escape")
    expect(page.locator("#r42-window")).to_have_count(0)


def test_a_question_typed_while_r42_answers_waits_and_goes_when_the_answer_ends(served_app, page, claude):
    claude.reply_text("Het eerste antwoord komt langzaam binnen, woord voor woord, tot het klaar is.", held=True)
    claude.reply_text("Het tweede antwoord.")
    sign_in(page, served_app, "learner@example.com")
    open_chat(page)
    ask(page, "Eerste vraag")
    expect(page.locator("#r42-stop")).to_be_visible()
    ask(page, "Tweede vraag, getypt terwijl R42 nog schrijft")
    expect(page.locator("#r42-queued")).to_contain_text("Tweede vraag, getypt terwijl R42 nog schrijft")
    expect(page.locator("#r42-input")).to_have_value("")
    claude.release()  # the first answer ends now
    expect(page.locator(".r42-assistant").last).to_contain_text("Het tweede antwoord.", timeout=30_000)
    users = page.locator(".r42-user")
    expect(users.last).to_contain_text("Tweede vraag, getypt terwijl R42 nog schrijft")
    expect(page.locator("#r42-queued")).to_have_count(0)
    assert "Het eerste antwoord komt langzaam" in page.locator("#r42-messages").inner_text()


def test_a_waiting_question_can_be_taken_back_into_the_box(served_app, page, claude):
    claude.reply_text("Een antwoord dat even duurt, met veel woorden na elkaar.", held=True)
    sign_in(page, served_app, "learner@example.com")
    open_chat(page)
    ask(page, "Eerste vraag")
    expect(page.locator("#r42-stop")).to_be_visible()
    ask(page, "Toch maar niet")
    page.click("#r42-queued-cancel")
    expect(page.locator("#r42-input")).to_have_value("Toch maar niet")
    claude.release()  # the first answer ends now: nothing is sent after it
    expect(page.locator("#r42-send")).to_be_visible(timeout=30_000)
    expect(page.locator(".r42-user").last).to_contain_text("Eerste vraag")  # nothing sent behind the user's back


def test_a_message_over_the_limit_shows_a_counter_is_refused_with_the_reason_and_stays(served_app, page):
    sign_in(page, served_app, "learner@example.com")
    open_chat(page)
    expect(page.locator("#r42-count")).to_be_hidden()
    page.fill("#r42-input", "a" * 7500)
    expect(page.locator("#r42-count")).to_contain_text("7.500 / 8.000")
    page.fill("#r42-input", "pensioen " * 900)  # 8,100 characters, as a paste would bring them
    expect(page.locator("#r42-count")).to_contain_text("te lang")
    page.keyboard.press("Enter")
    expect(page.locator("#r42-error")).to_contain_text("het maximum is 8.000")
    assert len(page.locator("#r42-input").input_value()) == 8100  # nothing typed is lost
    expect(page.locator(".r42-user")).to_have_count(0)


def test_refs_are_chips_while_the_answer_streams_and_after_stop_with_no_incomplete_label_meanwhile(
        served_app, page, claude):
    claude.reply_text("Bij waardeoverdracht [ref:1] neem je je pensioen mee naar je nieuwe werkgever, "
                      "en daarna volgen nog heel veel woorden die langzaam binnenkomen, zo veel dat ook een trage "
                      "machine op stop drukt voor ze er allemaal zijn, want elk woord wacht even tot het einde",
                      chunk_delay=0.4)
    sign_in(page, served_app, "learner@example.com")
    open_chat(page)
    ask(page, "Wat is waardeoverdracht?")
    last = page.locator(".r42-assistant").last
    expect(last).to_contain_text("neem je")
    expect(page.locator("#r42-stop")).to_be_visible()  # still streaming
    expect(last.locator("a.r42-cite")).to_have_count(1)  # the reference is a chip already
    assert "[ref:" not in last.inner_text()
    expect(last.locator(".r42-incomplete")).to_have_count(0)  # streaming is not "incomplete"
    page.click("#r42-stop")
    expect(page.locator("#r42-send")).to_be_visible(timeout=15_000)
    expect(last.locator(".r42-incomplete")).to_contain_text("Onvolledig antwoord")  # it really ended early
    expect(last.locator("a.r42-cite")).to_have_count(1)  # and the chip stays a chip
    assert "tot het einde" not in last.inner_text()


def test_two_tabs_keep_both_conversations_and_each_shows_the_union(served_app, browser, claude):
    ctx = browser.new_context()
    one, two = ctx.new_page(), ctx.new_page()
    sign_in(one, served_app, "learner@example.com")
    two.goto(served_app.url + "/")
    expect(two.locator("#user-menu")).to_be_visible()  # the same browser: signed in there too
    open_chat(one)
    open_chat(two)
    claude.reply_text("Antwoord in tab een.")
    ask(one, "Vraag in tab een")
    expect(one.locator(".r42-assistant").last).to_contain_text("Antwoord in tab een.")
    claude.reply_text("Antwoord in tab twee.")
    ask(two, "Vraag in tab twee")
    expect(two.locator(".r42-assistant").last).to_contain_text("Antwoord in tab twee.")
    for page in (one, two):  # each tab shows both, in the order they were asked
        expect(page.locator("#r42-messages")).to_contain_text("Antwoord in tab twee.", timeout=10_000)
        text = page.locator("#r42-messages").inner_text()
        assert text.index("Vraag in tab een") < text.index("Vraag in tab twee"), text
    key = thread_keys(one)[0]
    stored = json.loads(one.evaluate(f"localStorage.getItem('{key}')"))["messages"]
    contents = [m["content"] for m in stored]
    assert "Vraag in tab een" in contents and "Vraag in tab twee" in contents  # nothing lost from storage
    third = ctx.new_page()
    third.goto(served_app.url + "/")
    open_chat(third)
    expect(third.locator("#r42-messages")).to_contain_text("Vraag in tab een")
    expect(third.locator("#r42-messages")).to_contain_text("Vraag in tab twee")
    ctx.close()


def test_the_window_opens_only_when_asked_and_docks_beside_the_page_on_a_wide_screen(served_app, browser, claude):
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    page = ctx.new_page()
    sign_in(page, served_app, "learner@example.com")
    open_chat(page)
    window_box = page.locator("#r42-window").bounding_box()
    page_box = page.locator(".r42-page").bounding_box()
    assert page_box["x"] + page_box["width"] <= window_box["x"] + 1  # docked: the page makes room, nothing covered
    expect(page.locator("#r42-launcher")).to_be_hidden()  # the panel has its own close button
    page.goto(served_app.url + "/topics/aow")
    expect(page.locator("#topic-title")).to_be_visible()
    expect(page.locator("#r42-window")).to_have_count(0)  # a new page starts with the window closed
    assert page.locator(".r42-page").bounding_box()["width"] > 1300  # and the page has the full width again
    claude.reply_text("Zie het partnerpensioen [ref:1].")
    open_chat(page)
    ask(page, "Wat is partnerpensioen?")
    chip = page.locator(".r42-assistant").last.locator("a.r42-cite")
    expect(chip).to_have_count(1)
    chip.click()
    expect(page).to_have_url(re.compile(r"/topics/partnerpensioen#p-[0-9a-f]{10}$"))  # at the cited passage
    expect(page.locator("#r42-window")).to_be_visible()  # a chip keeps the conversation beside its topic
    ctx.close()


# What the page wrote to the clipboard, once each write has finished (or why it failed). A wait must poll a plain
# value: wait_for_function treats a Promise as true at once.
RECORD_COPIES = """
window.r42Copied = [];
if (navigator.clipboard) {  // (not on a page that is no secure context)
    const writeText = navigator.clipboard.writeText.bind(navigator.clipboard);
    navigator.clipboard.writeText = text => writeText(text).then(
        () => { window.r42Copied.push(text); },
        error => { window.r42Copied.push("write failed: " + error); throw error; });
}
"""


def test_copy_regenerate_edit_and_up_arrow(served_app, browser, claude):
    ctx = browser.new_context(permissions=["clipboard-read", "clipboard-write"])
    ctx.add_init_script(RECORD_COPIES)
    page = ctx.new_page()
    claude.reply_text("Het eerste antwoord over de AOW [ref:1].")
    sign_in(page, served_app, "learner@example.com")
    open_chat(page)
    ask(page, "Wat is de AOW?")
    last = page.locator(".r42-assistant").last
    expect(last).to_contain_text("Het eerste antwoord")
    expect(page.locator("#r42-send")).to_be_visible(timeout=30_000)
    last.locator(".r42-copy").click()
    # the copy is a round trip to the server: wait until the page's own write to the clipboard has finished
    page.wait_for_function("window.r42Copied.length > 0")
    assert page.evaluate("window.r42Copied") == ["Het eerste antwoord over de AOW."]  # the text, without [ref:N]
    assert page.evaluate("navigator.clipboard.readText()") == "Het eerste antwoord over de AOW."

    claude.reply_text("Een nieuw antwoord.")
    last.locator(".r42-regenerate").click()
    expect(page.locator(".r42-assistant").last).to_contain_text("Een nieuw antwoord.", timeout=30_000)
    expect(page.locator("#r42-messages")).not_to_contain_text("Het eerste antwoord")  # replaced, not added
    expect(page.locator(".r42-user")).to_have_count(1)

    page.locator(".r42-edit").click()
    expect(page.locator("#r42-input")).to_have_value("Wat is de AOW?")
    expect(page.locator(".r42-user")).to_have_count(1)  # the question stays until the edit is sent
    claude.reply_text("Antwoord op de bewerkte vraag.")
    page.fill("#r42-input", "Wat is de AOW-leeftijd?")
    page.keyboard.press("Enter")
    expect(page.locator(".r42-assistant").last).to_contain_text("Antwoord op de bewerkte vraag.", timeout=30_000)
    expect(page.locator(".r42-user")).to_have_count(1)  # and is then replaced, with its answer
    expect(page.locator("#r42-messages")).not_to_contain_text("Een nieuw antwoord.")

    expect(page.locator("#r42-send")).to_be_visible(timeout=30_000)
    page.focus("#r42-input")
    page.keyboard.press("ArrowUp")  # the empty box recalls the last question
    expect(page.locator("#r42-input")).to_have_value("Wat is de AOW-leeftijd?")
    ctx.close()


def test_thumbs_down_reaches_the_admins_feedback_page(served_app, browser, claude):
    ctx = browser.new_context()
    page = ctx.new_page()
    claude.reply_text("De franchise is het deel van het salaris zonder opbouw [ref:1].")
    sign_in(page, served_app, "learner@example.com")
    open_chat(page)
    ask(page, "Wat is de franchise?")
    last = page.locator(".r42-assistant").last
    expect(last).to_contain_text("De franchise is")
    expect(page.locator("#r42-send")).to_be_visible(timeout=30_000)
    last.locator(".r42-thumb-down").click()
    expect(last.locator(".r42-thumb-down")).to_have_attribute("aria-pressed", "true")
    # an optional reason, asked right there, its box focused; Versturen adds it to the rating
    expect(page.locator("#r42-reason")).to_be_focused()
    page.keyboard.type("Het antwoord noemt het bedrag van de franchise niet.")
    page.click("#r42-reason-send")
    expect(page.locator("#r42-reason")).to_have_count(0)
    expect(page.locator("#r42-input")).to_be_focused()
    ctx.close()

    admin_ctx = browser.new_context()
    admin = admin_ctx.new_page()
    sign_in(admin, served_app, "admin@example.com", path="/admin/feedback")
    row = admin.locator(".feedback-row").first
    expect(row).to_contain_text("Wat is de franchise?")
    expect(row).to_contain_text("De franchise is het deel van het salaris")
    expect(row).to_have_attribute("data-rating", "down")
    expect(row.locator(".feedback-user")).to_have_text("Zonder naam")  # the privacy rule (issue 44): no name
    expect(row).not_to_contain_text("Lotte de Leerling")
    expect(row.locator(".feedback-reason")).to_have_text("Het antwoord noemt het bedrag van de franchise niet.")

    # "Zet mijn naam erbij", said before the thumb is pressed: the next rating carries the learner's name
    page = browser.new_context().new_page()
    claude.reply_text("De AOW-leeftijd is 67 jaar.")
    sign_in(page, served_app, "learner@example.com")
    open_chat(page)
    ask(page, "Wat is de AOW-leeftijd?")
    last = page.locator(".r42-assistant").last
    expect(last).to_contain_text("67 jaar")
    # the turn has ended (its thumbs come then): said apart, so that a turn that never ends says so (once, in a
    # fresh-clone run, the thumbs never came after the whole text had streamed)
    expect(last).to_have_attribute("data-status", "ok")
    expect(page.locator("#r42-sign-help")).to_contain_text("beheerders zien je naam")
    expect(page.locator("#r42-sign")).to_have_attribute("aria-checked", "false")
    page.click("#r42-sign")
    expect(page.locator("#r42-sign")).to_have_attribute("aria-checked", "true")
    last.locator(".r42-thumb-up").click()
    expect(last.locator(".r42-thumb-up")).to_have_attribute("aria-pressed", "true")
    page.context.close()
    admin.reload()
    signed = admin.locator(".feedback-row", has_text="Wat is de AOW-leeftijd?").first
    expect(signed.locator(".feedback-user")).to_have_text("Lotte de Leerling")
    admin_ctx.close()


def answered_and_rated_down(page, served_app, claude, question, answer):
    """The learner asks, R42 answers, the learner gives it a thumbs-down: the reason box has the focus.
    Returns the answer's bubble."""
    claude.reply_text(answer)
    sign_in(page, served_app, "learner@example.com")
    open_chat(page)
    ask(page, question)
    last = page.locator(".r42-assistant").last
    expect(page.locator("#r42-send")).to_be_visible(timeout=30_000)
    last.locator(".r42-thumb-down").click()
    expect(page.locator("#r42-reason")).to_be_focused()
    return last


def test_a_thumbs_down_reason_can_be_skipped_with_escape_and_the_rating_stays(served_app, page, claude):
    last = answered_and_rated_down(page, served_app, claude, "Wat is de AOW precies?",
                                   "De AOW is het basispensioen [ref:1].")
    page.keyboard.press("Escape")
    expect(page.locator("#r42-reason")).to_have_count(0)
    expect(page.locator("#r42-input")).to_be_visible()  # Escape skipped the reason; the window stays open
    expect(last.locator(".r42-thumb-down")).to_have_attribute("aria-pressed", "true")
    rows = served_app.superuser().all("chat_feedback", filter='question = "Wat is de AOW precies?"')
    assert [(r["rating"], r["reason"]) for r in rows] == [("down", "")]


def test_a_hand_edited_stored_thread_with_odd_fields_still_saves(served_app, page, claude):
    claude.reply_text("Toch opgeslagen.")
    sign_in(page, served_app, "learner@example.com")
    open_chat(page)
    key = "chat:thread:" + page.locator("#r42-chat").get_attribute("data-r42-user")
    page.evaluate("""k => localStorage.setItem(k, JSON.stringify({version: 1, removed: "x", cleared: "later",
                     messages: [7, null, {id: 5}]}))""", key)
    ask(page, "Vraag na het knoeien")
    expect(page.locator(".r42-assistant").last).to_contain_text("Toch opgeslagen.")
    page.wait_for_function(f"(localStorage.getItem('{key}') || '').includes('Toch opgeslagen.')")


def test_the_box_grows_with_its_text_and_jump_to_latest_shows_when_scrolled_up(served_app, page, claude):
    sign_in(page, served_app, "learner@example.com")
    open_chat(page)
    box = page.locator("#r42-input")
    small = box.bounding_box()["height"]
    box.fill("\n".join(f"regel {n}" for n in range(4)))
    grown = box.bounding_box()["height"]
    assert grown > small + 20, (small, grown)
    box.fill("\n".join(f"regel {n}" for n in range(40)))
    assert box.bounding_box()["height"] <= 190  # up to about eight lines, then it scrolls
    box.fill("")

    long = " ".join(["Een lange alinea over de AOW die de ruimte van het venster ruim vult."] * 12)
    for n in range(3):
        claude.reply_text(f"{long} Antwoord {n}.")
        ask(page, f"Vraag {n}?")
        expect(page.locator(".r42-assistant").last).to_contain_text(f"Antwoord {n}.", timeout=30_000)
        expect(page.locator("#r42-send")).to_be_visible(timeout=30_000)
    jump = page.locator("#r42-jump")
    expect(jump).to_be_hidden()  # at the latest answer
    page.locator("#r42-messages").evaluate("el => el.scrollTo(0, 0)")
    expect(jump).to_be_visible()
    jump.click()
    page.wait_for_function("(() => { const l = document.getElementById('r42-messages');"
                           " return l.scrollHeight - l.scrollTop - l.clientHeight < 10; })()")
    expect(jump).to_be_hidden()


def test_an_answer_that_found_nothing_names_the_closest_topics_but_lists_no_sources(served_app, page, claude):
    """The knowledge base has nothing on the question: the answer may point at the closest topics, but no "Bronnen"
    list says it came from them, also after a reload. A grounded answer keeps its list."""
    claude.reply_text("Daarover staat niets in de kennisbank; het dichtst erbij komt [ref:1].")
    sign_in(page, served_app, "learner@example.com")
    open_chat(page)
    ask(page, "Welke kleur heeft het logo van de personeelsvereniging qwzx?")
    last = page.locator(".r42-assistant").last
    expect(page.locator("#r42-messages")).to_have_attribute("aria-busy", "false", timeout=30_000)
    expect(last).to_contain_text("Daarover staat niets")
    expect(last.locator("a.r42-cite")).to_have_count(1)  # the closest topic, as a chip
    expect(last.locator(".r42-sources")).to_have_count(0)
    page.reload()
    open_chat(page)
    expect(page.locator(".r42-assistant").last).to_contain_text("Daarover staat niets")
    expect(page.locator(".r42-assistant").last.locator(".r42-sources")).to_have_count(0)

    claude.reply_text("De AOW is het basispensioen van de overheid [ref:1].")
    ask(page, "Wat is de AOW?")
    expect(page.locator(".r42-assistant").last.locator(".r42-sources a")).to_have_count(1, timeout=30_000)


def test_a_follow_up_in_the_window_is_answered_from_the_earlier_topic(served_app, page, claude):
    """Issue 47: "Hoe lang duurt dat?" after a question about waardeoverdracht. The window sends the conversation,
    and the turn is grounded on it: the model's KB context names waardeoverdracht, and the chips of [ref:1] and
    [ref:2] (the turn's first two sources) include a waardeoverdracht topic. Alone the question finds other topics."""
    sign_in(page, served_app, "learner@example.com")
    open_chat(page)
    claude.reply_text("Je neemt je opgebouwde pensioen mee naar de nieuwe uitvoerder [ref:1].")
    ask(page, "Hoe werkt waardeoverdracht?")
    expect(page.locator(".r42-assistant").last).to_contain_text("Je neemt je opgebouwde pensioen mee")
    expect(page.locator("#r42-send")).to_be_visible(timeout=30_000)
    claude.reply_text("Dat duurt meestal enkele maanden [ref:1] [ref:2].")
    ask(page, "Hoe lang duurt dat?")
    last = page.locator(".r42-assistant").last
    expect(last).to_contain_text("enkele maanden")
    expect(last.locator("a.r42-cite")).to_have_count(2)
    labels = [chip.inner_text().strip() for chip in last.locator("a.r42-cite").all()]
    assert any(label.startswith("Waardeoverdracht") for label in labels), labels
    system = json.dumps(claude.requests[-1]["body"]["system"], ensure_ascii=False)
    assert "- waardeoverdracht · Waardeoverdracht" in system[system.index("KNOWLEDGE BASE CONTEXT"):]
    assert [m["content"] for m in claude.requests[-1]["body"]["messages"] if m["role"] == "user"][-1] == \
        "Hoe lang duurt dat?"
