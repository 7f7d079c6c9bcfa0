"""Issue 46, as a new organisation adopts R42: an operator makes the tenant from the command line and invites its
admin; the admin accepts the link, imports a CSV of learners on /admin/people; one learner accepts theirs and asks
R42 a question; the admin deactivates them, and the learner's open page is refused at its next action. Mail is off
in the served app (the embedded default), so links are handed over as the page and the CLI show them."""

import os
import re
import secrets
import subprocess
import sys

from playwright.sync_api import expect

from tests.e2e.conftest import ROOT, sign_in
from tests.e2e.test_chat import ask, open_chat
from tests.fakes import documents as files

GOOD = "paarse-fiets-op-dinsdag"
LEARNER_GOOD = "groene-trein-naar-zee"


def r42(served_app, *args: str) -> subprocess.CompletedProcess:
    port = served_app.url.rsplit(":", 1)[1]
    env = {**os.environ, "R42_PB_URL": served_app.pb_url, "R42_DATA_DIR": str(served_app.data_dir), "R42_PORT": port}
    return subprocess.run([sys.executable, "-m", "r42_app.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)


def accept(page, url: str, password: str) -> None:
    """Open an invitation link, choose a password, and land signed in."""
    page.goto(url)
    expect(page.locator("#link-card")).to_contain_text("Welkom bij R42")
    page.fill("#new-password", "kort")
    page.fill("#new-password-again", "kort")
    page.click("#link-save")
    expect(page.locator("#link-form-error")).to_contain_text("minstens 10 tekens")  # the link is not used up
    page.fill("#new-password", password)
    page.fill("#new-password-again", password)
    page.click("#link-save")
    page.wait_for_selector("#user-menu")


def test_a_new_organisation_gets_its_people_in_and_a_deactivation_counts_at_once(served_app, browser, claude,
                                                                                   tmp_path):
    slug = "bakkerij-" + secrets.token_hex(3)
    admin_email = f"baas@{slug}.nl"
    made = r42(served_app, "tenant", "create", "--slug", slug, "--name", "Bakkerij Brood", "--admin-email",
               admin_email)
    assert made.returncode == 0, made.stderr
    admin_link = re.search(r"(http://\S+/welkom\?token=\S+)", made.stdout)[1]
    assert admin_link.startswith(served_app.url)

    admin_ctx = browser.new_context(viewport={"width": 1400, "height": 900}, locale="nl-NL")
    admin = admin_ctx.new_page()
    accept(admin, admin_link, GOOD)
    expect(admin.locator("#user-menu")).to_contain_text("baas")
    admin.goto(served_app.url + "/admin/people")
    expect(admin.locator("#people-table .person-row")).to_have_count(1)

    csv = tmp_path / "klas.csv"
    csv.write_text(f"e-mailadres;naam;rol\nanna@{slug}.nl;Anna Appel;deelnemer\nbart@{slug}.nl;Bart Bes;deelnemer\n",
                   encoding="utf-8-sig")
    admin.click("#people-import-open")
    with admin.expect_file_chooser() as chooser:  # by keyboard: the drop zone takes focus, Enter picks the file
        admin.locator(".csv-drop").focus()
        admin.keyboard.press("Enter")
    chooser.value.set_files(str(csv))
    expect(admin.locator("#import-summary")).to_contain_text("Regels: 2 · nieuw: 2")
    expect(admin.locator("#people-table .person-row")).to_have_count(1)  # nothing written before the confirmation
    admin.click("#import-confirm")
    expect(admin.locator("#import-done")).to_contain_text("2 mensen uitgenodigd")
    links = admin.locator("#import-links").input_value()
    anna_link = next(line.split("\t")[1] for line in links.splitlines() if line.startswith("anna@"))
    admin.click("#import-close")
    expect(admin.locator("#people-table .person-row")).to_have_count(3)
    expect(admin.locator(f'.person-row[data-email="anna@{slug}.nl"]')).to_contain_text("Uitgenodigd")

    learner_ctx = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    learner = learner_ctx.new_page()
    accept(learner, anna_link, LEARNER_GOOD)
    claude.reply_text("Het brood gaat om vijf uur de oven in.")
    open_chat(learner)
    ask(learner, "Hoe laat gaat het brood de oven in?")
    expect(learner.locator(".r42-assistant").last).to_contain_text("vijf uur de oven in", timeout=30_000)
    expect(learner.locator("#r42-send")).to_be_visible(timeout=30_000)

    admin.reload()
    row = admin.locator(f'.person-row[data-email="anna@{slug}.nl"]')
    expect(row).to_contain_text("Actief")
    row.locator(".person-actions").click()
    admin.locator(".person-deactivate").click()
    admin.click("#people-confirm")
    expect(row).to_contain_text("Gedeactiveerd")

    ask(learner, "En hoe laat gaat de winkel open?")  # the open page's next action: the sign-in card, and why
    expect(learner.locator("#sign-in")).to_be_visible(timeout=30_000)
    expect(learner.locator("#signin-error")).to_contain_text("Je account is gedeactiveerd")
    learner.fill("#email", f"anna@{slug}.nl")
    learner.fill("#password", LEARNER_GOOD)
    learner.click("#sign-in")
    expect(learner.locator("#signin-error")).to_contain_text("gedeactiveerd")
    learner_ctx.close()
    admin_ctx.close()


def test_a_file_that_is_no_csv_is_named_and_not_called_too_big(served_app, page, tmp_path):
    """The import's drop zone takes one CSV file; whatever it turned away was answered "Het bestand is > 1 MB",
    also a photo of a few bytes. It says what is wrong with the file."""
    photo = tmp_path / "klassenfoto.png"
    photo.write_bytes(files.PNG_1PX)
    sign_in(page, served_app, "admin@example.com", path="/admin/people")
    page.click("#people-import-open")
    with page.expect_file_chooser() as chooser:
        page.locator(".csv-drop").click()
    chooser.value.set_files(str(photo))
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("klassenfoto.png is geen CSV-bestand")
    expect(dialog).not_to_contain_text("MB; een lijst")
    expect(page.locator("#import-summary")).to_have_count(0)  # nothing checked, nothing to confirm
    dialog.get_by_role("button", name="Annuleren").click()  # a way out that the screen shows (not only Escape)
    expect(dialog).to_have_count(0)
    expect(page.locator("#people-import-open")).to_be_focused()  # back where the keyboard was


def test_a_dialog_opened_from_a_button_or_a_menu_gives_the_focus_back(served_app, page):
    """Closing "Uitnodigen" or the account menu's "Wachtwoord wijzigen" left the focus on <body>: the keyboard
    started again at the top of the page. It goes back to the button, or to the menu's own button."""
    sign_in(page, served_app, "admin@example.com", path="/admin/people")
    page.locator("#people-invite-open").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#invite-email")).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.locator("#people-invite-open")).to_be_focused()
    page.locator("#user-menu").focus()
    page.keyboard.press("Enter")
    page.locator("#change-password-open").press("Enter")
    expect(page.get_by_role("dialog")).to_contain_text("Wachtwoord wijzigen")
    page.keyboard.press("Escape")
    expect(page.get_by_role("dialog")).to_have_count(0)
    expect(page.locator("#user-menu")).to_be_focused()


def test_a_used_or_made_up_link_says_it_no_longer_works(served_app, page):
    page.goto(served_app.url + "/welkom?token=" + "x" * 43)
    expect(page.locator("#link-card")).to_contain_text("Deze link werkt niet")
    expect(page.locator("#link-card")).to_contain_text("Vraag je beheerder om een nieuwe")
    page.click("#link-to-sign-in")
    expect(page.locator("#sign-in")).to_be_visible()
    expect(page.locator("#forgot-link")).to_be_visible()
    expect(page.locator("#demo-hint")).to_be_visible()  # the demo tenant exists in the served app


def test_forgot_password_without_mail_says_to_ask_the_admin(served_app, page):
    page.goto(served_app.url + "/wachtwoord-vergeten")
    # said before an address is typed, and no promise of a mail (it promised one, then said there is none)
    expect(page.locator("#forgot-no-mail")).to_contain_text("R42 verstuurt hier geen mail")
    expect(page.locator("#forgot-card")).not_to_contain_text("Je krijgt een mail")
    page.fill("#forgot-email", "learner@example.com")
    page.click("#forgot-send")
    expect(page.locator("#forgot-error")).to_contain_text("Vraag je beheerder")
    expect(page.locator("#forgot-no-mail")).to_have_count(0)  # said once, not blue above red
    expect(page.locator("#forgot-card").get_by_text("R42 verstuurt hier geen mail")).to_have_count(1)


def test_changing_the_password_wants_the_old_one_and_signs_the_other_devices_out(served_app, browser):
    """"Wachtwoord wijzigen" in the account menu: the current password first, the new one by the one rule; this tab
    stays signed in, another device of the same person is signed out at its next step."""
    from r42_app.services.adapters.mailer import Mailer
    from r42_app.services.store.people import Actor, People
    from r42_app.services.store.tenants import Tenants

    pb = served_app.superuser()
    people = People(pb, Mailer(), served_app.url)
    email = f"wissel-{secrets.token_hex(3)}@example.com"
    link = people.invite(Tenants(pb).get("demo"), Actor.cli(), email, "Wim Wissel")
    people.redeem(link.url.split("token=")[1], GOOD)
    try:
        here, there = browser.new_context(), browser.new_context()
        page, other = here.new_page(), there.new_page()
        for tab in (page, other):
            tab.goto(served_app.url + "/")
            tab.fill("#email", email)
            tab.fill("#password", GOOD)
            tab.click("#sign-in")
            tab.wait_for_selector("#user-menu")
        page.click("#user-menu")
        page.click("#change-password-open")
        page.fill("#old-password", "niet-mijn-wachtwoord")
        page.fill("#change-new-password", LEARNER_GOOD)
        page.fill("#change-new-again", LEARNER_GOOD)
        page.click("#change-save")
        expect(page.locator("#change-error")).to_contain_text("Je huidige wachtwoord klopt niet")
        # a refusal keeps what was typed (every field was emptied) and puts the keyboard where to mend it
        expect(page.locator("#old-password")).to_be_focused()
        expect(page.locator("#old-password")).to_have_value("")
        expect(page.locator("#change-new-password")).to_have_value(LEARNER_GOOD)
        page.fill("#old-password", GOOD)
        page.fill("#change-new-again", LEARNER_GOOD + "x")
        page.click("#change-save")
        expect(page.locator("#change-error")).to_contain_text("niet gelijk")
        expect(page.locator("#change-new-again")).to_be_focused()
        expect(page.locator("#old-password")).to_have_value(GOOD)
        page.fill("#change-new-password", "wimwissel2026")
        page.fill("#change-new-again", "wimwissel2026")
        page.click("#change-save")
        expect(page.locator("#change-error")).to_contain_text("te makkelijk te raden")  # the name is in it
        expect(page.locator("#change-new-password")).to_be_focused()
        page.fill("#old-password", GOOD)
        page.fill("#change-new-password", LEARNER_GOOD)
        page.fill("#change-new-again", LEARNER_GOOD)
        page.click("#change-save")
        expect(page.get_by_text("Je wachtwoord is gewijzigd")).to_be_visible()
        page.reload()
        expect(page.locator("#user-menu")).to_be_visible()  # this tab got a new session
        other.reload()
        expect(other.locator("#sign-in")).to_be_visible()  # the other device is signed out
        other.fill("#email", email)
        other.fill("#password", LEARNER_GOOD)
        other.click("#sign-in")
        expect(other.locator("#user-menu")).to_be_visible()
        here.close()
        there.close()
    finally:
        pb.delete("users", link.person.id)


def test_a_double_click_on_uitnodigen_invites_once_and_the_shown_link_works(served_app, page):
    from r42_app.services.adapters.mailer import Mailer
    from r42_app.services.store.people import People
    from tests.e2e.conftest import sign_in

    pb = served_app.superuser()
    email = f"dubbel-{secrets.token_hex(3)}@example.com"
    sign_in(page, served_app, "admin@example.com", path="/admin/people")
    page.click("#people-invite-open")
    page.fill("#invite-email", email)
    page.fill("#invite-name", "Dirk Dubbel")
    page.dblclick("#invite-send")
    expect(page.locator("#people-link-callout")).to_contain_text(email)
    page.wait_for_timeout(1500)  # (a second invitation, if one were queued, would be done by now)
    expect(page.get_by_text(f"{email} is uitgenodigd.")).to_have_count(1)  # one toast: one invitation
    shown = page.locator("#people-link").input_value()
    person = pb.first("users", f'email = "{email}"')
    try:
        assert len(pb.all("invitations", filter=f'user = "{person["id"]}"')) == 1
        assert People(pb, Mailer(), served_app.url).peek(shown.split("token=")[1]).email == email
        audit = pb.all("audit_log", filter=f'tool = "people" && arguments.target = "{email}"')
        assert len(audit) == 1  # one invitation, not an invitation and a resend

        # the same address again, as an admin: it says the person was invited already, as what, and that the
        # earlier link stopped; the role the form held is not applied unasked
        page.click("#people-invite-open")
        page.fill("#invite-email", email)
        page.select_option("#invite-role", "admin")
        page.click("#invite-send")
        expect(page.get_by_text(f"{email} was al uitgenodigd, als deelnemer")).to_be_visible()
        expect(page.locator("#people-link")).not_to_have_value(shown)
        assert pb.get("users", person["id"])["role"] == "learner"
    finally:
        pb.delete("users", person["id"])


def test_an_admin_invites_and_deactivates_with_the_keyboard_alone(served_app, page):
    """/admin/people without a mouse: "Uitnodigen" opens the dialog with the cursor in the e-mail field, Tab walks
    the form to "Uitnodigen", Enter invites; the person's "…" menu opens with Enter and its items are reached with
    the arrows; the confirmation is answered from the keyboard too."""
    from tests.e2e.conftest import sign_in

    pb = served_app.superuser()
    email = f"toets-{secrets.token_hex(3)}@example.com"
    sign_in(page, served_app, "admin@example.com", path="/admin/people")
    expect(page.locator("#people-table")).to_be_visible()
    page.locator("#people-invite-open").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#invite-email")).to_be_focused()
    page.keyboard.type("toos@voorbeeld")  # the browser takes it; R42 says what is missing, at the field
    page.keyboard.press("Enter")
    expect(page.locator("#invite-error")).to_contain_text("na de @ hoort een domein")
    expect(page.locator("#invite-email")).to_be_focused()
    expect(page.locator("#invite-email")).to_have_attribute("aria-invalid", "true")
    page.keyboard.press("Control+A")
    page.keyboard.type(email)
    page.keyboard.press("Tab")
    expect(page.locator("#invite-name")).to_be_focused()
    page.keyboard.type("Toos Toets")
    page.keyboard.press("Tab")
    expect(page.locator("#invite-role")).to_be_focused()
    page.keyboard.press("Tab")  # "Annuleren"
    page.keyboard.press("Tab")
    expect(page.locator("#invite-send")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#people-link-callout")).to_contain_text(email)
    expect(page.locator("#people-link")).to_be_focused()  # the keyboard goes on at the link to hand over
    person = pb.first("users", f'email = "{email}"')
    try:
        page.locator("#people-search").focus()
        page.keyboard.insert_text(email)  # one input, as a paste: typed slowly, a search for the first letters
        # already shows one row, and the last one's answer draws the list again under the menu opened below
        row = page.locator(f'.person-row[data-email="{email}"]')
        # the search has answered (one row left) before the menu opens: a list drawn again under an open menu
        # closes it, and the arrow key then moves nothing (seen once on a busy machine)
        expect(page.locator(".person-row")).to_have_count(1)
        expect(row).to_contain_text("Uitgenodigd")

        # a role is changed only once it is confirmed: Escape leaves it as it was, the dialog's button changes it
        role = row.locator(".person-role")
        for confirm in (False, True):
            role.focus()
            page.keyboard.press("Enter")
            expect(page.get_by_role("option", name="Deelnemer")).to_be_focused()
            page.keyboard.press("ArrowDown")
            expect(page.get_by_role("option", name="Beheerder")).to_be_focused()
            page.keyboard.press("Enter")
            expect(page.get_by_role("alertdialog")).to_contain_text(f"{email} beheerder maken?")  # whom: in the title
            expect(page.get_by_role("alertdialog")).to_contain_text("ziet en wijzigt alles van deze organisatie")
            if confirm:
                page.keyboard.press("Tab")
                expect(page.locator("#people-confirm")).to_be_focused()
            page.keyboard.press("Enter" if confirm else "Escape")
            expect(page.get_by_role("alertdialog")).to_have_count(0)
            expect(role).to_have_text("Beheerder" if confirm else "Deelnemer")
            expect(role).to_be_focused()  # the keyboard goes on where it was
            assert pb.get("users", person["id"])["role"] == ("admin" if confirm else "learner")

        for withdraw in (False, True):  # Escape first: the row stays, and so does the keyboard (it went to search)
            row.locator(".person-actions").focus()
            page.keyboard.press("Enter")
            expect(page.locator(".person-resend")).to_be_focused()
            page.keyboard.press("ArrowDown")  # Radix moves the focus a moment later: wait for it, then choose
            expect(page.locator(".person-withdraw")).to_be_focused()
            page.keyboard.press("Enter")
            expect(page.locator("#people-confirm")).to_be_visible()
            if not withdraw:
                page.keyboard.press("Escape")
                expect(page.get_by_role("alertdialog")).to_have_count(0)
                expect(row.locator(".person-actions")).to_be_focused()
        page.keyboard.press("Tab")  # from "Annuleren" (Radix focuses the cancel button of a destructive dialog)
        expect(page.locator("#people-confirm")).to_be_focused()
        page.keyboard.press("Enter")
        expect(row).to_have_count(0)
        assert pb.first("users", f'email = "{email}"') is None
    finally:
        if pb.first("users", f'email = "{email}"'):
            pb.delete("users", person["id"])
