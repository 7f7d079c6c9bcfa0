"""The Reflex app: theme, pages, the HTTP API and the security headers; the page scripts are in assets/r42.js."""

import logging
from pathlib import Path

import reflex as rx

from r42_app.api import api
from r42_app.components.i18n import t, title_marker
from r42_app.components.theme import STYLE
from r42_app.flood_gate import flood_gate
from r42_app.http_headers import security_headers
from r42_app.pages import (
    account,
    admin_chatbot,
    admin_costs,
    admin_feedback,
    admin_gaps,
    admin_people,
    admin_suggestions,
    admin_tools,
    admin_topics,
    graph,
    learn,
    quiz,
)
from r42_app.routes import NOT_FOUND_TITLE, PAGES
from r42_app.services.runtime import reflex_patches  # several workers: a reconnect keeps its session
from r42_app.state.account import AccountState
from r42_app.state.admin_topics import AdminTopicEditorState, AdminTopicListState
from r42_app.state.auth import AuthState, page_loader
from r42_app.state.chat import ChatState
from r42_app.state.chatbot_settings import ChatbotSettingsState
from r42_app.state.costs import CostsState
from r42_app.state.feedback import FeedbackState
from r42_app.state.gaps import GapsState
from r42_app.state.graph import GraphState
from r42_app.state.learn import LearnState
from r42_app.state.people import PeopleState
from r42_app.state.quiz import QuizState
from r42_app.state.suggestions import SuggestionsState
from r42_app.state.tools import ToolsState
from r42_app.upload_limit import upload_limit


def this_workers_liveness():
    """This worker's heartbeat and the liveness of others (the Reflex patch asks at each connect)."""
    from r42_app.container import services

    return services().liveness


reflex_patches.apply(this_workers_liveness)  # refuses to load on a Reflex it was not written for

FIRST_SCRIPT = (Path(__file__).resolve().parent.parent / "assets" / "r42-first.js").read_text(encoding="utf-8")

app = rx.App(
    style=STYLE,
    stylesheets=["/r42.css"],
    head_components=[
        rx.el.link(rel="icon", href="/favicon.svg", type="image/svg+xml"),
        # What must run before the app's scripts (storage in an LMS's frame): inline, allowed by its hash
        rx.el.script(FIRST_SCRIPT),
        # Keyboard, quiz lock, thread sync, counters: one script file of our own origin, loaded after hydration
        rx.script(src="/r42.js"),
    ],
    # One token's flood of chat requests is refused before the app reads it (flood_gate.py). Every response,
    # pages and refusals included, carries the security headers (Content-Security-Policy and friends).
    api_transformer=[api, upload_limit, flood_gate, security_headers],
    html_lang="nl",
    # Toasts at the bottom left, with a close button: never over the page's heading or bar (at the top centre they
    # covered the heading, issue 49), nor over R42's launcher and window (bottom right). On a phone a toast is as
    # wide as the screen, so it sits above the launcher.
    toaster=rx.toast.provider(position="bottom-left", offset="24px", close_button=True,
                              custom_attrs={"mobileOffset": {"bottom": "84px", "left": "12px", "right": "12px"}}),
)



async def index_outbox() -> None:
    """Keep the search index fresh: drain the outbox for as long as the backend runs. The chat's services and the
    indexer are built here in a thread, at boot: the superuser sign-in and the embedding model's import stay off
    the event loop and out of the first question."""
    import asyncio

    from r42_app.container import services

    svc = services()
    try:
        await asyncio.to_thread(lambda: svc.chat)
    except Exception as exc:  # noqa: BLE001 - the first question builds it again, and says what is wrong
        logging.getLogger(__name__).warning("building the chat's services at boot failed: %s", exc)
    if svc.settings.app_indexer:
        await asyncio.to_thread(lambda: svc.indexer)
        await svc.indexer.run_forever()


async def persist_costs() -> None:
    """Persist the AI cost events that chat turns queue in the outbox (and debit credits once each)."""
    import asyncio

    from r42_app.container import services

    if services().settings.app_costs:
        persister = await asyncio.to_thread(lambda: services().cost_persister)  # signs in: off the event loop
        await persister.run_forever()


async def write_question_log() -> None:
    """Write the chat turns' question-log rows, once a second in one batch (and what is left at shutdown)."""
    import asyncio

    from r42_app.container import services

    questions = await asyncio.to_thread(lambda: services().questions)  # its secret file and sign-in: off the loop
    await questions.run_forever()


async def prune_question_log() -> None:
    """Delete the questions older than R42_QUESTION_LOG_DAYS, hourly, where cost events are persisted (the
    worker's role: `r42 worker --role cost` instead when R42_APP_COSTS=false)."""
    import asyncio

    from r42_app.container import services

    cfg = services().settings
    if cfg.app_costs:
        questions = await asyncio.to_thread(lambda: services().questions)
        await questions.prune_forever(cfg.question_log_days)


async def run_mcp_servers() -> None:
    """Connect to the configured MCP servers at boot and keep them connected (reconnecting with backoff)."""
    import asyncio

    from r42_app.container import services

    hub = services().mcp_hub
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

    from r42_app.services.runtime.loop_lag import MONITOR

    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(THREADS, thread_name_prefix="r42-io"))
    await MONITOR.run()


async def warm_up() -> None:
    """Load the embedding model and the tenants' indexes before /api/health says ready (services/runtime/warmup.py)."""
    import asyncio

    from r42_app.container import services
    from r42_app.services.runtime.warm_marks import warm_markers
    from r42_app.services.runtime.warmup import WARMUP

    await asyncio.to_thread(WARMUP.run, services(), warm_markers(services().settings.data_dir))


async def close_model_client() -> None:
    """On shutdown, close the one Anthropic client this worker shares across turns (its connection pool)."""
    import asyncio

    from r42_app.container import services

    try:
        await asyncio.Event().wait()
    finally:
        await services().close_model_client()


THREADS = 32
app.register_lifespan_task(watch_loop_lag)
app.register_lifespan_task(warm_up)
app.register_lifespan_task(index_outbox)
app.register_lifespan_task(run_mcp_servers)
app.register_lifespan_task(prune_question_log)
app.register_lifespan_task(write_question_log)
app.register_lifespan_task(persist_costs)
app.register_lifespan_task(close_model_client)

PAGE_PARTS = {  # path (r42_app/routes.py, with its title) -> page and its loader
    "/": (learn.index_page, LearnState.load_index),
    "/topics/[slug]": (learn.topic_page, LearnState.load_topic),
    "/graph": (graph.page, GraphState.load),
    "/testen": (quiz.page, QuizState.load),
    "/admin/topics": (admin_topics.list_page, AdminTopicListState.load_list),
    "/admin/topics/new": (admin_topics.editor_page, AdminTopicEditorState.load_new),
    "/admin/topics/[slug]": (admin_topics.editor_page, AdminTopicEditorState.load_edit),
    "/admin/suggestions": (admin_suggestions.page, SuggestionsState.load),
    "/admin/chatbot": (admin_chatbot.page, ChatbotSettingsState.load),
    "/admin/costs": (admin_costs.page, CostsState.load),
    "/admin/tools": (admin_tools.page, ToolsState.load),
    "/admin/feedback": (admin_feedback.page, FeedbackState.load),
    "/admin/gaps": (admin_gaps.page, GapsState.load),
    "/admin/people": (admin_people.page, PeopleState.load),
    "/welkom": (account.link_page, AccountState.load_link),
    "/nieuw-wachtwoord": (account.link_page, AccountState.load_link),
    "/wachtwoord-vergeten": (account.forgot_page, AccountState.load_forgot),
}
if sorted(PAGE_PARTS) != sorted(route for route, _title in PAGES):
    raise RuntimeError("r42_app/routes.py and PAGE_PARTS name different pages")


def titled(component, route: str, title: str):
    """The page with its title in the reader's language on the browser's tab (a topic page: the topic's name)."""
    shown = rx.cond(LearnState.topic.label != "", LearnState.topic.label, t(title)) if route == "/topics/[slug]" \
        else title
    return lambda: rx.fragment(title_marker(shown), component())


for route, title in PAGES:
    component, loader = PAGE_PARTS[route]
    page_loader(route, loader)
    app.add_page(titled(component, route, title), route=route, title=f"{title} · R42",
                 on_load=[AuthState.check_session, ChatState.check_access, loader])
# Any other address: the app's own "Pagina niet gevonden" (Reflex's default is a bare English line)
app.add_page(titled(learn.not_found_page, "", NOT_FOUND_TITLE), route=rx.constants.Page404.SLUG,
             title="Pagina niet gevonden · R42",
             on_load=[AuthState.check_session, ChatState.check_access])
