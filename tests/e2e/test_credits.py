"""No AI credit left, in the browser (issue 12): the window shows an upsell hint, not the error state,
and after `r42 credits add` the same window answers again without a reload."""

import os
import subprocess
import sys

from playwright.sync_api import expect

from tests.e2e.conftest import sign_in
from tests.e2e.test_chat import ask, open_chat


def credits_cli(served_app, *args):
    env = {**os.environ, "R42_PB_URL": served_app.pb_url, "R42_DATA_DIR": str(served_app.data_dir)}
    return subprocess.run([sys.executable, "-m", "r42_app.cli", "credits", *args], env=env, capture_output=True,
                          text=True, timeout=120)


def test_no_credits_shows_an_upsell_hint_and_a_top_up_works_at_once(served_app, page, claude):
    pb = served_app.superuser()
    demo = pb.first("tenants", 'slug = "demo"')
    pb.update("tenants", demo["id"], {"credits": 0})
    try:
        sign_in(page, served_app, "learner@example.com")
        open_chat(page)
        ask(page, "Wat is de AOW?")
        hint = page.locator(".r42-quota").last
        expect(hint).to_contain_text("Je beheerder kan het tegoed aanvullen")
        expect(page.locator(".r42-assistant").last).to_contain_text("Je organisatie heeft geen AI-tegoed meer")
        expect(page.locator("#r42-error")).to_have_count(0)  # not the error state
        expect(page.locator("#r42-mark")).to_have_attribute("data-state", "idle")
        assert claude.requests == []

        out = credits_cli(served_app, "add", "--tenant", "demo", "100")
        assert out.returncode == 0, out.stderr
        claude.reply_text("De AOW is het basispensioen.")
        ask(page, "Wat is de AOW?")
        expect(page.locator(".r42-assistant").last).to_contain_text("De AOW is het basispensioen.")
    finally:
        pb.update("tenants", demo["id"], {"credits": demo["credits"]})
