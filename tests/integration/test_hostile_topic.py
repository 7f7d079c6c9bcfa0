"""Issue 44, finding 1: an acme admin wrote (through PocketBase) a topic whose content is one table rule line of
20 KB; every tab that opened it held the event loop all tenants share for 1.45 s (`LearnState.load_topic` split it
into passages on the loop, with a quadratic pattern), and the demo learner's chat waited. Opening such a topic now
never holds the loop: the page's reading is linear and done in a thread. (A ticker on the same loop measures how
late it wakes up, as in test_event_loop.py; no timing of the work itself is asserted.)"""

import dataclasses

import pytest

from r42_app.services.store.kb_store import KBStore
from r42_app.state.learn import LearnState
from tests.integration.test_event_loop import MAX_LAG_S, worst_lag
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
    learn = substate(await signed_in_root("learner@acme.example"), LearnState)
    learn.rx_router_page = dataclasses.replace(learn.router.page, params={"slug": slug})
    lag = await worst_lag(lambda: call(learn, LearnState.load_topic))
    assert learn.topic_found and learn.passages, "the topic page shows the topic"
    assert lag < MAX_LAG_S, f"opening {slug} held the event loop for {lag * 1000:.0f} ms"
