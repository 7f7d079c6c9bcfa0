"""What a page makes the browser load and run on a first visit (2026-12-07).

Every page below, opened signed in (the learner's pages as the learner, the admin's as the admin) in a fresh
browser context, as a first visit or a new device opens it: the requests and bytes until the network is idle (the
Resource Timing entries: decoded sizes, and what came over the wire), the JavaScript among them, and the main
thread's busy time (Chromium's CDP Performance metrics: TaskDuration, and ScriptDuration of it). The median of
REPEAT loads of each page, for this checkout beside a baseline commit in the same run (R42_BENCH_PAGE_BASELINE,
default 3ffa254: the last commit before the phone's topic-list toggle stopped naming its icon at run time, which
bundled lucide's map of every icon into the pages' shared scripts; tests/unit/test_page_weight.py).

    python -m bench page-weight
"""

from __future__ import annotations

import json
import os
import statistics

from bench.common import CHROMIUM_ARGS, baseline_checkout, served_app

PASSWORD = os.environ.get("R42_DEMO_PASSWORD", "r42-demo-2026")
BASELINE = os.environ.get("R42_BENCH_PAGE_BASELINE", "3ffa254")
REPEAT = int(os.environ.get("R42_BENCH_PAGE_REPEAT", "5"))
PAGES = [("learner@example.com", "/"), ("learner@example.com", "/topics/aow"), ("learner@example.com", "/graph"),
         ("learner@example.com", "/testen"), ("admin@example.com", "/admin/topics"),
         ("admin@example.com", "/admin/people"), ("admin@example.com", "/admin/costs")]
CHROMIUM = "/usr/bin/chromium-headless-shell" if os.path.exists("/usr/bin/chromium-headless-shell") \
    else "/usr/bin/chromium"
RESOURCES = """() => {
  const all = [...performance.getEntriesByType('navigation'), ...performance.getEntriesByType('resource')];
  const js = all.filter((e) => new URL(e.name).pathname.endsWith('.js'));
  const sum = (xs, k) => xs.reduce((n, e) => n + (e[k] || 0), 0);
  return {requests: all.length, decoded: sum(all, 'decodedBodySize'), wire: sum(all, 'transferSize'),
          js: sum(js, 'decodedBodySize')};
}"""


def session(browser, url: str, email: str) -> str:
    """The stored session (localStorage `r42.session`) of one sign-in, for the fresh contexts to start with."""
    ctx = browser.new_context()
    page = ctx.new_page()
    page.goto(url + "/")
    page.fill("#email", email)
    page.fill("#password", PASSWORD)
    page.click("#sign-in")
    page.wait_for_selector("#user-menu")
    stored = page.evaluate("localStorage.getItem('r42.session')")
    ctx.close()
    return stored


def first_visit(browser, url: str, path: str, stored: str) -> dict:
    ctx = browser.new_context(viewport={"width": 1400, "height": 900}, locale="nl-NL")
    ctx.add_init_script(f"localStorage.setItem('r42.session', {json.dumps(stored)})")
    page = ctx.new_page()
    cdp = ctx.new_cdp_session(page)
    cdp.send("Performance.enable")
    page.goto(url + path)
    page.wait_for_selector("#user-menu", timeout=60_000)
    page.wait_for_load_state("networkidle")
    found = page.evaluate(RESOURCES)
    metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    found.update(task=metrics["TaskDuration"], script=metrics["ScriptDuration"])
    ctx.close()
    return found


def measure(url: str) -> dict[str, dict]:
    from playwright.sync_api import sync_playwright

    out: dict[str, dict] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        sessions = {email: session(browser, url, email) for email in {e for e, _ in PAGES}}
        for _ in range(2):  # warm: the server's first answers of each page (compiled routes, caches)
            for email, path in PAGES:
                first_visit(browser, url, path, sessions[email])
        for email, path in PAGES:
            loads = [first_visit(browser, url, path, sessions[email]) for _ in range(REPEAT)]
            out[path] = {k: statistics.median(x[k] for x in loads) for k in loads[0]}
        browser.close()
    return out


def run() -> str:
    with baseline_checkout(BASELINE) as tree, served_app(root=tree, PYTHONPATH=str(tree)) as (url, _pb, _data):
        before = measure(url)
    with served_app() as (url, _pb, _data):
        now = measure(url)
    lines = [(f"### A page's first visit: what it loads and the main thread's time (median of {REPEAT} loads, "
              "fresh context, 1400×900)"), "",
             f"Each cell: baseline {BASELINE} → this checkout.", "",
             ("| page | requests | KB (decoded) | KB over the wire | of it JavaScript, KB | main thread, ms | "
              "of it script, ms |"), "|---|---|---|---|---|---|---|"]

    def cell(key: str, path: str, scale: float) -> str:
        return f"{before[path][key] * scale:.0f} → {now[path][key] * scale:.0f}"

    for _email, path in PAGES:
        lines.append(f"| `{path}` | {cell('requests', path, 1)} | {cell('decoded', path, 1 / 1024)} | "
                     f"{cell('wire', path, 1 / 1024)} | {cell('js', path, 1 / 1024)} | "
                     f"{cell('task', path, 1000)} | {cell('script', path, 1000)} |")
    ratio = statistics.median(now[p]["task"] / before[p]["task"] for _e, p in PAGES)
    lines += ["", (f"Main thread's time per first visit, this checkout against the baseline: {ratio:.2f}× (median "
                   "of the pages' ratios).")]
    return "\n".join(lines)


if __name__ == "__main__":
    print(run())
