"""R42 inside a learning environment (issue 48, part 2), in a real browser: a course page of an LMS on another
loopback origin (127.0.0.2, another site than the app's 127.0.0.1) frames the LTI launch, with third-party cookies
blocked (the full Chromium's default for a frame of another site: no cookies, and no localStorage or
sessionStorage either). The learner lands signed in on the linked topic with R42 open and gets a streamed answer;
a quiz locks R42 inside the frame as outside; "Nieuw tabblad" opens the same page signed in, outside the frame; a
page that was not launched refuses to be framed."""

import pytest
from playwright.sync_api import expect

from r42_app.services.store.lti import LtiStore
from r42_app.services.store.tenants import Tenants
from tests.e2e.conftest import CHROMIUM_ARGS
from tests.lti_platform import LtiPlatform

FULL_CHROMIUM = "/usr/bin/chromium"  # the headless shell lets a third-party frame keep its cookies and storage


@pytest.fixture(scope="module")
def lms(served_app):
    pb = served_app.superuser()
    demo = Tenants(pb).get("demo")
    with LtiPlatform(host="127.0.0.2") as platform:
        platform.person = {"sub": "frame-learner-1", "email": "", "name": "Fenna Frame",
                           "roles": [platform.person["roles"][0]]}
        store = LtiStore(pb, loopback_ok=True)
        store.add(demo, "", "cli", platform.issuer, platform.client_id, [platform.deployment_id],
                  platform.jwks_url, platform.auth_url)
        platform.tool_login_url = f"{served_app.url}/lti/login"
        yield platform
        store.remove(demo, "", "cli", platform.issuer, platform.client_id)
        for row in pb.all("users", filter=f'lti_id ~ "{platform.issuer}|"'):  # the people it brought in
            for quiz in pb.all("quiz_sessions", filter=f'user = "{row["id"]}"'):
                pb.delete("quiz_sessions", quiz["id"])
            pb.delete("users", row["id"])


@pytest.fixture(scope="module")
def blocking_browser(browser):
    """The full Chromium (new headless mode), whose default blocks third-party cookies and storage."""
    full = browser.browser_type.launch(executable_path=FULL_CHROMIUM, args=CHROMIUM_ARGS)
    yield full
    full.close()


def test_a_framed_launch_lands_signed_in_on_the_topic_and_answers(served_app, lms, blocking_browser, claude):
    claude.reply_text("Het partnerpensioen is voor je partner na je overlijden [ref:1].", chunk_delay=0.2)
    lms.course_target = f"{served_app.url}/topics/partnerpensioen"
    ctx = blocking_browser.new_context(viewport={"width": 1400, "height": 900}, locale="nl-NL")
    try:
        page = ctx.new_page()
        page.goto(f"{lms.issuer}/course/1")
        frame = page.frame_locator("#lms-frame")
        try:
            expect(frame.locator("#topic-title")).to_have_text("Partnerpensioen", timeout=60_000)
        except AssertionError:
            for f in page.frames:
                print("FRAME", f.url, f.evaluate("document.documentElement.outerHTML.slice(0, 3000)"))
            print(served_app.log_tail(60))
            raise
        expect(frame.locator("#r42-input")).to_be_visible()  # the launch lands with R42 open beside the topic
        # the browser refused this frame storage (the test is what it says), and R42 ran on all the same
        [inner] = [f for f in page.frames if "/topics/partnerpensioen" in f.url]
        assert inner.evaluate("document.documentElement.getAttribute('data-r42-storage')") == "memory"
        inner.wait_for_url(lambda url: "r42_signin" not in url)  # the one-time code leaves the address
        expect(frame.locator(".r42-assistant").first).to_contain_text("Hoi Fenna")
        inner.fill("#r42-input", "Wat is het partnerpensioen?")
        inner.press("#r42-input", "Enter")
        answer = frame.locator(".r42-assistant").last
        expect(answer).to_contain_text("voor je partner na je overlijden", timeout=30_000)
        expect(frame.locator("#r42-send")).to_be_visible(timeout=30_000)

        # the quiz lock holds inside the frame as outside: R42 goes away while the quiz runs
        frame.get_by_role("link", name="Testen").click()
        frame.locator("#quiz-start").click()
        expect(frame.locator("#quiz-question")).to_be_visible()
        expect(frame.locator("#r42-launcher")).to_be_hidden()
        expect(frame.locator("#r42-window")).to_be_hidden()
        frame.locator("#quiz-stop").click()
        frame.locator("#quiz-stop-confirm").click()
        expect(frame.locator("#quiz-ended")).to_be_visible()
        expect(frame.locator("#r42-launcher")).to_be_visible()

        with ctx.expect_page() as opened:  # the way out of the frame, signed in
            frame.locator("#r42-new-tab").click()
        tab = opened.value
        expect(tab.locator("#quiz-start")).to_be_visible(timeout=30_000)  # the page the frame was on
        expect(tab.locator("#user-menu")).to_be_visible()
        expect(tab.locator("#r42-new-tab")).to_be_hidden()  # not framed: no such button
    finally:
        ctx.close()


def test_a_page_that_was_not_launched_refuses_to_be_framed(served_app, lms, blocking_browser):
    ctx = blocking_browser.new_context()
    try:
        page = ctx.new_page()
        refused: list[str] = []
        page.on("console", lambda m: refused.append(m.text) if "frame-ancestors" in m.text else None)
        page.goto(f"{lms.issuer}/frames?src={served_app.url}/topics/partnerpensioen")
        page.wait_for_function("document.getElementById('lms-frame') !== null")
        for _ in range(100):
            if refused:
                break
            page.wait_for_timeout(200)
        assert refused and "'none'" in refused[0], refused
        assert page.frame_locator("#lms-frame").locator("#r42-launcher").count() == 0
    finally:
        ctx.close()
