"""Knowledge-graph page: how long `/graph` takes to show the whole graph, and how long a node click
takes to show its side panel, at 200 and 2,000 topics. Baselines in the same run: the topic list
page (`/`) of the same tenant, and opening the same panel from a search hit (a DOM button instead
of a canvas hit test). Also the frame rate while the layout runs, which is what "responsive" means
for a canvas."""

from __future__ import annotations

import json
import os
import random
import time

from bench.common import CHROMIUM_ARGS, baseline_checkout, ms, p50, p95, served_app, synthetic_topics
from r42_app.services.store.kb_store import KBStore
from r42_app.services.store.seed import DemoUser, ensure_user

SIZES = (200, 2000)
LOADS = 7
CLICKS = 15
PASSWORD = os.environ.get("R42_DEMO_PASSWORD", "r42-demo-2026")


def graph_document(n: int) -> dict:
    """n topics; every topic is part of an earlier one (a forest, so no cycles) and about half also
    relate to a random other topic: ~1.5 links per topic, like the demo KB."""
    topics = synthetic_topics(n, seed=11, content_words=60)
    rng = random.Random(n)
    relations = [{"source": f"t-{i}", "target": f"t-{rng.randrange(i // 2, i)}", "type": "part_of"}
                 for i in range(1, n)]
    for i in range(0, n, 2):
        j = rng.randrange(n)
        if j != i:
            relations.append({"source": f"t-{i}", "target": f"t-{j}", "type": "related_to"})
    return {"topics": topics, "relations": relations}


def _fps(page, seconds: float) -> float:
    return page.evaluate("""s => new Promise(done => { let n = 0; const t0 = performance.now();
        const tick = () => { n++; if (performance.now() - t0 < s * 1000) requestAnimationFrame(tick);
        else done(n / ((performance.now() - t0) / 1000)); }; requestAnimationFrame(tick); })""", seconds)


# Counts the page's requests for an animation frame (each one is a frame drawn or a loop kept alive).
COUNT_FRAMES = """(() => { window.__frames = 0; const request = window.requestAnimationFrame.bind(window);
  window.requestAnimationFrame = (callback) => { window.__frames += 1; return request(callback); }; })()"""
IDLE_S = 5.0
# The commit before the canvas stopped drawing when nothing moves; R42_BENCH_GRAPH_BASELINE=none leaves it out.
IDLE_BASELINE = os.environ.get("R42_BENCH_GRAPH_BASELINE", "dbd8ba7").strip()
IDLE_BASELINE = "" if IDLE_BASELINE.lower() == "none" else IDLE_BASELINE


def _chromium_cpu() -> float:
    """CPU seconds used so far by every Chromium process on this machine (the bench's browser is the only one)."""
    import psutil

    total = 0.0
    for proc in psutil.process_iter(["name", "cpu_times"]):
        if proc.info["name"] and "chrom" in proc.info["name"] and proc.info["cpu_times"]:
            total += proc.info["cpu_times"].user + proc.info["cpu_times"].system
    return total


def _idle(page) -> tuple[float, float]:
    """(animation frames requested a second, Chromium's CPU in % of one core) while nobody touches the page."""
    frames, cpu, start = page.evaluate("window.__frames"), _chromium_cpu(), time.perf_counter()
    time.sleep(IDLE_S)
    seconds = time.perf_counter() - start
    return (page.evaluate("window.__frames") - frames) / seconds, 100 * (_chromium_cpu() - cpu) / seconds


def _signed_in(browser, url: str, n: int, init_script: str = ""):
    """A 1400×900 context and its page, signed in as the learner of the tenant with n topics, on the topic list."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    if init_script:
        ctx.add_init_script(init_script)
    page = ctx.new_page()
    page.goto(url + "/")
    page.fill("#email", f"graph{n}@example.com")
    page.fill("#password", PASSWORD)
    page.click("#sign-in")
    page.wait_for_selector("#topic-grid a", timeout=60_000)
    return ctx, page


def _idle_pass(browser, url: str, n: int) -> dict[str, tuple[float, float]]:
    """Idle frames and CPU of `/graph` once its layout has settled, and of the topic list (the baseline page)."""
    ctx, page = _signed_in(browser, url, n, COUNT_FRAMES)
    page.wait_for_timeout(3000)
    out = {"list": _idle(page)}
    page.goto(url + "/graph")
    page.wait_for_function(f"() => window.__r42graph && window.__r42graph.ids().length === {n} "
                           "&& window.__r42graph.settled()", timeout=120_000)
    page.wait_for_timeout(12_000)  # the layout cools down (5 s, 8 s for a large graph) and the view is fitted
    out["graph"] = _idle(page)
    ctx.close()
    return out


def _seed(pb) -> None:
    store = KBStore(pb)
    for n in SIZES:
        outcome = store.import_document(f"graph{n}", graph_document(n), tenant_name=f"Graph {n}")
        ensure_user(pb, outcome.tenant, DemoUser(f"graph{n}@example.com", f"Graph {n}", "learner", f"graph{n}"),
                    PASSWORD)


def _panel_shows(label: str) -> str:
    return (f"() => {{ const t = document.querySelector('#graph-panel-title'); "
            f"return t && t.textContent === {json.dumps(label)}; }}")


def _measure(browser, url: str, n: int) -> dict[str, list[float]]:
    labels = {t["id"]: t["label"] for t in graph_document(n)["topics"]}
    ctx, page = _signed_in(browser, url, n)
    out: dict[str, list[float]] = {"graph_load": [], "list_load": [], "canvas_click": [], "search_click": [],
                                   "fps_layout": [], "fps_idle": []}
    for i in range(LOADS + 1):
        start = time.perf_counter()
        page.goto(url + "/")
        page.wait_for_selector("#topic-grid a", timeout=60_000)
        list_load = time.perf_counter() - start
        start = time.perf_counter()
        page.goto(url + "/graph")
        page.wait_for_function(f"() => window.__r42graph && window.__r42graph.ids().length === {n} "
                               "&& window.__r42graph.settled()", timeout=120_000, polling=16)
        graph_load = time.perf_counter() - start
        if i:  # the first round warms the browser cache and the server
            out["list_load"].append(list_load)
            out["graph_load"].append(graph_load)
    page.evaluate("window.__r42graph.labelMs && window.__r42graph.labelMs(true)")
    out["fps_layout"].append(_fps(page, 2.0))
    # the label pass of each frame in those 2 s (absent before labels were placed without overlap)
    out["label_ms"] = page.evaluate("window.__r42graph.labelMs ? window.__r42graph.labelMs() : []")
    page.wait_for_timeout(9000)  # the layout cools down
    out["fps_idle"].append(_fps(page, 2.0))
    out["labels"] = [page.evaluate("window.__r42graph.labels ? window.__r42graph.labels().length : -1")]
    page.evaluate("window.__r42graph.freeze()")
    rng = random.Random(n)
    ids = page.evaluate("window.__r42graph.ids()")
    clicked = 0
    for node_id in rng.sample(ids, min(len(ids), CLICKS * 4)):
        if clicked == CLICKS:
            break
        point = page.evaluate(f"window.__r42graph.screenOf('{node_id}')")
        if not point or not (420 < point["x"] < 1000 and 80 < point["y"] < 860):
            continue  # under the overlays, or off screen
        page.mouse.move(point["x"], point["y"])
        page.wait_for_timeout(120)
        if not page.evaluate("document.querySelector('.float-tooltip-kap') && "
                             "getComputedStyle(document.querySelector('.float-tooltip-kap')).display !== 'none'"):
            continue  # another node lies on top at this zoom
        start = time.perf_counter()
        page.mouse.click(point["x"], point["y"])
        page.wait_for_function(_panel_shows(labels[node_id]), timeout=30_000, polling=4)
        out["canvas_click"].append(time.perf_counter() - start)
        clicked += 1
        page.click("#graph-panel-close")
    for node_id in rng.sample(ids, CLICKS):
        page.fill("#graph-search", labels[node_id])
        hit = page.locator(".graph-hit").first
        hit.filter(has_text=labels[node_id]).wait_for(timeout=30_000)  # exact label ranks first
        box = hit.bounding_box()  # a raw click, like the canvas one (no actionability waits)
        page.mouse.move(box["x"] + 20, box["y"] + box["height"] / 2)
        start = time.perf_counter()
        page.mouse.click(box["x"] + 20, box["y"] + box["height"] / 2)
        page.wait_for_function(_panel_shows(labels[node_id]), timeout=30_000, polling=4)
        out["search_click"].append(time.perf_counter() - start)
    ctx.close()
    return out


def run() -> str:
    from playwright.sync_api import sync_playwright

    results, idle = {}, {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        if IDLE_BASELINE:  # the commit before the canvas rested: its idle graph, served from a worktree
            with baseline_checkout(IDLE_BASELINE) as tree, served_app(root=tree, PYTHONPATH=str(tree)) as (url, pb, _):
                _seed(pb)
                idle["baseline"] = {n: _idle_pass(browser, url, n) for n in SIZES}
        with served_app() as (url, pb, _data):
            _seed(pb)
            for n in SIZES:
                results[n] = _measure(browser, url, n)
            idle["now"] = {n: _idle_pass(browser, url, n) for n in SIZES}
        browser.close()
    lines = ["### Knowledge-graph page (`/graph`, headless Chromium, 1400×900)", "",
             ("| topics | links | graph page load p50 (p95) | topic list `/` p50 | graph / list | node click → panel "
              "p50 (p95) | search hit → panel p50 | fps while laying out | fps settled | names drawn | label pass "
              "per frame p50 (p95) |"),
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for n, r in results.items():
        links = len(graph_document(n)["relations"])
        lines.append(
            f"| {n:,} | {links:,} | {ms(p50(r['graph_load']))} ({ms(p95(r['graph_load']))}) | "
            f"{ms(p50(r['list_load']))} | {p50(r['graph_load']) / p50(r['list_load']):.1f}x | "
            f"{ms(p50(r['canvas_click']))} ({ms(p95(r['canvas_click']))}), n={len(r['canvas_click'])} | "
            f"{ms(p50(r['search_click']))} | {r['fps_layout'][0]:.0f} | {r['fps_idle'][0]:.0f} | "
            + (f"{r['labels'][0]:.0f} | {ms(p50(r['label_ms']) / 1000)} ({ms(p95(r['label_ms']) / 1000)}) |"
               if r["label_ms"] else "– | – |"))
    lines += ["", (f"Once the layout has settled, nobody touching the page, for {IDLE_S:.0f} s: the animation "
                   "frames the page asks for, and the CPU of all Chromium processes (% of one core), against the "
                   "topic list left alone the same way:"), "",
              ("| code | topics | graph: frames/s | graph: Chromium CPU | topic list: frames/s | topic list: "
               "Chromium CPU |"), "|---|---|---|---|---|---|"]
    for name, label in (("baseline", f"before the canvas rested ({IDLE_BASELINE})"), ("now", "this checkout")):
        for n, r in idle.get(name, {}).items():
            (gf, gc), (lf, lc) = r["graph"], r["list"]
            lines.append(f"| {label} | {n:,} | {gf:.1f} | {gc:.1f}% | {lf:.1f} | {lc:.1f}% |")
    lines += ["", ("Load is from navigation start until every node has a position on the canvas (the whole "
                   "graph is drawn); the list page is timed to its first topic cards. Click is from the mouse "
                   "click on the node until its label is in the side panel (one round trip to the server for "
                   "the description, excerpt and neighbours).")]
    return "\n".join(lines)
