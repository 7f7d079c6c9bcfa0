"""The outbox lease is a setting like the others: R42_OUTBOX_LEASE_S, 60 s unless set, 1 to 3600."""

import pytest

from r42_app.services.outbox.outbox import lease_seconds


def test_lease_is_a_minute_unless_set(monkeypatch):
    monkeypatch.delenv("R42_OUTBOX_LEASE_S", raising=False)
    assert lease_seconds() == 60


def test_lease_follows_the_environment_at_each_claim(monkeypatch):
    monkeypatch.setenv("R42_OUTBOX_LEASE_S", "5")
    assert lease_seconds() == 5


@pytest.mark.parametrize("bad", ["0", "3601", "een minuut"])
def test_a_lease_out_of_range_is_a_clear_error(monkeypatch, bad):
    monkeypatch.setenv("R42_OUTBOX_LEASE_S", bad)
    with pytest.raises(SystemExit, match="R42_OUTBOX_LEASE_S must be a whole number from 1 to 3600"):
        lease_seconds()
