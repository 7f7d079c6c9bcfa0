"""Issue 44, finding 1: an acme admin wrote (through PocketBase) a topic whose content is one table rule line of
20 KB; every tab that opened it held the event loop all tenants share for 1.45 s (`LearnState.load_topic` split it
into passages on the loop, with a quadratic pattern), and the demo learner's chat waited. Opening such a topic now
never holds the loop: the page's reading is done in a thread (here: tests/integration/loop_guard.py sees no blocking
call and none of the reading's CPU-heavy functions on the loop's thread, as in test_event_loop.py), and it is linear
(tests/unit/test_pathological_text.py). How long the loop is held while tabs open such topics is measured by
bench/bench_hostile.py, never asserted here."""

import dataclasses

import pytest

from r42_app.services.store.kb_store import KBStore
from r42_app.state import learn
from r42_app.state.learn import LearnState
from tests.integration.loop_guard import blocking_on_loop
from tests.integration.test_state_guards import call, signed_in_root, substate

pytestmark = pytest.mark.anyio

HOSTILE = {
    "tabelregel": "| a |\n|--" + " " * 19950 + "x",  # the topic: 1.45 s on the loop per tab
    "pijpjes": "|\n" * 9999,  # a table of empty rows: its passage was summed again per row, 1.9 s
    "kop-van-spaties": "# a" + " " * 19990 + "b",  # a heading of spaces: 1.2 s
}


@pytest.fixture
def hostile_topics(app_env, seeded, admin_pb):
    kb = KBStore(admin_pb)
    acme = kb.require_tenant("acme")
    for slug, content in HOSTILE.items():
        kb.create_topic(acme, {"id": slug, "label": slug.replace("-", " ").capitalize(), "type": "concept",
                               "description": "Een onderwerp van een vijandige beheerder.", "content": content})
    yield
    for slug in HOSTILE:
        kb.delete_topic(acme, slug)


@pytest.mark.parametrize("slug", list(HOSTILE))
async def test_opening_a_hostile_topic_never_holds_the_event_loop(hostile_topics, slug):
    page = substate(await signed_in_root("learner@acme.example"), LearnState)
    page.rx_router_page = dataclasses.replace(page.router.page, params={"slug": slug})
    # the reading of a topic: what the page shows of it, its passages and their views (CPU, on a hostile topic)
    reading = [(learn, "visible_topic"), (learn, "split_passages"), (learn, "passage_views"), (learn, "topic_view")]
    on_loop = await blocking_on_loop(lambda: call(page, LearnState.load_topic), cpu=reading)
    assert page.topic_found and page.passages, "the topic page shows the topic"
    assert on_loop == [], f"opening {slug} held the event loop"
