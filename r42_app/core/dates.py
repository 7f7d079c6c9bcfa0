"""Days as a Dutch reader writes them (issue 49): "01-12-2026" in a date field, "1 dec" on a chart's axis ("1 Dec"
in English), whatever the browser's locale. A browser's own date field shows mm/dd/yyyy to an American-English
browser in a Dutch app, so the admin pages' range fields are text fields in this format, read by `parse_day`."""

from __future__ import annotations

import re
from datetime import date

from babel.dates import format_date

from r42_app.core.messages import LOCALES, current_language

DAY_FORMAT = "dd-mm-jjjj"  # what the fields ask for (their placeholder)
_DUTCH = re.compile(r"(\d{1,2})[-/.](\d{1,2})[-/.](\d{4})")
_ISO = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})")


def parse_day(text: str) -> date:
    """"1-12-2026", "01/12/2026", "1.12.2026" (day first, as in Dutch) or "2026-12-01" (ISO, what a bookmark or an
    API client may send). Raises ValueError for anything else, or a day that does not exist ("31-02-2026")."""
    value = str(text).strip()
    if m := _DUTCH.fullmatch(value):
        return date(int(m.group(3)), int(m.group(2)), int(m.group(1)))
    if m := _ISO.fullmatch(value):
        return date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    raise ValueError(f"not a day: {value[:40]!r}")


def day_text(day: date) -> str:
    """"01-12-2026": a day in the fields' format."""
    return f"{day.day:02d}-{day.month:02d}-{day.year}"


def short_day(day: date) -> str:
    """"1 dec": a day on a chart's axis, its month in the reader's language ("1 Dec"; Babel's data)."""
    return format_date(day, "d MMM", locale=LOCALES[current_language()])
