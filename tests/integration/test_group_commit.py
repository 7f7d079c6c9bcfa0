"""Group commit (issue 26): rows created from many threads at once share PocketBase batch requests, each caller
gets its own stored record back, and a row PocketBase refuses fails only its own caller."""

from concurrent.futures import ThreadPoolExecutor

import pytest

from r42_app.services.store.group_commit import GroupCommit
from r42_app.services.store.pb import PBError


@pytest.fixture
def outbox(admin_pb, seeded):
    made = []
    yield made
    for record_id in made:
        admin_pb.delete("outbox", record_id)


def row(i):
    """An outbox row nobody works on (done already)."""
    return {"type": "ai.cost.event.persist", "status": "done", "attempts": 0,
            "payload": {"turn_id": f"gc-{i}", "tenant": "t"}}


def test_sixty_threads_at_once_are_stored_in_a_few_requests_each_getting_its_own_row(admin_pb, outbox):
    commit = GroupCommit(admin_pb, "outbox")
    with ThreadPoolExecutor(60) as pool:
        stored = list(pool.map(lambda i: commit.create(row(i)), range(60)))
    outbox += [r["id"] for r in stored]
    assert [r["payload"]["turn_id"] for r in stored] == [f"gc-{i}" for i in range(60)]  # each caller its own
    assert len({r["id"] for r in stored}) == 60
    rows = admin_pb.all("outbox", filter='payload.turn_id ~ "gc-"')
    assert len(rows) == 60  # every row, once
    assert commit.requests < 30  # and they shared requests (one at a time would be 60)


def test_one_row_alone_is_written_at_once_in_a_request_of_its_own(admin_pb, outbox):
    commit = GroupCommit(admin_pb, "outbox")
    stored = commit.create(row("alone"))
    outbox.append(stored["id"])
    assert commit.requests == 1 and admin_pb.get("outbox", stored["id"])["payload"]["turn_id"] == "gc-alone"


def test_a_refused_row_fails_its_own_caller_only(admin_pb, outbox):
    commit = GroupCommit(admin_pb, "outbox")
    bodies = [row(i) for i in range(20)]
    bodies[7] = {"type": "", "status": "nonsense"}  # the schema refuses it
    results = []

    def create(body):
        try:
            return commit.create(body)
        except PBError as exc:
            return exc

    with ThreadPoolExecutor(20) as pool:
        results = list(pool.map(create, bodies))
    assert isinstance(results[7], PBError)
    good = [r for i, r in enumerate(results) if i != 7]
    assert all(isinstance(r, dict) for r in good), good
    outbox += [r["id"] for r in good]
    assert len(admin_pb.all("outbox", filter='payload.turn_id ~ "gc-"')) == 19


@pytest.mark.anyio
async def test_cost_rows_of_turns_ending_together_share_requests_without_a_thread_each(admin_pb, outbox, caplog):
    """CostRecorder.publish (a chat turn's end, on the event loop) when PocketBase refuses to write the events at once
    (here: tenants that do not exist): forty turns' outbox rows in a few batch requests, every row stored once, and
    one PocketBase refuses is logged as publish.failed without losing the others."""
    from r42_app.core.costs import Round, Usage
    from r42_app.services.store.costs import CostRecorder, PriceTable

    recorder = CostRecorder(admin_pb, PriceTable.load())
    spent = [Round(Usage(input_tokens=100, output_tokens=20), ())]
    for i in range(40):
        recorder.publish(f"gc-pub-{i}", "t" if i != 17 else "x" * 250_000, "u", "claude-test", spent)
    await recorder.flush()
    rows = admin_pb.all("outbox", filter='payload.turn_id ~ "gc-pub-"')
    outbox += [r["id"] for r in rows]
    assert sorted(r["payload"]["turn_id"] for r in rows) == sorted(f"gc-pub-{i}" for i in range(40) if i != 17)
    assert recorder._rows.batches <= 3  # the first row alone, the rest together (one refused row: then row by row)
    assert "publish.failed turn=gc-pub-17" in caplog.text
