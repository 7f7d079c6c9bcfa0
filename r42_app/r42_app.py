"""The Reflex app: theme, pages and the HTTP API."""

import reflex as rx

from r42_app.api import api
from r42_app.components.theme import STYLE
from r42_app.pages import (
    admin_chatbot,
    admin_costs,
    admin_feedback,
    admin_suggestions,
    admin_tools,
    admin_topics,
    graph,
    learn,
    quiz,
)
from r42_app.state.admin_topics import AdminTopicsState
from r42_app.state.auth import AuthState, page_loader
from r42_app.state.chat import ChatState
from r42_app.state.chatbot_settings import ChatbotSettingsState
from r42_app.state.costs import CostsState
from r42_app.state.feedback import FeedbackState
from r42_app.state.tools import ToolsState
from r42_app.state.graph import GraphState
from r42_app.state.learn import LearnState
from r42_app.state.quiz import QuizState
from r42_app.state.suggestions import SuggestionsState

# The quiz lock in the browser: hide the launcher (and close the window) while this user's
# localStorage `quiz:active:{userId}` is "true" -- in every tab, through the storage event. Closing
# the tab mid-quiz ends the server's quiz session too (best effort; the session also expires).
QUIZ_LOCK_SCRIPT = """(function () {
  function uid() { var el = document.getElementById('r42-chat'); return el ? el.getAttribute('data-r42-user') || '' : ''; }
  function locked() { var u = uid(); return !!u && localStorage.getItem('quiz:active:' + u) === 'true'; }
  var last = null;
  function sync() {
    var now = locked();
    if (now === last) return;
    last = now;
    document.documentElement.classList.toggle('r42-quiz-locked', now);
    if (now) { var w = document.getElementById('r42-window'), c = document.getElementById('r42-close'); if (w && c) c.click(); }
  }
  window.addEventListener('storage', sync);
  window.addEventListener('quiz-state', sync);
  setInterval(sync, 400);
  window.addEventListener('pagehide', function () {
    if (!document.getElementById('quiz-question') || !locked()) return;  // only a tab in a running quiz
    var token = localStorage.getItem('r42.session');
    localStorage.removeItem('quiz:active:' + uid());
    if (token && navigator.sendBeacon) {
      navigator.sendBeacon('/api/quiz/end', new Blob([JSON.stringify({ token: token })], { type: 'application/json' }));
    }
  });
})();"""

# The chat box's character counter: shown from 7,000 characters, red above the 8,000 the server accepts.
COUNTER_SCRIPT = """
(function () {
  window.r42Count = function () {
    var box = document.getElementById('r42-input'), out = document.getElementById('r42-count');
    if (!box || !out) return;
    var n = box.value.length;
    out.textContent = n.toLocaleString('nl-NL') + ' / 8.000 tekens' + (n > 8000 ? ': te lang om te versturen' : '');
    out.hidden = n < 7000;
    out.dataset.over = n > 8000 ? 'true' : 'false';
  };
  document.addEventListener('input', function (e) {
    if (!e.target || e.target.id !== 'r42-input') return;
    window.r42Count();
    e.target.style.height = 'auto';  /* the box grows with its text, up to about eight lines */
    e.target.style.height = Math.min(e.target.scrollHeight + 2, 180) + 'px';
  });
  /* Up-arrow in the empty box brings back the last question. */
  document.addEventListener('keydown', function (e) {
    var box = e.target;
    if (e.key !== 'ArrowUp' || !box || box.id !== 'r42-input' || box.value !== '') return;
    var last = box.getAttribute('data-last');
    if (!last) return;
    e.preventDefault();
    var setter = Object.getOwnPropertyDescriptor(window.HTMLTextAreaElement.prototype, 'value').set;
    setter.call(box, last);
    box.dispatchEvent(new Event('input', { bubbles: true }));
  });
  /* "Naar het nieuwste" shows when the conversation is scrolled up. */
  window.r42JumpToLatest = function () {
    var list = document.getElementById('r42-messages');
    if (list) list.scrollTo({ top: list.scrollHeight, behavior: 'smooth' });
  };
  document.addEventListener('scroll', function (e) {
    if (!e.target || e.target.id !== 'r42-messages') return;
    var list = e.target, away = list.scrollHeight - list.scrollTop - list.clientHeight > 120;
    var win = document.getElementById('r42-window');
    if (win) win.classList.toggle('r42-scrolled-up', away);
  }, true);
  document.addEventListener('submit', function () { setTimeout(window.r42Count, 300); }, true);
})();"""

# The topic editor warns before unsaved changes are lost: closing or reloading the tab (the browser's own
# dialog) and following a link away (a confirm), while its form says `data-r42-dirty="true"`.
UNSAVED_SCRIPT = """
(function () {
  var dirty = function () { return !!document.querySelector('[data-r42-dirty="true"]'); };
  window.addEventListener('beforeunload', function (e) { if (dirty()) { e.preventDefault(); e.returnValue = ''; } });
  document.addEventListener('click', function (e) {
    var a = e.target && e.target.closest ? e.target.closest('a[href]') : null;
    if (!a || !dirty() || a.target === '_blank') return;
    if (!window.confirm('Je wijzigingen aan dit onderwerp zijn nog niet opgeslagen. Toch weggaan?')) {
      e.preventDefault();
      e.stopPropagation();
    }
  }, true);
})();"""

# The quiz: Enter goes to the next question once an answer is chosen, and leaving the page mid-quiz asks first.
QUIZ_KEYS_SCRIPT = """
(function () {
  document.addEventListener('keydown', function (e) {
    if (e.key !== 'Enter' || e.shiftKey || !document.getElementById('quiz-question')) return;
    var t = e.target;
    if (t && (t.tagName === 'TEXTAREA' || (t.tagName === 'INPUT' && t.type !== 'radio'))) return;
    var next = document.getElementById('quiz-next');
    if (next && !next.disabled) { e.preventDefault(); e.stopPropagation(); next.click(); }
  }, true);  /* capture: the radio group handles Enter itself (and would swallow it) */
  window.addEventListener('beforeunload', function (e) {
    if (document.getElementById('quiz-question')) { e.preventDefault(); e.returnValue = ''; }
  });
  /* a link inside the app would end the attempt without the browser's warning: ask first */
  document.addEventListener('click', function (e) {
    var a = e.target && e.target.closest ? e.target.closest('a[href]') : null;
    if (!a || !document.getElementById('quiz-question') || a.target === '_blank') return;
    if (!window.confirm('Je toets stopt als je deze pagina verlaat; je antwoorden tellen dan niet. Pagina verlaten?')) {
      e.preventDefault(); e.stopPropagation();
    }
  }, true);
})();"""

# The stored thread is shared by the tabs of one browser: a save merges by message id with what is stored
# (so two tabs never overwrite each other), and a change made in another tab makes this tab follow it.
THREAD_SCRIPT = """
(function () {
  window.r42SaveThread = function (key, data) {
    var mine = JSON.parse(data), stored = null;
    try { stored = JSON.parse(window.localStorage.getItem(key) || 'null'); } catch (e) { stored = null; }
    if (stored && stored.version === mine.version && (stored.cleared || 0) > (mine.cleared || 0)) {
      return JSON.stringify(stored);  /* another tab cleared the thread since: what this tab had is gone */
    }
    if (stored && stored.version === mine.version && Array.isArray(stored.messages)) {
      var latest = {}, seen = {}, out = [];
      mine.messages.forEach(function (m) { latest[m.id] = m; });
      /* the same message in both: the more finished one (an answer beats its placeholder), else this tab's */
      var rank = function (m) { return (m.status === 'incomplete' ? 0 : 1e9) + (m.content || '').length; };
      stored.messages.forEach(function (m) {
        if (!m || typeof m.id !== 'string' || seen[m.id]) return;
        var mine_m = latest[m.id];
        out.push(mine_m && rank(mine_m) >= rank(m) ? mine_m : m);
        seen[m.id] = true;
      });
      mine.messages.forEach(function (m) { if (!seen[m.id]) { out.push(m); seen[m.id] = true; } });
      var gone = {};  /* messages a tab took out (a regenerated answer, an edited question) stay out */
      (Array.isArray(stored.removed) ? stored.removed : []).concat(mine.removed || [])
        .forEach(function (id) { if (typeof id === 'string') gone[id] = true; });
      mine.removed = Object.keys(gone).slice(-200);
      mine.messages = out.filter(function (m) { return !gone[m.id]; }).slice(-50);
    }
    var merged = JSON.stringify(mine);
    window.localStorage.setItem(key, merged);
    return merged;
  };
  window.addEventListener('storage', function (e) {
    if (!e.key || e.key.indexOf('chat:thread:') !== 0) return;
    var b = document.getElementById('r42-thread-sync');
    if (b) b.click();
  });
})();"""

# While an answer streams, ask the server every few seconds whether its worker still lives: with several
# backend workers, a tab whose worker died reconnects to another, which ends the orphaned answer.
STREAM_CHECK_SCRIPT = """
setInterval(function () {
  if (!document.getElementById('r42-stop')) return;
  var b = document.getElementById('r42-stream-check');
  if (b) b.click();
}, 4000);"""

from r42_app.services import reflex_patches  # noqa: E402  (several workers: a reconnect keeps its session)

reflex_patches.apply()

app = rx.App(
    style=STYLE,
    stylesheets=["/r42.css"],
    head_components=[
        rx.el.link(rel="icon", href="/favicon.svg", type="image/svg+xml"),
        # Esc closes the R42 window from anywhere on the page (keyboard users); with the window
        # closed, it closes the graph's side panel.
        rx.script("document.addEventListener('keydown', function (e) { if (e.key !== 'Escape') return; "
                  "var b = document.getElementById('r42-close'); if (b) { b.click(); "
                  "var l = document.getElementById('r42-launcher'); if (l) l.focus(); return; } "
                  "var p = document.getElementById('graph-panel-close'); if (p) p.click(); });"),
        rx.script(QUIZ_LOCK_SCRIPT),
        rx.script(COUNTER_SCRIPT),
        rx.script(THREAD_SCRIPT),
        rx.script(UNSAVED_SCRIPT),
        rx.script(QUIZ_KEYS_SCRIPT),
        rx.script(STREAM_CHECK_SCRIPT),
    ],
    api_transformer=api,
    html_lang="nl",
    # Toasts at the top, just under the bar: never over the dialog buttons, the chat input or the launcher
    # (all at the bottom), and with a close button.
    toaster=rx.toast.provider(position="top-center", offset="68px", close_button=True,
                              custom_attrs={"mobileOffset": "64px"}),
)



async def index_outbox() -> None:
    """Keep the search index fresh: drain the outbox for as long as the backend runs."""
    from r42_app.services import deps

    if deps.settings().app_indexer:
        await deps.indexer().run_forever()


async def persist_costs() -> None:
    """Persist the AI cost events that chat turns queue in the outbox (and debit credits once each)."""
    from r42_app.services import deps

    if deps.settings().app_costs:
        await deps.cost_persister().run_forever()


async def run_mcp_servers() -> None:
    """Connect to the configured MCP servers at boot and keep them connected (reconnecting with backoff)."""
    import asyncio

    from r42_app.services import deps

    hub = deps.mcp_hub()
    await hub.start()
    try:
        await asyncio.Event().wait()
    finally:
        await hub.stop()


async def watch_loop_lag() -> None:
    """Size the thread pool that blocking calls run in, then measure the event loop's lag (reported by
    /api/health). asyncio's default pool has cores + 4 threads: six here, so the seventh user's PocketBase
    call would wait for a thread while the loop sits idle."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from r42_app.services.loop_lag import MONITOR

    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(THREADS, thread_name_prefix="r42-io"))
    await MONITOR.run()


THREADS = 32
app.register_lifespan_task(watch_loop_lag)
app.register_lifespan_task(index_outbox)
app.register_lifespan_task(run_mcp_servers)
app.register_lifespan_task(persist_costs)

ROUTES = [
    ("/", learn.index_page, "Onderwerpen", LearnState.load_index),
    ("/topics/[slug]", learn.topic_page, "Onderwerp", LearnState.load_topic),
    ("/graph", graph.page, "Kennisgraaf", GraphState.load),
    ("/testen", quiz.page, "Testen", QuizState.load),
    ("/admin/topics", admin_topics.list_page, "Kennisbank beheren", AdminTopicsState.load_list),
    ("/admin/topics/new", admin_topics.editor_page, "Nieuw onderwerp", AdminTopicsState.load_new),
    ("/admin/topics/[slug]", admin_topics.editor_page, "Onderwerp bewerken", AdminTopicsState.load_edit),
    ("/admin/suggestions", admin_suggestions.page, "Voorstellen", SuggestionsState.load),
    ("/admin/chatbot", admin_chatbot.page, "R42-instellingen", ChatbotSettingsState.load),
    ("/admin/costs", admin_costs.page, "Kosten en tegoed", CostsState.load),
    ("/admin/tools", admin_tools.page, "Externe hulpmiddelen", ToolsState.load),
    ("/admin/feedback", admin_feedback.page, "Beoordelingen", FeedbackState.load),
]

for route, component, title, loader in ROUTES:
    page_loader(route, loader)
    app.add_page(component, route=route, title=f"{title} · R42",
                 on_load=[AuthState.check_session, ChatState.check_access, loader])
