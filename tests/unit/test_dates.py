"""Days the Dutch way (core/dates.py, issue 49): the admin pages' range fields read and show dd-mm-jjjj whatever the
browser's locale; a chart's axis says "1 dec"."""

from datetime import date

import pytest

from r42_app.core.dates import day_text, parse_day, short_day


@pytest.mark.parametrize("text", ["01-12-2026", "1-12-2026", "1/12/2026", "1.12.2026", " 01-12-2026 ", "2026-12-01"])
def test_a_day_is_read_day_first_or_as_iso(text):
    assert parse_day(text) == date(2026, 12, 1)


@pytest.mark.parametrize("text", ["", "12/01/26", "31-02-2026", "2026-13-01", "gisteren", "1-12-2026; drop", "12"])
def test_anything_else_is_refused(text):
    with pytest.raises(ValueError):
        parse_day(text)


def test_days_are_written_as_a_dutch_reader_expects():
    assert day_text(date(2026, 3, 5)) == "05-03-2026"
    assert parse_day(day_text(date(2026, 3, 5))) == date(2026, 3, 5)
    assert short_day(date(2026, 12, 1)) == "1 dec" and short_day(date(2026, 3, 5)) == "5 mrt"
