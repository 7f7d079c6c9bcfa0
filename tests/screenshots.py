"""Every page of R42, in every language, at desktop and phone size: `make screenshots` (python -m tests.screenshots).

Starts the app as `make run` does (a temp data dir, free ports, the demo seeded; no model key, so R42 answers
offline), then for each language (Dutch and English) and each size (1400x900 and 390x844) signs in as the demo
learner and the demo admin, each with that language chosen in their account (`PATCH /api/me`, as the account menu
does), opens every page they can reach, waits until it has loaded, saves a PNG and scans it with axe-core (WCAG 2.1
A and AA). The pictures go to `screenshots/<language>/<size>/<who>-<page>.png` (ignored by git); the summary (pages,
axe's serious and critical findings per page, any Dutch word the English pages still show in their navigation)
is printed. Exit 1 when axe finds a serious or critical violation or a page does not load.

    python -m tests.screenshots [--out DIR] [--languages nl,en] [--sizes desktop,phone]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
AXE = ROOT / "tools" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
SIZES = {"desktop": {"width": 1400, "height": 900}, "phone": {"width": 390, "height": 844}}
PASSWORD = "screenshots-demo-password"
LEARNER_PAGES = {"topics": "/", "topic": "/topics/aow", "graph": "/graph", "quiz": "/testen"}
ADMIN_PAGES = {"admin-topics": "/admin/topics", "admin-topic-new": "/admin/topics/new",
               "admin-topic": "/admin/topics/aow", "admin-suggestions": "/admin/suggestions",
               "admin-feedback": "/admin/feedback", "admin-chatbot": "/admin/chatbot", "admin-costs": "/admin/costs",
               "admin-tools": "/admin/tools", "admin-gaps": "/admin/gaps", "admin-people": "/admin/people"}
SIGNED_OUT = {"sign-in": "/", "forgot-password": "/wachtwoord-vergeten"}
# what an English page's navigation must not say any more
DUTCH_NAV = ("Onderwerpen", "Kennisgraaf", "Testen", "Beheer")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_app(data_dir: Path) -> tuple[subprocess.Popen, str, str]:
    port, pb_port = _free_port(), _free_port()
    env = {**os.environ, "R42_DATA_DIR": str(data_dir), "R42_PORT": str(port), "R42_PB_PORT": str(pb_port),
           "R42_DEMO_PASSWORD": PASSWORD}
    for name in ("ANTHROPIC_API_KEY", "R42_PB_URL", "R42_PUBLIC_URL"):
        env.pop(name, None)
    log = data_dir / "serve.log"
    r42 = Path(sys.executable).parent / "r42"
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(r42), "serve"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 900
    while "R42 is running" not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.terminate()
            sys.exit("r42 serve did not start:\n" + log.read_text(errors="replace")[-3000:])
        time.sleep(1)
    return proc, f"http://127.0.0.1:{port}", f"http://127.0.0.1:{pb_port}"


def choose_language(app_url: str, pb_url: str, email: str, language: str) -> None:
    """What the account menu does, through the API: the person's own language."""
    token = httpx.post(f"{pb_url}/api/collections/users/auth-with-password",
                       json={"identity": email, "password": PASSWORD}, timeout=30).json()["token"]
    resp = httpx.patch(f"{app_url}/api/me", json={"language": language},
                       headers={"Authorization": f"Bearer {token}"}, timeout=30)
    resp.raise_for_status()


def settle(page) -> None:
    page.wait_for_load_state("networkidle")
    page.wait_for_function("!document.querySelector('[aria-busy=\"true\"]:not(#r42-window *)')")
    page.wait_for_function("document.getAnimations().every((a) => a.playState !== 'running'"
                           " || a.effect.getTiming().iterations === Infinity)")


def axe_findings(page) -> list[str]:
    """axe-core's serious and critical WCAG 2.1 A/AA violations, one line per element."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    return page.evaluate("""async () => {
        const r = await axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a',
                                                                          'wcag21aa']}});
        return r.violations.filter((v) => ['serious', 'critical'].includes(v.impact)).flatMap(
          (v) => v.nodes.map((n) => `${v.id} (${v.impact}): ${n.target.join(' ')}`));
    }""")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "screenshots")
    parser.add_argument("--languages", default="nl,en")
    parser.add_argument("--sizes", default="desktop,phone")
    args = parser.parse_args(argv)
    if not AXE.exists():
        sys.exit(f"{AXE} is missing: `make test-deps` installs axe-core")
    from playwright.sync_api import sync_playwright

    from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS

    problems: list[str] = []
    rows: list[tuple[str, str, str, int]] = []
    with tempfile.TemporaryDirectory(prefix="r42-shots-") as data:
        proc, url, pb_url = start_app(Path(data))
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                for language in args.languages.split(","):
                    for who in ("learner@example.com", "admin@example.com"):
                        choose_language(url, pb_url, who, language)
                    for size in args.sizes.split(","):
                        folder = args.out / language / size
                        folder.mkdir(parents=True, exist_ok=True)
                        locale = "en-GB" if language == "en" else "nl-NL"
                        plans = [("signed-out", None, SIGNED_OUT), ("learner", "learner@example.com", LEARNER_PAGES),
                                 ("admin", "admin@example.com", ADMIN_PAGES)]
                        for who, email, pages in plans:
                            ctx = browser.new_context(viewport=SIZES[size], locale=locale, bypass_csp=True,
                                                      is_mobile=size == "phone", has_touch=size == "phone")
                            page = ctx.new_page()
                            if email:
                                page.goto(url + "/")
                                page.fill("#email", email)
                                page.fill("#password", PASSWORD)
                                page.click("#sign-in")
                                page.wait_for_selector("#user-menu", timeout=60_000)
                            for name, path in pages.items():
                                try:
                                    page.goto(url + path)
                                    page.wait_for_selector("#main, #sign-in-card, #forgot-card", timeout=60_000)
                                    settle(page)
                                except Exception as exc:  # noqa: BLE001 - said in the summary, the run goes on
                                    problems.append(f"{language} {size} {who} {path}: did not load ({exc})")
                                    continue
                                page.screenshot(path=str(folder / f"{who}-{name}.png"), full_page=True)
                                found = axe_findings(page)
                                problems += [f"{language} {size} {who} {path}: {line}" for line in found]
                                if language == "en" and email:
                                    nav = page.locator("nav[aria-label]").first.inner_text()
                                    problems += [f"{language} {size} {who} {path}: Dutch in the menu: {w}"
                                                 for w in DUTCH_NAV if w in nav]
                                lang = page.evaluate("document.documentElement.lang")
                                if lang != language:
                                    problems.append(f"{language} {size} {who} {path}: <html lang={lang!r}>")
                                rows.append((language, size, f"{who} {path}", len(found)))
                            ctx.close()
                    for who in ("learner@example.com", "admin@example.com"):
                        choose_language(url, pb_url, who, "")
                browser.close()
        finally:
            proc.terminate()
            proc.wait(60)
    print(f"{len(rows)} pages photographed into {args.out}")
    print(json.dumps({"pages": len(rows), "problems": problems}, indent=2, ensure_ascii=False))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
