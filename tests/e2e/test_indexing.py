"""The app backend keeps the search index fresh by itself: its background task drains the outbox."""

import time


def test_backend_drains_the_outbox_into_chroma(served_app):
    pb = served_app.superuser()
    pending = 'status = "pending"'
    assert pb.list("outbox", per_page=1, total=True)["totalItems"] >= 62  # the seed queued every topic
    deadline = time.monotonic() + 300
    while pb.list("outbox", filter=pending, per_page=1, total=True)["totalItems"] and time.monotonic() < deadline:
        time.sleep(1)
    assert pb.list("outbox", filter=pending, per_page=1, total=True)["totalItems"] == 0
    assert pb.list("outbox", filter='status = "failed"', per_page=1, total=True)["totalItems"] == 0
    assert (served_app.data_dir / "chroma").is_dir()
